// SPDX-License-Identifier: Apache-2.0
#include "observations.h"

#include <algorithm>
#include <unordered_map>

#include "chash/error.h"
#include "chash/hash.h"
#include "io.h"

namespace chash::cli {

void Observations::add(std::string key, std::string_view node_name) {
  // Observations usually come grouped by node: try the last node first.
  std::uint32_t id = node.empty() ? 0 : node.back();
  if (id >= names.size() || names[id] != node_name) {
    const auto [it, added] =
        index_.try_emplace(std::string(node_name), static_cast<std::uint32_t>(names.size()));
    if (added) {
      if (names.size() >= kMaxNodes) {
        index_.erase(it);
        throw Error(ErrorCode::kLimitExceeded,
                    "more than " + std::to_string(kMaxNodes) + " distinct nodes observed");
      }
      names.emplace_back(node_name);
    }
    id = it->second;
  }
  keys.push_back(std::move(key));
  node.push_back(id);
}

namespace {

std::string shown(std::string_view s) { return "\"" + std::string(s.substr(0, 80)) + "\""; }

}  // namespace

Observations read_observations(const std::string& path, std::uint64_t max) {
  KeyInput in;
  in.keys_file = path;
  KeySource src(in);
  const std::string file = path.empty() || path == "-" ? std::string("stdin") : path;
  Observations obs;
  std::string_view line;
  while (src.next(line)) {
    if (line.empty()) continue;
    const std::string where = file + ":" + std::to_string(src.line());
    const std::size_t tab = line.rfind('\t');
    if (tab == std::string_view::npos) {
      throw Error(ErrorCode::kParse,
                  where + ": expected KEY<TAB>NODE, got " + shown(line) + " (no tab)");
    }
    std::string_view node = line.substr(tab + 1);
    while (!node.empty() && node.back() == ' ') node.remove_suffix(1);
    if (node.empty()) {
      throw Error(ErrorCode::kParse, where + ": empty node name after the tab in " + shown(line));
    }
    if (node.size() > kMaxNodeNameBytes) {
      throw Error(ErrorCode::kLimitExceeded, where + ": node name longer than " +
                                                 std::to_string(kMaxNodeNameBytes) + " bytes");
    }
    if (obs.size() >= max) {
      obs.truncated = true;
      break;
    }
    obs.add(std::string(line.substr(0, tab)), node);
  }
  if (obs.size() == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                file + ": no observations (expected lines KEY<TAB>NODE)");
  }
  return obs;
}

ObservedPlacement place_observations(Observations obs, std::span<const Node> nodes) {
  std::unordered_map<std::string_view, NodeId> id_of;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    id_of.emplace(nodes[i].name, static_cast<NodeId>(i));
  }
  std::vector<NodeId> ids(obs.names.size());
  for (std::size_t i = 0; i < obs.names.size(); ++i) {
    const auto it = id_of.find(obs.names[i]);
    if (it == id_of.end()) {
      throw Error(ErrorCode::kUnknownNode, "observed node " + shown(obs.names[i]) +
                                               " is not in the node list (the names must be "
                                               "spelled as the mapping knows the nodes)");
    }
    ids[i] = it->second;
  }
  ObservedPlacement p;
  p.keys = std::move(obs.keys);
  p.owners.resize(p.keys.size());
  for (std::size_t i = 0; i < p.keys.size(); ++i) p.owners[i] = ids[obs.node[i]];
  // Fisher-Yates with a fixed seed (mix64 of a counter: the same order on every platform).
  for (std::size_t i = p.keys.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(hash::mix64(0x6465746563740000ULL + i) % i);
    std::swap(p.keys[i - 1], p.keys[j]);
    std::swap(p.owners[i - 1], p.owners[j]);
  }
  return p;
}

std::vector<Node> nodes_seen(const Observations& obs) {
  std::vector<Node> nodes;
  nodes.reserve(obs.names.size());
  for (const auto& n : obs.names) nodes.push_back({n, 1});
  std::sort(nodes.begin(), nodes.end(),
            [](const Node& a, const Node& b) { return a.name < b.name; });
  return nodes;
}

}  // namespace chash::cli
