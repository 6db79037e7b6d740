// SPDX-License-Identifier: Apache-2.0
// Measurements shared by `chash sweep` and `chash demo`.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "chash/router.h"
#include "chash/table.h"

namespace chash::cli {

// "1,10,50" -> {1, 10, 50}: 1..1000 whole numbers; throws Error naming the bad item.
std::vector<std::uint64_t> parse_values(const std::string& list);

struct SweepPoint {
  double max_over_mean = 0, stddev = 0, cv = 0;
  double moved_on_add = 0, optimal_on_add = 0;
  double build_ms = 0;
};
// Balance of `hashes` over `nodes`, and keys moved when one node is added.
SweepPoint measure_point(Algorithm algo, const std::vector<Node>& nodes, const TableOptions& opt,
                         std::span<const std::uint64_t> hashes);

// The same for any routing (a preset or a ring spec), from the keys themselves.
SweepPoint measure_point(const RoutingSpec& spec, const std::vector<Node>& nodes,
                         std::span<const std::string> keys);

struct BoundedSweepPoint {
  double max_over_mean = 0;  // load of the busiest node over its fair share
  double spilled = 0;        // requests not on their first choice
  double moved_on_add = 0;
};
// Bounded loads with `factor` under a hot key (every 10th request carries hashes[0]).
BoundedSweepPoint measure_bounded(Algorithm algo, const std::vector<Node>& nodes,
                                  const TableOptions& opt, std::span<const std::uint64_t> hashes,
                                  std::uint32_t factor);

}  // namespace chash::cli
