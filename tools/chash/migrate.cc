// SPDX-License-Identifier: Apache-2.0
// chash migrate — what a change does before it is made: the fraction of keys that move against
// the least any placement could move, where they go (from -> to), and for rings the exact hash
// ranges that change owner, as a plan a person can act on.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "change.h"
#include "chash/analysis.h"
#include "chash/error.h"
#include "report.h"

namespace chash::cli {

namespace {

struct MigrateArgs {
  RoutingSpec spec;
  NodesArg nodes;
  KeyInput keys;
  Format format = Format::kTable;
  std::vector<std::string> add, remove, reweight, down;
  std::string after_nodes_file;
  bool all_ranges = false;
};

std::string hex_pos(std::uint64_t v, bool wide) {
  char buf[24];
  if (wide) {
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(v));
  }
  return buf;
}

// Owner name of a key hash / ring position in a snapshot ("-" if none is up).
std::string_view owner(const Snapshot& s, std::uint64_t h) {
  const NodeId id = s.pick(h);
  return id == kNoNode ? std::string_view("-") : s.name(id);
}

void run_migrate(const MigrateArgs& a) {
  require_routing(a.spec, a.nodes);
  const bool changes =
      !a.add.empty() || !a.remove.empty() || !a.reweight.empty() || !a.down.empty();
  if (changes == !a.after_nodes_file.empty()) {
    throw CLI::ValidationError(
        "migrate", "give the change: --add/--remove/--reweight/--down, or --after-nodes-file");
  }
  require_key_input(a.keys);
  const Change c = build_change(
      a.spec, a.nodes.load(), ChangeArgs{a.add, a.remove, a.reweight, a.down, a.after_nodes_file});
  const auto& before_nodes = c.before_nodes;
  const auto& after_nodes = c.after_nodes;
  const auto& after_effective = c.after_effective;
  const auto& snap_before = c.snap_before;
  const auto& snap_after = c.snap_after;
  const auto& kr_after = c.kr_after;
  const Router& kb = *c.kr_before;
  auto after_of = [&](std::span<const std::string_view> keys, std::span<NodeId> out) {
    c.after_of(keys, out);
  };
  auto before_of = [&](std::span<const std::string_view> keys, std::span<NodeId> out) {
    c.before_of(keys, out);
  };

  const std::vector<Node>& names_before = c.names_before;
  MoveCounter moves(names_before, after_nodes);
  LoadCounter load_before(names_before.size()), load_after(after_nodes.size());
  {
    KeySource src(a.keys);
    Progress progress("migrating", src.expected());
    constexpr std::size_t kBatch = 256;
    std::string_view keys[kBatch];
    NodeId before[kBatch], after[kBatch];
    for (std::size_t n; (n = src.next_batch(keys)) > 0;) {
      before_of(std::span<const std::string_view>(keys, n), std::span<NodeId>(before, n));
      after_of(std::span<const std::string_view>(keys, n), std::span<NodeId>(after, n));
      for (std::size_t k = 0; k < n; ++k) {
        moves.add(before[k], after[k]);
        load_before.add(before[k]);
        load_after.add(after[k]);
        progress.tick();
      }
    }
  }
  const double optimum = optimal_moved_fraction(before_nodes, after_effective);

  // Exact ranges for rings.
  std::vector<MovedRange> ranges;
  bool wide = false;
  const AnyTable* tb = snap_before ? &snap_before->table() : kb.table();
  const AnyTable* ta = snap_after ? &snap_after->table() : (kr_after ? kr_after->table() : nullptr);
  if (tb && ta && tb->index() == ta->index()) {
    auto ring_ranges = [&](const auto& rb, const auto& ra) {
      using Pos = std::decay_t<decltype(rb.positions()[0])>;
      std::vector<Pos> bounds(rb.positions().begin(), rb.positions().end());
      bounds.insert(bounds.end(), ra.positions().begin(), ra.positions().end());
      auto ob = [&](Pos p) -> std::string_view {
        if (snap_before) return owner(*snap_before, p);
        return before_nodes[rb.pick(p)].name;
      };
      auto oa = [&](Pos p) -> std::string_view {
        if (snap_after) return owner(*snap_after, p);
        return after_nodes[ra.pick(p)].name;
      };
      return moved_ranges(std::move(bounds), ob, oa);
    };
    if (const auto* rb = std::get_if<RingTable>(tb)) {
      ranges = ring_ranges(*rb, std::get<RingTable>(*ta));
    } else if (const auto* rb64 = std::get_if<Ring64Table>(tb)) {
      ranges = ring_ranges(*rb64, std::get<Ring64Table>(*ta));
      wide = true;
    }
  }
  const bool have_ranges = tb != nullptr && (std::holds_alternative<RingTable>(*tb) ||
                                             std::holds_alternative<Ring64Table>(*tb));

  const auto matrix = moves.matrix();
  Out out;
  if (a.format == Format::kJson) {
    Json j;
    j["routing"] = kb.describe();
    j["keys"] = moves.keys();
    j["moved"] = moves.moved();
    j["moved_fraction"] = moves.moved_fraction();
    j["optimal_fraction"] = optimum;
    Json m = Json::array();
    for (const auto& [k, v] : matrix) {
      m.push_back({{"from", json_name(k.first)}, {"to", json_name(k.second)}, {"keys", v}});
    }
    j["moves"] = m;
    if (have_ranges) {
      Json r = Json::array();
      for (const auto& x : ranges) {
        r.push_back({{"first", x.first},
                     {"last", x.last},
                     {"from", json_name(x.from)},
                     {"to", json_name(x.to)},
                     {"fraction", x.fraction}});
      }
      j["ranges"] = r;
    }
    out.put(j.dump(2) + "\n");
    return;
  }
  TextTable mt;
  mt.header = {"from", "to", "keys", "of all keys"};
  mt.numeric = {false, false, true, true};
  for (const auto& [k, v] : matrix) {
    mt.add({k.first, k.second, std::to_string(v),
            percent(static_cast<double>(v) /
                    static_cast<double>(std::max<std::uint64_t>(moves.keys(), 1)))});
  }
  if (a.format == Format::kCsv) {
    out.put(mt.csv());
    return;
  }
  const double ratio = optimum > 0 ? moves.moved_fraction() / optimum : 0;
  out.put("migrate: " + kb.describe() + ", " + std::to_string(moves.keys()) + " keys\n\n");
  out.put("moved    " + std::to_string(moves.moved()) + " keys (" +
          percent(moves.moved_fraction()) + ")\n");
  out.put("optimum  " + percent(optimum) + " (the least any placement must move)" +
          (optimum > 0 ? ", moved/optimum " + fixed(ratio, 2) : std::string()) + "\n\n");
  if (!matrix.empty()) out.put(mt.render());
  if (have_ranges) {
    out.put("\nhash ranges that change owner (ring positions, inclusive): " +
            std::to_string(ranges.size()) + "\n");
    TextTable rt;
    rt.header = {"first", "last", "from", "to", "of hash space"};
    rt.numeric = {false, false, false, false, true};
    const std::size_t shown =
        a.all_ranges ? ranges.size() : std::min<std::size_t>(ranges.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) {
      rt.add({hex_pos(ranges[i].first, wide), hex_pos(ranges[i].last, wide), ranges[i].from,
              ranges[i].to, percent(ranges[i].fraction, 4)});
    }
    out.put(rt.render());
    if (shown < ranges.size())
      out.put("... " + std::to_string(ranges.size() - shown) + " more (--all-ranges)\n");
  }
}

}  // namespace

void add_migrate(CLI::App& app) {
  auto args = std::make_shared<MigrateArgs>();
  auto* sub = app.add_subcommand(
      "migrate",
      "What a change does: keys moved vs the optimum, the from -> to matrix, and for "
      "rings the exact hash ranges that change owner.");
  add_routing_flags(sub, args->spec, args->nodes);
  add_key_flags(sub, args->keys);
  add_format_flag(sub, args->format);
  sub->add_option("--add", args->add, "Add node NAME or NAME=WEIGHT (repeatable)");
  sub->add_option("--remove", args->remove, "Remove node NAME (repeatable)");
  sub->add_option("--reweight", args->reweight, "Set NAME=WEIGHT (repeatable; 0 drains)");
  sub->add_option("--down", args->down, "Mark NAME down: it keeps its place (repeatable)");
  sub->add_option("--after-nodes-file", args->after_nodes_file,
                  "Compare with this node list instead");
  sub->add_flag("--all-ranges", args->all_ranges, "List every moved range (table output)");
  sub->callback([args] { run_migrate(*args); });
}

}  // namespace chash::cli
