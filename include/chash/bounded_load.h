// SPDX-License-Identifier: Apache-2.0
// chash — consistent hashing with bounded loads (Mirrokni, Thorup & Zadimoghaddam 2018,
// "Consistent Hashing with Bounded Loads", SODA): the capacity rule, and a decorator over any
// placement table.
//
// A key goes to its first choice unless that node already carries more than its share of the
// current load; then to the next choice in the table's preference order, and so on. The share is
// HAProxy's hash-balance-factor rule (chash_server_is_eligible in lb_chash.c), in integer math:
//   slots_total = ceil((total_load + 1) * factor / 100)
//   slots(node) = slots_total * weight / total_weight (the remainder shared out rounding up)
//   eligible(node) <=> load(node) < slots(node)
// so with factor 125 no node carries more than ~1.25x its weighted average — Envoy's
// hash_balance_factor has the same meaning. factor >= 100; some node is always eligible.
// Loads come from the caller (requests in flight, connections): nothing here keeps state.
// chash::Router offers the same rule over every table and preset (Router::route_bounded), as
// Envoy wires its bounded-load balancer over ring hash and maglev.
#pragma once

#include <cassert>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

// Largest balance factor (10,000x the average: no bound in practice), so that
// (total_load + 1) * factor cannot overflow for any load below 2^44.
inline constexpr std::uint32_t kMaxBalanceFactor = 1'000'000;

// The capacity rule for one lookup: built from the current total load and the total weight of
// the nodes that are up, asked per candidate.
class LoadBound {
 public:
  // Throws Error for a factor below 100 or above kMaxBalanceFactor.
  static void check_factor(std::uint32_t balance_factor) {
    if (balance_factor < 100 || balance_factor > kMaxBalanceFactor) {
      throw Error(ErrorCode::kInvalidArgument,
                  "balance factor must be >= 100 and <= " + std::to_string(kMaxBalanceFactor) +
                      " (percent of the average load), got " + std::to_string(balance_factor));
    }
  }

  // Precondition: factor >= 100 (check_factor), up_weight > 0.
  LoadBound(std::uint32_t balance_factor, std::uint64_t total_load,
            std::uint64_t up_weight) noexcept
      : up_weight_(up_weight) {
    assert(balance_factor >= 100 && up_weight > 0);
    const std::uint64_t slots_total = ((total_load + 1) * balance_factor + 99) / 100;
    per_weight_ = slots_total / up_weight;
    remainder_ = slots_total % up_weight;
  }

  // May a node of `weight` carrying `load` take one more?
  bool eligible(std::uint64_t load, std::uint64_t weight) const noexcept {
    const std::uint64_t slots =
        per_weight_ * weight + (weight * remainder_ + up_weight_ - 1) / up_weight_;
    return load < slots;
  }

 private:
  std::uint64_t up_weight_;
  std::uint64_t per_weight_ = 0;
  std::uint64_t remainder_ = 0;
};

template <PlacementTable T>
class BoundedLoad {
 public:
  // `nodes` as given to the table (weights), `down` as used for failover; both are copied.
  BoundedLoad(const T& table, std::span<const Node> nodes, std::uint32_t balance_factor,
              const DownSet& down = {})
      : table_(&table), factor_(balance_factor), down_(down) {
    LoadBound::check_factor(balance_factor);
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
    const LoadBound bound(factor_, total_load, total_weight_);
    NodeId chosen = kNoNode;
    NodeId first_up = kNoNode;
    table_->visit(hash, [&](NodeId id) {
      if (down_.contains(id)) return true;
      if (first_up == kNoNode) first_up = id;
      const std::uint64_t load = id < loads.size() ? loads[id] : 0;
      if (bound.eligible(load, weights_[id])) {
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
