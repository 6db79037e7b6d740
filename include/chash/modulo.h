// SPDX-License-Identifier: Apache-2.0
// chash — modulo placement: node = hash % N (weighted: hash % total_weight, then a walk over
// cumulative weights, as nginx's plain `hash $key` does).
//
// The baseline the articles warn about: going from N to N+1 nodes moves about N/(N+1) of the
// keys (4 -> 5 nodes: ~80%). Drained (weight 0) nodes are left out of the modulus, so removing a
// node also reshuffles nearly everything. O(1) lookup (O(log N) weighted), 4 bytes per node.
// Next choices (replicas, failover): the following drawable nodes in list order, cyclically.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

class ModuloTable {
 public:
  struct Options {};

  static ModuloTable build(std::span<const Node> nodes, const Options& options = {});

  NodeId pick(std::uint64_t hash) const noexcept { return live_[slot_of(hash)]; }

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    const std::size_t n = live_.size();
    const std::size_t start = slot_of(hash);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t s = start + i;
      if (s >= n) s -= n;
      if (!f(live_[s])) return;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }

 private:
  // Reduction: `%` (changing it changes every mapping).
  std::size_t slot_of(std::uint64_t hash) const noexcept {
    if (cumulative_.empty()) return static_cast<std::size_t>(hash % live_.size());
    const std::uint64_t w = hash % total_weight_;
    return static_cast<std::size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), w) -
                                    cumulative_.begin());
  }

  std::vector<NodeId> live_;               // drawable nodes in list order
  std::vector<std::uint64_t> cumulative_;  // empty when all weights are equal
  std::uint64_t total_weight_ = 0;
  std::size_t node_count_ = 0;
};

}  // namespace chash
