// SPDX-License-Identifier: Apache-2.0
// chash analyze — how evenly keys spread: per-node keys and share against the weight-fair
// share, max/mean, standard deviation, coefficient of variation; for table algorithms also the
// fraction of the hash space each node owns.
#include "chash/analysis.h"
#include "chash/error.h"
#include "report.h"

namespace chash::cli {

namespace {

struct AnalyzeArgs {
  RoutingSpec spec;
  NodesArg nodes;
  KeyInput keys;
  Format format = Format::kTable;
};

void run_analyze(const AnalyzeArgs& a) {
  require_routing(a.spec, a.nodes);
  require_key_input(a.keys);
  const auto nodes = a.nodes.load();
  const Router router = Router::build(a.spec, nodes);
  LoadCounter load(nodes.size());
  {
    KeySource src(a.keys);
    Progress progress("analyzing", src.expected());
    if (a.spec.balance_factor == 0) {
      // Keys in batches (Router::route_batch overlaps their hashing and lookups).
      constexpr std::size_t kBatch = 256;
      std::string_view keys[kBatch];
      NodeId owners[kBatch];
      for (std::size_t n; (n = src.next_batch(keys)) > 0;) {
        router.route_batch(std::span<const std::string_view>(keys, n),
                           std::span<NodeId>(owners, n));
        for (std::size_t k = 0; k < n; ++k) {
          load.add(owners[k]);
          progress.tick();
        }
      }
    } else {
      // Bounded loads: every key counted so far is load on its node, so one key at a time.
      std::vector<std::uint64_t> loads(nodes.size(), 0);
      std::string_view key;
      while (src.next(key)) {
        const NodeId id = router.route_bounded(key, loads);
        if (id != kNoNode) ++loads[id];
        load.add(id);
        progress.tick();
      }
    }
  }
  if (load.unrouted() > 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(load.unrouted()) + " keys could not be routed (not addresses?)");
  }
  const LoadStats s = load_stats(load.counts(), nodes);
  std::optional<std::vector<double>> owned;
  if (router.table()) owned = owned_fractions(*router.table());

  Out out;
  if (a.format == Format::kJson) {
    Json j;
    j["routing"] = router.describe();
    j["keys"] = s.keys;
    Json arr = Json::array();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Json n;
      n["node"] = json_name(nodes[i].name);
      n["weight"] = nodes[i].weight;
      n["keys"] = load.counts()[i];
      n["share"] = s.share[i];
      n["fair_share"] = s.fair_share[i];
      n["load_ratio"] = s.load_ratio[i];
      if (owned) n["owned_fraction"] = (*owned)[i];
      arr.push_back(n);
    }
    j["nodes"] = arr;
    j["max_over_mean"] = s.max_over_mean;
    j["min_over_mean"] = s.min_over_mean;
    j["stddev"] = s.stddev;
    j["cv"] = s.cv;
    out.put(j.dump(2) + "\n");
    return;
  }
  TextTable t;
  t.header = {"node", "weight", "keys", "share", "fair", "ratio"};
  t.numeric = {false, true, true, true, true, true, true};
  if (owned) t.header.push_back("owned");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::string> row = {
        nodes[i].name,       std::to_string(nodes[i].weight), std::to_string(load.counts()[i]),
        percent(s.share[i]), percent(s.fair_share[i]),        fixed(s.load_ratio[i], 3)};
    if (owned) row.push_back(percent((*owned)[i]));
    t.add(std::move(row));
  }
  if (a.format == Format::kCsv) {
    out.put(t.csv());
    return;
  }
  out.put("analyze: " + router.describe() + ", " + std::to_string(s.keys) + " keys, " +
          std::to_string(nodes.size()) + " nodes\n\n");
  out.put(t.render());
  out.put("\nmax/mean " + fixed(s.max_over_mean, 3) + "   min/mean " + fixed(s.min_over_mean, 3) +
          "   stddev " + fixed(s.stddev, 4) + "   cv " + fixed(s.cv, 4) +
          "   (ratio = share / weight-fair share)\n");
}

}  // namespace

void add_analyze(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* sub = app.add_subcommand(
      "analyze",
      "How evenly keys spread: per-node keys and share vs the weight-fair share, "
      "max/mean, stddev, coefficient of variation, owned hash space.");
  add_routing_flags(sub, args->spec, args->nodes);
  add_balance_flag(sub, args->spec);
  add_key_flags(sub, args->keys);
  add_format_flag(sub, args->format);
  sub->callback([args] { run_analyze(*args); });
}

}  // namespace chash::cli
