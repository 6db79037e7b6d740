// SPDX-License-Identifier: Apache-2.0
// chash — nodes and their identifiers.
//
// A placement table is built from an ordered list of nodes. A node's NodeId is its position in
// that list; tables store NodeIds (uint32_t) rather than names or pointers, so a lookup touches
// one small array (Envoy learned that a shared_ptr per table slot is too fat).
//
// Weight semantics, shared by every algorithm:
//   - weight w > 0: the node gets a share of keys proportional to w (where the algorithm is
//     weighted; unweighted algorithms accept only 0 and 1).
//   - weight 0: the node is drained — it keeps its position (and NodeId) but owns no keys. This
//     is also how a removed node is kept as a tombstone by chash::Cluster.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace chash {

using NodeId = std::uint32_t;

// Returned by lookups when no node can be chosen (every node is down or drained).
inline constexpr NodeId kNoNode = 0xFFFFFFFFu;

// Documented limits; building beyond them is an Error (kLimitExceeded).
inline constexpr std::size_t kMaxNodes = 1u << 20;      // 1,048,576 nodes
inline constexpr std::uint32_t kMaxWeight = 1u << 16;   // 65,536 per node
inline constexpr std::size_t kMaxNodeNameBytes = 4096;  // node names are arbitrary bytes

struct Node {
  std::string name;  // arbitrary bytes, unique within a node list
  std::uint32_t weight = 1;

  friend bool operator==(const Node&, const Node&) = default;
};

// Checks a node list against the rules every table shares: not empty, at most kMaxNodes, names
// unique and at most kMaxNodeNameBytes, weights at most `max_weight` (kMaxWeight: chash's own
// tables, which lay out points or slots per unit of weight; a preset whose peer takes larger
// weights as ratios passes the peer's bound), at least one positive weight. Throws Error naming
// the offending node. O(n log n).
void validate_nodes(std::span<const Node> nodes, std::uint32_t max_weight = kMaxWeight);
// nutcracker's bound on a server's weight: any positive int (conf.c, nc_atoi).
inline constexpr std::uint32_t kNutcrackerMaxWeight = 0x7FFFFFFFu;

// Convenience: nodes named by `names`, all with weight 1.
std::vector<Node> make_nodes(std::span<const std::string> names);
std::vector<Node> make_nodes(std::initializer_list<const char*> names);

}  // namespace chash
