// SPDX-License-Identifier: Apache-2.0
// Client addresses arrive as text: parse_ip must accept or refuse, and round-trip what it accepts.
#include <cstdlib>
#include <string_view>

#include "chash/ip_hash.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto a = chash::parse_ip(text);
  if (a) {
    if (a->length != 4 && a->length != 16) std::abort();
    const auto again = chash::parse_ip(chash::format_ip(*a));
    if (!again || !(*again == *a)) std::abort();
    static const auto table = chash::NginxIpHashTable::build(chash::make_nodes({"a", "b", "c"}));
    if (table.pick(*a) >= 3) std::abort();
  }
  return 0;
}
