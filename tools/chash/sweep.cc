// SPDX-License-Identifier: Apache-2.0
// chash sweep — vary one parameter and measure balance and movement at each value: the measured
// table behind advice like "150-200 virtual nodes per server".
#include "sweep.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include "chash/analysis.h"
#include "chash/bounded_load.h"
#include "chash/error.h"
#include "chash/ring_spec.h"
#include "report.h"

namespace chash::cli {

std::vector<std::uint64_t> parse_values(const std::string& list) {
  std::vector<std::uint64_t> v;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    std::uint64_t x = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
    if (ec != std::errc() || p != item.data() + item.size() || item.empty()) {
      throw Error(ErrorCode::kParse, "--values: \"" + item + "\" is not a whole number");
    }
    v.push_back(x);
    start = comma + 1;
  }
  if (v.empty() || v.size() > 1000)
    throw Error(ErrorCode::kInvalidArgument, "--values takes 1..1000 values");
  return v;
}

namespace {

std::vector<Node> numbered(std::uint64_t n) {
  if (n == 0 || n > kMaxNodes) {
    throw Error(ErrorCode::kInvalidArgument, "node count must be 1.." + std::to_string(kMaxNodes));
  }
  std::vector<Node> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back({"node-" + std::to_string(i), 1});
  return v;
}

// Routes keys in batches, calling f(i, node) for key i.
template <class F>
void route_all(const Router& r, std::span<const std::string> keys, F&& f) {
  constexpr std::size_t kChunk = 256;
  std::string_view views[kChunk];
  NodeId out[kChunk];
  for (std::size_t i = 0; i < keys.size(); i += kChunk) {
    const std::size_t n = std::min(kChunk, keys.size() - i);
    for (std::size_t k = 0; k < n; ++k) views[k] = keys[i + k];
    r.route_batch({views, n}, {out, n});
    for (std::size_t k = 0; k < n; ++k) f(i + k, out[k]);
  }
}

}  // namespace

SweepPoint measure_point(const RoutingSpec& spec, const std::vector<Node>& nodes,
                         std::span<const std::string> keys) {
  SweepPoint p;
  const auto t0 = std::chrono::steady_clock::now();
  const Router before = Router::build(spec, nodes);
  p.build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Node> grown = nodes;
  grown.push_back({"node-added", 1});
  const Router after = Router::build(spec, grown);
  LoadCounter load(nodes.size());
  std::vector<NodeId> owner(keys.size());
  route_all(before, keys, [&](std::size_t i, NodeId id) { load.add(owner[i] = id); });
  const LoadStats s = load_stats(load.counts(), nodes);
  p.max_over_mean = s.max_over_mean;
  p.stddev = s.stddev;
  p.cv = s.cv;
  MoveCounter moves(nodes, grown);
  route_all(after, keys, [&](std::size_t i, NodeId id) { moves.add(owner[i], id); });
  p.moved_on_add = moves.moved_fraction();
  p.optimal_on_add = optimal_moved_fraction(nodes, grown);
  return p;
}

SweepPoint measure_point(Algorithm algo, const std::vector<Node>& nodes, const TableOptions& opt,
                         std::span<const std::uint64_t> hashes) {
  SweepPoint p;
  const auto t0 = std::chrono::steady_clock::now();
  const AnyTable table = build_table(algo, nodes, opt);
  p.build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  LoadCounter load(nodes.size());
  std::vector<NodeId> owner(hashes.size());
  for (std::size_t i = 0; i < hashes.size(); ++i) load.add(owner[i] = pick(table, hashes[i]));
  const LoadStats s = load_stats(load.counts(), nodes);
  p.max_over_mean = s.max_over_mean;
  p.stddev = s.stddev;
  p.cv = s.cv;
  // Movement when one node joins: the same table options with one more node.
  std::vector<Node> grown = nodes;
  grown.push_back({"node-added", 1});
  const AnyTable bigger = build_table(algo, grown, opt);
  MoveCounter moves(nodes, grown);
  for (std::size_t i = 0; i < hashes.size(); ++i) moves.add(owner[i], pick(bigger, hashes[i]));
  p.moved_on_add = moves.moved_fraction();
  p.optimal_on_add = optimal_moved_fraction(nodes, grown);
  return p;
}

namespace {

struct SweepArgs {
  std::string algo = "ring";
  std::string param = "vnodes";
  std::string values;
  std::uint64_t nodes = 10;
  std::string hash;
  std::optional<std::string> ring;
  KeyInput keys;
  Format format = Format::kTable;
};

// The rows of a sweep, one per value, and how they are printed (table, CSV or JSON).
struct SweepRows {
  TextTable table;
  Json json = Json::array();

  explicit SweepRows(const std::string& param) {
    table.header = {param, "max/mean", "stddev", "cv", "moved on +1", "optimum", "build ms"};
    table.numeric = {true, true, true, true, true, true, true};
  }

  void add(const std::string& param, std::uint64_t v, const SweepPoint& p) {
    table.add({std::to_string(v), fixed(p.max_over_mean, 3), fixed(p.stddev, 4), fixed(p.cv, 4),
               percent(p.moved_on_add), percent(p.optimal_on_add), fixed(p.build_ms, 1)});
    json.push_back({{param, v},
                    {"max_over_mean", p.max_over_mean},
                    {"stddev", p.stddev},
                    {"cv", p.cv},
                    {"moved_on_add", p.moved_on_add},
                    {"optimal_on_add", p.optimal_on_add},
                    {"build_ms", p.build_ms}});
  }

  // what_key/what: "algorithm"/"ring" or "ring"/the spec; title: "ring, " or "ring spec ...; ".
  void print(const SweepArgs& a, const char* what_key, const std::string& what,
             const std::string& title, std::size_t keys) const {
    Out out;
    switch (a.format) {
      case Format::kJson: {
        Json j;
        j[what_key] = what;
        j["param"] = a.param;
        j["keys"] = keys;
        j["synthetic"] = a.keys.synthetic > 0;
        j["points"] = json;
        out.put(j.dump(2) + "\n");
        break;
      }
      case Format::kCsv:
        out.put(table.csv());
        break;
      case Format::kTable:
        out.put("sweep: " + title + a.param + ", " + keys_origin(a.keys, keys) +
                (a.param == "nodes" ? std::string() : ", " + std::to_string(a.nodes) + " nodes") +
                "\n\n");
        out.put(table.render());
        break;
    }
  }
};

// A ring spec, swept over vnodes or nodes: the keys themselves are kept (the spec hashes them).
void run_ring_sweep(SweepArgs a) {
  if (a.param != "vnodes" && a.param != "nodes") {
    throw Error(ErrorCode::kInvalidArgument, "with --ring, --param must be vnodes or nodes");
  }
  if (!a.hash.empty()) {
    throw Error(ErrorCode::kUnsupported, "a ring spec names its own hash: drop --hash");
  }
  const auto values = parse_values(a.values);
  RoutingSpec spec;
  spec.ring = a.ring;
  const std::string described = to_string(parse_ring_spec(*a.ring));  // fails before reading keys
  default_to_synthetic(a.keys);
  std::vector<std::string> keys;
  read_all_keys(a.keys, 10'000'000, "sweep --ring",
                [&](std::string_view k) { keys.emplace_back(k); });
  SweepRows rows(a.param);
  Progress progress("sweeping", values.size());
  for (std::uint64_t v : values) {
    std::vector<Node> nodes = numbered(a.param == "nodes" ? v : a.nodes);
    if (a.param == "vnodes") {
      if (v > 65536) throw Error(ErrorCode::kInvalidArgument, "--values: vnodes are 0..65536");
      spec.vnodes = static_cast<std::uint32_t>(v);
    }
    rows.add(a.param, v, measure_point(spec, nodes, keys));
    progress.tick();
  }
  rows.print(a, "ring", described, "ring spec " + described + "; ", keys.size());
}

void run_sweep(SweepArgs a) {
  if (a.ring) {
    run_ring_sweep(std::move(a));
    return;
  }
  const Algorithm algo = parse_algorithm(a.algo);
  const auto values = parse_values(a.values);
  const KeyHash kh = a.hash.empty() ? KeyHash::kXxh3 : parse_key_hash(a.hash);
  default_to_synthetic(a.keys);
  // The keys are read once and kept as hashes (8 bytes each) for every point of the sweep.
  std::vector<std::uint64_t> hashes;
  read_all_keys(a.keys, 50'000'000, "sweep", [&](std::string_view key) {
    hashes.push_back(algo == Algorithm::kSlots && a.hash.empty() ? redis_key_slot(key)
                                                                 : hash_key(kh, key));
  });

  SweepRows rows(a.param);
  Progress progress("sweeping", values.size());
  for (std::uint64_t v : values) {
    TableOptions opt;
    std::vector<Node> nodes = numbered(a.nodes);
    if (a.param == "vnodes") {
      opt.ring.vnodes = static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 1u << 20));
    } else if (a.param == "nodes") {
      nodes = numbered(v);
    } else if (a.param == "table-size") {
      opt.maglev.table_size = v;
    } else if (a.param == "probes") {
      opt.multiprobe.probes = static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 1u << 20));
    } else if (a.param == "balance-factor") {
      // handled below
    } else {
      throw Error(ErrorCode::kInvalidArgument,
                  "--param must be vnodes, nodes, table-size, probes or balance-factor");
    }
    std::vector<std::string> row;
    if (a.param == "balance-factor") {
      const BoundedSweepPoint b =
          measure_bounded(algo, nodes, opt, hashes, static_cast<std::uint32_t>(v));
      if (rows.json.empty()) {
        rows.table.header = {"factor", "max/mean load", "not first choice", "moved on +1"};
        rows.table.numeric = {true, true, true, true};
      }
      rows.table.add({std::to_string(v), fixed(b.max_over_mean, 3), percent(b.spilled),
                      percent(b.moved_on_add)});
      rows.json.push_back({{"balance_factor", v},
                           {"max_over_mean", b.max_over_mean},
                           {"not_first_choice", b.spilled},
                           {"moved_on_add", b.moved_on_add}});
    } else {
      rows.add(a.param, v, measure_point(algo, nodes, opt, hashes));
    }
    progress.tick();
  }
  const std::string name(algorithm_name(algo));
  rows.print(a, "algorithm", name, name + ", ", hashes.size());
}

}  // namespace

BoundedSweepPoint measure_bounded(Algorithm algo, const std::vector<Node>& nodes,
                                  const TableOptions& opt, std::span<const std::uint64_t> hashes,
                                  std::uint32_t factor) {
  // Requests arrive one per key hash, with a hot key (every 10th request) on top; each stays in
  // flight, so loads grow with the request count: the shape of a cache under a hot key. The same
  // requests go to the nodes with one more: "moved on +1" is the share of requests whose node
  // differs, both with bounded loads (where the plain algorithm's movement would leave out the
  // requests the bound sends elsewhere, and be the same at every factor).
  BoundedSweepPoint r;
  std::vector<Node> grown = nodes;
  grown.push_back({"node-added", 1});
  const AnyTable table = build_table(algo, nodes, opt);
  const AnyTable bigger = build_table(algo, grown, opt);
  std::vector<std::uint64_t> load(nodes.size(), 0), load_grown(grown.size(), 0);
  std::uint64_t total = 0, spilled = 0, moved = 0;
  std::visit(
      [&](const auto& t) {
        using T = std::decay_t<decltype(t)>;
        const T& t2 = std::get<T>(bigger);  // one algorithm: the same alternative
        BoundedLoad<T> bounded(t, nodes, factor);
        BoundedLoad<T> bounded_grown(t2, grown, factor);
        for (std::size_t i = 0; i < hashes.size(); ++i) {
          const std::uint64_t h = i % 10 == 0 ? hashes[0] : hashes[i];
          const NodeId id = bounded.pick(h, load, total);
          const NodeId id2 = bounded_grown.pick(h, load_grown, total);
          spilled += id != t.pick(h);
          moved += id != id2;  // node ids 0..n-1 name the same nodes in both
          ++load[id];
          ++load_grown[id2];
          ++total;
        }
      },
      table);
  const LoadStats s = load_stats(load, nodes);
  r.max_over_mean = s.max_over_mean;
  r.spilled = static_cast<double>(spilled) / static_cast<double>(hashes.size());
  r.moved_on_add = static_cast<double>(moved) / static_cast<double>(hashes.size());
  return r;
}

void add_sweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  auto* sub = app.add_subcommand(
      "sweep",
      "Vary one parameter (vnodes, nodes, table-size, probes, balance-factor) and measure "
      "balance and keys moved when a node joins at each value.");
  auto* algo = sub->add_option("--algo", args->algo, "Native algorithm (default ring)");
  sub->add_option("--ring", args->ring,
                  "Sweep a ring spec instead (docs/CLI.md, \"Ring specs\"); --param vnodes or "
                  "nodes")
      ->excludes(algo);
  sub->add_option("--param", args->param,
                  "vnodes (default), nodes, table-size, probes or balance-factor");
  sub->add_option("--values", args->values, "Comma-separated values, e.g. 1,10,50,100,160,200,500")
      ->required();
  sub->add_option("--node-count", args->nodes,
                  "Nodes when the parameter is not 'nodes' (default 10)");
  sub->add_option("--hash", args->hash, "Key hash (default xxh3)");
  add_key_flags(sub, args->keys, kMeasuredKeysHelp);
  add_format_flag(sub, args->format);
  sub->callback([args] { run_sweep(*args); });
}

}  // namespace chash::cli
