// SPDX-License-Identifier: Apache-2.0
// Measurements shared by `chash sweep` and `chash demo`.
#pragma once

#include <chrono>
#include <span>
#include <vector>

#include "chash/table.h"

namespace chash::cli {

struct SweepPoint {
  double max_over_mean = 0, stddev = 0, cv = 0;
  double moved_on_add = 0, optimal_on_add = 0;
  double build_ms = 0;
};
// Balance of `hashes` over `nodes`, and keys moved when one node is added.
SweepPoint measure_point(Algorithm algo, const std::vector<Node>& nodes, const TableOptions& opt,
                         std::span<const std::uint64_t> hashes);

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
