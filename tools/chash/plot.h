// SPDX-License-Identifier: Apache-2.0
// SVG pictures shared by `chash plot` and `chash demo`.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/analysis.h"

namespace chash::cli {

// Bars of each node's share of keys beside its weight-fair share. (The ring is the library's:
// chash::svg::table_ring in chash/svg.h.)
std::string plot_load(const LoadStats& s, std::span<const Node> nodes, std::string_view title);

}  // namespace chash::cli
