// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what the control threads learn at run time, that topologies are built with.
//
// A Redis Cluster pool's nodes and slot map (membership/cluster.h), a Sentinel-managed shard's
// replicas (membership/sentinel.h) and an etcd pool's routing (membership/fleet/agent.h) are not
// in the config file: their watchers store them here and ask the Proxy to publish a new topology
// (Proxy::republish), which build_topology makes from the config plus this. Thread-safe; the
// watchers write, the publishing thread reads.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "proto/redis/cluster_nodes.h"

namespace chash::proxy {

// What the fleet (membership/fleet/agent.h) says a pool routes by now, from its state in etcd:
// the servers keys go to (some ejected: their keys at their next choice) and the routings whose
// owners a miss reads through, newest first.
struct FleetRouting {
  std::vector<ServerConfig> servers;
  std::vector<std::string> ejected;  // names
};
struct FleetPool {
  std::uint64_t epoch = 0;
  std::int64_t revision = 0;  // the servers key's revision the state was made from
  std::string phase;          // stable, sweep, prepare, commit
  bool health = true;         // routing follows the fleet's ejections (else each proxy's own)
  FleetRouting route;
  std::vector<FleetRouting> reads;
  // Per server `route` has out whose membership changed during its absence: the routing it was
  // last in (fleet::PoolState::homes). A write of a key it owned there is noted in its log.
  std::vector<std::pair<std::string, FleetRouting>> homes;
};

class Discovered {
 public:
  // The last map of cluster pool `pool` (null: none learnt yet).
  std::shared_ptr<const redis::ClusterMap> cluster(const std::string& pool) const {
    std::lock_guard lock(mu_);
    const auto it = clusters_.find(pool);
    return it == clusters_.end() ? nullptr : it->second;
  }
  // Stores `map`; true when routing changes (new nodes, roles or slot owners).
  bool set_cluster(const std::string& pool, std::shared_ptr<const redis::ClusterMap> map) {
    std::lock_guard lock(mu_);
    auto& cur = clusters_[pool];
    const bool changed = cur == nullptr || !cur->same_topology(*map);
    cur = std::move(map);
    return changed;
  }
  // The fleet's routing of `pool` (null: none applied: the file's servers).
  std::shared_ptr<const FleetPool> fleet(const std::string& pool) const {
    std::lock_guard lock(mu_);
    const auto it = fleets_.find(pool);
    return it == fleets_.end() ? nullptr : it->second;
  }
  void set_fleet(const std::string& pool, std::shared_ptr<const FleetPool> f) {
    std::lock_guard lock(mu_);
    fleets_[pool] = std::move(f);
  }
  // Replica addresses ("ip:port") of `server` in `pool`, as its Sentinels name them.
  std::vector<std::string> replicas(const std::string& pool, const std::string& server) const {
    std::lock_guard lock(mu_);
    const auto it = replicas_.find({pool, server});
    return it == replicas_.end() ? std::vector<std::string>{} : it->second;
  }
  // Stores them; true when they differ from the last ones.
  bool set_replicas(const std::string& pool, const std::string& server,
                    std::vector<std::string> addresses) {
    std::lock_guard lock(mu_);
    auto& cur = replicas_[{pool, server}];
    if (cur == addresses) return false;
    cur = std::move(addresses);
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const redis::ClusterMap>> clusters_;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> replicas_;
  std::map<std::string, std::shared_ptr<const FleetPool>> fleets_;
};

}  // namespace chash::proxy
