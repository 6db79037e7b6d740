// SPDX-License-Identifier: Apache-2.0
// chash — membership and failover over any native algorithm, published to concurrent readers as
// immutable snapshots.
//
// Cluster is a single-writer description of the node set: add / remove / set_weight / mark_down /
// mark_up, each producing a new Snapshot (a chash::Router over the current nodes, plus the down
// set). NodeIds are stable for the Cluster's life: a removed node stays behind as a tombstone
// (weight 0), so position-based algorithms (jump, memento, modulo, slots) keep every other node's
// place, and the next add() reuses the most recently removed position (memento restores in that
// order).
//
// Removed positions are renamed "\0removed#<id>" (names with that prefix are reserved).
//   - remove / set_weight(0): the node is drained — its keys move (the algorithm decides where;
//     for all but modulo and maglev only its keys move).
//   - mark_down: the node keeps its place; only its keys move, each to its next choice that is
//     up; mark_up brings exactly those keys back.
//
// SharedCluster wraps a Cluster for concurrent use: writers are serialized by a mutex and publish
// a new snapshot; readers never lock. A SharedCluster::Reader (one per thread) reads the current
// snapshot with one atomic load and protects it with a hazard pointer only when it changed — the
// steady state has no shared writes at all.
//
// There is one thing called a router: chash::Router (chash/router.h), the immutable key -> node
// object. A Snapshot holds one; Cluster and SharedCluster only manage which Router is current.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/router.h"
#include "chash/table.h"

namespace chash {

class Snapshot {
 public:
  Snapshot(Router router, std::vector<bool> removed, DownSet down, std::uint64_t version);

  // The owner of `key`: its first choice that is up; kNoNode if none is.
  NodeId route(std::string_view key) const noexcept { return router_.route(key, down_); }
  // route() for many keys (out.size() >= keys.size()): Router::route_batch, then the keys whose
  // first choice is down walk on to their next choice that is up, one at a time.
  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const noexcept {
    router_.route_batch(keys, out);
    if (down_.empty()) return;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (out[i] != kNoNode && down_.contains(out[i])) out[i] = router_.route(keys[i], down_);
    }
  }
  // Up to out.size() distinct nodes for `key` that are up, in preference order (replicas).
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const noexcept {
    return router_.route_n(key, out, [this](NodeId id) { return !down_.contains(id); });
  }
  // The same for a precomputed key hash (router().key_hash(key)).
  NodeId pick(std::uint64_t hash) const noexcept {
    if (down_.empty()) return chash::pick(table(), hash);
    return pick_up(table(), hash, down_);
  }
  std::size_t pick_n(std::uint64_t hash, std::span<NodeId> out) const {
    return pick_n_up(table(), hash, down_, out);
  }

  const Router& router() const noexcept { return router_; }
  std::string_view name(NodeId id) const noexcept { return router_.name(id); }
  std::span<const Node> nodes() const noexcept { return router_.nodes(); }
  bool is_removed(NodeId id) const noexcept {
    assert(id < removed_.size());
    return removed_[id];
  }
  const std::vector<bool>& removed() const noexcept { return removed_; }
  bool is_down(NodeId id) const noexcept { return down_.contains(id); }
  const AnyTable& table() const noexcept { return *router_.table(); }
  const DownSet& down() const noexcept { return down_; }
  std::uint64_t version() const noexcept { return version_; }
  // The id of the live (not removed) node called `name`, or kNoNode.
  NodeId find(std::string_view name) const noexcept;

 private:
  Router router_;  // shares its table with snapshots that differ only in state
  std::vector<bool> removed_;
  DownSet down_;
  std::uint64_t version_;
};

class Cluster {
 public:
  // Throws Error for an invalid node list or options.
  Cluster(Algorithm algorithm, std::vector<Node> nodes, TableOptions options = {},
          KeyPolicy key_policy = {});
  // From a routing spec with an algorithm (a preset's node list is the peer's config, with no
  // tombstones: rebuild it with Router::build instead). Throws Error(kUnsupported) for a preset.
  Cluster(const RoutingSpec& spec, std::vector<Node> nodes);

  // Each mutation validates, rebuilds the table and returns the new snapshot; on error it throws
  // and the cluster is unchanged.
  NodeId add(Node node);
  void remove(std::string_view name);
  void set_weight(std::string_view name, std::uint32_t weight);
  void mark_down(std::string_view name);
  void mark_up(std::string_view name);

  std::shared_ptr<const Snapshot> snapshot() const noexcept { return snapshot_; }
  Algorithm algorithm() const noexcept { return algorithm_; }

 private:
  NodeId require(std::string_view name) const;
  void rebuild(std::vector<Node> nodes, std::vector<bool> removed,
               std::vector<NodeId> removal_order, DownSet down);
  void publish_state(DownSet down);  // same table, new down set

  Algorithm algorithm_;
  TableOptions options_;
  KeyPolicy key_policy_;
  std::uint32_t balance_factor_ = 0;
  std::vector<NodeId> removal_order_;  // removed positions, oldest first
  std::shared_ptr<const Snapshot> snapshot_;
  std::uint64_t version_ = 0;
};

namespace internal {
struct ReaderSlot;
}  // namespace internal

class SharedCluster {
 public:
  explicit SharedCluster(Cluster cluster);
  ~SharedCluster();
  SharedCluster(const SharedCluster&) = delete;
  SharedCluster& operator=(const SharedCluster&) = delete;

  // Writers: serialized; each publishes a new snapshot atomically. Throws as Cluster does.
  NodeId add(Node node);
  void remove(std::string_view name);
  void set_weight(std::string_view name, std::uint32_t weight);
  void mark_down(std::string_view name);
  void mark_up(std::string_view name);

  // The current snapshot as a shared_ptr (takes the writer mutex for a pointer copy: fine per
  // request or per batch; use a Reader per thread for per-key lookups).
  std::shared_ptr<const Snapshot> snapshot() const;
  std::uint64_t version() const noexcept {
    return current_ptr_.load(std::memory_order_acquire)->version();
  }

  // A per-thread, lock-free view. current() is one atomic load while nothing changes; after a
  // change it protects the new snapshot with a hazard pointer (Michael 2004) so writers free old
  // snapshots only when no reader still uses them. A Reader must not outlive its SharedCluster and
  // is used by one thread at a time; a reference from current() is valid until the next call.
  class Reader {
   public:
    explicit Reader(const SharedCluster& cluster);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    const Snapshot& current() noexcept {
      const Snapshot* p = shared_->current_ptr_.load(std::memory_order_acquire);
      if (p == protected_) return *p;  // already protected by our hazard pointer
      return protect(p);
    }
    NodeId route(std::string_view key) noexcept { return current().route(key); }
    NodeId pick(std::uint64_t hash) noexcept { return current().pick(hash); }

   private:
    const Snapshot& protect(const Snapshot* p) noexcept;

    const SharedCluster* shared_;
    internal::ReaderSlot* slot_;
    const Snapshot* protected_ = nullptr;
  };

 private:
  friend class Reader;
  template <class F>
  auto mutate(F&& f);
  void publish();  // under write_mu_

  mutable std::mutex write_mu_;
  Cluster cluster_;
  std::shared_ptr<const Snapshot> current_;                           // under write_mu_
  std::atomic<const Snapshot*> current_ptr_;                          // what readers load
  std::vector<std::shared_ptr<const Snapshot>> retired_;              // under write_mu_
  mutable std::vector<std::unique_ptr<internal::ReaderSlot>> slots_;  // under write_mu_
};

}  // namespace chash
