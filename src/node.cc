// SPDX-License-Identifier: Apache-2.0
#include "chash/node.h"

#include <algorithm>
#include <numeric>

#include "chash/error.h"

namespace chash {

namespace {
std::string quoted(std::string_view s) {
  // Names are arbitrary bytes: show at most 64 of them, non-printable ones escaped.
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > 64) out += "...";
  out += '"';
  return out;
}
}  // namespace

void validate_nodes(std::span<const Node> nodes, std::uint32_t max_weight) {
  if (nodes.empty()) throw Error(ErrorCode::kEmptyNodeSet, "the node set is empty");
  if (nodes.size() > kMaxNodes) {
    throw Error(ErrorCode::kLimitExceeded, "too many nodes: " + std::to_string(nodes.size()) +
                                               " (at most " + std::to_string(kMaxNodes) + ")");
  }
  bool any_positive = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.name.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "node at position " + std::to_string(i) + " has an empty name");
    }
    if (n.name.size() > kMaxNodeNameBytes) {
      throw Error(ErrorCode::kLimitExceeded, "node name at position " + std::to_string(i) + " is " +
                                                 std::to_string(n.name.size()) +
                                                 " bytes (at most " +
                                                 std::to_string(kMaxNodeNameBytes) + ")");
    }
    if (n.weight > max_weight) {
      throw Error(ErrorCode::kLimitExceeded, "node " + quoted(n.name) + " has weight " +
                                                 std::to_string(n.weight) + " (at most " +
                                                 std::to_string(max_weight) + ")");
    }
    any_positive = any_positive || n.weight > 0;
  }
  std::vector<std::size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return nodes[a].name < nodes[b].name; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (nodes[order[i - 1]].name == nodes[order[i]].name) {
      const auto [a, b] = std::minmax(order[i - 1], order[i]);
      throw Error(ErrorCode::kDuplicateNode, "duplicate node name " + quoted(nodes[a].name) +
                                                 " (positions " + std::to_string(a) + " and " +
                                                 std::to_string(b) + ")");
    }
  }
  if (!any_positive) {
    throw Error(ErrorCode::kEmptyNodeSet, "no node has a positive weight");
  }
}

std::vector<Node> make_nodes(std::span<const std::string> names) {
  std::vector<Node> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(Node{n, 1});
  return out;
}

std::vector<Node> make_nodes(std::initializer_list<const char*> names) {
  std::vector<Node> out;
  out.reserve(names.size());
  for (const char* n : names) out.push_back(Node{n, 1});
  return out;
}

namespace internal {
std::string quote_name(std::string_view s) { return quoted(s); }
}  // namespace internal

}  // namespace chash
