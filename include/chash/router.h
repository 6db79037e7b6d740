// SPDX-License-Identifier: Apache-2.0
// chash — the router: the one object that turns a key into a node.
//
// A Router is an immutable value built from a RoutingSpec and an ordered node list. Everything
// between a key and a node is decided here, once, for the CLI, chash-proxy and any program that
// embeds libchash (twemproxy decides it in one function, server_pool_idx: tag -> hash ->
// dispatch; Envoy's balancers take a hash and own failover, chooseHost(hash, attempt)):
//   key policy     — an optional hash tag (twemproxy's hash_tag: "{}" hashes only the bytes
//                    between the braces) and the key hash (xxh3 by default; redis_slot for the
//                    slots algorithm, as Redis Cluster hashes);
//   placement      — a native table (ring, jump, maglev, ...; chash/table.h) or a compatibility
//                    preset that maps keys exactly as a peer does (chash/preset.h);
//   replicas       — route_n: distinct nodes in the placement's preference order;
//   failover       — route(key, is_up): the first choice that is up. A down node keeps its place
//                    and only its keys move, each to its own next choice; when it is back exactly
//                    those keys return;
//   bounded loads  — route_bounded: the first choice in preference order that has room under the
//                    balance factor (chash/bounded_load.h), for every table and preset.
// Lookups are noexcept and do not allocate (walks past 16 nodes use per-thread scratch memory
// that only the first such walk on a thread allocates; chash/internal/scratch.h). Copies share
// the table. For concurrent readers while membership changes, chash::SharedCluster
// (chash/cluster.h) publishes snapshots lock-free.
//
// Example:
//   chash::RoutingSpec spec;
//   spec.preset = "ketama";                                  // or: spec.algorithm = "maglev";
//                                                            // or: spec.ring = "points=...";
//   auto router = chash::Router::build(spec, {{"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 1}});
//   chash::NodeId id = router.route("user:42");              // as libmemcached picks
//   id = router.route("user:42", [&](chash::NodeId n) { return healthy[n]; });  // failover
#pragma once

#include <cassert>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/bounded_load.h"
#include "chash/hash.h"
#include "chash/internal/scratch.h"
#include "chash/internal/xxh3.h"
#include "chash/node.h"
#include "chash/placement.h"
#include "chash/preset.h"
#include "chash/table.h"

namespace chash {

// How keys are routed, as the CLI's flags and chash-proxy's pool keys spell it. Names are
// checked by Router::build.
struct RoutingSpec {
  // Exactly one of these: a compatibility preset (chash::preset_list()), a native algorithm
  // (algorithm_name(): "ring", "maglev", ...), or a ring spec (chash/ring_spec.h: any
  // hand-written ring, e.g. "points={name}_v{i}; vnodes=150; hash=md5-int32"; `vnodes`
  // overrides its count, `hash_tag` applies, other options do not).
  std::string preset;
  std::string algorithm;
  std::optional<std::string> ring;
  // Key hash: for an algorithm a KeyHash name (default "xxh3"; "redis_slot" for "slots"), for a
  // preset the peer's own hash setting.
  std::optional<std::string> hash;
  // Two characters, e.g. "{}": only the bytes between the first open and the next close are
  // hashed (twemproxy's hash_tag; with "{}" Redis Cluster's rule).
  std::optional<std::string> hash_tag;
  std::optional<std::uint32_t> vnodes;      // ring, ring64; presets with points per node
  std::optional<std::uint64_t> table_size;  // maglev
  std::optional<std::uint32_t> probes;      // multiprobe
  std::optional<std::string> point_format;  // ring, ring64
  // Preset behaviours in the peer's own spelling (e.g. libmemcached's distribution).
  std::vector<std::pair<std::string, std::string>> preset_settings;
  // Bounded loads: 0 = off, else >= 100 (percent of the average load; HAProxy's and Envoy's
  // hash_balance_factor, e.g. 125). Used by route_bounded.
  std::uint32_t balance_factor = 0;
};

// A native table's key policy: hash tag, then key hash.
struct KeyPolicy {
  KeyHash hash = KeyHash::kXxh3;
  char tag_open = 0;  // 0: no hash tag
  char tag_close = 0;

  std::uint64_t operator()(std::string_view key) const noexcept {
    if (tag_open != 0) key = hash_tag(key, tag_open, tag_close);
    // The default hash compiled in here (chash/internal/xxh3.h); the others by the runtime switch.
    if (hash == KeyHash::kXxh3) return internal::xxh3_64_inline(key);
    return hash_key(hash, key);
  }
};

class Router {
 public:
  // Throws Error for unknown names, options the algorithm or preset does not take, a bad hash
  // tag or balance factor, or a node list the placement refuses.
  static Router build(const RoutingSpec& spec, std::span<const Node> nodes);
  // A native table with an explicit key policy (what chash::Cluster builds). Throws as
  // build_table does.
  static Router build(Algorithm algorithm, std::span<const Node> nodes,
                      const TableOptions& options = {}, KeyPolicy key_policy = {},
                      std::uint32_t balance_factor = 0);
  // The table options a spec asks for (throws for options that do not apply to `algorithm`).
  static TableOptions table_options(const RoutingSpec& spec, Algorithm algorithm);

  // ---- Lookups (noexcept, allocation-free) ------------------------------------------------------
  // The owner of `key`; kNoNode only where the placement cannot route the key (nginx-ip-hash
  // given something that is not an address).
  NodeId route(std::string_view key) const noexcept {
    if (preset_) return preset_->route(key);
    return chash::pick(*table_, key_policy_(key));
  }

  // Failover: the first node in the key's preference order for which is_up(id) is true;
  // kNoNode when none is.
  template <std::predicate<NodeId> IsUp>
  NodeId route(std::string_view key, IsUp&& is_up) const noexcept {
    const NodeId first = route(key);
    if (first == kNoNode || is_up(first)) return first;
    NodeId chosen = kNoNode;
    visit(key, [&](NodeId id) {
      if (!is_up(id)) return true;
      chosen = id;
      return false;
    });
    return chosen;
  }
  NodeId route(std::string_view key, const DownSet& down) const noexcept {
    if (down.empty()) return route(key);
    return route(key, [&down](NodeId id) { return !down.contains(id); });
  }

  // Replicas: up to out.size() distinct nodes in preference order; returns how many (all nodes
  // when out is larger).
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const noexcept {
    std::size_t n = 0;
    if (out.empty()) return 0;
    visit(key, [&](NodeId id) {
      out[n++] = id;
      return n < out.size();
    });
    return n;
  }
  // Replicas on nodes that are up.
  template <std::predicate<NodeId> IsUp>
  std::size_t route_n(std::string_view key, std::span<NodeId> out, IsUp&& is_up) const noexcept {
    std::size_t n = 0;
    if (out.empty()) return 0;
    visit(key, [&](NodeId id) {
      if (!is_up(id)) return true;
      out[n++] = id;
      return n < out.size();
    });
    return n;
  }

  // Bounded loads: the first node in preference order that is up and has room under the balance
  // factor (LoadBound); if none has, the first that is up. load_of(id) is the caller's load of a
  // node (requests in flight, connections), total_load their sum over nodes that are up,
  // up_weight the sum of the weights of nodes that are up (total_weight() when all are). With
  // balance_factor() == 0 this is route(key, is_up).
  template <class IsUp, class LoadOf>
  NodeId route_bounded(std::string_view key, IsUp&& is_up, LoadOf&& load_of,
                       std::uint64_t total_load, std::uint64_t up_weight) const noexcept {
    if (balance_factor_ == 0 || up_weight == 0) return route(key, is_up);
    const LoadBound bound(balance_factor_, total_load, up_weight);
    const NodeId first = route(key);
    if (first != kNoNode && is_up(first) && bound.eligible(load_of(first), nodes_[first].weight)) {
      return first;  // the common case: no walk
    }
    NodeId chosen = kNoNode;
    NodeId first_up = kNoNode;
    visit(key, [&](NodeId id) {
      if (!is_up(id)) return true;
      if (first_up == kNoNode) first_up = id;
      if (!bound.eligible(load_of(id), nodes_[id].weight)) return true;
      chosen = id;
      return false;
    });
    return chosen != kNoNode ? chosen : first_up;
  }
  // The same with loads[id] per node and a down set (sums computed here: O(nodes)).
  NodeId route_bounded(std::string_view key, std::span<const std::uint64_t> loads,
                       const DownSet& down = {}) const noexcept;

  // Calls f(NodeId) for the distinct nodes of the key's preference order — route(key) first —
  // until f returns false or every drawable node was visited.
  template <class F>
  void visit(std::string_view key, F&& f) const noexcept {
    if (!preset_) {
      const std::uint64_t h = key_policy_(key);
      std::visit([&](const auto& t) { t.visit(h, f); }, *table_);
      return;
    }
    // Presets give their preference order as a list: the first kInline choices from the stack,
    // the rest (rare: a walk past kInline nodes) from per-thread scratch.
    constexpr std::size_t kInline = 16;
    NodeId small[kInline];
    const std::size_t n = preset_->route_n(key, small);
    for (std::size_t i = 0; i < n; ++i) {
      if (!f(small[i])) return;
    }
    if (n < kInline || nodes_.size() <= kInline) return;
    internal::ScratchIds all(nodes_.size());
    const std::size_t m = preset_->route_n(key, all.ids());
    for (std::size_t i = kInline; i < m; ++i) {
      if (!f(all.ids()[i])) return;
    }
  }

  // route() for many keys: out[i] = route(keys[i]), out.size() >= keys.size(); the same answers,
  // several times faster for the MD5 and jump-class placements. Native tables hash a chunk of
  // keys (MD5 side by side, multi-buffer), then look the chunk up with the table's batch lookup
  // (chash/batch.h: rings pipeline their cache misses, jump runs 8 keys' loops in lockstep);
  // presets make one virtual call per batch and do the same in their peer's terms (ketama's MD5,
  // Guava's consistentHash loop in SIMD lanes). Use it wherever keys come in bulk.
  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const noexcept;

  // ---- Hash-level access (native tables) --------------------------------------------------------
  // The 64-bit hash the table is given for `key` (0 for presets, which hash as their peer does).
  std::uint64_t key_hash(std::string_view key) const noexcept {
    return preset_ ? 0 : key_policy_(key);
  }
  // The owner of a precomputed key hash (native tables only; kNoNode for presets).
  NodeId pick(std::uint64_t hash) const noexcept {
    return table_ ? chash::pick(*table_, hash) : kNoNode;
  }

  // ---- Description --------------------------------------------------------------------------------
  bool is_preset() const noexcept { return preset_ != nullptr; }
  const AnyTable* table() const noexcept { return table_.get(); }
  const std::shared_ptr<const AnyTable>& shared_table() const noexcept { return table_; }
  const Preset* preset() const noexcept { return preset_.get(); }
  const KeyPolicy& key_policy() const noexcept { return key_policy_; }
  std::span<const Node> nodes() const noexcept { return nodes_; }
  std::size_t node_count() const noexcept { return nodes_.size(); }
  // The name of node `id` (id < node_count(); an empty name for kNoNode).
  std::string_view name(NodeId id) const noexcept {
    assert(id < nodes_.size() || id == kNoNode);
    return id < nodes_.size() ? std::string_view(nodes_[id].name) : std::string_view();
  }
  // The id of the node called `name`, or kNoNode. O(nodes).
  NodeId find(std::string_view name) const noexcept;
  // Sum of node weights (the up_weight of route_bounded when every node is up).
  std::uint64_t total_weight() const noexcept { return total_weight_; }
  std::uint32_t balance_factor() const noexcept { return balance_factor_; }
  // "ring (xxh3, 160 vnodes)", "preset ketama", "+ bounded loads 125%".
  const std::string& describe() const noexcept { return description_; }

 private:
  Router() = default;

  std::vector<Node> nodes_;
  std::shared_ptr<const AnyTable> table_;  // a native table, or
  std::shared_ptr<const Preset> preset_;   // a preset
  KeyPolicy key_policy_;
  std::uint32_t balance_factor_ = 0;
  std::uint64_t total_weight_ = 0;
  std::string description_;
};

// Validates a hash tag: exactly two characters, neither NUL. Throws Error(kInvalidArgument).
void check_hash_tag(std::string_view tag);

}  // namespace chash
