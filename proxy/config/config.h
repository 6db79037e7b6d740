// SPDX-License-Identifier: Apache-2.0
// chash-proxy — configuration: nutcracker.yml pools plus chash's own keys.
//
// An existing nutcracker.yml is accepted unchanged: each top-level key is a pool
//
//   alpha:
//     listen: 127.0.0.1:22121
//     hash: fnv1a_64
//     hash_tag: "{}"
//     distribution: ketama          # -> chash preset "twemproxy": nutcracker's exact mapping
//     timeout: 400                  # ms, connect and response
//     redis: true
//     redis_auth: secret            # clients must AUTH with it; the proxy AUTHs to servers
//     server_retry_timeout: 2000
//     server_failure_limit: 1
//     auto_eject_hosts: true
//     servers:
//       - 127.0.0.1:6379:1 server1
//
// chash's own keys (per pool): preset, algorithm, vnodes, client_auth, server_auth, server_user,
// acl (Redis ACL users in aclfile syntax), max_request_bytes, max_pipeline, hash_balance_factor,
// ...; servers may be maps {server: "h:p:w name", password: x, user: y}.
// The reserved top-level key `chash_proxy:` holds process settings: workers, admin, admin_auth,
// stats, stats_interval, drain_timeout, state_file.
//
// Errors throw chash::Error whose message starts with "<source>:<line>: " and names the key.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chash/router.h"
#include "hotkeys/config.h"
#include "proto/redis/acl.h"

namespace chash::proxy {

namespace net {
class TlsContext;
}

// A listen address: "host:port", or a unix socket "/path" with an optional octal mode
// ("/tmp/p.sock 0666"), as nutcracker's listen.
struct Address {
  std::string host;  // TCP host (IPv4 address or name); empty for a unix socket
  std::uint16_t port = 0;
  std::string unix_path;     // non-empty for a unix socket
  std::uint32_t mode = 0;    // unix socket permissions, 0 = default
  std::string text() const;  // as written (without the mode)
};

// Parses "host:port" or "/path[ mode]"; throws Error(kParse) with `what` in the message.
Address parse_address(std::string_view text, std::string_view what);

// What a member of a pool is to it (membership/topology.h, Pool::servers): a node keys are routed
// to, a replica of one that reads may go to (read_policy), or a server a reload took out of the
// routing that still holds keys the warm-up reads through (Pool::previous).
enum class ServerRole : std::uint8_t { kNode, kReplica, kRetired };

struct ServerConfig {
  Address address;
  std::uint32_t weight = 1;
  std::string name;  // the routing node's name: the given name, else host:port or the path
  std::optional<std::string> password;  // overrides the pool's server password
  std::optional<std::string> user;      // overrides the pool's server_user (AUTH user pass)
  // Sentinel-managed (membership/sentinel.h): the master group whose current master this server is;
  // `address` is then a placeholder (sentinel_placeholder) the sentinel watcher resolves.
  std::string sentinel_master;
  // TLS towards this server (net/tls.h): its own `server_tls:` over the pool's, else the pool's;
  // null: plaintext. What every connection and health probe to it uses.
  std::shared_ptr<const net::TlsContext> tls;
  // Redis pools: the replicas of this server listed in the config (`replicas: [host:port]`);
  // Sentinel-managed servers and cluster nodes have theirs discovered instead.
  std::vector<Address> replicas;
  // Set on the members a topology adds (membership/topology.h): a replica, and of which node.
  ServerRole role = ServerRole::kNode;
  std::uint32_t replica_of = 0;
  int line = 0;
};

// The placeholder address of a server managed by Sentinel ("sentinel/<master>:0"): never
// connected to; membership/sentinel.h binds it to the master the Sentinels agree on.
Address sentinel_placeholder(std::string_view master);

// A pool whose servers come from etcd instead of the file (`membership:`, top-level default or
// per pool; membership/fleet/, docs/FLEET.md): the servers key under `prefix` is the truth,
// watched by every proxy of the fleet; the file's `servers:` seed it when it is absent and are
// served when etcd cannot be reached at start.
struct EtcdMembership {
  std::vector<std::string> endpoints;  // "host:port", tried in turn
  std::string prefix = "/chash";       // no trailing '/'
  bool tls = false;                    // `tls: {ca, cert, key, verify}`: https to etcd
  std::string ca, cert, key;
  bool verify = true;
  std::string user, password;  // `auth: {user, password}` (etcd's own users)
  std::string id;              // this proxy's name in the fleet ("": <hostname>:<its first port>)
  std::uint32_t lease_ttl_ms = 5000;  // a proxy that stops renewing drops out after this
  std::uint32_t timeout_ms = 2000;    // each etcd request
  std::uint32_t start_timeout_ms = 3000;  // at start, how long to wait for etcd
  std::uint32_t quorum = 0;  // proxies that must see a server down to eject it (0: a majority)
  bool health = true;        // fleet-wide health: ejections by quorum (false: each proxy its own)
  double rebalance_rate = 0;  // keys/s the elected proxy's rebalance moves (0: no limit)
  // The connection's identity: pools with the same one share one watcher and one lease.
  std::string connection_key() const;
};

enum class PoolProtocol : std::uint8_t { kRedis, kMemcache, kTcp };
const char* protocol_name(PoolProtocol p) noexcept;

// How a tcp pool picks the backend for a new connection (`balance:`).
enum class Balance : std::uint8_t {
  kHash,        // the pool's preset/algorithm on the client IP (default: nginx-hash-consistent)
  kIpHash,      // nginx ip_hash (preset nginx-ip-hash): first three octets of an IPv4 address
  kRoundRobin,  // each worker in turn (nginx/HAProxy roundrobin without weights)
  kWeightedRoundRobin,  // nginx's smooth weighted round robin, per worker
  kLeastConn,  // fewest open relays per weight (across workers); ties by smooth WRR, as nginx
};
const char* balance_name(Balance b) noexcept;

// Where a redis pool's read-only commands go (`read_policy:`); writes always go to the master.
enum class ReadPolicy : std::uint8_t {
  kMaster,         // every command to the master (default)
  kPreferReplica,  // reads to a usable replica, else the master
  kReplica,        // reads to a usable replica only (none: an error)
  kAny,            // reads spread over the master and its usable replicas
};
const char* read_policy_name(ReadPolicy p) noexcept;

// A replicated memcache pool's writes (`replicas:` > 1, `write_policy:`): how many of the key's
// homes must have answered one for the client to be told it was done — mcrouter's AllSyncRoute,
// AllMajorityRoute and AllInitialRoute, counted over the `replicas` homes (a down home counts as
// not answered).
enum class WritePolicy : std::uint8_t { kAll, kMajority, kOne };
// The most homes a key of a replicated pool has (`replicas:`).
inline constexpr std::uint32_t kMaxReplicas = 8;
const char* write_policy_name(WritePolicy p) noexcept;

// A memcache pool's `shadow:` (docs/MEMCACHED.md "Shadow route"; mcrouter's ShadowRoute): a
// copy of some requests goes to another memcache pool of the config (routed by its router), its
// replies discarded; the client is answered by the pool's own backends alone, never later.
enum class ShadowCommands : std::uint8_t { kAll, kReads, kWrites };
const char* shadow_commands_name(ShadowCommands c) noexcept;
struct ShadowConfig {
  std::string pool;  // the shadow pool's name (checked to be another memcache pool)
  // The keys shadowed (mcrouter's key_fraction_range): those whose shadow_key_point() is in
  // [from, to); a key is always or never shadowed. `fraction: f` is [0, f).
  double from = 0, to = 1;
  // > 0 instead: each request shadowed with this probability, whatever its key.
  double sample = 0;
  ShadowCommands commands = ShadowCommands::kAll;
  int line = 0, pool_line = 0;  // the `shadow:` key, its `pool:`
};
// Where a key falls in [0, 1) for `fraction`: xxh3_64 of the key as the client sent it (a meta
// `b` key decoded), seed kShadowSeed (so that it is not the routing's own hash), top 53 bits.
inline constexpr std::uint64_t kShadowSeed = 0x73686164;  // "shad"
double shadow_key_point(std::string_view key) noexcept;

// A memcache pool's `prefix_routes:` (docs/MEMCACHED.md "Prefix routes"; mcrouter's
// PrefixSelectorRoute): a key starting with `prefix` goes to pool `pool` of the config, routed
// there by its router as if sent to its own listener; the longest matching prefix wins, and a key
// no prefix matches stays in the pool itself.
struct PrefixRoute {
  std::string prefix;
  std::string pool;
  int line = 0;
};

// PROXY protocol header sent to tcp backends first, so they see the client's address.
enum class ProxyProtocol : std::uint8_t { kNone, kV1, kV2 };

struct PoolConfig {
  std::string name;
  int line = 0;
  Address listen;
  int backlog = 512;
  PoolProtocol protocol = PoolProtocol::kMemcache;  // nutcracker's default (redis: false)

  // Routing, given to chash::Router (the same code as `chash route`).
  chash::RoutingSpec routing;
  // Bounded loads (HAProxy's hash-balance-factor, Envoy's hash_balance_factor): percent of the
  // mean load a backend may carry before its keys go to their next choice, e.g. 125; 0 = off.
  // Parsed and validated (0 or >= 100; tcp pools only with balance hash/ip-hash); routing does
  // not apply it yet.
  std::uint32_t hash_balance_factor = 0;

  std::optional<std::string> client_password;  // redis_auth / client_auth
  std::optional<std::string> server_password;  // redis_auth / server_auth
  // Redis 6+ backends: AUTH <server_user> <server password> instead of AUTH <password>.
  std::optional<std::string> server_user;
  // Redis pools: the client users (`acl:` lines and/or the client password), enforced per
  // command (proto/redis/acl.h); null: no AUTH needed, every command allowed.
  std::shared_ptr<const redis::Acl> acl;
  int redis_db = 0;
  std::optional<std::uint32_t> timeout_ms;  // none: wait forever (nutcracker's default)
  std::uint32_t server_connections = 1;
  bool auto_eject_hosts = false;
  std::uint32_t server_retry_timeout_ms = 30000;
  std::uint32_t server_failure_limit = 2;
  std::uint32_t client_connections = 0;  // 0: no limit
  bool tcpkeepalive = false;
  bool preconnect = false;
  std::size_t max_request_bytes = std::size_t{64} << 20;
  std::size_t max_pipeline = 1024;  // requests in flight per client before reading pauses
  // Replies a client has not read, past which it is closed (0: no limit) — Redis's
  // client-output-buffer-limit (hard), per client: the proxy never stops reading a shared
  // backend connection for one client, so a client that pipelines and never reads would hold
  // every reply in the proxy's memory.
  std::size_t client_output_limit = std::size_t{64} << 20;
  static constexpr std::size_t kMinClientOutputLimit = std::size_t{1} << 20;
  // redis pools of several backends: FLUSHALL / FLUSHDB are sent to every backend only when
  // allowed (a one-server pool forwards them as they are).
  bool allow_flushall = false;
  // redis pools: CONFIG SET / RESETSTAT / REWRITE are sent to the backends (every one) only
  // when allowed; CONFIG GET always is.
  bool allow_config_set = false;
  // redis pools: clients blocked at once (BLPOP, XREAD BLOCK ...), each on a backend connection
  // of its own, per worker (proto/redis/session_own.cc); one more is refused.
  std::uint32_t max_blocked_clients = 1024;
  // redis pools: connections of clients' own (RESP3, SELECT, WATCH/MULTI, blocking commands)
  // open at once to each backend, across workers; one more is refused with an error naming the
  // limit. Also never more than the server's maxclients less kOwnReserve (core/worker.cc), so
  // that they cannot exhaust it: the shared connections every other client uses keep room.
  // 0: only the server's maxclients bounds them.
  std::uint32_t max_own_connections = 1024;
  // memcache pools: largest value accepted in a storage command (memcached's -I, default 1 MiB).
  std::size_t max_value_bytes = std::size_t{1} << 20;
  // tcp pools.
  Balance balance = Balance::kHash;
  ProxyProtocol proxy_protocol = ProxyProtocol::kNone;
  std::uint32_t idle_timeout_ms = 600000;  // close a relay with no bytes either way (0: never)
  // Health: a down backend is probed (redis PING, memcache `version`, tcp connect) every
  // server_retry_timeout and takes traffic after `rise` probes in a row succeed. With
  // health_check_interval > 0 backends that are up are probed too, and `fall` failed probes in
  // a row (= server_failure_limit) take them down before a client sees an error.
  std::uint32_t health_check_interval_ms = 0;
  std::uint32_t rise = 1;
  // Redis pools: the Sentinels that watch the servers given as {sentinel_master: ...}.
  std::vector<Address> sentinels;
  // Redis pools: read-only commands to replicas (listed, from Sentinel, or a cluster's), which
  // must be probed usable: linked to their master, not loading, heard from it within
  // replica_max_lag.
  ReadPolicy read_policy = ReadPolicy::kMaster;
  std::uint32_t replica_max_lag_ms = 10000;
  // Redis Cluster pools (`cluster:` seed addresses instead of `servers:`): the nodes and the
  // slot map are learnt from the cluster (membership/cluster.h), every `cluster_refresh` ms and at
  // once when a reply says the map moved; a request follows at most cluster_max_redirects
  // MOVED/ASK hops.
  std::vector<Address> cluster_seeds;
  std::uint32_t cluster_refresh_ms = 1000;
  std::uint32_t cluster_max_redirects = 5;
  // Warm-up on resize (redis, memcache pools; docs/FAILURES.md "Membership changes"): after a
  // reload moves keys, a key's previous owner is read through on a miss (the value copied to its
  // new owner with its remaining TTL) and its copy there removed on a write, for warmup_window
  // ms or until a rebalance of the pool completes.
  bool warmup = true;
  std::uint32_t warmup_window_ms = 600000;
  // Safe failover and return (auto_eject_hosts): writes that go to a fallback while a node is
  // out get a TTL of at most failover_ttl_ms (0: kept as written); the keys written or deleted
  // meanwhile (at most failover_track_keys per node) are deleted on the node before it takes
  // traffic again. More than that: `flush` empties the node first, `keep_ejected` keeps it out
  // until an operator flushes it (POST /flush).
  std::uint32_t failover_ttl_ms = 0;
  bool failover_invalidate = true;
  std::uint32_t failover_track_keys = 100000;
  bool failover_overflow_flush = true;
  // Replicated memcache pools (docs/MEMCACHED.md "Replicated pools"): a key lives on its first
  // `replicas` distinct choices of the router (its homes). A write goes to every home that is up;
  // a home that is down or failed it has the key noted in its absence log, and deleted there
  // before it serves the key again. A read goes to the first home that is up and on to the next
  // on a miss or an error. 1: not replicated.
  std::uint32_t replicas = 1;
  WritePolicy write_policy = WritePolicy::kMajority;
  // The failover route of memcache pools with one owner per key (`failover:`, docs/MEMCACHED.md
  // "Failover route"; mcrouter's FailoverRoute / MissFailoverRoute): a request its owner fails
  // (a SERVER_ERROR, a timeout, a failed connection) goes to the key's next distinct owners that
  // are up, `tries` owners in all, before the owner is ejected. A write that moved on has the key
  // noted in the absence logs of the owners that failed it (deleted there before their next use
  // of it) and its TTL capped at failover_ttl. 1: no failover.
  struct Failover {
    std::uint32_t tries = 1;
    bool on_miss = false;               // reads move on on a miss too (MissFailoverRoute)
    bool return_best_on_error = false;  // every owner failed and one missed: the miss answers
  };
  Failover failover;
  // Hot keys (redis, memcache pools; docs/HOTKEYS.md): sampled and shown (hot_keys), their reads
  // answered from a short-TTL copy (hot_cache) or spread over the owner's replicas (hot_reads).
  hotkeys::Config hot_keys;
  hotkeys::CacheConfig hot_cache;
  hotkeys::Reads hot_reads = hotkeys::Reads::kOwner;
  // memcache pools: a copy of some requests to another pool (none: not shadowed).
  std::optional<ShadowConfig> shadow;
  // memcache pools: keys by prefix to other memcache pools (empty: every key is the pool's own).
  std::vector<PrefixRoute> prefix_routes;
  int prefix_routes_line = 0;
  std::vector<ServerConfig> servers;
  // The proxy's own listeners (every pool's listen, admin, stats) as the config has them: a
  // member on one of them would be this proxy itself (own_listener()).
  std::vector<Address> own_listeners;
  // Membership from etcd (null: the file's `servers:` are the truth; membership/fleet/).
  std::shared_ptr<const EtcdMembership> etcd;
  // TLS (net/tls.h), built when the config loads: `tls:` accepts clients over TLS, `server_tls:`
  // connects to the backends over TLS (ServerConfig::tls is what each server uses). Null:
  // plaintext. tcp pools terminate (tls) and originate (server_tls) TLS too; without either they
  // relay a client's TLS session untouched.
  std::shared_ptr<const net::TlsContext> tls;
  std::shared_ptr<const net::TlsContext> server_tls;

  bool address_is_tcp() const noexcept { return listen.unix_path.empty(); }
  bool is_cluster() const noexcept { return !cluster_seeds.empty(); }
  // The routing nodes, in the order of `servers`.
  std::vector<chash::Node> nodes() const;
};

// Servers as the router's nodes (name, weight), in order.
std::vector<chash::Node> routing_nodes(const std::vector<ServerConfig>& servers);

// Who may use the admin port (`chash_proxy: admin_auth:`): a bearer token and/or HTTP basic
// credentials, kept only as SHA-256 and compared in constant time. Off: anyone who can reach
// the admin address (loopback by default) may use it.
struct AdminAuth {
  std::optional<redis::PasswordHash> token;  // "Authorization: Bearer <token>"
  std::string basic_user;                    // "Authorization: Basic ..." (empty: off)
  redis::PasswordHash basic_password{};
  bool protect_all = false;  // false ("mutating"): only POST /reload needs it; true: every path
  bool enabled() const noexcept { return token.has_value() || !basic_user.empty(); }
};

struct ProxyConfig {
  std::string source;  // file name, for messages
  std::vector<PoolConfig> pools;
  unsigned workers = 0;          // 0: one per core
  std::optional<Address> admin;  // a bare port ("22223") means 127.0.0.1:22223
  AdminAuth admin_auth;
  // `admin_tls:` (the keys of a pool's `tls:`): the admin port speaks HTTPS only. Null: HTTP.
  std::shared_ptr<const net::TlsContext> admin_tls;
  // nutcracker's stats port (its -s/-a): each connection gets one stats JSON document and is
  // closed. None: off (chash-proxy's command line turns it on as nutcracker's does).
  std::optional<Address> stats;
  std::uint32_t stats_interval_ms = 30000;  // nutcracker's -i: how often the stats are aggregated
  // SIGTERM / hand-over: stop accepting, let in-flight requests finish for up to this, then exit.
  std::uint32_t drain_timeout_ms = 10000;
  // `state_file:` the backends' health (ejections, safe return's noted keys) is written here when
  // it changes and read at start, so a restart — a crash, a reboot — lets a backend that was out
  // back only through safe return (control/handover_state.h). Empty: kept in memory only.
  std::string state_file;
  // `membership:` — the default for every plain pool (null: the file's servers).
  std::shared_ptr<const EtcdMembership> membership;
};

// A server as a nutcracker.yml lists it ("127.0.0.1:6379:1 r1"): its routing name ("r1"; without
// one "127.0.0.1:6379"). Throws chash::Error(kParse) when `spec` is not such a string.
std::string server_name(std::string_view spec);
// A pool's servers given as such strings (etcd's servers key): each parsed as under `servers:`
// and given the pool's server_tls; none named twice; the pool's router must build over them.
// Throws chash::Error whose message names the first bad entry.
std::vector<ServerConfig> servers_from_strings(const PoolConfig& pool,
                                               const std::vector<std::string>& specs);

// Two routed members of one pool on one server — one unix path, or one host:port, IP literals
// compared as addresses ("127.0.0.1" and "::ffff:127.0.0.1", "::1" and "0:0:0:0:0:0:0:1"), names
// case-insensitively — make every move between them a deletion of the only copy (rebalance,
// warm-up, the safe return's sweep): the text naming both ("servers 'a' and 'b' are one server
// (127.0.0.1:6379)"), else empty. Names are not resolved here (a config must parse without DNS);
// the rebalancer compares resolved addresses too. Sentinel-managed members are skipped (their
// address is a placeholder until a Sentinel names the master).
std::string same_server(const std::vector<ServerConfig>& servers);
// A member that is one of the proxy's own listeners (`pool.own_listeners`): every request to it
// would come back to the proxy, and on to itself again. A listener on a wildcard address
// (0.0.0.0, ::) is reached through loopback and every local interface address. The text naming
// both ("server 'r3' (127.0.0.1:22121) is this proxy's own listener (pool 'cache')"), else empty.
std::string own_listener(const PoolConfig& pool, const std::vector<ServerConfig>& servers);
// Gives every pool the config's listeners (own_listeners) and checks each pool's servers against
// them; throws Error(kParse) naming the first member that is one, at its line in the file.
void check_own_listeners(ProxyConfig& config);
// Two of the proxy's listeners (pools' listen, admin, stats) on one address — one unix path, or
// one port where the hosts are equal or either is a wildcard — would fail the start with
// "Address already in use": the text naming both, else empty (port 0, any free port, never clashes).
std::string listener_clash(const ProxyConfig& config);

// Each pool's `shadow:` names another memcache pool of `config`; throws Error(kParse) at the
// line of the first that does not (config/shadow_parser.cc).
void check_shadows(const ProxyConfig& config);
// Each pool's `prefix_routes:` name other memcache pools of `config` that route no prefixes
// themselves; throws Error(kParse) at the line of the first that does not
// (config/prefix_routes_parser.cc).
void check_prefix_routes(const ProxyConfig& config);

// Parses YAML text; `source` names it in errors. Also builds each pool's router once, so a
// config that parses also routes (unknown hash, duplicate server, ...).
ProxyConfig parse_config(std::string_view yaml, const std::string& source);
ProxyConfig load_config(const std::string& path);

}  // namespace chash::proxy
