// SPDX-License-Identifier: Apache-2.0
// memcached's `lru_crawler metadump` spells keys URI-encoded ("%20" for a space). Both tools that
// read it, `chash rebalance`/`chash scan` (tools/chash/scan.cc) and the proxy's own rebalance
// (proxy/membership/rebalance.cc), decode them with this.
#pragma once

#include <string>
#include <string_view>

namespace chash::internal {

// Decodes %XX into its byte and leaves any other byte as it is. False for a '%' not followed by
// two hex digits (`out` then holds what was decoded before it).
inline bool uri_decode(std::string_view in, std::string& out) {
  out.clear();
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

}  // namespace chash::internal
