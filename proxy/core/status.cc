// SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

#include <algorithm>
#include <cstdio>

namespace chash::proxy {

std::string prometheus_label_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::uint64_t non_negative(std::int64_t v) noexcept {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v));
}

void family(std::string& o, const char* name, const char* help, const char* type) {
  o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void scalar(std::string& o, const char* name, const char* help, std::uint64_t v,
            const char* type = "counter") {
  family(o, name, help, type);
  o += std::string(name) + " " + std::to_string(v) + "\n";
}

void latency_histogram(std::string& o, const Metrics& m) {
  family(o, "chash_proxy_request_duration_seconds", "Time from request parsed to reply ready.",
         "histogram");
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i <= Metrics::kBucketsUs.size(); ++i) {
    cum += m.latency[i].load();
    char le[32];
    if (i < Metrics::kBucketsUs.size()) {
      std::snprintf(le, sizeof le, "%g", static_cast<double>(Metrics::kBucketsUs[i]) / 1e6);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    o += std::string("chash_proxy_request_duration_seconds_bucket{le=\"") + le + "\"} " +
         std::to_string(cum) + "\n";
  }
  char sum[64];
  std::snprintf(sum, sizeof sum, "%.6f", static_cast<double>(m.latency_sum_us.load()) / 1e6);
  o += std::string("chash_proxy_request_duration_seconds_sum ") + sum + "\n";
  o += "chash_proxy_request_duration_seconds_count " + std::to_string(cum) + "\n";
}

// One per-backend family: its name, help, type and how to read it from a BackendState.
struct BackendSeries {
  const char* name;
  const char* help;
  const char* type;
  std::uint64_t (*value)(const BackendState&);
};

constexpr BackendSeries kBackendSeries[] = {
    {"chash_proxy_backend_up", "1 when the backend takes traffic, 0 when down/ejected.", "gauge",
     [](const BackendState& s) -> std::uint64_t { return s.down.load() ? 0 : 1; }},
    {"chash_proxy_backend_requests_total",
     "Requests sent to the backend (tcp pools: connections relayed).", "counter",
     [](const BackendState& s) -> std::uint64_t { return s.requests.load(); }},
    {"chash_proxy_backend_errors_total", "Requests that failed at the backend.", "counter",
     [](const BackendState& s) -> std::uint64_t { return s.errors.load(); }},
    {"chash_proxy_backend_ejections_total", "Times the backend went down.", "counter",
     [](const BackendState& s) -> std::uint64_t { return s.ejections.load(); }},
    {"chash_proxy_backend_timeouts_total", "Requests or connects that timed out.", "counter",
     [](const BackendState& s) -> std::uint64_t { return s.timeouts.load(); }},
    {"chash_proxy_backend_connections", "Open tcp relays to the backend.", "gauge",
     [](const BackendState& s) -> std::uint64_t { return non_negative(s.active.load()); }},
};

}  // namespace

std::string render_prometheus(const Metrics& m, const Topology& t) {
  std::string o;
  scalar(o, "chash_proxy_requests_total", "Commands received from clients.", m.requests.load());
  scalar(o, "chash_proxy_local_replies_total", "Commands answered by the proxy itself.",
         m.local_replies.load());
  scalar(o, "chash_proxy_errors_total", "Error replies made by the proxy.", m.proxy_errors.load());
  scalar(o, "chash_proxy_protocol_errors_total", "Clients closed for malformed requests.",
         m.protocol_errors.load());
  scalar(o, "chash_proxy_auth_failures_total", "Failed AUTH attempts.", m.auth_failures.load());
  scalar(o, "chash_proxy_clients_accepted_total", "Client connections accepted.",
         m.clients_accepted.load());
  scalar(o, "chash_proxy_clients_rejected_total", "Client connections over client_connections.",
         m.clients_rejected.load());
  scalar(o, "chash_proxy_clients", "Open client connections.", non_negative(m.clients_open.load()),
         "gauge");
  scalar(o, "chash_proxy_reloads_total", "Configuration reloads applied.", m.reloads.load());
  scalar(o, "chash_proxy_reload_failures_total", "Configuration reloads refused.",
         m.reload_failures.load());
  latency_histogram(o, m);
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
  return o;
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

std::string server_json(const Pool& pool, std::size_t i) {
  const BackendState& s = *pool.states[i];
  const ServerConfig& c = pool.config.servers[i];
  return "{\"name\":\"" + json_escape(s.name) + "\",\"address\":\"" +
         json_escape(c.address.text()) + "\",\"weight\":" + std::to_string(c.weight) +
         ",\"up\":" + (s.down.load() ? "false" : "true") +
         ",\"requests\":" + std::to_string(s.requests.load()) +
         ",\"errors\":" + std::to_string(s.errors.load()) +
         ",\"ejections\":" + std::to_string(s.ejections.load()) +
         ",\"connections\":" + std::to_string(std::max<std::int64_t>(0, s.active.load())) + "}";
}

std::string pool_json(const Pool& pool) {
  std::string o = "{\"name\":\"" + json_escape(pool.config.name) + "\",\"listen\":\"" +
                  json_escape(pool.config.listen.text()) + "\",\"protocol\":\"" +
                  protocol_name(pool.config.protocol) + "\",\"routing\":\"" + routing_of(pool) +
                  "\",\"clients\":" + std::to_string(pool.shared->clients.load()) +
                  ",\"auto_eject_hosts\":" + (pool.config.auto_eject_hosts ? "true" : "false") +
                  ",\"servers\":[";
  for (std::size_t i = 0; i < pool.states.size(); ++i) o += (i ? "," : "") + server_json(pool, i);
  return o + "]}";
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
