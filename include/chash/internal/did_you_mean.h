// SPDX-License-Identifier: Apache-2.0
// "did you mean" for a misspelt name: the proxy's config keys (proxy/config/parse_util.cc) and the
// CLI's subcommands and flags (tools/chash/main.cc) share it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace chash::internal {

// Levenshtein distance (insertions, deletions, substitutions), one row at a time.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The name of `valid` nearest `name` within edit distance 2 (the first on ties), else empty.
inline std::string_view nearest_name(std::string_view name, std::span<const std::string_view> valid) {
  std::string_view best;
  std::size_t best_d = 3;
  for (const auto v : valid) {
    const std::size_t d = edit_distance(name, v);
    if (d < best_d) {
      best_d = d;
      best = v;
    }
  }
  return best;
}

}  // namespace chash::internal
