// SPDX-License-Identifier: Apache-2.0
#include "chash/rendezvous.h"

namespace chash {

RendezvousTable RendezvousTable::build(std::span<const Node> nodes, const Options& options) {
  validate_nodes(nodes);
  RendezvousTable t;
  t.node_count_ = nodes.size();
  std::uint32_t first_weight = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight == 0) continue;
    if (first_weight == 0) first_weight = nodes[i].weight;
    t.uniform_ = t.uniform_ && nodes[i].weight == first_weight;
    t.ids_.push_back(static_cast<NodeId>(i));
    t.seeds_.push_back(hash_key(options.node_hash, nodes[i].name));
    t.weights_.push_back(static_cast<double>(nodes[i].weight));
  }
  return t;
}

}  // namespace chash
