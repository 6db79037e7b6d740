// SPDX-License-Identifier: Apache-2.0
// Observed placements for `chash detect`: which node holds which key, read from a file of
// `key<TAB>node` lines or gathered from live servers (scan.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chash/node.h"

namespace chash::cli {

// Observations in the order they were read. Node names are interned: node[i] indexes names.
struct Observations {
  std::vector<std::string> keys;
  std::vector<std::uint32_t> node;
  std::vector<std::string> names;  // distinct node names, in the order first seen
  bool truncated = false;          // stopped at the --max-keys limit

  std::size_t size() const noexcept { return keys.size(); }
  // Throws Error(kLimitExceeded) past kMaxNodes distinct names.
  void add(std::string key, std::string_view node_name);

 private:
  std::unordered_map<std::string, std::uint32_t> index_;
};

// Reads `key<TAB>node` lines from `path` ("-": stdin), at most `max` of them (then truncated is
// set). The key is every byte before the line's last tab (so a key may hold tabs), the node
// every byte after it; a trailing "\r" is dropped and blank lines are skipped. Throws
// Error(kParse) naming the file and line for a line without a tab or with an empty node name,
// and Error(kInvalidArgument) for a file without observations.
Observations read_observations(const std::string& path, std::uint64_t max);

// The node list detection routes with, and each observation's owner in it.
struct ObservedPlacement {
  std::vector<std::string> keys;
  std::vector<NodeId> owners;  // owners[i]: index in the node list of keys[i]'s node
};

// Maps observations onto `nodes` (the configuration's order). Throws Error(kUnknownNode)
// naming an observed node that is not in the list. The observations are then shuffled with a
// fixed seed, so that any prefix of them is a uniform sample (the search stops candidates early
// on a prefix; a file sorted by node must not fool it).
ObservedPlacement place_observations(Observations obs, std::span<const Node> nodes);

// The nodes seen, sorted by name (bytewise), weight 1 each: the node list when none is given.
std::vector<Node> nodes_seen(const Observations& obs);

}  // namespace chash::cli
