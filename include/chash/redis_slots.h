// SPDX-License-Identifier: Apache-2.0
// chash — Redis Cluster key slots: slot = CRC16-XMODEM(key or its {hash tag}) & 0x3FFF, then a
// 16384-entry slot -> node table.
//
// The hash tag rules are Redis's keyHashSlot() exactly: the first '{', then the first '}' after
// it; if both exist with at least one byte between them, only those bytes are hashed.
//   "{user1000}.following" and "{user1000}.followers" -> same slot; "foo{}{bar}" hashes whole;
//   "foo{{bar}}zap" hashes "{bar".
// A fresh table splits the slots into contiguous ranges in node order as `redis-cli --cluster
// create` does (weighted: ranges in proportion to weight). Built from a previous table, slots stay
// where they are except those of drained nodes and the fewest needed to restore weight-fair
// quotas (what a reshard/rebalance moves). Lookup: one read of a 64 KiB table, or, when the
// table is at most kMaxRanges runs of slots (a cluster as created or resharded in a few steps),
// a count over the runs' first slots, which stay in two cache lines.
// Next choices: the owners of rehashed slots, then the remaining nodes in list order.
// Options::assignment takes a cluster's own map instead (slots may then be unserved: kNoNode).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

inline constexpr std::uint32_t kRedisSlots = 16384;

// The key's hash slot, with Redis's hash tag rules (the key hash KeyHash::kRedisSlot).
inline std::uint16_t redis_key_slot(std::string_view key) noexcept { return hash::redis_slot(key); }
// The bytes Redis hashes for `key`: the hash tag's contents, or the whole key.
std::string_view redis_hash_tag(std::string_view key) noexcept;

class SlotTable {
 public:
  struct Options {
    // When set, keep this table's assignment as far as possible (ids must refer to the same
    // nodes; ids beyond the new node list count as drained).
    std::shared_ptr<const SlotTable> previous;
    // When set, the table itself: a live cluster's slot -> node map as CLUSTER NODES reports it
    // (chash-proxy's Redis Cluster pools). kNoNode marks a slot no node serves, for which pick()
    // answers kNoNode; other ids must be below the node count. `previous` is then ignored.
    std::shared_ptr<const std::array<NodeId, kRedisSlots>> assignment;
  };

  static SlotTable build(std::span<const Node> nodes, const Options& options = {});

  // `hash` is a slot number (redis_key_slot) or any hash: only its low 14 bits are used.
  NodeId pick(std::uint64_t hash) const noexcept {
    const auto slot = static_cast<std::uint16_t>(hash & (kRedisSlots - 1));
    if (ranges_ == 0) return (*slots_)[slot];
    // Why not the table: random keys touch all 1,024 of its cache lines, and a proxy that shares
    // its core with the servers and clients it relays between finds most of them evicted (a
    // cluster pool's lookup was 5.6% of chash-proxy's CPU, nearly all a miss on that load).
    // The run a slot is in is the number of runs starting at or before it, less one; a fixed
    // count of compares, no branches.
    std::uint32_t runs = 0;
    for (std::uint32_t i = 0; i < kMaxRanges; ++i) runs += range_start_[i] <= slot;
    return range_owner_[runs - 1];
  }

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    NodeId id = pick(hash);
    if (id == kNoNode) return;  // an unserved slot of an assigned table
    if (!seen.insert(id) || !f(id)) return;
    for (std::uint64_t attempt = 1; attempt <= 64; ++attempt) {
      if (seen.size() == drawable_.size()) return;
      id = pick(internal::rehash(hash & (kRedisSlots - 1), attempt));
      if (!seen.insert(id)) continue;
      if (!f(id)) return;
    }
    for (NodeId d : drawable_) {
      if (seen.size() == drawable_.size()) return;
      if (!seen.insert(d)) continue;
      if (!f(d)) return;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }
  const std::array<NodeId, kRedisSlots>& slots() const noexcept { return *slots_; }
  // The runs of consecutive slots with one owner pick() counts over; 0: it reads the table.
  std::uint32_t ranges() const noexcept { return ranges_; }

  static constexpr std::uint32_t kMaxRanges = 16;

 private:
  static SlotTable build_table(std::span<const Node> nodes, const Options& options);
  void index_ranges() noexcept;
  static constexpr std::uint16_t kNoRange = 0xFFFF;  // above every slot

  std::shared_ptr<const std::array<NodeId, kRedisSlots>> slots_;
  std::uint32_t ranges_ = 0;
  std::array<std::uint16_t, kMaxRanges> range_start_{};
  std::array<NodeId, kMaxRanges> range_owner_{};
  std::vector<NodeId> drawable_;
  std::size_t node_count_ = 0;
};

}  // namespace chash
