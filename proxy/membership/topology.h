// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what workers route with: immutable pool snapshots plus shared backend health.
//
// A Topology is built off the hot path (at start and on reload) and published to workers as a
// shared_ptr<const Topology>; a worker swaps its pointer between events, so a request is
// routed entirely by one snapshot and in-flight requests finish on the connections they used.
// BackendState is the one mutable part: atomics shared by every worker and kept across reloads
// by backend name (a reload does not forget that a server is down).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chash/router.h"
#include "config/config.h"
#include "core/metrics.h"
#include "hotkeys/hot_keys.h"
#include "membership/discovery.h"
#include "membership/failback.h"

namespace chash::proxy {

// A backend's address as the resolver found it (membership/resolver.h), for `source` ("host:port"
// as configured). Workers connect to it and never resolve names themselves.
struct ResolvedAddress {
  std::string source;
  sockaddr_storage addr{};
  socklen_t len = 0;
};

struct BackendState {
  explicit BackendState(std::string n) : name(std::move(n)) {}
  const std::string name;
  // The last address resolved for this backend (null: not resolved yet, or its name did not
  // resolve). Read at connect time only, never per request.
  std::shared_ptr<const ResolvedAddress> resolved() const {
    std::lock_guard lock(address_mu_);
    return address_;
  }
  void set_resolved(std::shared_ptr<const ResolvedAddress> a) {
    std::lock_guard lock(address_mu_);
    address_ = std::move(a);
  }
  // Why it last failed (a request, a probe), for the fleet's health view and /status.
  std::string last_error() const {
    std::lock_guard lock(address_mu_);
    return last_error_;
  }
  void set_last_error(std::string_view why) {
    std::lock_guard lock(address_mu_);
    last_error_.assign(why.substr(0, 200));
  }
  // Down: failed server_failure_limit times in a row; no traffic until a PING probe succeeds.
  std::atomic<bool> down{false};
  std::atomic<std::uint32_t> failures{0};      // consecutive
  std::atomic<std::int64_t> down_since_ms{0};  // steady clock, when `down` was last set
  std::atomic<bool> probing{false};            // a health probe is in flight
  // Counters for /metrics and the stats port (nutcracker's server stats in brackets).
  std::atomic<std::uint64_t> requests{0};  // [requests] forwarded (tcp: connections relayed)
  std::atomic<std::uint64_t> errors{0};    // failures (record_failure)
  std::atomic<std::uint64_t> ejections{0};
  std::atomic<std::uint64_t> timeouts{0};        // [server_timedout] requests or connects
  std::atomic<std::uint64_t> eofs{0};            // [server_eof] the server closed a connection
  std::atomic<std::uint64_t> conn_errors{0};     // [server_err] connect/read/write/reply errors
  std::atomic<std::uint64_t> responses{0};       // [responses] replies to forwarded requests
  std::atomic<std::uint64_t> request_bytes{0};   // [request_bytes] written for clients
  std::atomic<std::uint64_t> response_bytes{0};  // [response_bytes] read from the server
  std::atomic<std::int64_t> ejected_at_us{0};    // [server_ejected_at] wall clock, last ejection
  // [in_queue(_bytes)] requests queued, not yet written; [out_queue(_bytes)] written, unanswered.
  std::atomic<std::int64_t> in_queue{0}, in_queue_bytes{0}, out_queue{0}, out_queue_bytes{0};
  // Open connections to this backend, across workers, whatever the protocol: tcp relays (the
  // least-conn load) and redis/memcache pooled connections ([server_connections]; /metrics).
  std::atomic<std::int64_t> active{0};
  // Requests sent to this backend and not yet answered, across workers (redis, memcache): the
  // load hash_balance_factor bounds.
  std::atomic<std::int64_t> inflight{0};
  // Scripts and function calls sent to it and not yet answered, across workers, and since when
  // (steady ms) one has been: a server busy with a script answers -BUSY to others meanwhile, and
  // a one-server pool's PING then goes to it to say so (proto/redis/session.cc local_ping).
  std::atomic<std::int32_t> scripts{0};
  std::atomic<std::int64_t> scripts_since_ms{0};
  // Connections of clients' own to it (redis: RESP3, SELECT, WATCH, blocking commands), across
  // workers, and the server's maxclients as it answered CONFIG GET (0: not known yet, -1: it
  // would not say) — what bounds them (core/worker.cc own_connection_limit).
  std::atomic<std::int64_t> own_connections{0};
  std::atomic<std::int64_t> maxclients{0};
  std::atomic<bool> maxclients_asked{false};
  // The errno of the last connection failure (ECONNREFUSED ...), 0: none known: a down
  // backend's errors name it, as nutcracker's carry strerror (core/session.cc backend_usable).
  std::atomic<int> last_os_error{0};
  // Consecutive successful health probes while down (it returns at the pool's `rise`).
  std::atomic<std::uint32_t> probe_successes{0};
  // Steady-clock ms of the last probe of a backend that is up (health_check_interval).
  std::atomic<std::int64_t> last_check_ms{0};
  std::atomic<bool> resolving{false};  // a lookup of its name is queued or running
  // Sentinel-managed backends (membership/sentinel.h): bumped when the master moves; a connection
  // opened under an older epoch is drained by its worker (BackendConn::stale).
  std::atomic<std::uint64_t> address_epoch{0};
  // A reply said this "master" is a replica (-READONLY): the sentinel watcher asks again now.
  std::atomic<bool> rediscover{false};
  // Safe failover and return (membership/failback.h): the keys written elsewhere while it was down.
  AbsenceLog absence;
  // Fleet health (membership/fleet/): requests for its keys this proxy refused because it alone
  // cannot reach it while the fleet says it is up.
  std::atomic<std::uint64_t> fleet_unreachable{0};
  // Shadow copies (a pool's `shadow:` naming this backend's pool) sent to it and not yet answered
  // or failed, across workers: past kShadowMaxOutstanding more copies are dropped, so a stalled
  // shadow server holds a bounded queue (proto/memcache/session_shadow.cc).
  std::atomic<std::int64_t> shadow_outstanding{0};

 private:
  mutable std::mutex address_mu_;  // address_, last_error_
  std::shared_ptr<const ResolvedAddress> address_;
  std::string last_error_;
};

// Whether `state` holds an address for `address` as configured now (membership/resolver.h).
bool resolved_for(const BackendState& state, const Address& address);

// Per-pool counters that outlive reloads (kept by pool name, like BackendState).
// Counters first, then nutcracker's pool stats they feed (in brackets).
struct PoolShared {
  std::atomic<std::int64_t> clients{0};          // open client connections [client_connections]
  std::atomic<std::uint64_t> requests{0};        // commands received (redis, memcache)
  std::atomic<std::uint64_t> local_replies{0};   // answered by the proxy itself
  std::atomic<std::uint64_t> errors{0};          // error replies made by the proxy
  std::atomic<std::uint64_t> forward_errors{0};  // [forward_error] no backend could take it
  std::atomic<std::uint64_t> fragments{0};       // [fragments] parts of split multi-key requests
  std::atomic<std::uint64_t> client_eof{0};      // [client_eof] clients that closed
  std::atomic<std::uint64_t> client_err{0};      // [client_err] closed on a socket/protocol error
  std::atomic<std::uint64_t> output_limit_closes{0};  // closed past client_output_limit
  std::atomic<std::uint64_t> pubsub_messages{0};      // Pub/Sub messages delivered to clients
  std::atomic<std::uint64_t> request_bytes{0};   // read from clients
  std::atomic<std::uint64_t> response_bytes{0};  // written to clients
  LatencyHistogram latency;                      // request parsed -> reply ready
  // Redis Cluster pools (membership/cluster.h): redirections followed, and a worker's hint that the
  // slot map moved (a MOVED, a failed node), which the cluster watcher answers with a refresh.
  std::atomic<std::uint64_t> moved{0}, ask{0}, tryagain{0}, redirect_failures{0};
  std::atomic<bool> cluster_refresh{false};
  // Replica reads: requests sent to replicas, and those a replica refused (LOADING) that went
  // to the master instead.
  std::atomic<std::uint64_t> replica_reads{0}, replica_fallbacks{0};
  // Blocking commands (redis: BLPOP, XREAD BLOCK ...) waiting now on connections opened for
  // them, and those refused at max_blocked_clients.
  std::atomic<std::int64_t> blocked_clients{0};
  std::atomic<std::uint64_t> blocked_refused{0};
  // Connections of a client's own refused at the backend's limit (max_own_connections, or the
  // server's maxclients less the room kept for the shared ones).
  std::atomic<std::uint64_t> own_refused{0};
  // Warm-up on resize: misses read through from a previous owner, values found and copied to
  // the new owner, previous copies removed (writes, deletes, copies), steps that failed.
  std::atomic<std::uint64_t> warmup_reads{0}, warmup_copies{0}, warmup_removed{0}, warmup_errors{0};
  // Shadow route (`shadow:`): copies of this pool's requests sent to the shadow pool, and those
  // dropped (shadow backend down, unreachable, or kShadowMaxOutstanding copies unanswered).
  std::atomic<std::uint64_t> shadow_sent{0}, shadow_dropped{0};
  // Set when a rebalance of the pool has moved every key: the next topology ends the window.
  std::atomic<bool> end_warmup{false};
  // Hot keys (proxy/hotkeys/hot_keys.h): the workers' sketches, the last window's top list, the
  // hot cache and its write generations.
  hotkeys::HotKeys hot;
  // Safe return (membership/failback.h): servers let back in since the last topology, whose keys
  // written elsewhere meanwhile the next topology reads through (a routing with them out).
  void note_returned(std::string server) {
    std::lock_guard lock(returns_mu_);
    returns_.push_back(std::move(server));
  }
  std::vector<std::string> take_returned() {
    std::lock_guard lock(returns_mu_);
    return std::exchange(returns_, {});
  }

 private:
  std::mutex returns_mu_;
  std::vector<std::string> returns_;
};

// Counts one failure (a connect error, a timeout, a connection lost with requests in flight);
// at server_failure_limit consecutive failures the backend goes down (logged once).
void record_failure(BackendState& s, const PoolConfig& pool, std::string_view why);
// A reply arrived: the consecutive-failure count restarts.
inline void record_success(BackendState& s) noexcept {
  if (s.failures.load(std::memory_order_relaxed) != 0)
    s.failures.store(0, std::memory_order_relaxed);
}
std::int64_t steady_ms() noexcept;

// A routing a pool had before a reload moved keys (warm-up on resize): during its window a
// key's owner under it may still hold the key's value.
struct PreviousRouting {
  chash::Router router;            // how keys were routed then
  std::vector<std::string> names;  // its NodeIds' server names
  std::vector<NodeId> member;      // its NodeIds -> members of the pool holding it (kNoNode: none)
  std::int64_t until_ms = 0;       // steady clock: the end of the window
  // Its NodeIds that were out (ejected) then, their keys at their next choice: a returning
  // server's absence, a fleet routing's ejections. Empty: none.
  std::vector<std::uint8_t> out;
  NodeId owner(std::string_view key) const noexcept {
    if (out.empty()) return router.route(key);
    return router.route(key, [this](NodeId i) { return i >= out.size() || out[i] == 0; });
  }
};
// A routing that ran for a whole window: the fleet's (membership/fleet/) end when etcd says.
inline constexpr std::int64_t kNoWindowEnd = INT64_MAX;
inline constexpr std::size_t kMaxPreviousRoutings = 4;  // changes in a row still read through
// Shadow copies a shadow backend may have unanswered (BackendState::shadow_outstanding).
inline constexpr std::int64_t kShadowMaxOutstanding = 1000;

struct Pool {
  // `servers` (the members) and `nodes` are the config's for a plain pool, plus the replicas
  // read_policy sends reads to; a cluster pool's are its map's (membership/cluster.h). `router` is
  // built over servers[0, nodes); null `cluster_map` for plain pools.
  Pool(const PoolConfig& c, std::vector<ServerConfig> servers, std::size_t nodes,
       std::vector<std::shared_ptr<BackendState>> s, chash::Router router,
       std::shared_ptr<PoolShared> sh = std::make_shared<PoolShared>(), std::size_t slot = 0,
       std::shared_ptr<const redis::ClusterMap> cluster_map = nullptr,
       std::vector<PreviousRouting> previous_routings = {});
  // A plain pool of the config's servers (tests): its router built from the config.
  Pool(const PoolConfig& c, std::vector<std::shared_ptr<BackendState>> s,
       std::shared_ptr<PoolShared> sh = std::make_shared<PoolShared>(), std::size_t slot = 0);
  PoolConfig config;  // as configured
  // A pool's place in workers' tables, stable across reloads for as long as a pool of this name
  // exists (config order may change; pools come and go): clients and listeners refer to it.
  std::size_t slot = 0;
  // Who the pool talks to, by NodeId: [0, nodes) are routed to (the router's nodes), the rest
  // are replicas (ServerConfig::role, replica_of) and retired servers the warm-up still reads
  // (kRetired). What a connection, probe or status line of a member uses (address, auth, TLS),
  // never config.servers.
  std::vector<ServerConfig> servers;
  std::size_t nodes = 0;
  std::vector<std::vector<NodeId>> replicas;  // per routed node: its replica members
  chash::Router router;
  std::vector<std::shared_ptr<BackendState>> states;  // by NodeId, as servers
  std::shared_ptr<PoolShared> shared;
  std::shared_ptr<const redis::ClusterMap> cluster;  // cluster pools: the map routed by
  std::vector<PreviousRouting> previous;             // warm-up: newest first (empty: none)
  // Fleet health (membership/fleet/): by routed NodeId, 1 where the fleet has ejected the
  // server. Non-empty only for pools whose health is the fleet's: up() is then the fleet's
  // word, whatever this proxy's own probes say (backend_usable tells them apart).
  std::vector<std::uint8_t> fleet_out;
  std::uint64_t fleet_epoch = 0;  // the fleet state this snapshot was built from (0: none)
  // Fleet pools: per member the fleet has out whose membership changed during its absence, the
  // routing it was last in (fleet::PoolState::homes), its NodeIds linked to members (kNoNode:
  // gone). note_fallback_write notes a write of a key it owned there in its absence log.
  struct Home {
    NodeId member;
    PreviousRouting routing;
  };
  std::vector<Home> homes;
  // `shadow:` the slot (Pool::slot) of the pool its copies go to; kNoShadow: not shadowed.
  static constexpr std::size_t kNoShadow = ~std::size_t{0};
  std::size_t shadow_slot = kNoShadow;
  // `prefix_routes:` each prefix with the slot of the pool its keys go to, longest prefix first
  // (the first that matches is the longest). Empty: every key is this pool's.
  std::vector<std::pair<std::string, std::size_t>> prefix_slots;
  // The slot of the pool that `key` goes to: a prefix route's, or this pool's own (`slot`). A
  // scan of the prefixes: a pool has a handful (mcrouter's PrefixSelectorRoute configs do too).
  std::size_t prefix_route(std::string_view key) const noexcept {
    for (const auto& [prefix, to] : prefix_slots) {
      if (key.starts_with(prefix)) return to;
    }
    return slot;
  }

  // Warm-up: the members that owned `key` under the previous routings still in their window
  // (`now_ms`, steady clock), newest first, distinct, none of them `owner` (the key's owner now);
  // at most out.size(). 0 when the key did not move (the common case). Where this proxy decides
  // health, an old owner it sees down is left out (its copy is unreachable; a miss is the best
  // it can do). Where the fleet decides (fleet_out), a routing's own ejections are already in
  // its `out` mask, so every owner it names is kept whatever this proxy's probes say: in a
  // return's prepare the reads name the returning server, which the current route still has
  // ejected, and a write that did not delete its copy there would be read back in commit (lost
  // write). A request then fails on an old owner this proxy cannot reach rather than skip it.
  std::size_t previous_owners(std::string_view key, NodeId owner, std::int64_t now_ms,
                              std::span<NodeId> out) const noexcept {
    std::size_t n = 0;
    for (const PreviousRouting& p : previous) {
      if (now_ms >= p.until_ms || n == out.size()) continue;
      const NodeId old = p.owner(key);
      if (old == kNoNode || old >= p.member.size()) continue;
      const NodeId m = p.member[old];
      if (m == kNoNode || m == owner || (fleet_out.empty() && !up(m))) continue;
      bool seen = false;
      for (std::size_t i = 0; i < n; ++i) seen |= out[i] == m;
      if (!seen) out[n++] = m;
    }
    return n;
  }
  bool warming() const noexcept { return !previous.empty(); }

  // The backend for `key`: the router's choice; when that backend is down and auto_eject_hosts
  // is on, its next choice that is up (the router's failover: only a down backend's keys move);
  // kNoNode when every candidate is down. With auto-eject off a down backend is still returned
  // (callers fail fast). With hash_balance_factor, the first choice whose load (load()) is under
  // the factor times the average (chash::LoadBound). A cluster pool: the slot's master
  // (kNoNode: no node serves the slot).
  NodeId route(std::string_view key) const noexcept {
    if (!config.auto_eject_hosts) return route_if(key, [](NodeId) { return true; });
    return route_if(key, [this](NodeId id) { return up(id); });
  }
  // A cluster pool's route(): the master of `key_slot` (chash::redis_key_slot), kNoNode when no
  // node serves it (cluster pools have no auto_eject_hosts or hash_balance_factor).
  NodeId slot_owner(std::uint16_t key_slot) const noexcept { return router.pick(key_slot); }
  // The same among the backends for which usable(id) is true.
  template <class Usable>
  NodeId route_if(std::string_view key, Usable&& usable) const noexcept {
    if (router.balance_factor() == 0) return router.route(key, usable);
    std::uint64_t total = 0, up_weight = 0;
    for (NodeId i = 0; i < nodes; ++i) {
      if (!usable(i)) continue;
      total += load(i);
      up_weight += servers[i].weight;
    }
    return router.route_bounded(
        key, usable, [this](NodeId id) { return load(id); }, total, up_weight);
  }
  // Where a read-only command for routed node `node` goes under the pool's read_policy: `node`
  // itself or one of its replicas that is up, spread by `turn` (a per-client counter);
  // kNoNode when the policy is `replica` and none is up.
  NodeId read_member(NodeId node, std::uint32_t turn) const noexcept;
  // Whether the pool has members to send reads to (read_policy other than master).
  bool reads_to_replicas() const noexcept { return config.read_policy != ReadPolicy::kMaster; }

  // Whether keys may be routed to member `id`: the fleet's ejections where the fleet decides,
  // else this proxy's own health (probes, failures).
  bool up(NodeId id) const noexcept {
    if (id < fleet_out.size()) return fleet_out[id] == 0;
    return !states[id]->down.load(std::memory_order_relaxed);
  }
  // What bounded loads count: open relays for tcp pools, requests in flight otherwise.
  std::uint64_t load(NodeId id) const noexcept {
    const std::int64_t n = config.protocol == PoolProtocol::kTcp
                               ? states[id]->active.load(std::memory_order_relaxed)
                               : states[id]->inflight.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<std::uint64_t>(n) : 0;
  }
};

struct Topology {
  std::uint64_t version = 0;
  std::vector<std::shared_ptr<const Pool>> pools;  // in config order
  std::size_t slots = 0;  // one more than the largest Pool::slot ever used (never shrinks)
  const Pool* by_slot(std::size_t slot) const noexcept {
    for (const auto& p : pools) {
      if (p->slot == slot) return p.get();
    }
    return nullptr;
  }
};

// Builds a topology for `config` plus what the watchers learnt (`discovered`: cluster maps,
// Sentinel replicas; may be null), reusing the BackendStates and slots of `previous` by pool and
// member name (new pools take new slots). Throws chash::Error as chash::Router::build does.
std::shared_ptr<const Topology> build_topology(const ProxyConfig& config, const Topology* previous,
                                               std::uint64_t version,
                                               const Discovered* discovered = nullptr);

// Safe failover (membership/failback.h): a write of `key` going to `node` while the router's owner
// of it is another backend (down, with auto_eject_hosts) is noted in that backend's absence log;
// true when it is such a fallback write. Called before the write is sent.
bool note_fallback_write(const Pool& pool, std::string_view key, NodeId node);

// One line per change ("pool alpha: + 127.0.0.1:7003, moved 24.8% of keys"), for the log.
std::string describe_change(const Topology& before, const Topology& after);

}  // namespace chash::proxy
