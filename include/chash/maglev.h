// SPDX-License-Identifier: Apache-2.0
// chash — Maglev hashing (Eisenbud et al. 2016, "Maglev: A Fast and Reliable Software Network
// Load Balancer", NSDI, section 3.4), weighted as Envoy's maglev load balancer does it: a node of
// weight w takes a turn in w of every max_weight rounds of the table fill.
//
// A lookup is one read of a prime-sized table (default 65537, Envoy's default): O(1); entries
// take 1 byte up to 256 nodes, 2 up to 65,536, else 4 (chash/node_ids.h). Balance is near
// perfect (each node owns M/N +-1 entries unweighted); the price is minimal but non-zero
// disruption: removing a node moves its keys and a small fraction of others.
// Offset and skip per node come from the node hash of its name with seeds 0 and 1.
// Next choices: the owners of the following table entries.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chash/hash.h"
#include "chash/internal/fastmod.h"
#include "chash/internal/packed_node_ids.h"
#include "chash/node.h"
#include "chash/node_ids.h"
#include "chash/placement.h"

namespace chash {

struct MaglevOptions {
  std::uint64_t table_size = 65537;     // must be prime, >= drawable nodes, <= kMaxMaglevTableSize
  KeyHash node_hash = KeyHash::kXxh64;  // hashed with seed 0 (offset) and seed 1 (skip)
};

inline constexpr std::uint64_t kMaxMaglevTableSize = std::uint64_t{1} << 26;

class MaglevTable {
 public:
  using Options = MaglevOptions;

  static MaglevTable build(std::span<const Node> nodes, const Options& options = {});

  // The entry of `hash`: hash % table size, computed by Barrett reduction with the table's
  // precomputed reciprocal (internal/fastmod.h: exact for every 64-bit hash, no `div`).
  std::size_t entry_of(std::uint64_t hash) const noexcept {
    return static_cast<std::size_t>(mod_(hash));
  }
  // always_inline: left to GCC, the 3-way entry width makes it big enough not to be inlined into
  // callers' loops, which costs a call per lookup.
  [[gnu::always_inline]] NodeId pick(std::uint64_t hash) const noexcept {
    return table_[entry_of(hash)];
  }

  // pick() for hashes[i] into out[i] (out.size() >= hashes.size()): the entries of a group of
  // 16 keys are prefetched before any is read, so their cache misses overlap. Same results as
  // pick() one at a time.
  void pick_batch(std::span<const std::uint64_t> hashes, std::span<NodeId> out) const noexcept;

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    const std::size_t m = table_.size();
    std::size_t i = entry_of(hash);
    for (std::size_t step = 0; step < m && seen.size() < drawable_; ++step) {
      const NodeId id = table_[i];
      if (seen.insert(id) && !f(id)) return;
      if (++i == m) i = 0;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }
  NodeIdsView entries() const noexcept { return table_.view(); }

 private:
  internal::PackedNodeIds table_;
  internal::FastMod64 mod_;  // x % table_.size()
  std::size_t drawable_ = 0;
  std::size_t node_count_ = 0;
};

bool is_prime(std::uint64_t n) noexcept;

}  // namespace chash
