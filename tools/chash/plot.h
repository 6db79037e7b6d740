// SPDX-License-Identifier: Apache-2.0
// SVG pictures shared by `chash plot` and `chash demo`.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/analysis.h"

namespace chash::cli {

// The ring of a RingTable/Ring64Table (throws for other tables), with moved ranges on an inner
// band.
std::string plot_ring(const AnyTable& table, std::span<const Node> nodes, std::string_view title,
                      const std::vector<MovedRange>& moved);
std::string plot_load(const LoadStats& s, std::span<const Node> nodes, std::string_view title);

}  // namespace chash::cli
