// SPDX-License-Identifier: Apache-2.0
#include "control/ui.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

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
  // "fleet"[] (membership/fleet/agent.h): one per etcd connection, and each etcd-fed pool's
  // member of it with the index of its connection.
  std::vector<json> fleets;
  std::map<std::string, std::pair<std::size_t, json>> fleet_pools;
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
    if (const auto it = top.find("fleet"); it != top.end() && it->is_array()) {
      for (const json& f : *it) {
        if (!f.is_object()) continue;
        fleets.push_back(f);
        const auto ps = f.find("pools");
        if (ps == f.end() || !ps->is_array()) continue;
        for (const json& p : *ps) {
          if (p.is_object() && p.contains("pool") && p["pool"].is_string())
            fleet_pools[p["pool"].get<std::string>()] = {fleets.size() - 1, p};
        }
      }
    }
  }
};

std::string number(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return "0";
  return it->is_number_float() ? fixed(it->get<double>(), 1)
                               : std::to_string(it->get<std::int64_t>());
}

bool flag(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

const json& member(const json& o, const char* key) {
  static const json kNone = json::object();
  const auto it = o.find(key);
  return it == o.end() ? kNone : *it;
}

// "3 s ago" from a wall-clock stamp in ms; "never" for 0.
std::string ago(std::int64_t at_ms, std::int64_t wall_ms) {
  if (at_ms <= 0) return "never";
  return fixed(static_cast<double>(std::max<std::int64_t>(0, wall_ms - at_ms)) / 1e3, 0) + " s ago";
}

// The hot keys of the pool's last window: only those at or above its min_rate (the sketch's
// other entries are noise: under uniform traffic every key it holds is one sample or two).
struct HotKeysShown {
  double window_s = 0, min_rate = 0;
  bool rotated = false;  // a window has ended
  std::vector<HotKeyRow> rows;
};
HotKeysShown hot_keys(const json& pool) {
  HotKeysShown out;
  const auto it = pool.find("hot_keys");
  if (it == pool.end() || !it->is_object()) return out;
  auto num = [&](const char* key) {
    const auto v = it->find(key);
    return v != it->end() && v->is_number() ? v->get<double>() : 0.0;
  };
  out.window_s = num("window_ms") / 1000;
  out.min_rate = num("min_rate");
  out.rotated = num("at_ms") > 0;
  const auto top = it->find("top");
  if (top == it->end() || !top->is_array()) return out;
  for (const json& r : *top) {
    if (!r.is_object()) continue;
    HotKeyRow row;
    row.key = text(r, "key");
    row.owner = text(r, "owner");
    if (const auto v = r.find("rate"); v != r.end() && v->is_number()) row.rate = v->get<double>();
    if (row.rate < out.min_rate) continue;
    out.rows.push_back(std::move(row));
  }
  return out;
}

// Counts a second between two samples; nullopt without an earlier sample (or after a reset).
// A count the earlier sample took later than itself (a server that came after it) is a rate
// from then.
std::optional<std::pair<double, double>> rates(const UiSample::Counts* now,
                                               const UiSample::Counts* before,
                                               const UiSample& now_sample,
                                               const UiSample* before_sample) {
  if (now == nullptr || before == nullptr || before_sample == nullptr ||
      now->requests < before->requests || now->errors < before->errors) {
    return std::nullopt;
  }
  const std::int64_t from = before->at_ms != 0 ? before->at_ms : before_sample->at_ms;
  const double seconds = static_cast<double>(now_sample.at_ms - from) / 1e3;
  if (seconds <= 0) return std::nullopt;
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
section.pool,section.fleet{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:0 0 16px}
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
                       const StatusIndex& index, std::int64_t now_ms) {
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
  const auto r = rates(lookup(&now.servers, key), before ? lookup(&before->servers, key) : nullptr,
                       now, before);
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
  const HotKeysShown hot = pool != nullptr ? hot_keys(*pool) : HotKeysShown{};
  std::string o = "<h3>Hot keys";
  if (hot.window_s > 0) o += " <small>(over the last " + fixed(hot.window_s, 1) + " s)</small>";
  o += "</h3>\n";
  if (pool == nullptr || !pool->contains("hot_keys")) {
    return o + "<p class=\"note hot-keys\">not sampled in this pool</p>\n";
  }
  if (!hot.rotated) {
    return o + "<p class=\"note hot-keys\">no window has ended yet (one every " +
           fixed(hot.window_s, 1) + " s)</p>\n";
  }
  if (hot.rows.empty()) {
    return o + "<p class=\"note hot-keys\">no key above " + rate_text(hot.min_rate) +
           " req/s (min_rate)</p>\n";
  }
  o += "<table class=\"hot-keys\"><tr><th>key</th><th>requests/s</th><th>owner</th></tr>\n";
  for (const HotKeyRow& r : hot.rows) {
    o += "<tr><td>" + h(r.key) + "</td><td class=\"num\">" + rate_text(r.rate) + "</td><td>" +
         h(r.owner) + "</td></tr>\n";
  }
  return o + "</table>\n";
}

// One etcd connection of the fleet: etcd up or down, each endpoint as last heard, the store's
// revision and the leader.
std::string fleet_section(const json& f, std::int64_t wall_ms) {
  const json& etcd = member(f, "etcd");
  const bool up = flag(etcd, "up");
  const std::string error = text(etcd, "error");
  std::string o = "<section class=\"fleet\" data-fleet=\"" + h(text(f, "prefix")) +
                  "\">\n<h2>fleet <small>etcd prefix " + h(text(f, "prefix")) + " · this proxy " +
                  h(text(f, "id")) + "</small></h2>\n<p class=\"note fleet-etcd\">etcd <span " +
                  "class=\"state state-" + (up ? "up" : "down") + "\" data-etcd=\"" +
                  (up ? "up" : "down") + "\">" + (up ? "up" : "down") + "</span>" +
                  (!up && !error.empty() ? " (" + h(error) + ")" : "") + " · store revision " +
                  number(f, "revision") + " · leader <span class=\"leader\">" +
                  (text(f, "leader").empty() ? "none" : h(text(f, "leader"))) + "</span></p>\n";
  o += "<table class=\"etcd\"><tr><th>endpoint</th><th>state</th><th>last heard</th>"
       "<th>error</th></tr>\n";
  const json& endpoints = member(etcd, "endpoint_status");
  if (endpoints.is_array()) {
    for (const json& e : endpoints) {
      if (!e.is_object()) continue;
      std::string state = text(e, "state");
      if (state != "up" && state != "down") state = "unknown";
      const auto at = e.find("at_ms");
      const std::int64_t at_ms = at != e.end() && at->is_number() ? at->get<std::int64_t>() : 0;
      o += "<tr data-endpoint=\"" + h(text(e, "endpoint")) + "\" data-state=\"" + state +
           "\"><td>" + h(text(e, "endpoint")) + "</td><td class=\"state state-" + state + "\">" +
           (state == "unknown" ? "not asked yet" : state) + "</td><td>" + ago(at_ms, wall_ms) +
           "</td><td>" + h(text(e, "error")) + "</td></tr>\n";
    }
  }
  return o + "</table>\n</section>\n";
}

// An etcd-fed pool as the fleet holds it: the epoch and phase of its state and what this proxy
// routes by, every live proxy with the revision and epoch it applied and its lag, and the votes
// (members that cannot reach it) against each backend with what the fleet made of them.
std::string fleet_pool_text(const Pool& pool, const json& p, const json& f) {
  const json& st = member(p, "state");
  const json& target = member(st, "target");
  std::set<std::string> ejected;
  if (const json& e = member(target, "ejected"); e.is_array()) {
    for (const json& s : e) {
      if (s.is_string()) ejected.insert(s.get<std::string>());
    }
  }
  const std::string returning = text(st, "returning");  // the server coming back, if one is
  std::string o =
      "<h3>Fleet</h3>\n<p class=\"note fleet-pool\">epoch <span class=\"epoch\">" +
      number(st, "epoch") + "</span>, phase <span class=\"phase\">" +
      (text(st, "phase").empty() ? "none" : h(text(st, "phase"))) +
      "</span>; this proxy routes by epoch " + std::to_string(pool.fleet_epoch) + " (applied " +
      number(p, "applied_epoch") +
      (text(p, "applied_phase").empty() ? "" : ", " + h(text(p, "applied_phase"))) + ") · leader " +
      (text(f, "leader").empty() ? "none" : h(text(f, "leader"))) +
      (text(p, "state_error").empty() ? "" : " · state refused: " + h(text(p, "state_error"))) +
      "</p>\n";
  o += "<div class=\"scroll\"><table class=\"fleet-members\"><tr><th>proxy</th><th>address</th>"
       "<th>admin</th><th>version</th><th>epoch</th><th>phase</th><th>revision</th><th>lag</th>"
       "<th>cannot reach</th></tr>\n";
  std::map<std::string, std::vector<std::string>> votes;  // backend -> members voting it down
  std::size_t members = 0;
  if (const json& ms = member(p, "members"); ms.is_array()) {
    for (const json& m : ms) {
      if (!m.is_object()) continue;
      ++members;
      const std::string id = text(m, "id");
      std::string down;
      if (const json& d = member(m, "down"); d.is_object()) {
        for (const auto& [server, why] : d.items()) {
          votes[server].push_back(id);
          down += (down.empty() ? "" : ", ") + h(server);
        }
      }
      const bool self = id == text(f, "id"), leader = id == text(f, "leader");
      o += "<tr class=\"member\" data-member=\"" + h(id) + "\" data-lag=\"" + number(m, "lag") +
           "\"><td>" + h(id) + (self ? " <small>(this proxy)</small>" : "") +
           (leader ? " <small>(leader)</small>" : "") + "</td><td>" + h(text(m, "address")) +
           "</td><td>" + h(text(m, "admin")) + "</td><td>" + h(text(m, "version")) +
           "</td><td class=\"num\">" + number(m, "epoch") + "</td><td>" + h(text(m, "phase")) +
           "</td><td class=\"num\">" + number(m, "revision") + "</td><td class=\"num\">" +
           number(m, "lag") + "</td><td>" + (down.empty() ? "–" : down) + "</td></tr>\n";
    }
  }
  o += "</table></div>\n<table class=\"fleet-votes\"><tr><th>backend</th><th>votes against</th>"
       "<th>from</th><th>the fleet</th></tr>\n";
  for (NodeId id = 0; id < pool.servers.size(); ++id) {
    const std::string& name = pool.servers[id].name;
    const auto v = votes.find(name);
    const std::size_t n = v == votes.end() ? 0 : v->second.size();
    std::string from;
    if (v != votes.end()) {
      for (const std::string& m : v->second) from += (from.empty() ? "" : ", ") + h(m);
    }
    const char* word = ejected.contains(name) ? "ejected" : returning == name ? "returning" : "in";
    o += "<tr data-backend=\"" + h(name) + "\" data-votes=\"" + std::to_string(n) + "\"><td>" +
         h(name) + "</td><td class=\"num\">" + std::to_string(n) + " of " +
         std::to_string(members) + "</td><td>" + (from.empty() ? "–" : from) + "</td><td>" + word +
         "</td></tr>\n";
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
      rates(lookup(&now.pools, name), before ? lookup(&before->pools, name) : nullptr, now, before);
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
  if (const auto fp = index.fleet_pools.find(name); fp != index.fleet_pools.end()) {
    o += fleet_pool_text(pool, fp->second.second, index.fleets[fp->second.first]);
  }
  o += "<h3>Servers</h3>\n<div class=\"scroll\"><table class=\"servers\"><tr><th>name</th>"
       "<th>address</th><th>state</th><th>role</th><th>weight</th><th>requests/s</th>"
       "<th>errors/s</th><th>requests</th><th>errors</th><th>ejections</th><th>connections</th>"
       "<th>last error</th></tr>\n";
  for (NodeId id = 0; id < pool.states.size(); ++id) {
    o += server_row(pool, id, now, before, index, now_ms);
  }
  o += "</table></div>\n<div class=\"cols\"><div class=\"hot\">\n" +
       hot_keys_table(lookup(&index.pools, name)) +
       "</div>\n<figure><h3>Key space <small><a href=\"ring.svg?pool=" + url_encode(name) +
       "\">ring.svg</a></small></h3>\n" + chash::svg::placement(pool.router, pool_title(pool)) +
       "</figure>\n</div>\n";
  return o + "</section>\n";
}

// The configuration line's word on etcd-fed pools: the file's version says nothing of them, so
// each one's fleet epoch (the state it routes by) follows it.
std::string fleet_epochs(const Topology& t, const StatusIndex& index) {
  std::string o;
  for (const auto& pool : t.pools) {
    if (!index.fleet_pools.contains(pool->config.name)) continue;
    o += (o.empty() ? "" : ", ") + std::string("pool ") + h(pool->config.name) +
         " at fleet epoch <span class=\"fleet-epoch\" data-pool=\"" + h(pool->config.name) + "\">" +
         std::to_string(pool->fleet_epoch) + "</span>";
  }
  return o.empty() ? o : "; " + o;
}

}  // namespace

UiSample take_ui_sample(const Topology& t, std::int64_t now_ms) {
  UiSample s;
  s.at_ms = now_ms;
  s.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
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

void UiHistory::add(UiSample s) {
  samples_.push_back(std::move(s));
  // Keep the newest sample at least a window old (the window's start) and all after it.
  const std::int64_t newest = samples_.back().at_ms;
  std::size_t first = 0;
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    if (newest - samples_[i].at_ms >= kUiRateWindowMs) first = i;
  }
  samples_.erase(samples_.begin(), samples_.begin() + static_cast<long>(first));
}

std::optional<UiSample> UiHistory::baseline(const UiSample& now) const {
  // The oldest sample no more than a window old.
  std::size_t from = samples_.size();
  for (std::size_t i = samples_.size(); i-- > 0;) {
    if (now.at_ms - samples_[i].at_ms > kUiRateWindowMs) break;
    from = i;
  }
  if (from == samples_.size() || now.at_ms - samples_[from].at_ms < kUiSampleMs / 2) {
    return std::nullopt;
  }
  UiSample base = samples_[from];
  auto fill = [](auto& into, const auto& from_map, std::int64_t at_ms, bool zero) {
    for (const auto& [k, c] : from_map) {
      if (into.contains(k)) continue;
      UiSample::Counts b = zero ? UiSample::Counts{} : c;
      b.at_ms = at_ms;
      into.emplace(k, b);
    }
  };
  for (std::size_t i = from + 1; i < samples_.size(); ++i) {
    fill(base.pools, samples_[i].pools, samples_[i].at_ms, false);
    fill(base.servers, samples_[i].servers, samples_[i].at_ms, false);
  }
  const std::int64_t newest = samples_.back().at_ms;
  if (newest < now.at_ms) {
    fill(base.pools, now.pools, newest, true);
    fill(base.servers, now.servers, newest, true);
  }
  return base;
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
      std::to_string(t.version) + " (workers on " + number(index.top, "applied_version") + ")" +
      fleet_epochs(t, index) + " · " + number(index.top, "workers") + " workers · " +
      number(index.top, "clients") + " clients · " + number(index.top, "requests") +
      " requests · " +
      (before != nullptr ? "rates over the last " + fixed(seconds, 1) + " s"
                         : "rates from the next refresh") +
      " · refreshes every " + std::to_string(refresh) +
      " s · <a href=\"status\">/status</a> <a href=\"metrics\">/metrics</a></p>\n";
  const std::int64_t now_ms = now.at_ms;
  for (const json& f : index.fleets) o += fleet_section(f, now.wall_ms);
  for (const auto& pool : t.pools) o += pool_section(*pool, now, before, seconds, index, now_ms);
  if (t.pools.empty()) o += "<p>no pools</p>\n";
  return o + "</body></html>\n";
}

}  // namespace chash::proxy
