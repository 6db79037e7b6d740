// SPDX-License-Identifier: Apache-2.0
#include "nodes.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "chash/error.h"

namespace chash::cli {

namespace {

std::uint32_t parse_weight(std::string_view text, const std::string& where) {
  std::uint32_t w = 0;
  const auto* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, w);
  // Up to nutcracker's bound: the twemproxy presets take its weights as they are; chash's own
  // tables refuse past kMaxWeight when built, naming the node.
  if (ec != std::errc() || p != end || w > kNutcrackerMaxWeight) {
    throw Error(ErrorCode::kParse, where + ": weight \"" + std::string(text.substr(0, 32)) +
                                       "\" is not a whole number from 0 to " +
                                       std::to_string(kNutcrackerMaxWeight));
  }
  return w;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::vector<Node> read_nodes_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot read nodes file " + path + ": " + std::strerror(errno));
  }
  // Node files are small; refuse anything absurd before reading it all.
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size > std::streamoff{256} << 20) {
    throw Error(ErrorCode::kLimitExceeded, path + ": larger than 256 MiB; not a node list");
  }
  in.seekg(0);
  std::string text(static_cast<std::size_t>(std::max<std::streamoff>(size, 0)), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw Error(ErrorCode::kInvalidArgument, "error reading " + path);
  return parse_nodes_text(text, path);
}

std::vector<Node> parse_nodes_text(std::string_view text, const std::string& source) {
  std::vector<Node> nodes;
  std::size_t lineno = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view s = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    const std::string where = source + ":" + std::to_string(lineno);
    if (nodes.size() >= kMaxNodes) {
      throw Error(ErrorCode::kLimitExceeded,
                  where + ": more than " + std::to_string(kMaxNodes) + " nodes");
    }
    if (const auto hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    if (s.empty()) continue;
    std::size_t sep = 0;
    while (sep < s.size() && !is_space(s[sep])) ++sep;
    Node n;
    n.name = std::string(s.substr(0, sep));
    std::string_view rest = s.substr(sep);
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    if (!rest.empty()) {
      std::size_t end = 0;
      while (end < rest.size() && !is_space(rest[end])) ++end;
      if (end != rest.size()) {
        throw Error(ErrorCode::kParse, where + ": expected \"NAME [WEIGHT]\", got \"" +
                                           std::string(s.substr(0, 80)) + "\"");
      }
      n.weight = parse_weight(rest, where);
    }
    if (n.name.size() > kMaxNodeNameBytes) {
      throw Error(ErrorCode::kLimitExceeded, where + ": node name longer than " +
                                                 std::to_string(kMaxNodeNameBytes) + " bytes");
    }
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) throw Error(ErrorCode::kEmptyNodeSet, source + ": no nodes");
  return nodes;
}

std::vector<Node> parse_nodes_list(std::string_view list) {
  std::vector<Node> nodes;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(start, comma - start);
    if (item.empty()) {
      throw Error(ErrorCode::kParse,
                  "--nodes: empty node name in \"" + std::string(list.substr(0, 80)) + "\"");
    }
    Node n;
    // NAME or NAME:WEIGHT would be ambiguous with host:port, so weights need a nodes file.
    n.name = std::string(item);
    nodes.push_back(std::move(n));
    start = comma + 1;
  }
  return nodes;
}

}  // namespace chash::cli
