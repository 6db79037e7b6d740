// SPDX-License-Identifier: Apache-2.0
#include "change.h"

#include <algorithm>
#include <charconv>

#include "chash/error.h"

namespace chash::cli {

std::pair<std::string, std::uint32_t> name_weight(const std::string& s, const char* flag,
                                                  bool required) {
  const auto eq = s.rfind('=');
  if (eq == std::string::npos) {
    if (required)
      throw Error(ErrorCode::kParse, std::string(flag) + " takes NAME=WEIGHT, got \"" + s + "\"");
    return {s, 1};
  }
  std::uint32_t w = 0;
  const char* b = s.data() + eq + 1;
  const char* e = s.data() + s.size();
  const auto [p, ec] = std::from_chars(b, e, w);
  if (ec != std::errc() || p != e || b == e || w > kMaxWeight) {
    if (!required) return {s, 1};  // an '=' that is part of the name
    throw Error(ErrorCode::kParse, std::string(flag) + ": weight in \"" + s + "\" is not 0.." +
                                       std::to_string(kMaxWeight));
  }
  return {s.substr(0, eq), w};
}

Change build_change(const RoutingSpec& spec, std::vector<Node> before_nodes, const ChangeArgs& a) {
  Change c;
  c.before_nodes = std::move(before_nodes);
  const auto& before = c.before_nodes;
  c.kr_before = Router::build(spec, before);
  if (!a.after_nodes_file.empty()) {
    c.after_nodes = read_nodes_file(a.after_nodes_file);
    c.kr_after = Router::build(spec, c.after_nodes);
    c.after_effective = c.after_nodes;
  } else if (!spec.algorithm.empty()) {
    Cluster cluster(spec, before);
    c.snap_before = cluster.snapshot();
    for (const auto& r : a.remove) cluster.remove(r);
    for (const auto& s : a.add) {
      auto [name, w] = name_weight(s, "--add", false);
      cluster.add({name, w});
    }
    for (const auto& s : a.reweight) {
      auto [name, w] = name_weight(s, "--reweight", true);
      cluster.set_weight(name, w);
    }
    for (const auto& d : a.down) cluster.mark_down(d);
    c.snap_after = cluster.snapshot();
    c.after_nodes.assign(c.snap_after->nodes().begin(), c.snap_after->nodes().end());
    for (std::size_t i = 0; i < c.after_nodes.size(); ++i) {
      Node n = c.after_nodes[i];
      if (c.snap_after->is_removed(static_cast<NodeId>(i)) ||
          c.snap_after->is_down(static_cast<NodeId>(i)))
        n.weight = 0;
      if (!c.snap_after->is_removed(static_cast<NodeId>(i))) c.after_effective.push_back(n);
    }
  } else {
    c.after_nodes = before;
    for (const auto& r : a.remove) {
      auto it = std::find_if(c.after_nodes.begin(), c.after_nodes.end(),
                             [&](const Node& n) { return n.name == r; });
      if (it == c.after_nodes.end())
        throw Error(ErrorCode::kUnknownNode, "--remove: no node named " + r);
      c.after_nodes.erase(it);
    }
    for (const auto& s : a.add) {
      auto [name, w] = name_weight(s, "--add", false);
      c.after_nodes.push_back({name, w});
    }
    for (const auto& s : a.reweight) {
      const auto nw = name_weight(s, "--reweight", true);
      auto it = std::find_if(c.after_nodes.begin(), c.after_nodes.end(),
                             [&](const Node& n) { return n.name == nw.first; });
      if (it == c.after_nodes.end())
        throw Error(ErrorCode::kUnknownNode, "--reweight: no node named " + nw.first);
      it->weight = nw.second;
    }
    c.kr_after = Router::build(spec, c.after_nodes);
    c.after_effective = c.after_nodes;
    for (const auto& d : a.down) {
      auto it = std::find_if(c.after_effective.begin(), c.after_effective.end(),
                             [&](const Node& n) { return n.name == d; });
      if (it == c.after_effective.end())
        throw Error(ErrorCode::kUnknownNode, "--down: no node named " + d);
      it->weight = 0;
      const NodeId id = c.kr_after->find(d);
      if (id != kNoNode) c.down_after.set(id, true);
    }
  }
  c.names_before = c.snap_before ? std::vector<Node>(c.snap_before->nodes().begin(),
                                                     c.snap_before->nodes().end())
                                 : before;
  return c;
}

void Change::before_of(std::span<const std::string_view> keys, std::span<NodeId> out) const {
  if (snap_before) {
    snap_before->route_batch(keys, out);
  } else {
    kr_before->route_batch(keys, out);
  }
}

// A down node's keys walk on to their next choice that is up, as route(key, down) does.
void Change::after_of(std::span<const std::string_view> keys, std::span<NodeId> out) const {
  if (snap_after) {
    snap_after->route_batch(keys, out);
    return;
  }
  kr_after->route_batch(keys, out);
  if (down_after.empty()) return;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (out[i] != kNoNode && down_after.contains(out[i])) {
      out[i] = kr_after->route(keys[i], down_after);
    }
  }
}

}  // namespace chash::cli
