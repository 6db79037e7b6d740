// SPDX-License-Identifier: Apache-2.0
#include "chash/memento.h"

#include <algorithm>

#include "chash/error.h"
#include "internal.h"

namespace chash {

template <class Inner>
BasicMementoTable<Inner> BasicMementoTable<Inner>::build(std::span<const Node> nodes,
                                                         const Options& options) {
  validate_nodes(nodes);
  internal::require_unweighted(nodes, Inner::kName);
  BasicMementoTable t;
  t.node_count_ = nodes.size();
  t.size_ = static_cast<std::uint32_t>(nodes.size());

  // Removal sequence: the recorded order, then any other drained node in list order.
  std::vector<NodeId> order;
  std::vector<bool> listed(nodes.size(), false);
  for (NodeId id : options.removal_order) {
    if (id >= nodes.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(Inner::kName) + " removal_order names position " +
                      std::to_string(id) + " of " + std::to_string(nodes.size()));
    }
    if (nodes[id].weight != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(Inner::kName) + " removal_order lists node " +
                      internal::quote_name(nodes[id].name) +
                      ", which has weight 1 (removed nodes have weight 0)");
    }
    if (listed[id]) {
      throw Error(ErrorCode::kInvalidArgument, std::string(Inner::kName) +
                                                   " removal_order lists position " +
                                                   std::to_string(id) + " twice");
    }
    listed[id] = true;
    order.push_back(id);
  }
  for (NodeId id = 0; id < nodes.size(); ++id) {
    if (nodes[id].weight == 0 && !listed[id]) order.push_back(id);
  }

  // Replay the removals (the paper's remove(b)): with nothing removed yet, dropping the last
  // bucket just shrinks the b-array; otherwise b is remembered with its replacer — the size of
  // the working set after its removal — and lookups that land on b rehash below it.
  std::size_t removed = 0;
  for (NodeId b : order) {
    if (removed == 0 && b + 1 == t.size_) {
      --t.size_;
      continue;
    }
    if (t.replacer_.empty()) t.replacer_.assign(nodes.size(), kNotRemoved);
    const std::uint32_t working = t.size_ - static_cast<std::uint32_t>(removed);
    t.replacer_[b] = working - 1;
    ++removed;
  }
  if (!t.replacer_.empty()) t.replacer_.resize(std::max<std::size_t>(t.size_, 1));
  t.drawable_ = nodes.size() - order.size();
  return t;
}

template class BasicMementoTable<internal::MementoOverJump>;
template class BasicMementoTable<internal::MementoOverJumpBack>;

}  // namespace chash
