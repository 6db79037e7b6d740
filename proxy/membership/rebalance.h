// SPDX-License-Identifier: Apache-2.0
// chash-proxy — online rebalance of a pool after a reload moved keys (POST /rebalance?pool=P).
//
// The warm-up (Pool::previous) serves moved keys from their previous owners on demand; the
// rebalancer moves the rest, so that the window can end. On a thread of its own it walks every
// member that owned keys under a previous routing (Redis SCAN, memcached lru_crawler metadump)
// and, for each key whose owner is another member now (the pool's router, as the workers route),
// moves it: Redis PTTL + DUMP there, RESTORE at the owner (without REPLACE: a newer value there
// stays), then UNLINK; memcached mg v t f there, ms ME at the owner, then md. At most `rate`
// keys a second. When it ends without a failure and no reload came in between, the pool's
// warm-up window ends (PoolShared::end_warmup) and servers the reload removed are let go. A
// planned removal ("drain"): take the server out of the config, reload, POST /rebalance. The
// chash CLI does the same from outside (`chash rebalance`, docs/CLI.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "membership/topology.h"

namespace chash::proxy {

// The rebalance's compare-and-delete of one Redis key (EVAL script 1 key payload): 1 when the key
// held exactly `payload` (a DUMP) and is unlinked, 0 when it is gone, -1 when it holds another
// value. Gone is not "changed": a warm-up reader that found the target already holding the
// restored copy deletes the source itself, and taking that copy back then lost the key (one miss
// in ~3 runs of bench/fleet's resize, seen with MONITOR: RESTORE at n5, the reader's DEL at n3,
// the compare at n3 answered -1 for the missing key, the undo unlinked n5's only copy).
inline constexpr const char* kRedisUnlinkIfSame =
    "local v = redis.call('DUMP', KEYS[1]) "
    "if not v then return 0 end "
    "if v == ARGV[1] then return redis.call('UNLINK', KEYS[1]) end "
    "return -1";

class Rebalancer {
 public:
  using TopologyFn = std::function<std::shared_ptr<const Topology>()>;
  using PublishFn = std::function<void()>;
  Rebalancer(TopologyFn topology, PublishFn publish);
  ~Rebalancer();  // stops (at the next batch) and joins
  Rebalancer(const Rebalancer&) = delete;
  Rebalancer& operator=(const Rebalancer&) = delete;

  // Thread-safe: starts moving pool `pool`'s keys at most `rate` a second (0: no limit). False
  // (with `message`) when there is no such pool, nothing to move, or one already runs.
  bool start(const std::string& pool, double rate, std::string& message);
  // Thread-safe: stops the running rebalance at its next batch (a later start() goes on: the
  // keys already moved are home and skipped). False when none runs.
  bool stop(std::string& message);
  // `"rebalance":[{"pool":..,"state":..,"scanned":N,...}]` for /status (no braces around it).
  std::string status_json() const;
  // /metrics: chash_proxy_rebalance_{scanned,moved,skipped,failed}_total{pool} (every run since
  // the start, where /status has the last run's) and chash_proxy_rebalance_running{pool}, for
  // every pool a rebalance could move (redis and memcache pools, not clusters), 0 before the
  // first run so that dashboards find the series.
  std::string prometheus() const;
  // Blocks until no rebalance runs (tests).
  void wait() const;
  // Pools whose membership is the fleet's (membership/fleet/agent.h): the fleet ends their
  // window, so a run over one reports to `hook` (pool, whether every key moved) on the
  // rebalancer's thread instead of ending the warm-up itself.
  using DoneHook = std::function<void(const std::string& pool, bool complete)>;
  // Once set_done_hook(nullptr) returns, the old hook is not running and will not run.
  void set_done_hook(DoneHook hook) {
    std::lock_guard lock(hook_mu_);
    done_hook_ = std::move(hook);
  }
  // Whether a run is in progress (any pool).
  bool running() const noexcept { return active_.load() != 0; }

 private:
  struct Run {
    std::string pool;
    std::string state = "running";  // running, done, failed, stopped
    std::string error;
    std::uint64_t scanned = 0, moved = 0, skipped = 0, failed = 0, conflicts = 0;
    std::uint64_t deferred = 0;  // left to their first request (Mover::Counts::deferred)
    double rate = 0;
    std::int64_t started_ms = 0, finished_ms = 0;
  };
  void run(std::string pool, double rate);

  TopologyFn topology_;
  PublishFn publish_;
  mutable std::mutex mu_;
  std::map<std::string, Run> runs_;  // the last run per pool
  std::mutex hook_mu_;               // done_hook_, held while it runs
  DoneHook done_hook_;
  struct Totals {
    std::uint64_t scanned = 0, moved = 0, skipped = 0, failed = 0, conflicts = 0;
  };
  std::map<std::string, Totals> totals_;  // every run per pool, for /metrics
  std::atomic<bool> stop_{false};
  std::atomic<int> active_{0};
  std::thread thread_;
};

}  // namespace chash::proxy
