// SPDX-License-Identifier: Apache-2.0
// chash — multi-probe consistent hashing (Appleton & O'Reilly 2015, arXiv:1505.00062).
//
// One point per unit of weight on a 64-bit ring, and k probes per key (default 21, the paper's
// choice for a peak-to-mean ratio of about 1.05): each probe finds its successor point, and the
// closest successor wins. O(N) memory instead of O(N * vnodes), O(k log N) lookups. Adding a
// node moves only keys to it; removing one moves only its keys. Next choices: the closest
// successor of any probe among nodes not chosen yet.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

struct MultiProbeOptions {
  std::uint32_t probes = 21;            // 1..1024
  KeyHash point_hash = KeyHash::kXxh3;  // hashes "{name}#{i}" for the i-th unit of weight
};

class MultiProbeTable {
 public:
  using Options = MultiProbeOptions;

  static MultiProbeTable build(std::span<const Node> nodes, const Options& options = {});

  NodeId pick(std::uint64_t hash) const noexcept {
    std::uint64_t best_distance = ~std::uint64_t{0};
    std::size_t best = 0;
    for (std::uint32_t j = 0; j < probes_; ++j) {
      const std::uint64_t p = probe(hash, j);
      const std::size_t i = successor(p);
      const std::uint64_t d = positions_[i] - p;  // clockwise distance, wraps mod 2^64
      if (d < best_distance) {
        best_distance = d;
        best = i;
      }
    }
    return owners_[best];
  }

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    const std::size_t n = positions_.size();
    while (seen.size() < drawable_) {
      std::uint64_t best_distance = ~std::uint64_t{0};
      NodeId best = kNoNode;
      for (std::uint32_t j = 0; j < probes_; ++j) {
        const std::uint64_t p = probe(hash, j);
        std::size_t i = successor(p);
        // Walk to the first point whose node is not chosen yet.
        for (std::size_t step = 0; step < n && seen.contains(owners_[i]); ++step) {
          if (++i == n) i = 0;
        }
        const std::uint64_t d = positions_[i] - p;
        if (d < best_distance && !seen.contains(owners_[i])) {
          best_distance = d;
          best = owners_[i];
        }
      }
      if (best == kNoNode) return;
      seen.insert(best);
      if (!f(best)) return;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }

 private:
  static std::uint64_t probe(std::uint64_t hash, std::uint32_t j) noexcept {
    return j == 0 ? hash : internal::rehash(hash, j);
  }
  std::size_t successor(std::uint64_t p) const noexcept {
    const std::size_t i = static_cast<std::size_t>(
        std::lower_bound(positions_.begin(), positions_.end(), p) - positions_.begin());
    return i == positions_.size() ? 0 : i;
  }

  std::vector<std::uint64_t> positions_;
  std::vector<NodeId> owners_;
  std::uint32_t probes_ = 21;
  std::size_t drawable_ = 0;
  std::size_t node_count_ = 0;
};

}  // namespace chash
