// SPDX-License-Identifier: Apache-2.0
#include "chash/modulo.h"

#include "chash/error.h"

namespace chash {

ModuloTable ModuloTable::build(std::span<const Node> nodes, const Options&) {
  validate_nodes(nodes);
  ModuloTable t;
  t.node_count_ = nodes.size();
  std::uint32_t first_weight = 0;
  bool uniform = true;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight == 0) continue;
    if (first_weight == 0) first_weight = nodes[i].weight;
    uniform = uniform && nodes[i].weight == first_weight;
    t.live_.push_back(static_cast<NodeId>(i));
    t.total_weight_ += nodes[i].weight;
  }
  if (!uniform) {
    std::uint64_t sum = 0;
    for (NodeId id : t.live_) {
      sum += nodes[id].weight;
      t.cumulative_.push_back(sum);
    }
  }
  return t;
}

}  // namespace chash
