// SPDX-License-Identifier: Apache-2.0
// redis-cluster: a key's node in a Redis Cluster made by `redis-cli --cluster create` (Redis 7.0).
//
// Key -> slot is Redis's keyHashSlot (CRC16-XMODEM of the key or its {hash tag}, & 0x3FFF;
// chash::redis_key_slot). Slot -> node is the fresh split of redis-cli's
// clusterManagerCommandCreate: the masters are taken round-robin across hosts (nodes grouped by
// the host part of "host:port" in order of first appearance: "a:1 a:2 b:1" becomes a:1, b:1, a:2),
// then slots are cut into contiguous ranges of 16384 / masters (float arithmetic and lround, as
// chash::SlotTable's fresh split does). redis-cli refuses fewer than 3 masters; chash applies the
// same split to 1 or 2 (one master holds every slot, the only layout it can have).
//
// Weights: 1 is a master; 0 is a master that holds no slots (redis-cli has no weights, so other
// values are refused). route_n: the owner, then the owners of the following slot ranges in slot
// order, wrapping around — Redis itself has no second choice for a key.
#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "chash/error.h"
#include "chash/placement.h"
#include "chash/redis_slots.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {

namespace {

// The host redis-cli groups a node by: parseClusterNodeAddress drops "@bus_port" (from the last
// '@') and the port (from the last ':'). A name without ':' (which redis-cli would refuse) is
// taken whole, as a host of its own.
std::string_view host_of(std::string_view name) {
  if (const std::size_t at = name.rfind('@'); at != std::string_view::npos) {
    name = name.substr(0, at);
  }
  const std::size_t colon = name.rfind(':');
  return colon == std::string_view::npos ? name : name.substr(0, colon);
}

// clusterManagerCommandCreate's "interleaved" order: per host (in order of first appearance)
// a queue of its nodes; take one from each host in turn until all are taken.
std::vector<NodeId> interleave_by_host(std::span<const Node> nodes,
                                       const std::vector<NodeId>& masters) {
  std::vector<std::string_view> hosts;
  std::vector<std::vector<NodeId>> per_host;
  for (const NodeId id : masters) {
    const std::string_view h = host_of(nodes[id].name);
    const auto it = std::find(hosts.begin(), hosts.end(), h);
    const auto i = static_cast<std::size_t>(it - hosts.begin());
    if (it == hosts.end()) {
      hosts.push_back(h);
      per_host.emplace_back();
    }
    per_host[i].push_back(id);
  }
  std::vector<NodeId> out;
  out.reserve(masters.size());
  for (std::size_t round = 0; out.size() < masters.size(); ++round) {
    for (const auto& queue : per_host) {
      if (round < queue.size()) out.push_back(queue[round]);
    }
  }
  return out;
}

class RedisClusterPreset final : public Preset {
 public:
  RedisClusterPreset(std::unique_ptr<std::array<NodeId, kRedisSlots>> slots, std::size_t node_count,
                     std::size_t masters)
      : slots_(std::move(slots)), node_count_(node_count), masters_(masters) {
    for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
      if (s == 0 || (*slots_)[s] != (*slots_)[s - 1]) ranges_.push_back({s, (*slots_)[s]});
    }
  }

  NodeId route(std::string_view key) const noexcept override {
    return (*slots_)[redis_key_slot(key)];
  }

  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    std::size_t n = 0;
    if (out.empty()) return 0;
    const std::uint16_t slot = redis_key_slot(key);
    // The range holding `slot`: the last one starting at or before it.
    const auto it = std::upper_bound(ranges_.begin(), ranges_.end(), slot,
                                     [](std::uint32_t s, const Range& r) { return s < r.first; });
    std::size_t i = static_cast<std::size_t>(it - ranges_.begin()) - 1;
    internal::SeenSet seen(node_count_);
    for (std::size_t step = 0; step < ranges_.size() && seen.size() < masters_; ++step) {
      if (seen.insert(ranges_[i].owner)) {
        out[n++] = ranges_[i].owner;
        if (n == out.size()) break;
      }
      if (++i == ranges_.size()) i = 0;
    }
    return n;
  }

  std::size_t node_count() const noexcept override { return node_count_; }

 private:
  struct Range {
    std::uint32_t first;  // first slot of the range
    NodeId owner;
  };
  std::unique_ptr<std::array<NodeId, kRedisSlots>> slots_;
  std::vector<Range> ranges_;  // contiguous runs of one owner, in slot order
  std::size_t node_count_ = 0;
  std::size_t masters_ = 0;
};

}  // namespace

std::unique_ptr<Preset> make_redis_cluster(std::string_view name, std::span<const Node> nodes,
                                           const PresetOptions& options) {
  reject_options(name, options, false, false, false);
  validate_nodes(nodes);
  std::vector<NodeId> masters;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight > 1) {
      throw Error(ErrorCode::kUnsupported,
                  "preset redis-cluster: node \"" + nodes[i].name.substr(0, 64) + "\" has weight " +
                      std::to_string(nodes[i].weight) +
                      "; redis-cli --cluster create splits slots evenly (weight 1 is a master, 0 "
                      "a master without slots)");
    }
    if (nodes[i].weight == 1) masters.push_back(static_cast<NodeId>(i));
  }
  const std::vector<NodeId> order = interleave_by_host(nodes, masters);
  std::vector<Node> ordered;
  ordered.reserve(order.size());
  for (const NodeId id : order) ordered.push_back(Node{nodes[id].name, 1});
  const SlotTable table = SlotTable::build(ordered);  // the contiguous fresh split, in this order
  auto slots = std::make_unique<std::array<NodeId, kRedisSlots>>();
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) (*slots)[s] = order[table.slots()[s]];
  return std::make_unique<RedisClusterPreset>(std::move(slots), nodes.size(), masters.size());
}

}  // namespace chash::presets
