// SPDX-License-Identifier: Apache-2.0
#include "chash/jump.h"

#include "internal.h"

namespace chash {

JumpTable JumpTable::build(std::span<const Node> nodes, const Options&) {
  validate_nodes(nodes);
  internal::require_unweighted(nodes, "jump");
  JumpTable t;
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

void JumpTable::pick_batch(std::span<const std::uint64_t> hashes,
                           std::span<NodeId> out) const noexcept {
  // jump_consistent_hash, kLanes keys at a time: each lane runs the paper's loop and freezes
  // once its j passes the bucket count; the group ends when every lane has. Lanes that are done
  // keep computing on their frozen inputs (cheaper than a branch per lane), never stored.
  constexpr std::size_t kLanes = 8;
  const auto n = static_cast<std::int64_t>(buckets_);
  const double two31 = static_cast<double>(std::int64_t{1} << 31);
  std::size_t i = 0;
  for (; i + kLanes <= hashes.size(); i += kLanes) {
    std::uint64_t key[kLanes];
    std::int64_t b[kLanes];
    std::int64_t j[kLanes];
    for (std::size_t l = 0; l < kLanes; ++l) {
      key[l] = hashes[i + l];
      b[l] = -1;
      j[l] = 0;
    }
    for (bool any = true; any;) {
      any = false;
      for (std::size_t l = 0; l < kLanes; ++l) {
        const bool live = j[l] < n;
        // A finished lane steps from b = 0 so the conversion below stays in range.
        const std::int64_t from = live ? j[l] : 0;
        const std::uint64_t k = key[l] * 2862933555777941757ULL + 1;
        const auto next = static_cast<std::int64_t>(static_cast<double>(from + 1) *
                                                    (two31 / static_cast<double>((k >> 33) + 1)));
        b[l] = live ? from : b[l];
        key[l] = live ? k : key[l];
        j[l] = live ? next : j[l];
        any = any || (live && next < n);
      }
    }
    for (std::size_t l = 0; l < kLanes; ++l) out[i + l] = static_cast<NodeId>(b[l]);
  }
  for (; i < hashes.size(); ++i) out[i] = jump_consistent_hash(hashes[i], buckets_);
  if (drained_.empty()) return;
  for (std::size_t k = 0; k < hashes.size(); ++k) {
    if (drained_[out[k]]) out[k] = pick_slow(hashes[k]);
  }
}

NodeId JumpTable::pick_slow(std::uint64_t hash) const noexcept {
  // The first choice is drained: rehash until a live bucket comes up. Every attempt lands on a
  // drained bucket with probability drained/buckets, so 64 attempts nearly always suffice; the
  // scan after them keeps the worst case bounded.
  for (std::uint64_t attempt = 1; attempt <= kRehashAttempts; ++attempt) {
    const NodeId b = jump_consistent_hash(internal::rehash(hash, attempt), buckets_);
    if (!drained_[b]) return b;
  }
  const NodeId start = jump_consistent_hash(hash, buckets_);
  for (std::uint32_t i = 1; i < buckets_; ++i) {
    const NodeId b = (start + i) % buckets_;
    if (!drained_[b]) return b;
  }
  return kNoNode;  // unreachable: validate_nodes guarantees a drawable node
}

}  // namespace chash
