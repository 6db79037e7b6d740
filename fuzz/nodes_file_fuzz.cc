// SPDX-License-Identifier: Apache-2.0
// Node-list files are user input: any bytes give a node list or a chash::Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chash/error.h"
#include "nodes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto nodes = chash::cli::parse_nodes_text(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    chash::validate_nodes(nodes);
  } catch (const chash::Error&) {
  }
  return 0;
}
