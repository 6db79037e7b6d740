// SPDX-License-Identifier: Apache-2.0
#include "chash/redis_slots.h"

#include <algorithm>
#include <cmath>

#include "chash/error.h"

namespace chash {

std::string_view redis_hash_tag(std::string_view key) noexcept {
  // keyHashSlot(): the first '{', the first '}' after it; no '}' or nothing between {} ? Hash
  // the whole key.
  return hash_tag(key, '{', '}');
}

namespace {

// Contiguous ranges in node order, as redis-cli --cluster create computes them (float
// arithmetic and lround included, so the split matches slot for slot).
void assign_fresh(std::span<const Node> nodes, const std::vector<NodeId>& drawable,
                  std::array<NodeId, kRedisSlots>& slots) {
  std::uint64_t total_weight = 0;
  bool uniform = true;
  for (NodeId id : drawable) {
    total_weight += nodes[id].weight;
    uniform = uniform && nodes[id].weight == nodes[drawable[0]].weight;
  }
  long first = 0;
  float cursor = 0.0f;
  for (std::size_t i = 0; i < drawable.size(); ++i) {
    const NodeId id = drawable[i];
    const float per_node =
        uniform ? static_cast<float>(kRedisSlots) / static_cast<float>(drawable.size())
                : static_cast<float>(static_cast<double>(kRedisSlots) * nodes[id].weight /
                                     static_cast<double>(total_weight));
    long last = std::lround(cursor + per_node - 1);
    if (last > static_cast<long>(kRedisSlots) || i + 1 == drawable.size()) last = kRedisSlots - 1;
    if (last < first) last = first;
    for (long s = first; s <= last && s < static_cast<long>(kRedisSlots); ++s) {
      slots[static_cast<std::size_t>(s)] = id;
    }
    first = last + 1;
    cursor += per_node;
  }
}

// Weight-fair slot counts: each node's exact share 16384 * w / W rounded down and up.
struct Quota {
  std::uint32_t floor = 0, ceil = 0;
};
std::vector<Quota> quotas(std::span<const Node> nodes, const std::vector<NodeId>& drawable) {
  std::uint64_t total_weight = 0;
  for (NodeId id : drawable) total_weight += nodes[id].weight;
  std::vector<Quota> q(nodes.size());
  for (NodeId id : drawable) {
    const std::uint64_t num = std::uint64_t{kRedisSlots} * nodes[id].weight;
    q[id].floor = static_cast<std::uint32_t>(num / total_weight);
    q[id].ceil = q[id].floor + (num % total_weight != 0 ? 1 : 0);
  }
  return q;
}

}  // namespace

SlotTable SlotTable::build(std::span<const Node> nodes, const Options& options) {
  SlotTable t = build_table(nodes, options);
  t.index_ranges();
  return t;
}

void SlotTable::index_ranges() noexcept {
  const auto& slots = *slots_;
  std::uint32_t n = 0;
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
    if (s != 0 && slots[s] == slots[s - 1]) continue;
    if (n == kMaxRanges) {  // too fragmented: the table it is
      ranges_ = 0;
      return;
    }
    range_start_[n] = static_cast<std::uint16_t>(s);
    range_owner_[n] = slots[s];
    ++n;
  }
  for (std::uint32_t i = n; i < kMaxRanges; ++i) {
    range_start_[i] = kNoRange;  // never <= a slot: the count in pick() stops at n
    range_owner_[i] = kNoNode;
  }
  ranges_ = n;
}

SlotTable SlotTable::build_table(std::span<const Node> nodes, const Options& options) {
  validate_nodes(nodes);
  SlotTable t;
  t.node_count_ = nodes.size();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight > 0) t.drawable_.push_back(static_cast<NodeId>(i));
  }
  if (t.drawable_.size() > kRedisSlots) {
    throw Error(ErrorCode::kLimitExceeded,
                "a Redis Cluster has at most 16384 masters with slots; got " +
                    std::to_string(t.drawable_.size()) + " nodes");
  }
  if (options.assignment) {
    for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
      const NodeId o = (*options.assignment)[s];
      if (o != kNoNode && o >= nodes.size()) {
        throw Error(ErrorCode::kInvalidArgument, "slot " + std::to_string(s) +
                                                     " is assigned to node " + std::to_string(o) +
                                                     " of " + std::to_string(nodes.size()));
      }
    }
    t.slots_ = options.assignment;  // shared, not copied: the map is immutable
    return t;
  }
  const auto table = std::make_shared<std::array<NodeId, kRedisSlots>>();
  t.slots_ = table;
  auto& slots = *table;
  if (!options.previous) {
    assign_fresh(nodes, t.drawable_, slots);
    return t;
  }

  // Keep every slot whose owner still takes keys; pool the rest and the excess of nodes above
  // their share rounded up (taken from their highest slots), then hand the pool out in slot
  // order to nodes below their share rounded down, and what is left to nodes below it rounded
  // up — the fewest slot moves that bring every node within one slot of its weighted share.
  const auto q = quotas(nodes, t.drawable_);
  std::vector<std::uint32_t> count(nodes.size(), 0);
  const auto& prev = options.previous->slots();
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
    const NodeId o = prev[s];
    const bool keeps = o < nodes.size() && nodes[o].weight > 0;
    slots[s] = keeps ? o : kNoNode;
    if (keeps) ++count[o];
  }
  for (std::uint32_t s = kRedisSlots; s-- > 0;) {
    const NodeId o = slots[s];
    if (o != kNoNode && count[o] > q[o].ceil) {
      slots[s] = kNoNode;
      --count[o];
    }
  }
  std::size_t next = 0;  // index into drawable_ of the node being filled
  bool to_ceil = false;
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
    if (slots[s] != kNoNode) continue;
    for (;;) {
      if (next == t.drawable_.size()) {  // every node reached its floor: now fill to ceilings
        next = 0;
        to_ceil = true;
      }
      const NodeId id = t.drawable_[next];
      if (count[id] < (to_ceil ? q[id].ceil : q[id].floor)) break;
      ++next;
    }
    slots[s] = t.drawable_[next];
    ++count[t.drawable_[next]];
  }
  return t;
}

}  // namespace chash
