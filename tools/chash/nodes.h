// SPDX-License-Identifier: Apache-2.0
// Node lists as the CLI reads them (--nodes-file, --nodes). Routing itself is chash::Router.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/node.h"

namespace chash::cli {

// Node lists: "NAME [WEIGHT]" per line, blank lines and # comments ignored. Errors name the
// file and line.
std::vector<Node> read_nodes_file(const std::string& path);
// The same parser over text already in memory; `source` names it in errors.
std::vector<Node> parse_nodes_text(std::string_view text, const std::string& source);
std::vector<Node> parse_nodes_list(std::string_view comma_separated);

}  // namespace chash::cli
