// SPDX-License-Identifier: Apache-2.0
#include "chash/multiprobe.h"

#include <algorithm>
#include <numeric>

#include "chash/error.h"
#include "chash/ring.h"

namespace chash {

MultiProbeTable MultiProbeTable::build(std::span<const Node> nodes, const Options& options) {
  validate_nodes(nodes);
  if (options.probes == 0 || options.probes > 1024) {
    throw Error(ErrorCode::kInvalidArgument,
                "multiprobe probes must be 1..1024, got " + std::to_string(options.probes));
  }
  std::uint64_t total = 0;
  for (const Node& n : nodes) total += n.weight;
  if (total > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "multiprobe would have " + std::to_string(total) +
                                               " points; at most " +
                                               std::to_string(kMaxRingPoints));
  }
  struct Raw {
    std::uint64_t pos;
    std::string_view name;
    NodeId node;
  };
  std::vector<Raw> raw;
  raw.reserve(static_cast<std::size_t>(total));
  std::string buf;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    for (std::uint32_t i = 0; i < nodes[id].weight; ++i) {
      internal::format_point_name("{name}#{i}", nodes[id].name, i, buf);
      raw.push_back(
          Raw{hash_key(options.point_hash, buf), nodes[id].name, static_cast<NodeId>(id)});
    }
  }
  // Ties: the smaller name owns the position (as the ring does).
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
    return a.pos != b.pos ? a.pos < b.pos : a.name < b.name;
  });
  MultiProbeTable t;
  t.node_count_ = nodes.size();
  t.probes_ = options.probes;
  for (const Raw& r : raw) {
    t.positions_.push_back(r.pos);
    t.owners_.push_back(r.node);
  }
  for (const Node& n : nodes) t.drawable_ += n.weight > 0 ? 1 : 0;
  return t;
}

}  // namespace chash
