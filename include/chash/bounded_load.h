// chash — consistent hashing with bounded loads (Mirrokni, Thorup & Zadimoghaddam 2018,
// "Consistent Hashing with Bounded Loads", SODA), as a decorator over any placement table.
//
// A key goes to its first choice unless that node already carries more than its share of the
// current load; then to the next choice in the table's preference order, and so on. The share is
// HAProxy's hash-balance-factor rule (chash_server_is_eligible in lb_chash.c), in integer math:
//   slots_total = ceil((total_load + 1) * factor / 100)
//   slots(node) = slots_total * weight / total_weight (the remainder shared out rounding up)
//   eligible(node) <=> load(node) < slots(node)
// so with factor 125 no node carries more than ~1.25x its weighted average — Envoy's
// hash_balance_factor has the same meaning. factor >= 100; some node is always eligible.
// Loads come from the caller (requests in flight, connections): the decorator keeps no state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chash/error.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

template <PlacementTable T>
class BoundedLoad {
 public:
  // `nodes` as given to the table (weights), `down` as used for failover; both are copied.
  BoundedLoad(const T& table, std::span<const Node> nodes, std::uint32_t balance_factor,
              const DownSet& down = {})
      : table_(&table), factor_(balance_factor), down_(down) {
    if (balance_factor < 100) {
      throw Error(ErrorCode::kInvalidArgument,
                  "balance factor must be >= 100 (percent of the average load), got " +
                      std::to_string(balance_factor));
    }
    weights_.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      weights_.push_back(nodes[i].weight);
      if (!down.contains(static_cast<NodeId>(i))) total_weight_ += nodes[i].weight;
    }
  }

  // `loads[id]` is node id's current load, `total_load` their sum over nodes that are up.
  // Returns kNoNode only when every drawable node is down.
  NodeId pick(std::uint64_t hash, std::span<const std::uint64_t> loads,
              std::uint64_t total_load) const {
    if (total_weight_ == 0) return kNoNode;
    const std::uint64_t slots_total = ((total_load + 1) * factor_ + 99) / 100;
    const std::uint64_t per_weight = slots_total / total_weight_;
    const std::uint64_t remainder = slots_total % total_weight_;
    NodeId chosen = kNoNode;
    NodeId first_up = kNoNode;
    table_->visit(hash, [&](NodeId id) {
      if (down_.contains(id)) return true;
      if (first_up == kNoNode) first_up = id;
      const std::uint64_t w = weights_[id];
      const std::uint64_t slots = per_weight * w + (w * remainder + total_weight_ - 1) / total_weight_;
      const std::uint64_t load = id < loads.size() ? loads[id] : 0;
      if (load < slots) {
        chosen = id;
        return false;
      }
      return true;
    });
    // Loads that include down nodes can leave nobody eligible; then the first choice up wins.
    return chosen != kNoNode ? chosen : first_up;
  }

  std::uint32_t balance_factor() const noexcept { return factor_; }

 private:
  const T* table_;
  std::uint32_t factor_;
  DownSet down_;
  std::vector<std::uint64_t> weights_;
  std::uint64_t total_weight_ = 0;
};

}  // namespace chash
