// SPDX-License-Identifier: Apache-2.0
// groupcache's consistenthash (github.com/golang/groupcache/consistenthash, the version Debian
// packages as golang-github-golang-groupcache-dev 0.0~git20200121.8c9f03a), as HTTPPool uses it.
// docs/compat/groupcache.md has the details and the command that regenerates the vectors.
//
// Map.Add(nodes...): for each node in order and i = 0 .. replicas-1, the point
// crc32.ChecksumIEEE(strconv.Itoa(i) + node) goes into a sorted []int and into map[int]string —
// so of two equal points the one added LAST owns the position. Map.Get(key): the first point
// >= ChecksumIEEE(key) (sort.Search), wrapping to the first. Replicas: PresetOptions::vnodes,
// default 50 (HTTPPool's defaultReplicas, used when HTTPPoolOptions.Replicas is 0).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ring.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {
namespace {

constexpr std::uint32_t kDefaultReplicas = 50;  // groupcache http.go: defaultReplicas

struct GroupcacheKey {
  std::uint64_t operator()(std::string_view key) const noexcept { return hash::crc32(key); }
};

}  // namespace

std::unique_ptr<Preset> make_groupcache(std::string_view name, std::span<const Node> nodes,
                                        const PresetOptions& options) {
  reject_options(name, options, /*hash=*/false, /*hash_tag=*/false, /*vnodes=*/true);
  validate_nodes(nodes);
  const std::uint32_t replicas = options.vnodes.value_or(kDefaultReplicas);
  if (replicas == 0 || replicas > 65536) {
    // New(0, nil) builds a map that routes nothing (Get returns ""); HTTPPool turns 0 into 50.
    throw Error(
        ErrorCode::kInvalidArgument,
        "preset groupcache: --vnodes (replicas) must be 1..65536, got " + std::to_string(replicas));
  }
  std::uint64_t total = 0;
  for (const Node& n : nodes) {
    if (n.weight > 1) {
      throw Error(ErrorCode::kUnsupported,
                  "preset groupcache: consistenthash has no weights (node \"" +
                      n.name.substr(0, 64) + "\" has weight " + std::to_string(n.weight) +
                      "); use 1, or 0 for a node left out of Add");
    }
    total += n.weight * std::uint64_t{replicas};
  }
  if (total > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "groupcache ring would have " + std::to_string(total) +
                                               " points; at most " +
                                               std::to_string(kMaxRingPoints));
  }

  // Points in reverse Add order: from_points keeps equal positions in the order given, and the
  // first of them owns the position — here the last one groupcache's map kept.
  std::vector<RingTable::Point> points;
  points.reserve(static_cast<std::size_t>(total));
  std::string point;
  for (std::size_t id = nodes.size(); id-- > 0;) {
    if (nodes[id].weight == 0) continue;  // a drained node is not Added
    for (std::uint32_t i = replicas; i-- > 0;) {
      point.assign(std::to_string(i)).append(nodes[id].name);
      points.push_back(RingTable::Point{hash::crc32(point), static_cast<NodeId>(id)});
    }
  }
  // Only the map's winner of a contested position exists for Get; drop the others so that next
  // choices (route_n) do not see them either.
  std::stable_sort(
      points.begin(), points.end(),
      [](const RingTable::Point& a, const RingTable::Point& b) { return a.position < b.position; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const RingTable::Point& a, const RingTable::Point& b) {
                             return a.position == b.position;
                           }),
               points.end());
  return make_ring_preset(RingTable::from_points(std::move(points), nodes.size()), GroupcacheKey{});
}

}  // namespace chash::presets
