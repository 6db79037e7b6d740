// SPDX-License-Identifier: Apache-2.0
// chash-proxy — Redis Cluster pools: which nodes there are and which slots each serves.
//
// A redis pool with `cluster: [seed host:port, ...]` has no `servers:`: its members are the
// cluster's masters (and, with a read_policy, its replicas) and its keys go to the master of
// their slot, as a cluster client sends them (proto/redis/session_cluster.cc). This watcher
// keeps the map, on a thread of its own (a worker never waits on a cluster node):
//   - it asks one node `CLUSTER NODES` (after AUTH with the pool's server_user/server_auth,
//     over the pool's server_tls): a known master first, then the seeds; the first answer is
//     the map (proto/redis/cluster_nodes.h);
//   - every `cluster_refresh` ms, and within 100 ms of a worker's hint (a MOVED, a failed node,
//     PoolShared::cluster_refresh), at most every 50 ms a pool;
//   - a map whose nodes, roles or slot owners changed is stored in Discovered and published
//     (Proxy::republish): workers route the next request with it; the parts in flight follow
//     MOVED/ASK to where the slots went.
// No node answering is logged (at start, and each time the status changes) and the last map
// stays in use; a pool that never had one answers -CLUSTERDOWN until a seed answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "membership/discovery.h"
#include "membership/source.h"
#include "membership/topology.h"

namespace chash::proxy {

class ClusterWatcher : public MembershipSource {
 public:
  const char* kind() const noexcept override { return "cluster"; }
  using TopologyFn = std::function<std::shared_ptr<const Topology>()>;
  using PublishFn = std::function<void()>;
  struct Options {
    std::chrono::milliseconds io_timeout{1000};  // per node asked (connect + answer)
    std::chrono::milliseconds min_interval{50};  // between two refreshes of one pool
  };
  ClusterWatcher(TopologyFn topology, Discovered& discovered, PublishFn publish, Options options);
  ClusterWatcher(TopologyFn topology, Discovered& discovered, PublishFn publish)
      : ClusterWatcher(std::move(topology), discovered, std::move(publish), Options{}) {}
  ~ClusterWatcher() override;  // stops and joins the thread
  ClusterWatcher(const ClusterWatcher&) = delete;
  ClusterWatcher& operator=(const ClusterWatcher&) = delete;

  // Refreshes every cluster pool once, on the calling thread (start-up, before workers run).
  void discover_now() override;
  void start() override;

  // `"cluster":[{"pool":..,"status":..,"nodes":[..],...}]` for /status (without braces around
  // it), and Prometheus series.
  std::string status_json() const override;
  std::string prometheus() const override;

 private:
  struct Cluster {
    std::string pool;
    std::vector<Address> seeds;
    ServerConfig credentials;  // password, user, tls of the pool's members
    std::shared_ptr<PoolShared> shared;
    std::uint32_t refresh_ms = 1000;
    std::shared_ptr<const redis::ClusterMap> map;
    std::string status = "not asked yet";
    std::string last_error;
    std::uint64_t refreshes = 0, changes = 0, failures = 0;
    std::int64_t last_refresh_ms = 0;  // wall clock, last map read
    std::int64_t last_change_ms = 0;
    std::int64_t next_check = 0, last_check = 0;  // steady ms
    bool seen = false;
  };

  void run();
  void sync();
  // Refreshes the pools that are due (all: every one); publishes once if any map changed.
  void check_due(bool all);
  // Asks the pool's nodes for the map; returns it (null: none answered, `error` says why).
  std::shared_ptr<const redis::ClusterMap> read_map(const Cluster& c, std::string& error) const;

  TopologyFn topology_;
  Discovered& discovered_;
  PublishFn publish_;
  Options options_;
  mutable std::mutex mu_;                    // clusters_ (status readers vs the thread), stop_
  std::map<std::string, Cluster> clusters_;  // by pool name
  int wake_fd_ = -1;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace chash::proxy
