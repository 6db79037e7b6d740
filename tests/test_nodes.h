// SPDX-License-Identifier: Apache-2.0
// Node lists for tests: prefix0, prefix1, ... with one weight.
#pragma once

#include <string>
#include <vector>

#include "chash/node.h"

namespace chash::testing {

inline std::vector<Node> numbered_nodes(int n, const std::string& prefix = "n",
                                        std::uint32_t weight = 1) {
  std::vector<Node> v;
  for (int i = 0; i < n; ++i) v.push_back({prefix + std::to_string(i), weight});
  return v;
}

}  // namespace chash::testing
