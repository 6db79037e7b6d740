// SPDX-License-Identifier: Apache-2.0
// The table shared by jump and JumpBackHash (chash/internal/numbered_table.h).
#include "chash/internal/numbered_table.h"

#include "chash/jump.h"
#include "chash/jumpback.h"
#include "internal.h"

namespace chash::internal {

template <class Buckets>
NumberedBucketTable<Buckets> NumberedBucketTable<Buckets>::build(std::span<const Node> nodes,
                                                                 const Options&) {
  validate_nodes(nodes);
  require_unweighted(nodes, Buckets::kName);
  NumberedBucketTable t;
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

template <class Buckets>
NodeId NumberedBucketTable<Buckets>::pick_slow(std::uint64_t hash) const noexcept {
  // The first choice is drained: rehash until a live bucket comes up. Every attempt lands on a
  // drained bucket with probability drained/buckets, so 64 attempts nearly always suffice; the
  // scan after them keeps the worst case bounded.
  for (std::uint64_t attempt = 1; attempt <= kRehashAttempts; ++attempt) {
    const NodeId b = Buckets::bucket(rehash(hash, attempt), buckets_);
    if (!drained_[b]) return b;
  }
  const NodeId start = Buckets::bucket(hash, buckets_);
  for (std::uint32_t i = 1; i < buckets_; ++i) {
    const NodeId b = (start + i) % buckets_;
    if (!drained_[b]) return b;
  }
  return kNoNode;  // unreachable: validate_nodes guarantees a drawable node
}

template class NumberedBucketTable<JumpBuckets>;
template class NumberedBucketTable<JumpBackBuckets>;

}  // namespace chash::internal
