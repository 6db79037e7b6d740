// SPDX-License-Identifier: Apache-2.0
// chash plot — pictures a person would rather look at than read: the ring with its nodes and
// virtual nodes, per-node load bars, keys moved by a change, sweep curves. Self-contained SVG
// (the drawing is the library's: chash/svg.h).
#include "plot.h"

#include <fstream>

#include "chash/analysis.h"
#include "chash/error.h"
#include "chash/svg.h"
#include "report.h"
#include "sweep.h"

namespace chash::cli {

std::string plot_load(const LoadStats& s, std::span<const Node> nodes, std::string_view title) {
  std::vector<std::string> names;
  for (const Node& n : nodes) names.push_back(n.name);
  return svg::bars(title, "share of keys", names, {{"keys", s.share}}, s.fair_share,
                   "weight-fair share", true);
}

namespace {

struct PlotArgs {
  std::string kind = "ring";
  std::string out;
  RoutingSpec spec;
  NodesArg nodes;
  KeyInput keys;
  std::vector<std::string> add, remove;
  std::string param = "vnodes";
  std::string values = "1,10,50,100,160,200,500,1000";
};

void write_out(const std::string& path, const std::string& svg_text) {
  if (path.empty() || path == "-") {
    Out out;
    out.put(svg_text);
    return;
  }
  std::ofstream f(path, std::ios::binary);
  f << svg_text;
  f.close();
  if (!f) throw Error(ErrorCode::kInvalidArgument, "cannot write " + path);
}

// plot sweep of a ring spec (vnodes or nodes), from the keys given (report.h
// default_to_synthetic).
void plot_ring_sweep(const PlotArgs& a) {
  if (a.param != "vnodes" && a.param != "nodes") {
    throw Error(ErrorCode::kInvalidArgument, "with --ring, --param must be vnodes or nodes");
  }
  std::vector<std::string> keys;
  read_all_keys(a.keys, 10'000'000, "plot --kind sweep --ring",
                [&](std::string_view k) { keys.emplace_back(k); });
  RoutingSpec spec = a.spec;
  std::vector<double> xs, mm, moved;
  for (const std::uint64_t v : parse_values(a.values)) {
    std::vector<Node> ns;
    const std::uint64_t count = a.param == "nodes" ? v : 10;
    if (count == 0 || count > kMaxNodes) {
      throw Error(ErrorCode::kInvalidArgument,
                  "node count must be 1.." + std::to_string(kMaxNodes));
    }
    for (std::uint64_t i = 0; i < count; ++i) ns.push_back({"node-" + std::to_string(i), 1});
    if (a.param == "vnodes")
      spec.vnodes = static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 65537));
    const SweepPoint p = measure_point(spec, ns, keys);
    xs.push_back(static_cast<double>(v));
    mm.push_back(p.max_over_mean);
    moved.push_back(p.moved_on_add / std::max(p.optimal_on_add, 1e-12));
  }
  write_out(a.out,
            svg::lines("ring spec: balance and movement vs " + a.param, a.param, "ratio", xs,
                       {{"max/mean load", mm}, {"moved on +1 node / optimum", moved}}, true));
}

void run_plot(PlotArgs a) {
  if (a.kind != "ring") default_to_synthetic(a.keys);
  if (a.kind == "sweep" && a.spec.ring) {
    plot_ring_sweep(a);
    return;
  }
  if (a.kind == "sweep") {
    if (a.spec.algorithm.empty()) a.spec.algorithm = "ring";
    const Algorithm algo = parse_algorithm(a.spec.algorithm);
    std::vector<double> xs, mm, moved;
    std::vector<std::uint64_t> hashes;
    read_all_keys(a.keys, 50'000'000, "plot --kind sweep",
                  [&](std::string_view k) { hashes.push_back(hash::xxh3_64(k)); });
    for (const std::uint64_t v : parse_values(a.values)) {
      TableOptions opt;
      std::vector<Node> ns;
      std::uint64_t count = a.param == "nodes" ? v : 10;
      for (std::uint64_t i = 0; i < count; ++i) ns.push_back({"node-" + std::to_string(i), 1});
      if (a.param == "vnodes") opt.ring.vnodes = static_cast<std::uint32_t>(v);
      else if (a.param == "table-size") opt.maglev.table_size = v;
      else if (a.param == "probes") opt.multiprobe.probes = static_cast<std::uint32_t>(v);
      else if (a.param != "nodes")
        throw Error(ErrorCode::kInvalidArgument, "--param: vnodes, nodes, table-size or probes");
      const SweepPoint p = measure_point(algo, ns, opt, hashes);
      xs.push_back(static_cast<double>(v));
      mm.push_back(p.max_over_mean);
      moved.push_back(p.moved_on_add / std::max(p.optimal_on_add, 1e-12));
    }
    write_out(a.out,
              svg::lines(std::string(algorithm_name(algo)) + ": balance and movement vs " + a.param,
                         a.param, "ratio", xs,
                         {{"max/mean load", mm}, {"moved on +1 node / optimum", moved}}, true));
    return;
  }
  require_routing(a.spec, a.nodes);
  const auto nodes = a.nodes.load();
  const Router router = Router::build(a.spec, nodes);
  if (a.kind == "ring") {
    const AnyTable* t = router.table();
    const Preset* p = router.preset();
    const bool ring_table = t != nullptr && (std::holds_alternative<RingTable>(*t) ||
                                             std::holds_alternative<Ring64Table>(*t));
    const bool ring_preset = p != nullptr && (p->ring32() != nullptr || p->ring64() != nullptr);
    if (!ring_table && !ring_preset) {
      throw Error(ErrorCode::kUnsupported,
                  "plot --kind ring needs --algo ring or ring64, or a preset whose peer uses a "
                  "ring (ketama, libmemcached-consistent, nginx-hash-consistent, ...)");
    }
    write_out(a.out, svg::placement(router, "ring: " + router.describe()));
    return;
  }
  if (a.kind == "load") {
    LoadCounter load(nodes.size());
    read_all_keys(a.keys, UINT64_MAX, "plot --kind load",
                  [&](std::string_view key) { load.add(router.route(key)); });
    const LoadStats s = load_stats(load.counts(), nodes);
    write_out(a.out, plot_load(s, nodes,
                               "load per node: " + router.describe() + " (max/mean " +
                                   fixed(s.max_over_mean, 3) + ")"));
    return;
  }
  if (a.kind == "moves") {
    if (a.add.empty() && a.remove.empty())
      throw Error(ErrorCode::kInvalidArgument, "plot --kind moves needs --add or --remove");
    std::vector<Node> after = nodes;
    for (const auto& r : a.remove) {
      std::erase_if(after, [&](const Node& n) { return n.name == r; });
    }
    for (const auto& s : a.add) after.push_back({s, 1});
    if (router.table() && (std::holds_alternative<RingTable>(*router.table()) ||
                           std::holds_alternative<Ring64Table>(*router.table()))) {
      const Router r2 = Router::build(a.spec, after);
      std::vector<MovedRange> ranges;
      std::vector<Node> all = after;  // names for colours: after-list, plus removed ones
      for (const Node& n : nodes) {
        if (std::none_of(all.begin(), all.end(), [&](const Node& x) { return x.name == n.name; }))
          all.push_back(n);
      }
      if (const auto* rb = std::get_if<RingTable>(router.table())) {
        ranges = moved_ranges(*rb, nodes, std::get<RingTable>(*r2.table()), after);
      } else {
        ranges = moved_ranges(std::get<Ring64Table>(*router.table()), nodes,
                              std::get<Ring64Table>(*r2.table()), after);
      }
      double f = 0;
      for (const auto& m : ranges) f += m.fraction;
      write_out(a.out, svg::table_ring(*r2.table(), after,
                                       router.describe() + ": " + percent(f, 1) +
                                           " of the hash space changes owner",
                                       ranges));
      return;
    }
    // Other algorithms: keys per node before and after.
    const Router r2 = Router::build(a.spec, after);
    std::vector<std::string> names;
    for (const Node& n : nodes) names.push_back(n.name);
    for (const Node& n : after) {
      if (std::find(names.begin(), names.end(), n.name) == names.end()) names.push_back(n.name);
    }
    std::vector<double> before_keys(names.size(), 0), after_keys(names.size(), 0);
    std::uint64_t moved = 0;
    const std::uint64_t total =
        read_all_keys(a.keys, UINT64_MAX, "plot --kind moves", [&](std::string_view key) {
          const std::string& b = nodes[router.route(key)].name;
          const std::string& c = after[r2.route(key)].name;
          ++before_keys[static_cast<std::size_t>(std::find(names.begin(), names.end(), b) -
                                                 names.begin())];
          ++after_keys[static_cast<std::size_t>(std::find(names.begin(), names.end(), c) -
                                                names.begin())];
          moved += b != c;
        });
    write_out(a.out,
              svg::bars(router.describe() + ": " +
                            percent(static_cast<double>(moved) / static_cast<double>(total), 1) +
                            " of keys move",
                        "keys", names, {{"before", before_keys}, {"after", after_keys}}));
    return;
  }
  throw Error(ErrorCode::kInvalidArgument, "--kind must be ring, load, moves or sweep");
}

}  // namespace

void add_plot(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  auto* sub = app.add_subcommand("plot",
                                 "Draw an SVG: the ring (ring), load per node (load), what "
                                 "moves on a change (moves), or a parameter sweep (sweep).");
  sub->add_option("--kind", args->kind, "ring (default), load, moves or sweep");
  sub->add_option("--out", args->out, "Write the SVG to FILE (default: stdout)");
  add_routing_flags(sub, args->spec, args->nodes);
  add_key_flags(sub, args->keys, kMeasuredKeysHelp);
  sub->add_option("--add", args->add, "moves: node added (repeatable)");
  sub->add_option("--remove", args->remove, "moves: node removed (repeatable)");
  sub->add_option("--param", args->param, "sweep: vnodes (default), nodes, table-size or probes");
  sub->add_option("--values", args->values, "sweep: comma-separated values");
  sub->callback([args] { run_plot(*args); });
}

}  // namespace chash::cli
