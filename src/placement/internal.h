// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the table builders (not installed).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "chash/error.h"
#include "chash/node.h"

namespace chash::internal {

// A node name, quoted and escaped for error messages.
std::string quote_name(std::string_view s);

// For unweighted algorithms: weights must be 0 (drained) or 1.
inline void require_unweighted(std::span<const Node> nodes, std::string_view algorithm) {
  for (const Node& n : nodes) {
    if (n.weight > 1) {
      throw Error(ErrorCode::kUnsupported,
                  std::string(algorithm) + " is unweighted: node " + quote_name(n.name) +
                      " has weight " + std::to_string(n.weight) +
                      " (use 0 to drain, 1 otherwise; ring, rendezvous, maglev, multiprobe, "
                      "modulo and slots take weights)");
    }
  }
}

}  // namespace chash::internal
