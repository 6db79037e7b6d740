// SPDX-License-Identifier: Apache-2.0
// A membership change as `chash migrate` and `chash rebalance` read it: the routing before
// (--preset/--algo over --nodes) and after (--add/--remove/--reweight/--down, or
// --after-nodes-file), and each key's owner in both.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"

namespace chash::cli {

struct ChangeArgs {
  std::vector<std::string> add, remove, reweight, down;
  std::string after_nodes_file;

  bool empty() const {
    return add.empty() && remove.empty() && reweight.empty() && down.empty() &&
           after_nodes_file.empty();
  }
};

// "NAME=W" -> (NAME, W); the weight is after the last '='.
std::pair<std::string, std::uint32_t> name_weight(const std::string& s, const char* flag,
                                                  bool required);

// The two placements. Natives go through chash::Cluster, so remove/down/reweight have the
// library's membership semantics (stable positions, failover to the next choice); presets are
// the peer rebuilt with the changed server list, a down server's keys going to the peer's next
// choice that is up.
struct Change {
  std::vector<Node> before_nodes;     // as given
  std::vector<Node> names_before;     // names by the ids before_of returns
  std::vector<Node> after_nodes;      // names by the ids after_of returns
  std::vector<Node> after_effective;  // for the optimum: down nodes with weight 0
  std::shared_ptr<const Snapshot> snap_before, snap_after;
  std::optional<Router> kr_before, kr_after;
  DownSet down_after;  // presets: --down servers by their after ids

  void before_of(std::span<const std::string_view> keys, std::span<NodeId> out) const;
  void after_of(std::span<const std::string_view> keys, std::span<NodeId> out) const;
};

// Throws Error for an unknown node, a bad weight, an unreadable file.
Change build_change(const RoutingSpec& spec, std::vector<Node> before_nodes, const ChangeArgs& c);

}  // namespace chash::cli
