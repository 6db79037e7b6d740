// SPDX-License-Identifier: Apache-2.0
#include "chash/jumpback.h"

#include "internal.h"

namespace chash {

JumpBackTable JumpBackTable::build(std::span<const Node> nodes, const Options&) {
  validate_nodes(nodes);
  internal::require_unweighted(nodes, "jumpback");
  JumpBackTable t;
  t.node_count_ = nodes.size();
  std::size_t last = nodes.size();
  while (last > 0 && nodes[last - 1].weight == 0) --last;  // trailing drained: truly removed
  t.buckets_ = static_cast<std::uint32_t>(last);
  for (std::size_t i = 0; i < last; ++i) {
    if (nodes[i].weight == 0) {
      if (t.drained_.empty()) t.drained_.assign(last, 0);
      t.drained_[i] = 1;
    } else {
      ++t.drawable_;
    }
  }
  return t;
}

NodeId JumpBackTable::pick_slow(std::uint64_t hash) const noexcept {
  // The first choice is drained: rehash until a live bucket comes up (as JumpTable: each attempt
  // lands on a drained bucket with probability drained/buckets; the scan bounds the worst case).
  for (std::uint64_t attempt = 1; attempt <= kRehashAttempts; ++attempt) {
    const NodeId b = jumpback_hash(internal::rehash(hash, attempt), buckets_);
    if (!drained_[b]) return b;
  }
  const NodeId start = jumpback_hash(hash, buckets_);
  for (std::uint32_t i = 1; i < buckets_; ++i) {
    const NodeId b = (start + i) % buckets_;
    if (!drained_[b]) return b;
  }
  return kNoNode;  // unreachable: validate_nodes guarantees a drawable node
}

}  // namespace chash
