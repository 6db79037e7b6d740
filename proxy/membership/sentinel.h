// SPDX-License-Identifier: Apache-2.0
// chash-proxy — Redis Sentinel: which address serves a sentinel-managed shard.
//
// A redis pool lists its Sentinels (`sentinels:`) and names, per server, a master group
// (`{name: shard-a, sentinel_master: mymaster-a}`). The ring hashes the server's name, never an
// address, so a failover moves no key: only the address behind the name changes. This watcher
// owns that address. On its own thread (workers never wait on a Sentinel) it
//   - asks every Sentinel of the pool `SENTINEL get-master-addr-by-name` and `SENTINEL replicas`
//     every `refresh`, and every `fast` for a while after a hint that the master moved;
//   - keeps one SUBSCRIBE +switch-master connection per Sentinel: a message is such a hint;
//   - takes an address only when a strict majority of the Sentinels that answered give it (one
//     Sentinel that disagrees with the others is never followed; a tie keeps the last master);
//   - publishes it like the resolver does (BackendState::set_resolved) and bumps
//     BackendState::address_epoch, so workers drain their connections to the old master
//     (BackendConn::stale) and the next request connects to the new one.
// A -READONLY reply from a "master" (a demoted one) sets BackendState::rediscover: a hint too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/config.h"
#include "membership/control_client.h"
#include "membership/discovery.h"
#include "membership/source.h"
#include "membership/topology.h"

namespace chash::proxy {

struct SentinelReplica {
  std::string address;  // "ip:port"
  std::string flags;    // as the Sentinel reports them ("slave", "slave,s_down", ...)
  bool usable = false;  // no s_down/o_down/disconnected flag and its master link is up
};

// What one Sentinel said about one master group.
struct SentinelAnswer {
  bool reachable = false;  // it answered
  std::string master;      // "ip:port"; empty: it does not know the group
  std::vector<SentinelReplica> replicas;
};

// The master a strict majority of the reachable Sentinels name; "" when there is none.
std::string agreed_master(const std::vector<SentinelAnswer>& answers);

// The replica list of a `SENTINEL replicas` reply (RESP2 maps as flat key/value arrays).
std::vector<SentinelReplica> parse_replicas(const RespValue& reply);

class SentinelWatcher : public MembershipSource {
 public:
  const char* kind() const noexcept override { return "sentinel"; }
  using TopologyFn = std::function<std::shared_ptr<const Topology>()>;
  struct Options {
    std::chrono::milliseconds io_timeout{500};  // per Sentinel query (connect + answers)
    std::chrono::milliseconds refresh{1000};    // every master is checked this often
    std::chrono::milliseconds fast{100};        // ... and this often after a hint
    std::chrono::milliseconds fast_window{10000};
    std::chrono::milliseconds resubscribe{1000};  // a lost subscription is retried after this
  };
  using PublishFn = std::function<void()>;
  // With `discovered`, each master's usable replicas (as its Sentinels report them) are stored
  // there for pools with a read_policy, and `publish` is called when they change.
  SentinelWatcher(TopologyFn topology, Options options, Discovered* discovered = nullptr,
                  PublishFn publish = nullptr);
  explicit SentinelWatcher(TopologyFn topology) : SentinelWatcher(std::move(topology), Options{}) {}
  ~SentinelWatcher() override;  // stops and joins the thread
  SentinelWatcher(const SentinelWatcher&) = delete;
  SentinelWatcher& operator=(const SentinelWatcher&) = delete;

  // Asks every Sentinel once, on the calling thread (start-up, before workers run).
  void discover_now() override;
  void start() override;  // the watcher's thread

  // `"sentinel":[{"pool":..,"server":..,"master":..,"replicas":[..],"switches":N,...}]` for
  // /status (without braces around it), and Prometheus series.
  std::string status_json() const override;
  std::string prometheus() const override;

 private:
  struct Master {
    std::string pool, server, group;
    std::string placeholder;  // the configured address text (ResolvedAddress::source)
    std::vector<Address> sentinels;
    std::shared_ptr<BackendState> state;
    std::string current;  // the master followed now ("" = none known yet)
    std::vector<SentinelReplica> replicas;
    std::string status = "not checked yet";
    int agreeing = 0, reachable = 0;
    std::uint64_t switches = 0;       // address changes after the first discovery
    std::int64_t last_switch_ms = 0;  // wall clock
    std::int64_t hint_ms = 0;         // steady clock: the hint that led to the last switch
    std::int64_t follow_ms = -1;      // hint -> address published, for the last switch
    std::int64_t fast_until = 0, next_check = 0;  // steady ms
    bool seen = false;                            // still in the topology
    bool wants_replicas = false;                  // its pool has a read_policy
  };
  struct Subscription {
    Address address;
    int fd = -1;
    bool connected = false;
    std::string in;
    std::int64_t retry_at = 0;
    std::int64_t connect_deadline = 0;
  };

  void run();
  void sync_masters();
  void check_due(bool all);
  void apply(Master& m, const std::vector<SentinelAnswer>& answers, std::int64_t now);
  // Check `group` (all: "") now; `fast`: and every `fast` for a while (the master may move).
  void hint(std::string_view group, std::int64_t now, bool fast = true);
  void poll_subscriptions(int wait_ms);
  void open_subscription(Subscription& s, std::int64_t now);
  void close_subscription(Subscription& s, std::int64_t now);
  void read_subscription(Subscription& s, std::int64_t now);

  TopologyFn topology_;
  Options options_;
  Discovered* discovered_;
  PublishFn publish_;
  bool publish_needed_ = false;               // under mu_: replicas changed during a round
  mutable std::mutex mu_;                     // masters_ (status readers vs the thread)
  std::map<std::string, Master> masters_;     // by "pool/server"
  std::map<std::string, Subscription> subs_;  // by sentinel address text (thread only)
  int wake_fd_ = -1;                          // eventfd: stop
  bool stop_ = false;                         // under mu_
  std::thread thread_;
};

}  // namespace chash::proxy
