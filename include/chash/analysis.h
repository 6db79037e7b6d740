// SPDX-License-Identifier: Apache-2.0
// chash — measuring what a placement does: load balance, keys moved by a change, the share of
// the hash space each node owns, and the exact hash ranges that change owner. The CLI
// (analyze, migrate, sweep, demo) and the benchmarks report these same numbers.
//
// Example:
//   chash::LoadCounter load(nodes.size());
//   for (auto h : key_hashes) load.add(chash::pick(table, h));
//   chash::LoadStats s = chash::load_stats(load.counts(), nodes);   // s.max_over_mean ...
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/node.h"
#include "chash/table.h"

namespace chash {

// ---- Load balance ------------------------------------------------------------------------------

class LoadCounter {
 public:
  explicit LoadCounter(std::size_t node_count) : counts_(node_count, 0) {}
  void add(NodeId id) noexcept {
    if (id < counts_.size()) ++counts_[id];
    else ++unrouted_;
  }
  std::span<const std::uint64_t> counts() const noexcept { return counts_; }
  std::uint64_t unrouted() const noexcept { return unrouted_; }

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t unrouted_ = 0;
};

struct LoadStats {
  std::uint64_t keys = 0;
  std::vector<double> share;       // keys[i] / keys
  std::vector<double> fair_share;  // weight[i] / total weight (0 for drained nodes)
  std::vector<double> load_ratio;  // share / fair_share (1.0 = exactly fair; 0 for drained)
  double mean = 0;                 // keys per drawable node
  double max_over_mean = 0;        // weighted: max over nodes of share / fair_share
  double min_over_mean = 0;
  double stddev = 0;  // of load_ratio over drawable nodes
  double cv = 0;      // coefficient of variation of load_ratio (stddev / mean)
};

LoadStats load_stats(std::span<const std::uint64_t> counts, std::span<const Node> nodes);

// The fraction of the hash space each node owns, where the algorithm partitions it: ring and
// ring64 (arc lengths), maglev (table entries), slots (slots). nullopt for the others (modulo,
// jump, memento: shares equal the weights by construction; rendezvous, multiprobe: no fixed
// partition to measure — count keys instead).
std::optional<std::vector<double>> owned_fractions(const AnyTable& table);

// ---- Movement ----------------------------------------------------------------------------------

// Keys moved between two placements of the same keys, counted by node *name* so node lists
// that differ (added, removed, reordered) compare correctly.
class MoveCounter {
 public:
  MoveCounter(std::span<const Node> before, std::span<const Node> after);
  void add(NodeId before, NodeId after) noexcept;

  std::uint64_t keys() const noexcept { return keys_; }
  std::uint64_t moved() const noexcept { return moved_; }
  double moved_fraction() const noexcept {
    return keys_ ? static_cast<double>(moved_) / static_cast<double>(keys_) : 0.0;
  }
  // from-name -> to-name -> keys (only pairs that moved).
  std::map<std::pair<std::string, std::string>, std::uint64_t> matrix() const;

 private:
  std::vector<std::string> names_;           // union of names
  std::vector<std::uint32_t> before_index_;  // NodeId in before -> name index
  std::vector<std::uint32_t> after_index_;
  std::vector<std::uint64_t> cells_;  // names x names
  std::uint64_t keys_ = 0, moved_ = 0;
};

// The least fraction of keys any placement must move to go from fair shares under `before`
// to fair shares under `after` (total variation distance of the weight shares, by name):
// adding 1 node to n equal nodes gives 1/(n+1).
double optimal_moved_fraction(std::span<const Node> before, std::span<const Node> after);

// ---- Exact moved ranges on a ring ---------------------------------------------------------------

struct MovedRange {
  std::uint64_t first = 0;  // inclusive
  std::uint64_t last = 0;   // inclusive
  std::string from, to;     // owners before and after
  double fraction = 0;      // of the whole hash space
};

// Every maximal range of positions whose owner changes, given the boundaries where either
// owner function can change (the points of both rings) and the owners before and after as
// functions of a position (returning node names). Ranges are in position order; the first may
// wrap around (first > last).
template <class Pos, class BeforeFn, class AfterFn>
std::vector<MovedRange> moved_ranges(std::vector<Pos> bounds, BeforeFn&& owner_before,
                                     AfterFn&& owner_after) {
  const double space = static_cast<double>(std::numeric_limits<Pos>::max()) + 1.0;
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<MovedRange> out;
  const std::size_t n = bounds.size();
  // The boundaries split the circle into arcs (prev, end]; on each, both owners are constant
  // (the owner of a ring position is the owner of its successor point).
  for (std::size_t i = 0; i < n; ++i) {
    const Pos end = bounds[i];
    const std::string_view from = owner_before(end);
    const std::string_view to = owner_after(end);
    if (from == to) continue;
    const Pos prev = bounds[i == 0 ? n - 1 : i - 1];
    const Pos first = static_cast<Pos>(prev + 1);  // wraps for i == 0
    const double len = n == 1   ? space
                       : i == 0 ? static_cast<double>(end) + (space - static_cast<double>(prev))
                                : static_cast<double>(end - prev);
    if (!out.empty() && out.back().from == from && out.back().to == to &&
        static_cast<Pos>(out.back().last + 1) == first) {
      out.back().last = end;
      out.back().fraction += len / space;
    } else {
      out.push_back(MovedRange{first, end, std::string(from), std::string(to), len / space});
    }
  }
  return out;
}

// The same for two rings of the same position width (RingTable: 32-bit; Ring64Table: 64-bit).
template <class Ring>
std::vector<MovedRange> moved_ranges(const Ring& before, std::span<const Node> before_nodes,
                                     const Ring& after, std::span<const Node> after_nodes);

}  // namespace chash
