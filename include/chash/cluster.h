// chash — membership and failover over any algorithm, and a router that publishes it to readers
// as immutable snapshots.
//
// Cluster is a single-writer description of the node set: add / remove / set_weight / mark_down /
// mark_up, each producing a new Snapshot (table + node names + down set). NodeIds are stable for
// the Cluster's life: a removed node stays behind as a tombstone (weight 0), so position-based
// algorithms (jump, memento, modulo, slots) keep every other node's place, and the next add()
// reuses the most recently removed position (memento restores in that order).
//
// Removed positions are renamed "\0removed#<id>" (names with that prefix are reserved).
//   - remove / set_weight(0): the node is drained — its keys move (the algorithm decides where;
//     for all but modulo and maglev only its keys move).
//   - mark_down: the node keeps its place; only its keys move, each to its next choice that is
//     up; mark_up brings exactly those keys back.
//
// Router wraps a Cluster for concurrent use: writers are serialized by a mutex and publish a new
// snapshot; readers never lock. A Router::Reader (one per thread) keeps a reference to the current
// snapshot and re-reads it only when the version changed — the steady state is one relaxed-cost
// atomic load per lookup and no shared writes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/table.h"

namespace chash {

class Snapshot {
 public:
  Snapshot(std::vector<Node> nodes, std::vector<bool> removed,
           std::shared_ptr<const AnyTable> table, DownSet down, std::uint64_t version);

  // The owner of `hash`: its first choice that is up; kNoNode if none is.
  NodeId pick(std::uint64_t hash) const noexcept {
    if (down_.empty()) return chash::pick(*table_, hash);
    return pick_up(*table_, hash, down_);
  }
  // Up to out.size() distinct nodes that are up, in preference order (replicas).
  std::size_t pick_n(std::uint64_t hash, std::span<NodeId> out) const {
    return pick_n_up(*table_, hash, down_, out);
  }

  std::string_view name(NodeId id) const noexcept { return nodes_[id].name; }
  const std::vector<Node>& nodes() const noexcept { return nodes_; }
  bool is_removed(NodeId id) const noexcept { return removed_[id]; }
  const std::vector<bool>& removed() const noexcept { return removed_; }
  bool is_down(NodeId id) const noexcept { return down_.contains(id); }
  const AnyTable& table() const noexcept { return *table_; }
  const std::shared_ptr<const AnyTable>& shared_table() const noexcept { return table_; }
  const DownSet& down() const noexcept { return down_; }
  std::uint64_t version() const noexcept { return version_; }
  // The id of the live (not removed) node called `name`, or kNoNode.
  NodeId find(std::string_view name) const noexcept;

 private:
  std::vector<Node> nodes_;  // by NodeId; removed nodes have weight 0
  std::vector<bool> removed_;
  std::shared_ptr<const AnyTable> table_;  // shared between snapshots that differ only in state
  DownSet down_;
  std::uint64_t version_;
};

class Cluster {
 public:
  // Throws Error for an invalid node list or options.
  Cluster(Algorithm algorithm, std::vector<Node> nodes, TableOptions options = {});

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
  std::vector<NodeId> removal_order_;  // removed positions, oldest first
  std::shared_ptr<const Snapshot> snapshot_;
  std::uint64_t version_ = 0;
};

class Router {
 public:
  explicit Router(Cluster cluster);

  // Writers: serialized; each publishes a new snapshot atomically. Throws as Cluster does.
  NodeId add(Node node);
  void remove(std::string_view name);
  void set_weight(std::string_view name, std::uint32_t weight);
  void mark_down(std::string_view name);
  void mark_up(std::string_view name);

  // The current snapshot (an atomic shared_ptr load: fine per request, use Reader per key).
  std::shared_ptr<const Snapshot> snapshot() const { return current_.load(std::memory_order_acquire); }
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }

  // A per-thread view: current() costs one atomic load of the version while nothing changes.
  class Reader {
   public:
    explicit Reader(const Router& router) : router_(&router), cached_(router.snapshot()) {}
    const Snapshot& current() {
      if (router_->version() != cached_->version()) cached_ = router_->snapshot();
      return *cached_;
    }
    NodeId pick(std::uint64_t hash) { return current().pick(hash); }

   private:
    const Router* router_;
    std::shared_ptr<const Snapshot> cached_;
  };

 private:
  template <class F>
  auto mutate(F&& f);

  mutable std::mutex write_mu_;
  Cluster cluster_;
  std::atomic<std::shared_ptr<const Snapshot>> current_;
  std::atomic<std::uint64_t> version_;
};

}  // namespace chash
