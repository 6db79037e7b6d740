// SPDX-License-Identifier: Apache-2.0
#include "control/status.h"

#include <algorithm>
#include <cstdio>

#include "chash/version.h"
#include "control/process_stats.h"
#include "base/text.h"

namespace chash::proxy {


namespace {

std::uint64_t non_negative(std::int64_t v) noexcept {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v));
}

void family(std::string& o, const char* name, const char* help, const char* type) {
  prometheus_family(o, name, help, type);
}

void scalar(std::string& o, const char* name, const char* help, std::uint64_t v,
            const char* type = "counter") {
  family(o, name, help, type);
  o += std::string(name) + " " + std::to_string(v) + "\n";
}

std::string labels(const Pool& pool) {
  return "{pool=\"" + prometheus_label_escape(pool.config.name) + "\"}";
}

void latency_histogram(std::string& o, const Topology& t) {
  family(o, "chash_proxy_request_duration_seconds",
         "Time from request parsed to reply ready, per pool (redis, memcache).", "histogram");
  for (const auto& pool : t.pools) {
    const LatencyHistogram& h = pool->shared->latency;
    const std::string name = prometheus_label_escape(pool->config.name);
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i <= LatencyHistogram::kBucketsUs.size(); ++i) {
      cum += h.counts[i].load(std::memory_order_relaxed);
      char le[32];
      if (i < LatencyHistogram::kBucketsUs.size()) {
        std::snprintf(le, sizeof le, "%g",
                      static_cast<double>(LatencyHistogram::kBucketsUs[i]) / 1e6);
      } else {
        std::snprintf(le, sizeof le, "+Inf");
      }
      o += "chash_proxy_request_duration_seconds_bucket{pool=\"" + name + "\",le=\"" + le + "\"} " +
           std::to_string(cum) + "\n";
    }
    char sum[64];
    std::snprintf(sum, sizeof sum, "%.6f",
                  static_cast<double>(h.sum_us.load(std::memory_order_relaxed)) / 1e6);
    o += "chash_proxy_request_duration_seconds_sum{pool=\"" + name + "\"} " + sum + "\n";
    o += "chash_proxy_request_duration_seconds_count{pool=\"" + name + "\"} " +
         std::to_string(cum) + "\n";
  }
}

// One per-pool family: its name, help, type and how to read it from a PoolShared.
struct PoolSeries {
  const char* name;
  const char* help;
  const char* type;
  std::uint64_t (*value)(const PoolShared&);
};

#define CHASH_POOL_COUNTER(field) \
  [](const PoolShared& p) -> std::uint64_t { return p.field.load(std::memory_order_relaxed); }

constexpr PoolSeries kPoolSeries[] = {
    {"chash_proxy_requests_total", "Commands received from clients (redis, memcache pools).",
     "counter", CHASH_POOL_COUNTER(requests)},
    {"chash_proxy_local_replies_total", "Commands answered by the proxy itself.", "counter",
     CHASH_POOL_COUNTER(local_replies)},
    {"chash_proxy_errors_total", "Error replies made by the proxy.", "counter",
     CHASH_POOL_COUNTER(errors)},
    {"chash_proxy_forward_errors_total",
     "Requests (parts of split requests) failed because no backend could take or answer them; "
     "tcp: clients closed with no backend available.",
     "counter", CHASH_POOL_COUNTER(forward_errors)},
    {"chash_proxy_fragments_total", "Parts sent for multi-key requests split over backends.",
     "counter", CHASH_POOL_COUNTER(fragments)},
    {"chash_proxy_request_bytes_total", "Bytes read from clients.", "counter",
     CHASH_POOL_COUNTER(request_bytes)},
    {"chash_proxy_response_bytes_total", "Bytes written to clients.", "counter",
     CHASH_POOL_COUNTER(response_bytes)},
    {"chash_proxy_client_eof_total", "Client connections that ended with the client closing.",
     "counter", CHASH_POOL_COUNTER(client_eof)},
    {"chash_proxy_client_errors_total",
     "Client connections that ended on a socket error or a malformed request.", "counter",
     CHASH_POOL_COUNTER(client_err)},
    {"chash_proxy_client_output_limit_total",
     "Client connections closed because their unread replies passed client_output_limit.",
     "counter", CHASH_POOL_COUNTER(output_limit_closes)},
    {"chash_proxy_pubsub_messages_total",
     "Pub/Sub messages (and keyspace notifications) delivered to subscribed clients.", "counter",
     CHASH_POOL_COUNTER(pubsub_messages)},
    {"chash_proxy_pool_clients", "Open client connections of the pool.", "gauge",
     [](const PoolShared& p) -> std::uint64_t { return non_negative(p.clients.load()); }},
    {"chash_proxy_blocked_clients",
     "Clients blocked now (BLPOP, XREAD BLOCK ...) on a backend connection opened for them.",
     "gauge",
     [](const PoolShared& p) -> std::uint64_t { return non_negative(p.blocked_clients.load()); }},
    {"chash_proxy_own_refused_total",
     "Connections of a client's own (RESP3, SELECT, WATCH, blocking commands) refused at a "
     "backend's limit: max_own_connections, or its maxclients less the room kept for the shared "
     "connections.",
     "counter", CHASH_POOL_COUNTER(own_refused)},
    {"chash_proxy_blocked_refused_total",
     "Blocking commands refused because max_blocked_clients were blocked already.", "counter",
     CHASH_POOL_COUNTER(blocked_refused)},
    {"chash_proxy_replica_reads_total", "Read-only commands sent to a replica (read_policy).",
     "counter", CHASH_POOL_COUNTER(replica_reads)},
    {"chash_proxy_replica_fallbacks_total",
     "Reads a replica refused (LOADING) that went to its master instead.", "counter",
     CHASH_POOL_COUNTER(replica_fallbacks)},
    {"chash_proxy_warmup_reads_total",
     "Warm-up: requests for a moved key looked up at its previous owner.", "counter",
     CHASH_POOL_COUNTER(warmup_reads)},
    {"chash_proxy_warmup_copies_total",
     "Warm-up: values found at a previous owner and copied to the key's new owner.", "counter",
     CHASH_POOL_COUNTER(warmup_copies)},
    {"chash_proxy_warmup_removed_total",
     "Warm-up: copies removed at a previous owner (moved, overwritten or deleted keys).", "counter",
     CHASH_POOL_COUNTER(warmup_removed)},
    {"chash_proxy_warmup_errors_total", "Warm-up steps that failed.", "counter",
     CHASH_POOL_COUNTER(warmup_errors)},
    {"chash_proxy_shadow_sent_total",
     "Shadow route: copies of the pool's requests sent to its shadow pool (replies discarded).",
     "counter", CHASH_POOL_COUNTER(shadow_sent)},
    {"chash_proxy_shadow_dropped_total",
     "Shadow route: copies dropped (shadow backend down, unreachable, or too many unanswered).",
     "counter", CHASH_POOL_COUNTER(shadow_dropped)},
};
#undef CHASH_POOL_COUNTER

// One per-backend family: its name, help, type and how to read it from a BackendState.
struct BackendSeries {
  const char* name;
  const char* help;
  const char* type;
  std::uint64_t (*value)(const BackendState&);
};

#define CHASH_BACKEND_COUNTER(field) \
  [](const BackendState& s) -> std::uint64_t { return s.field.load(std::memory_order_relaxed); }

constexpr BackendSeries kBackendSeries[] = {
    {"chash_proxy_backend_up", "1 when the backend takes traffic, 0 when down/ejected.", "gauge",
     [](const BackendState& s) -> std::uint64_t { return s.down.load() ? 0 : 1; }},
    {"chash_proxy_backend_requests_total",
     "Requests sent to the backend (tcp pools: connections relayed).", "counter",
     CHASH_BACKEND_COUNTER(requests)},
    {"chash_proxy_backend_responses_total",
     "Replies read from the backend to forwarded requests (tcp pools: 0).", "counter",
     CHASH_BACKEND_COUNTER(responses)},
    {"chash_proxy_backend_request_bytes_total",
     "Bytes of requests queued to the backend (tcp pools: bytes relayed to it).", "counter",
     CHASH_BACKEND_COUNTER(request_bytes)},
    {"chash_proxy_backend_response_bytes_total",
     "Bytes read from the backend (tcp pools: bytes relayed from it).", "counter",
     CHASH_BACKEND_COUNTER(response_bytes)},
    {"chash_proxy_backend_errors_total", "Failures counted towards ejection.", "counter",
     CHASH_BACKEND_COUNTER(errors)},
    {"chash_proxy_backend_ejections_total", "Times the backend went down.", "counter",
     CHASH_BACKEND_COUNTER(ejections)},
    {"chash_proxy_backend_timeouts_total", "Requests or connects that timed out.", "counter",
     CHASH_BACKEND_COUNTER(timeouts)},
    {"chash_proxy_backend_eof_total", "Backend connections the server closed.", "counter",
     CHASH_BACKEND_COUNTER(eofs)},
    {"chash_proxy_backend_connection_errors_total",
     "Backend connections that failed: connect, read or write errors, unparsable replies.",
     "counter", CHASH_BACKEND_COUNTER(conn_errors)},
    {"chash_proxy_backend_connections",
     "Open connections to the backend, every worker, every pool type (redis and memcache: "
     "pooled server connections; tcp: relays).",
     "gauge", [](const BackendState& s) -> std::uint64_t { return non_negative(s.active.load()); }},
    {"chash_proxy_backend_own_connections",
     "Open connections of clients' own to the backend (redis: RESP3, SELECT, WATCH, blocking "
     "commands), every worker.",
     "gauge",
     [](const BackendState& s) -> std::uint64_t { return non_negative(s.own_connections.load()); }},
    {"chash_proxy_backend_absent_writes_total",
     "Safe failover: writes and deletes of the backend's keys that went elsewhere while it was "
     "down (noted to delete on it before it returns).",
     "counter", [](const BackendState& s) -> std::uint64_t { return s.absence.noted(); }},
    {"chash_proxy_backend_swept_keys_total",
     "Safe return: keys deleted on the backend before it took traffic again.", "counter",
     [](const BackendState& s) -> std::uint64_t { return s.absence.swept(); }},
    {"chash_proxy_fleet_unreachable_total",
     "Fleet health: requests refused because this proxy alone cannot reach the backend while "
     "the fleet routes to it.",
     "counter", CHASH_BACKEND_COUNTER(fleet_unreachable)},
};
#undef CHASH_BACKEND_COUNTER

void process_metrics(std::string& o) {
  const ProcessStats p = read_process_stats();
  auto gauge = [&o](const char* name, const char* help, const char* type, double v) {
    if (v < 0) return;
    family(o, name, help, type);
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    o += std::string(name) + " " + b + "\n";
  };
  gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
        p.cpu_seconds);
  gauge("process_open_fds", "Number of open file descriptors.", "gauge",
        static_cast<double>(p.open_fds));
  gauge("process_max_fds", "Maximum number of open file descriptors.", "gauge",
        static_cast<double>(p.max_fds));
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge",
        static_cast<double>(p.virtual_memory_bytes));
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge",
        static_cast<double>(p.resident_memory_bytes));
  gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
        "gauge", p.start_time_seconds);
}

}  // namespace


namespace {

bool samples_keys(const Pool& pool) {
  return pool.config.protocol != PoolProtocol::kTcp && pool.config.hot_keys.enabled;
}

std::string one_decimal(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// The hot keys of the last window (proxy/hotkeys/hot_keys.h): a gauge per rank, labelled with
// the key as shown (its HMAC with hash_keys) and its owner, and the relief's counters.
void hot_key_metrics(std::string& o, const Topology& t) {
  family(o, "chash_proxy_hot_key_requests_per_second",
         "Requests per second of the pool's hottest keys over the last hot_keys window, by rank "
         "(key: as shown, an HMAC with hash_keys; owner: the server it routes to).",
         "gauge");
  for (const auto& pool : t.pools) {
    if (!samples_keys(*pool)) continue;
    const auto view = pool->shared->hot.view();
    const std::string name = prometheus_label_escape(pool->config.name);
    for (std::size_t r = 0; r < view->top.size(); ++r) {
      const hotkeys::HotKey& k = view->top[r];
      o += "chash_proxy_hot_key_requests_per_second{pool=\"" + name + "\",rank=\"" +
           std::to_string(r + 1) + "\",key=\"" + prometheus_label_escape(k.shown.substr(0, 200)) +
           "\",owner=\"" + prometheus_label_escape(k.owner) + "\"} " + one_decimal(k.rate) + "\n";
    }
  }
  family(o, "chash_proxy_hot_keys_sampled_requests_per_second",
         "The pool's requests per second over the last hot_keys window, as sampled (the "
         "denominator of a hot key's share).",
         "gauge");
  for (const auto& pool : t.pools) {
    if (!samples_keys(*pool)) continue;
    const auto view = pool->shared->hot.view();
    const double seconds = std::max<std::uint32_t>(view->window_ms, 1) / 1000.0;
    o += "chash_proxy_hot_keys_sampled_requests_per_second" + labels(*pool) + " " +
         one_decimal(view->window_ms == 0 ? 0.0 : static_cast<double>(view->requests) / seconds) +
         "\n";
  }
  struct Counter {
    const char* name;
    const char* help;
    std::uint64_t (*value)(const hotkeys::Counters&);
  };
  static constexpr Counter kCounters[] = {
      {"chash_proxy_hot_cache_hits_total", "Reads of hot keys answered from the proxy's copy.",
       [](const hotkeys::Counters& c) -> std::uint64_t { return c.cache_hits.load(); }},
      {"chash_proxy_hot_cache_misses_total",
       "Reads of hot keys with no fresh copy (sent to the backend, the copy refilled).",
       [](const hotkeys::Counters& c) -> std::uint64_t { return c.cache_misses.load(); }},
      {"chash_proxy_hot_cache_fills_total", "Copies of hot keys' values taken from replies.",
       [](const hotkeys::Counters& c) -> std::uint64_t { return c.cache_fills.load(); }},
      {"chash_proxy_hot_cache_invalidations_total",
       "Copies dropped because the key was written or deleted through the proxy.",
       [](const hotkeys::Counters& c) -> std::uint64_t { return c.cache_invalidations.load(); }},
      {"chash_proxy_hot_replica_reads_total",
       "Reads of hot keys sent to a replica of their owner (hot_reads: replicas).",
       [](const hotkeys::Counters& c) -> std::uint64_t { return c.replica_reads.load(); }},
  };
  for (const Counter& c : kCounters) {
    family(o, c.name, c.help, "counter");
    for (const auto& pool : t.pools) {
      if (!samples_keys(*pool)) continue;
      o += std::string(c.name) + labels(*pool) + " " +
           std::to_string(c.value(pool->shared->hot.counters)) + "\n";
    }
  }
}

}  // namespace

std::string render_prometheus(const Metrics& m, const Topology& t) {
  std::string o;
  family(o, "chash_proxy_build_info", "Always 1; the version label says which chash-proxy.",
         "gauge");
  o += "chash_proxy_build_info{version=\"" CHASH_VERSION_STRING "\"} 1\n";
  scalar(o, "chash_proxy_protocol_errors_total", "Clients closed for malformed requests.",
         m.protocol_errors.load());
  scalar(o, "chash_proxy_auth_failures_total", "Failed AUTH attempts.", m.auth_failures.load());
  scalar(o, "chash_proxy_tls_handshake_failures_total",
         "Client TLS handshakes that failed or timed out.", m.tls_handshake_failures.load());
  scalar(o, "chash_proxy_clients_accepted_total", "Client connections accepted.",
         m.clients_accepted.load());
  scalar(o, "chash_proxy_clients_rejected_total", "Client connections over client_connections.",
         m.clients_rejected.load());
  scalar(o, "chash_proxy_clients", "Open client connections.", non_negative(m.clients_open.load()),
         "gauge");
  scalar(o, "chash_proxy_reloads_total", "Configuration reloads applied.", m.reloads.load());
  scalar(o, "chash_proxy_reload_failures_total", "Configuration reloads refused.",
         m.reload_failures.load());
  family(o, "chash_proxy_last_reload_timestamp_seconds",
         "When the configuration was last loaded or a reload last attempted.", "gauge");
  char ts[64];
  std::snprintf(ts, sizeof ts, "%.3f", static_cast<double>(m.last_reload_ms.load()) / 1e3);
  o += std::string("chash_proxy_last_reload_timestamp_seconds ") + ts + "\n";
  scalar(o, "chash_proxy_last_reload_success",
         "1 when the last reload (or the initial load) was applied, 0 when it was refused.",
         m.last_reload_ok.load() ? 1 : 0, "gauge");
  for (const PoolSeries& series : kPoolSeries) {
    family(o, series.name, series.help, series.type);
    for (const auto& pool : t.pools) {
      o += std::string(series.name) + labels(*pool) + " " +
           std::to_string(series.value(*pool->shared)) + "\n";
    }
  }
  latency_histogram(o, t);
  hot_key_metrics(o, t);
  for (const BackendSeries& series : kBackendSeries) {
    family(o, series.name, series.help, series.type);
    for (const auto& pool : t.pools) {
      for (const auto& s : pool->states) {
        o += std::string(series.name) + "{pool=\"" + prometheus_label_escape(pool->config.name) +
             "\",backend=\"" + prometheus_label_escape(s->name) + "\"} " +
             std::to_string(series.value(*s)) + "\n";
      }
    }
  }
  process_metrics(o);
  return o;
}

const char* server_state(const Pool& pool, NodeId id, std::int64_t now_ms) noexcept {
  if (id < pool.servers.size() && pool.servers[id].role == ServerRole::kRetired) return "retired";
  if (!pool.up(id)) {
    const bool skipped =
        pool.config.auto_eject_hosts || id >= pool.nodes || !pool.fleet_out.empty();
    return skipped ? "ejected" : "down";
  }
  if (id < pool.nodes && !pool.previous.empty() && now_ms < pool.previous.front().until_ms) {
    const auto& member = pool.previous.front().member;
    if (std::find(member.begin(), member.end(), id) == member.end()) return "warming";
  }
  return "up";
}

namespace {

// A tcp pool with a non-hash balance has no router worth describing: its policy is the routing.
std::string routing_of(const Pool& pool) {
  const PoolConfig& c = pool.config;
  if (c.protocol == PoolProtocol::kTcp && c.balance != Balance::kHash &&
      c.balance != Balance::kIpHash) {
    return balance_name(c.balance);
  }
  return json_escape(pool.router.describe());
}

std::string server_json(const Pool& pool, std::size_t i, std::int64_t now_ms) {
  const BackendState& s = *pool.states[i];
  const ServerConfig& c = pool.servers[i];
  std::string role;
  if (c.role == ServerRole::kReplica && c.replica_of < pool.nodes) {
    role = ",\"role\":\"replica\",\"replica_of\":\"" +
           json_escape(pool.servers[c.replica_of].name) + "\"";
  } else if (c.role == ServerRole::kRetired) {
    role = ",\"role\":\"retired\"";  // out of the routing, read through by the warm-up
  } else {
    role = ",\"role\":\"" + std::string(pool.config.is_cluster() ? "master" : "node") + "\"";
  }
  return "{\"name\":\"" + json_escape(s.name) + "\",\"address\":\"" +
         json_escape(c.address.text()) + "\"" + role + ",\"weight\":" + std::to_string(c.weight) +
         ",\"up\":" + (s.down.load() ? "false" : "true") +
         ",\"requests\":" + std::to_string(s.requests.load()) +
         ",\"errors\":" + std::to_string(s.errors.load()) +
         ",\"ejections\":" + std::to_string(s.ejections.load()) +
         ",\"connections\":" + std::to_string(std::max<std::int64_t>(0, s.active.load())) +
         ",\"state\":\"" + server_state(pool, static_cast<NodeId>(i), now_ms) + "\"}";
}

// {"window_ms":W,"min_rate":M,"at_ms":T,"requests":N,
//  "top":[{"key":K,"rate":R,"hot":H,"requests":C,"owner":O}],
//  "cache":{...}} — the last window's hot keys (proxy/hotkeys/hot_keys.h).
std::string hot_keys_json(const Pool& pool) {
  const auto view = pool.shared->hot.view();
  const hotkeys::Counters& c = pool.shared->hot.counters;
  // The window as the last rotation measured it; before the first, the configured one.
  const std::uint32_t window = view->at_ms != 0 ? view->window_ms : pool.config.hot_keys.window_ms;
  const double min_rate = view->at_ms != 0 ? view->min_rate : pool.config.hot_keys.min_rate;
  std::string o = "{\"window_ms\":" + std::to_string(window) +
                  ",\"min_rate\":" + one_decimal(min_rate) +
                  ",\"at_ms\":" + std::to_string(view->at_ms) +
                  ",\"requests\":" + std::to_string(view->requests) + ",\"top\":[";
  for (std::size_t r = 0; r < view->top.size(); ++r) {
    const hotkeys::HotKey& k = view->top[r];
    o += std::string(r ? "," : "") + "{\"key\":\"" + json_escape(k.shown.substr(0, 200)) +
         "\",\"rate\":" + one_decimal(k.rate) +
         ",\"hot\":" + (k.rate >= view->min_rate ? "true" : "false") +
         ",\"requests\":" + std::to_string(k.count) + ",\"owner\":\"" + json_escape(k.owner) +
         "\"}";
  }
  o += "],\"hot_cache\":" + std::string(pool.config.hot_cache.enabled ? "true" : "false") +
       ",\"hot_reads\":\"" +
       (pool.config.hot_reads == hotkeys::Reads::kReplicas ? "replicas" : "owner") + "\"" +
       ",\"cache_hits\":" + std::to_string(c.cache_hits.load()) +
       ",\"cache_misses\":" + std::to_string(c.cache_misses.load()) +
       ",\"replica_reads\":" + std::to_string(c.replica_reads.load()) + "}";
  return o;
}

std::string pool_json(const Pool& pool) {
  std::string o = "{\"name\":\"" + json_escape(pool.config.name) + "\",\"listen\":\"" +
                  json_escape(pool.config.listen.text()) + "\",\"protocol\":\"" +
                  protocol_name(pool.config.protocol) + "\",\"routing\":\"" + routing_of(pool) +
                  "\",\"clients\":" + std::to_string(pool.shared->clients.load()) +
                  ",\"auto_eject_hosts\":" + (pool.config.auto_eject_hosts ? "true" : "false") +
                  ",\"read_policy\":\"" + read_policy_name(pool.config.read_policy) + "\"" +
                  ",\"servers\":[";
  const std::int64_t now_ms = steady_ms();
  for (std::size_t i = 0; i < pool.states.size(); ++i) {
    o += (i ? "," : "") + server_json(pool, i, now_ms);
  }
  o += "]";
  if (samples_keys(pool)) o += ",\"hot_keys\":" + hot_keys_json(pool);
  if (const auto& sh = pool.config.shadow) {
    o += ",\"shadow\":{\"pool\":\"" + json_escape(sh->pool) + "\",\"commands\":\"" +
         shadow_commands_name(sh->commands) + "\",\"sent\":" +
         std::to_string(pool.shared->shadow_sent.load()) +
         ",\"dropped\":" + std::to_string(pool.shared->shadow_dropped.load()) + "}";
  }
  if (!pool.config.prefix_routes.empty()) {
    o += ",\"prefix_routes\":[";
    for (std::size_t i = 0; i < pool.config.prefix_routes.size(); ++i) {
      const PrefixRoute& r = pool.config.prefix_routes[i];
      o += std::string(i ? "," : "") + "{\"prefix\":\"" + json_escape(r.prefix) +
           "\",\"pool\":\"" + json_escape(r.pool) + "\"}";
    }
    o += "]";
  }
  return o + "}";
}

}  // namespace

std::string render_status_json(const Metrics& m, const Topology& t, std::uint64_t applied_version,
                               unsigned workers) {
  std::string o = "{\"version\":" + std::to_string(t.version) +
                  ",\"applied_version\":" + std::to_string(applied_version) +
                  ",\"workers\":" + std::to_string(workers) +
                  ",\"requests\":" + std::to_string(m.requests.load()) +
                  ",\"clients\":" + std::to_string(m.clients_open.load()) + ",\"pools\":[";
  for (std::size_t p = 0; p < t.pools.size(); ++p) o += (p ? "," : "") + pool_json(*t.pools[p]);
  return o + "]}\n";
}

}  // namespace chash::proxy
