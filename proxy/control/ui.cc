// SPDX-License-Identifier: Apache-2.0
#include "control/ui.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "chash/svg.h"
#include "chash/version.h"
#include "control/status.h"

namespace chash::proxy {

namespace {

using nlohmann::json;

std::string h(std::string_view s) { return chash::svg::escape(s); }

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// "12.3", "4.5k", "1.2M" a second.
std::string rate_text(double v) {
  if (v >= 1e6) return fixed(v / 1e6, 1) + "M";
  if (v >= 1e4) return fixed(v / 1e3, 1) + "k";
  return fixed(v, v >= 100 ? 0 : 1);
}

std::string latency_text(double us) {
  if (us < 0) return "–";
  if (us >= static_cast<double>(LatencyHistogram::kBucketsUs.back())) {
    return "&gt; " + fixed(static_cast<double>(LatencyHistogram::kBucketsUs.back()) / 1e6, 0) +
           " s";
  }
  if (us >= 1000) return fixed(us / 1000, us >= 10000 ? 0 : 1) + " ms";
  return fixed(us, 0) + " µs";
}

// A value for a URL's query string: unreserved bytes as they are, the rest %XX.
std::string url_encode(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", u);
      out += b;
    }
  }
  return out;
}

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string url_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    // A '%' without two hex digits after it? Keep it as it is.
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::string text(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// What the /status document adds to the topology, by pool (and server) name. (A document that
// does not parse, e.g. a name with bytes that are not UTF-8, leaves these parts out.)
struct StatusIndex {
  std::map<std::string, json> pools;                             // "pools"[]
  std::map<std::pair<std::string, std::string>, json> sentinel;  // "sentinel"[] by pool, server
  std::map<std::string, json> cluster;                           // "cluster"[]
  std::map<std::string, json> rebalance;                         // "rebalance"[]
  json top;

  explicit StatusIndex(std::string_view document) {
    top = json::parse(document, nullptr, false);
    if (!top.is_object()) {
      top = json::object();
      return;
    }
    auto each = [&](const char* member, auto&& f) {
      const auto it = top.find(member);
      if (it == top.end() || !it->is_array()) return;
      for (const json& e : *it) {
        if (e.is_object() && e.contains("pool") && e["pool"].is_string()) f(e);
      }
    };
    if (const auto it = top.find("pools"); it != top.end() && it->is_array()) {
      for (const json& p : *it) {
        if (p.is_object() && p.contains("name") && p["name"].is_string())
          pools[p["name"].get<std::string>()] = p;
      }
    }
    each("sentinel", [&](const json& e) {
      sentinel[{e["pool"].get<std::string>(), text(e, "server")}] = e;
    });
    each("cluster", [&](const json& e) { cluster[e["pool"].get<std::string>()] = e; });
    each("rebalance", [&](const json& e) { rebalance[e["pool"].get<std::string>()] = e; });
  }
};

std::string number(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return "0";
  return it->is_number_float() ? fixed(it->get<double>(), 1)
                               : std::to_string(it->get<std::int64_t>());
}

std::vector<HotKeyRow> hot_keys(const json& pool, double& window_s) {
  std::vector<HotKeyRow> rows;
  const auto it = pool.find("hot_keys");
  if (it == pool.end() || !it->is_object()) return rows;
  if (const auto w = it->find("window_ms"); w != it->end() && w->is_number()) {
    window_s = w->get<double>() / 1000;
  }
  const auto top = it->find("top");
  if (top == it->end() || !top->is_array()) return rows;
  for (const json& r : *top) {
    if (!r.is_object()) continue;
    HotKeyRow row;
    row.key = text(r, "key");
    row.owner = text(r, "owner");
    if (const auto v = r.find("rate"); v != r.end() && v->is_number()) row.rate = v->get<double>();
    rows.push_back(std::move(row));
  }
  return rows;
}

// Counts a second between two samples; nullopt without an earlier sample (or after a reset).
std::optional<std::pair<double, double>> rates(const UiSample::Counts* now,
                                               const UiSample::Counts* before, double seconds) {
  if (now == nullptr || before == nullptr || seconds <= 0 || now->requests < before->requests ||
      now->errors < before->errors) {
    return std::nullopt;
  }
  return std::pair{static_cast<double>(now->requests - before->requests) / seconds,
                   static_cast<double>(now->errors - before->errors) / seconds};
}

template <class Map, class Key>
const typename Map::mapped_type* lookup(const Map* m, const Key& k) {
  if (m == nullptr) return nullptr;
  const auto it = m->find(k);
  return it == m->end() ? nullptr : &it->second;
}

const char* kStyle = R"(
body{font:14px/1.4 "DejaVu Sans",Helvetica,Arial,sans-serif;margin:16px 24px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px} h2{font-size:17px;margin:0 0 6px} h3{font-size:14px;margin:12px 0 4px}
small{color:#666;font-weight:normal}
.summary{color:#444;margin:0 0 14px}
section.pool{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:0 0 16px}
.scroll{overflow-x:auto}
.cols{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.cols>.hot{flex:1 1 360px;min-width:0} .cols>figure{flex:0 1 560px;min-width:0}
table{border-collapse:collapse;margin:4px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{background:#f3f3f3;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.state{font-weight:600}
.state-up{color:#2e7d32} .state-warming{color:#b26a00} .state-ejected,.state-down{color:#c62828}
.state-retired{color:#777}
.note{color:#555;margin:4px 0}
figure{margin:0} figure svg{width:100%;height:auto;border:1px solid #eee}
)";

std::string server_row(const Pool& pool, NodeId id, const UiSample& now, const UiSample* before,
                       double seconds, const StatusIndex& index, std::int64_t now_ms) {
  const BackendState& s = *pool.states[id];
  const ServerConfig& c = pool.servers[id];
  const std::string state = server_state(pool, id, now_ms);
  std::string role;
  if (c.role == ServerRole::kReplica && c.replica_of < pool.nodes) {
    role = "replica of " + h(pool.servers[c.replica_of].name);
  } else if (c.role == ServerRole::kRetired) {
    role = "retired (read through by the warm-up)";
  } else if (pool.config.is_cluster()) {
    role = "master";
  } else if (!c.sentinel_master.empty()) {
    role = "master of Sentinel group " + h(c.sentinel_master);
    if (const auto* e = lookup(&index.sentinel, std::pair{pool.config.name, s.name})) {
      const std::string at = text(*e, "master"), status = text(*e, "status");
      if (!at.empty()) role += " at " + h(at);
      if (!status.empty()) role += " (" + h(status) + ")";
    }
  } else {
    role = "node";
  }
  const auto key = std::pair{pool.config.name, s.name};
  const auto r =
      rates(lookup(&now.servers, key), before ? lookup(&before->servers, key) : nullptr, seconds);
  const std::string last_error = s.down.load() ? s.last_error() : std::string();
  return "<tr class=\"server\" data-server=\"" + h(s.name) + "\" data-state=\"" + state +
         "\"><td class=\"name\">" + h(s.name) + "</td><td>" + h(c.address.text()) +
         "</td><td class=\"state state-" + state + "\">" + state + "</td><td>" + role +
         "</td><td class=\"num\">" + std::to_string(c.weight) + "</td><td class=\"num\">" +
         (r ? rate_text(r->first) : "–") + "</td><td class=\"num\">" +
         (r ? rate_text(r->second) : "–") + "</td><td class=\"num\">" +
         std::to_string(s.requests.load()) + "</td><td class=\"num\">" +
         std::to_string(s.errors.load()) + "</td><td class=\"num\">" +
         std::to_string(s.ejections.load()) + "</td><td class=\"num\">" +
         std::to_string(std::max<std::int64_t>(0, s.active.load())) + "</td><td>" + h(last_error) +
         "</td></tr>\n";
}

std::string warmup_text(const Pool& pool, std::int64_t now_ms) {
  if (!pool.warming()) return {};
  const PoolShared& sh = *pool.shared;
  std::int64_t until = 0;
  std::size_t open = 0;
  for (const PreviousRouting& p : pool.previous) {
    if (now_ms >= p.until_ms) continue;
    ++open;
    until = std::max(until, p.until_ms);
  }
  if (open == 0) return {};
  const std::string ends =
      until == kNoWindowEnd
          ? "until the fleet ends it"
          : "ends in " + fixed(static_cast<double>(until - now_ms) / 1e3, 0) + " s";
  return "<p class=\"note warmup\">Warm-up: " + std::to_string(open) +
         " previous routing(s) read through, " + ends + "; " +
         std::to_string(sh.warmup_reads.load()) + " reads at a previous owner, " +
         std::to_string(sh.warmup_copies.load()) + " values copied, " +
         std::to_string(sh.warmup_removed.load()) + " old copies removed, " +
         std::to_string(sh.warmup_errors.load()) + " errors.</p>\n";
}

std::string rebalance_text(const json* r) {
  if (r == nullptr) return {};
  const std::string state = text(*r, "state"), error = text(*r, "error");
  return "<p class=\"note rebalance\">Rebalance: " + h(state) + ", " + number(*r, "scanned") +
         " keys scanned, " + number(*r, "moved") + " moved, " + number(*r, "skipped") +
         " already home, " + number(*r, "failed") + " failed" +
         (error.empty() ? "" : " (" + h(error) + ")") + ".</p>\n";
}

std::string cluster_text(const json* c) {
  if (c == nullptr) return {};
  const std::string status = text(*c, "status"), error = text(*c, "last_error");
  return "<p class=\"note cluster\">Redis Cluster map: " + h(status) + ", " +
         number(*c, "covered_slots") + " of 16384 slots covered, " + number(*c, "migrating_slots") +
         " migrating, from " + h(text(*c, "source")) +
         (error.empty() ? "" : "; last error: " + h(error)) + ".</p>\n";
}

std::string hot_keys_table(const json* pool) {
  double window = 0;
  const std::vector<HotKeyRow> rows =
      pool != nullptr ? hot_keys(*pool, window) : std::vector<HotKeyRow>{};
  std::string o = "<h3>Hot keys";
  if (window > 0) o += " <small>(last " + fixed(window, 0) + " s)</small>";
  o += "</h3>\n";
  if (rows.empty()) return o + "<p class=\"note hot-keys\">no hot keys sampled</p>\n";
  o += "<table class=\"hot-keys\"><tr><th>key</th><th>requests/s</th><th>owner</th></tr>\n";
  for (const HotKeyRow& r : rows) {
    o += "<tr><td>" + h(r.key) + "</td><td class=\"num\">" + rate_text(r.rate) + "</td><td>" +
         h(r.owner) + "</td></tr>\n";
  }
  return o + "</table>\n";
}

std::string pool_title(const Pool& pool) {
  const PoolConfig& c = pool.config;
  if (c.protocol == PoolProtocol::kTcp && c.balance != Balance::kHash &&
      c.balance != Balance::kIpHash) {
    return "pool " + c.name + ": balance " + balance_name(c.balance) + " (not by key; " +
           pool.router.describe() + " shown)";
  }
  return "pool " + c.name + ": " + pool.router.describe();
}

std::string pool_section(const Pool& pool, const UiSample& now, const UiSample* before,
                         double seconds, const StatusIndex& index, std::int64_t now_ms) {
  const PoolConfig& c = pool.config;
  const std::string& name = c.name;
  const auto r =
      rates(lookup(&now.pools, name), before ? lookup(&before->pools, name) : nullptr, seconds);
  // Latency over the last interval when there was traffic in it, else since the start.
  UiSample::Buckets recent{};
  const UiSample::Buckets* all = lookup(&now.latency, name);
  const UiSample::Buckets* earlier = before ? lookup(&before->latency, name) : nullptr;
  std::string over = "since start";
  if (all != nullptr) recent = *all;
  if (all != nullptr && earlier != nullptr) {
    UiSample::Buckets d{};
    std::uint64_t n = 0;
    bool ok = true;
    for (std::size_t i = 0; i < d.size(); ++i) {
      ok &= (*all)[i] >= (*earlier)[i];
      d[i] = ok ? (*all)[i] - (*earlier)[i] : 0;
      n += d[i];
    }
    if (ok && n > 0) {
      recent = d;
      over = "last " + fixed(seconds, 0) + " s";
    }
  }
  std::string o = "<section class=\"pool\" data-pool=\"" + h(name) + "\">\n<h2>pool " + h(name) +
                  " <small>" + protocol_name(c.protocol) + " on " + h(c.listen.text()) + " · " +
                  h(pool.router.describe()) + "</small></h2>\n";
  o += "<table class=\"pool-stats\"><tr><th>clients</th><th>requests/s</th><th>errors/s</th>"
       "<th>p50</th><th>p99</th><th>requests</th><th>errors</th></tr>\n<tr><td class=\"num\">" +
       std::to_string(std::max<std::int64_t>(0, pool.shared->clients.load())) +
       "</td><td class=\"num\">" + (r ? rate_text(r->first) : "–") + "</td><td class=\"num\">" +
       (r ? rate_text(r->second) : "–") + "</td><td class=\"num\">" +
       latency_text(latency_quantile(recent, 0.5)) + "</td><td class=\"num\">" +
       latency_text(latency_quantile(recent, 0.99)) + " <small>(" + over +
       ")</small></td><td class=\"num\">" + std::to_string(pool.shared->requests.load()) +
       "</td><td class=\"num\">" + std::to_string(pool.shared->errors.load()) +
       "</td></tr>\n</table>\n";
  o += warmup_text(pool, now_ms);
  o += rebalance_text(lookup(&index.rebalance, name));
  o += cluster_text(lookup(&index.cluster, name));
  o += "<h3>Servers</h3>\n<div class=\"scroll\"><table class=\"servers\"><tr><th>name</th>"
       "<th>address</th><th>state</th><th>role</th><th>weight</th><th>requests/s</th>"
       "<th>errors/s</th><th>requests</th><th>errors</th><th>ejections</th><th>connections</th>"
       "<th>last error</th></tr>\n";
  for (NodeId id = 0; id < pool.states.size(); ++id) {
    o += server_row(pool, id, now, before, seconds, index, now_ms);
  }
  o += "</table></div>\n<div class=\"cols\"><div class=\"hot\">\n" +
       hot_keys_table(lookup(&index.pools, name)) +
       "</div>\n<figure><h3>Key space <small><a href=\"ring.svg?pool=" + url_encode(name) +
       "\">ring.svg</a></small></h3>\n" + chash::svg::placement(pool.router, pool_title(pool)) +
       "</figure>\n</div>\n";
  return o + "</section>\n";
}

}  // namespace

UiSample take_ui_sample(const Topology& t, std::int64_t now_ms) {
  UiSample s;
  s.at_ms = now_ms;
  for (const auto& pool : t.pools) {
    const PoolShared& sh = *pool->shared;
    s.pools[pool->config.name] = {sh.requests.load(), sh.errors.load()};
    UiSample::Buckets& b = s.latency[pool->config.name];
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = sh.latency.counts[i].load();
    for (const auto& st : pool->states) {
      s.servers[{pool->config.name, st->name}] = {st->requests.load(), st->errors.load()};
    }
  }
  return s;
}

double latency_quantile(const UiSample::Buckets& counts, double q) {
  std::uint64_t total = 0;
  for (const std::uint64_t c : counts) total += c;
  if (total == 0) return -1;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  const auto& bounds = LatencyHistogram::kBucketsUs;
  double below = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    const double in = static_cast<double>(counts[i]);
    if (in > 0 && below + in >= rank) {
      const double lo = i == 0 ? 0 : static_cast<double>(bounds[i - 1]);
      const double hi = static_cast<double>(bounds[i]);
      return lo + (hi - lo) * std::max(0.0, rank - below) / in;
    }
    below += in;
  }
  return static_cast<double>(bounds.back());  // in the +Inf bucket
}

std::string query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    const std::size_t eq = kv.find('=');
    if (eq != std::string_view::npos && url_decode(kv.substr(0, eq)) == name) {
      return url_decode(kv.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

std::optional<std::string> render_pool_svg(const Topology& t, std::string_view name) {
  for (const auto& pool : t.pools) {
    if (pool->config.name == name) return chash::svg::placement(pool->router, pool_title(*pool));
  }
  return std::nullopt;
}

std::string render_ui(const Topology& t, std::string_view status_json, const UiSample& now,
                      const UiSample* before) {
  const StatusIndex index(status_json);
  const double seconds =
      before != nullptr ? static_cast<double>(now.at_ms - before->at_ms) / 1e3 : 0;
  std::size_t servers = 0;
  for (const auto& pool : t.pools) servers += pool->servers.size();
  const int refresh = ui_refresh_seconds(servers);
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"" +
      std::to_string(refresh) +
      "\"><meta name=\"viewport\" content=\"width=device-width\">"
      "<title>chash-proxy status</title><style>" +
      std::string(kStyle) + "</style></head>\n<body>\n<h1>chash-proxy <small>" +
      CHASH_VERSION_STRING + "</small></h1>\n<p class=\"summary\">configuration version " +
      std::to_string(t.version) + " (workers on " + number(index.top, "applied_version") + ") · " +
      number(index.top, "workers") + " workers · " + number(index.top, "clients") + " clients · " +
      number(index.top, "requests") + " requests · " +
      (before != nullptr ? "rates over the last " + fixed(seconds, 1) + " s"
                         : "rates from the next refresh") +
      " · refreshes every " + std::to_string(refresh) +
      " s · <a href=\"status\">/status</a> <a href=\"metrics\">/metrics</a></p>\n";
  const std::int64_t now_ms = now.at_ms;
  for (const auto& pool : t.pools) o += pool_section(*pool, now, before, seconds, index, now_ms);
  if (t.pools.empty()) o += "<p>no pools</p>\n";
  return o + "</body></html>\n";
}

}  // namespace chash::proxy
