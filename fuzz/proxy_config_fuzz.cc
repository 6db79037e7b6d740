// SPDX-License-Identifier: Apache-2.0
// chash-proxy's config file is input from outside: any bytes must parse into a config or be
// refused with chash::Error naming the line — never a crash, a hang or another exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chash/error.h"
#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16 * 1024) return 0;  // config files are small; big inputs only slow the search
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  try {
    const auto config = chash::proxy::parse_config(yaml, "fuzz.yml");
    (void)config;
  } catch (const chash::Error&) {
    // refused, with a message: fine
  }
  return 0;
}
