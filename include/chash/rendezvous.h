// SPDX-License-Identifier: Apache-2.0
// chash — rendezvous / highest-random-weight hashing (Thaler & Ravishankar 1996), weighted with
// the logarithmic method (score = -w / ln(u), u uniform in (0,1) from hash(key, node)) so that
// each node wins with probability w / sum(w).
//
// Every node scores every key: O(N) per lookup, no table (16 bytes per node). Adding a node
// moves only keys to it; removing one moves only its keys; the preference order (pick_n,
// failover) is simply the nodes by descending score. Best for small N or when the preference
// list itself matters.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

struct RendezvousOptions {
  KeyHash node_hash = KeyHash::kXxh3;  // hashes node names into per-node seeds
};

class RendezvousTable {
 public:
  using Options = RendezvousOptions;

  static RendezvousTable build(std::span<const Node> nodes, const Options& options = {});

  NodeId pick(std::uint64_t hash) const noexcept {
    NodeId best = ids_[0];
    double best_score = score(0, hash);
    for (std::size_t i = 1; i < ids_.size(); ++i) {
      const double s = score(i, hash);
      if (s > best_score) {  // ties: the earlier node wins
        best_score = s;
        best = ids_[i];
      }
    }
    return best;
  }

  // Descending score; each step is one O(N) pass below the previous (score, position).
  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    double bound = INFINITY;
    std::size_t bound_pos = 0;
    for (std::size_t emitted = 0; emitted < ids_.size(); ++emitted) {
      std::size_t best = ids_.size();
      double best_score = -INFINITY;
      for (std::size_t i = 0; i < ids_.size(); ++i) {
        const double s = score(i, hash);
        const bool below = s < bound || (s == bound && i > bound_pos);
        if (below && (best == ids_.size() || s > best_score)) {
          best = i;
          best_score = s;
        }
      }
      if (best == ids_.size()) return;
      if (!f(ids_[best])) return;
      bound = best_score;
      bound_pos = best;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }

 private:
  double score(std::size_t i, std::uint64_t hash) const noexcept {
    const std::uint64_t h = hash::mix64(hash ^ seeds_[i]);
    if (uniform_) return static_cast<double>(h >> 11);  // same order as -1/ln(u)
    // u in (0,1): 53 random bits, offset by half a step so u is never 0 or 1.
    const double u = (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
    return -weights_[i] / std::log(u);
  }

  std::vector<NodeId> ids_;           // drawable nodes
  std::vector<std::uint64_t> seeds_;  // node_hash(name) per drawable node
  std::vector<double> weights_;
  bool uniform_ = true;
  std::size_t node_count_ = 0;
};

}  // namespace chash
