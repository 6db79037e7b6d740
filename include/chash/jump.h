// SPDX-License-Identifier: Apache-2.0
// chash — jump consistent hash (Lamping & Veach 2014, "A Fast, Minimal Memory, Consistent Hash
// Algorithm", arXiv:1406.2294).
//
// No table at all: O(ln N) time, O(1) memory. Growing N -> N+1 moves exactly the keys that land
// on the new last bucket (1/(N+1)), and only to it. Jump numbers buckets, so only the LAST node
// can truly be removed; a drained (weight 0) node elsewhere keeps its bucket and its keys are
// rehashed to the other nodes (only its keys move) — use memento for frequent removals in the
// middle. Unweighted: weights must be 0 or 1.
// Next choices: jump over a rehash of the key (attempt 1, 2, ...), then a linear scan.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

// The paper's algorithm, verbatim in behaviour: the 64-bit LCG 2862933555777941757 * k + 1 and the
// jump (b + 1) * 2^31 / ((k >> 33) + 1) in double precision.
constexpr std::uint32_t jump_consistent_hash(std::uint64_t key,
                                             std::uint32_t num_buckets) noexcept {
  std::int64_t b = -1;
  std::int64_t j = 0;
  while (j < static_cast<std::int64_t>(num_buckets)) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<std::int64_t>(
        static_cast<double>(b + 1) *
        (static_cast<double>(std::int64_t{1} << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<std::uint32_t>(b);
}

class JumpTable {
 public:
  struct Options {};

  static JumpTable build(std::span<const Node> nodes, const Options& options = {});

  NodeId pick(std::uint64_t hash) const noexcept {
    const NodeId b = jump_consistent_hash(hash, buckets_);
    if (drained_.empty() || !drained_[b]) return b;
    return pick_slow(hash);
  }

  // pick() for every hash (out.size() >= hashes.size()). One key's loop is a chain of dependent
  // float conversions and multiplies; here 8 keys run it in lockstep, so the chains overlap.
  void pick_batch(std::span<const std::uint64_t> hashes, std::span<NodeId> out) const noexcept;

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    NodeId b = pick(hash);
    if (!seen.insert(b) || !f(b)) return;
    for (std::uint64_t attempt = 1; attempt <= kRehashAttempts; ++attempt) {
      if (seen.size() == drawable_) return;
      b = jump_consistent_hash(internal::rehash(hash, attempt), buckets_);
      if (is_drained(b) || !seen.insert(b)) continue;
      if (!f(b)) return;
    }
    for (NodeId i = 0; i < buckets_ && seen.size() < drawable_; ++i) {
      if (is_drained(i) || !seen.insert(i)) continue;
      if (!f(i)) return;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }

 private:
  static constexpr std::uint64_t kRehashAttempts = 64;

  bool is_drained(NodeId b) const noexcept { return !drained_.empty() && drained_[b]; }
  NodeId pick_slow(std::uint64_t hash) const noexcept;

  std::uint32_t buckets_ = 0;          // trailing drained nodes are trimmed off
  std::vector<std::uint8_t> drained_;  // empty when no bucket below buckets_ is drained
  std::size_t drawable_ = 0;
  std::size_t node_count_ = 0;
};

}  // namespace chash
