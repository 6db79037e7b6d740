// SPDX-License-Identifier: Apache-2.0
#include "membership/fleet/state.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "config/config.h"

namespace chash::proxy::fleet {

using nlohmann::json;

// ---- Keys ---------------------------------------------------------------------------------------

std::string Layout::servers(std::string_view pool) const {
  return pools() + std::string(pool) + "/servers";
}
std::string Layout::state(std::string_view pool) const {
  return pools() + std::string(pool) + "/state";
}
std::string Layout::absence(std::string_view pool, std::string_view server) const {
  std::string k = pools() + std::string(pool) + "/absence/";
  if (!server.empty()) k += std::string(server) + "/";
  return k;
}
std::string Layout::absence(std::string_view pool, std::string_view server,
                            std::string_view id) const {
  return absence(pool, server) + std::string(id);
}

std::string normalize_prefix(std::string_view prefix) {
  std::string p(prefix);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p.empty() || p[0] != '/') {
    throw std::invalid_argument("the etcd prefix must start with '/' (got '" + p.substr(0, 60) +
                                "')");
  }
  if (p == "/") p.clear();  // keys at the root: "/pools/..."
  return p;
}

bool valid_segment(std::string_view s) noexcept {
  if (s.empty() || s.size() > 200) return false;
  for (const char c : s) {
    if (c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

const char* phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::kStable:
      return "stable";
    case Phase::kSweep:
      return "sweep";
    case Phase::kPrepare:
      return "prepare";
    case Phase::kCommit:
      return "commit";
  }
  return "stable";
}

std::optional<Phase> phase_from(std::string_view s) noexcept {
  for (Phase p : {Phase::kStable, Phase::kSweep, Phase::kPrepare, Phase::kCommit}) {
    if (s == phase_name(p)) return p;
  }
  return std::nullopt;
}

// ---- JSON ---------------------------------------------------------------------------------------

namespace {

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument(what); }

json parse_object(std::string_view text, const char* what) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) invalid(std::string(what) + " is not JSON");
  if (!j.is_object()) invalid(std::string(what) + " is not a JSON object");
  return j;
}

std::vector<std::string> strings_of(const json& j, const char* what) {
  if (!j.is_array()) invalid(std::string(what) + " must be a JSON array of strings");
  std::vector<std::string> out;
  for (const json& x : j) {
    if (!x.is_string()) invalid(std::string(what) + " must be a JSON array of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

template <class T>
T number(const json& o, const char* name, T fallback = 0) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) invalid(std::string("'") + name + "' must be an integer");
  if constexpr (std::is_unsigned_v<T>) {
    if (it->is_number_unsigned()) return it->get<T>();
    if (it->get<std::int64_t>() < 0) invalid(std::string("'") + name + "' must not be negative");
  }
  return it->get<T>();
}

std::string text(const json& o, const char* name) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return {};
  if (!it->is_string()) invalid(std::string("'") + name + "' must be a string");
  return it->get<std::string>();
}

bool flag(const json& o, const char* name) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return false;
  if (!it->is_boolean()) invalid(std::string("'") + name + "' must be true or false");
  return it->get<bool>();
}

json routing_json(const Routing& r) { return {{"servers", r.servers}, {"ejected", r.ejected}}; }

Routing routing_of(const json& j) {
  if (!j.is_object()) invalid("a routing must be an object {servers, ejected}");
  Routing r;
  const auto s = j.find("servers");
  if (s == j.end()) invalid("a routing has no 'servers'");
  r.servers = strings_of(*s, "'servers'");
  if (const auto e = j.find("ejected"); e != j.end()) r.ejected = strings_of(*e, "'ejected'");
  std::sort(r.ejected.begin(), r.ejected.end());
  return r;
}

}  // namespace

std::vector<std::string> decode_servers(std::string_view value) {
  json j = json::parse(value.begin(), value.end(), nullptr, false);
  if (j.is_discarded()) {
    invalid("not JSON (a JSON array of server strings like [\"127.0.0.1:6379:1 r1\"])");
  }
  std::vector<std::string> out = strings_of(j, "the servers value");
  if (out.empty()) invalid("an empty list (a pool needs at least one server)");
  for (const auto& s : out) {
    if (s.empty()) invalid("an empty server string");
  }
  return out;
}

std::string encode_servers(const std::vector<std::string>& servers) { return json(servers).dump(); }

PoolState decode_state(std::string_view value) {
  const json j = parse_object(value, "the state value");
  PoolState s;
  s.epoch = number<std::uint64_t>(j, "epoch");
  s.revision = number<std::int64_t>(j, "revision");
  const std::string phase = text(j, "phase");
  const auto p = phase_from(phase.empty() ? "stable" : phase);
  if (!p) invalid("unknown phase '" + phase.substr(0, 40) + "'");
  s.phase = *p;
  const auto t = j.find("target");
  if (t == j.end()) invalid("the state has no 'target'");
  s.target = routing_of(*t);
  if (const auto prev = j.find("previous"); prev != j.end() && !prev->is_null()) {
    if (!prev->is_array()) invalid("'previous' must be an array of routings");
    for (const json& r : *prev) s.previous.push_back(routing_of(r));
  }
  if (s.previous.size() > kMaxPrevious) invalid("more than 4 previous routings");
  s.returning = text(j, "returning");
  // Its time without a returning server means nothing (encode_state drops it).
  s.returning_since = s.returning.empty() ? 0 : number<std::uint64_t>(j, "returning_since");
  if (const auto e = j.find("ejected_at"); e != j.end() && !e->is_null()) {
    if (!e->is_object()) invalid("'ejected_at' must be an object {server: epoch}");
    for (const auto& [server, epoch] : e->items()) {
      if (!epoch.is_number_unsigned()) invalid("'ejected_at' must map servers to epochs");
      s.ejected_at.emplace(server, epoch.get<std::uint64_t>());
    }
  }
  if (const auto h = j.find("homes"); h != j.end() && !h->is_null()) {
    if (!h->is_object()) invalid("'homes' must be an object {server: routing}");
    for (const auto& [server, r] : h->items()) s.homes.emplace(server, routing_of(r));
  }
  s.held = flag(j, "held");
  s.flushed = flag(j, "flushed");
  s.since_ms = number<std::int64_t>(j, "since_ms");
  if (s.phase == Phase::kSweep && s.returning.empty()) invalid("a sweep names no returning server");
  return s;
}

std::string encode_state(const PoolState& s) {
  json prev = json::array();
  for (const auto& r : s.previous) prev.push_back(routing_json(r));
  json j = {{"epoch", s.epoch},
            {"revision", s.revision},
            {"phase", phase_name(s.phase)},
            {"target", routing_json(s.target)},
            {"previous", prev},
            {"since_ms", s.since_ms}};
  if (!s.returning.empty()) {
    j["returning"] = s.returning;
    j["returning_since"] = s.returning_since;
  }
  if (!s.ejected_at.empty()) j["ejected_at"] = s.ejected_at;
  if (!s.homes.empty()) {
    json h = json::object();
    for (const auto& [server, r] : s.homes) h[server] = routing_json(r);
    j["homes"] = std::move(h);
  }
  if (s.held) j["held"] = true;
  if (s.flushed) j["flushed"] = true;
  return j.dump();
}

AbsenceMarker decode_marker(std::string_view value) {
  const json j = parse_object(value, "an absence marker");
  return {number<std::int64_t>(j, "lease"), number<std::uint64_t>(j, "since")};
}

std::string encode_marker(const AbsenceMarker& m) {
  return json{{"lease", m.lease}, {"since", m.since}}.dump();
}

Registration decode_registration(std::string_view value) {
  const json j = parse_object(value, "a proxy's registration");
  Registration r;
  r.id = text(j, "id");
  r.address = text(j, "address");
  r.admin = text(j, "admin");
  r.version = text(j, "version");
  r.pid = number<std::int64_t>(j, "pid");
  r.started_ms = number<std::int64_t>(j, "started_ms");
  r.lease = number<std::int64_t>(j, "lease");
  r.etcd_revision = number<std::int64_t>(j, "etcd_revision");
  if (const auto pools = j.find("pools"); pools != j.end() && !pools->is_null()) {
    if (!pools->is_object()) invalid("'pools' must be an object");
    for (const auto& [name, v] : pools->items()) {
      if (!v.is_object()) invalid("pool '" + name.substr(0, 60) + "' must be an object");
      PoolReport p;
      p.epoch = number<std::uint64_t>(v, "epoch");
      const std::string phase = text(v, "phase");
      const auto ph = phase_from(phase.empty() ? "stable" : phase);
      if (!ph) invalid("unknown phase '" + phase.substr(0, 40) + "'");
      p.phase = *ph;
      p.revision = number<std::int64_t>(v, "revision");
      p.swept = flag(v, "swept");
      p.overflow = flag(v, "overflow");
      if (const auto d = v.find("down"); d != v.end() && !d->is_null()) {
        if (!d->is_object()) invalid("'down' must be an object {server: error}");
        for (const auto& [server, why] : d->items()) {
          if (!why.is_string()) invalid("'down' must map servers to their last error");
          p.down.emplace(server, why.get<std::string>());
        }
      }
      if (const auto u = v.find("up"); u != v.end() && !u->is_null()) {
        p.up = strings_of(*u, "'up'");
      }
      r.pools.emplace(name, std::move(p));
    }
  }
  return r;
}

std::string encode_registration(const Registration& r) {
  json pools = json::object();
  for (const auto& [name, p] : r.pools) {
    json v = {{"epoch", p.epoch},
              {"phase", phase_name(p.phase)},
              {"revision", p.revision},
              {"down", p.down},
              {"up", p.up}};
    if (p.swept) v["swept"] = true;
    if (p.overflow) v["overflow"] = true;
    pools[name] = std::move(v);
  }
  return json{{"id", r.id},       {"address", r.address},
              {"admin", r.admin}, {"version", r.version},
              {"pid", r.pid},     {"started_ms", r.started_ms},
              {"lease", r.lease}, {"etcd_revision", r.etcd_revision},
              {"pools", pools}}
      .dump();
}

// ---- Transitions --------------------------------------------------------------------------------

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<std::string> names_of(const Routing& r) {
  std::vector<std::string> out;
  for (const auto& s : r.servers) {
    try {
      out.push_back(server_name(s));
    } catch (const std::exception&) {
      out.push_back(s);  // validated when written; a name never matches then
    }
  }
  return out;
}

}  // namespace

View view_of(const PoolState& s) {
  View v;
  v.epoch = s.epoch;
  v.revision = s.revision;
  v.phase = s.phase;
  const bool before =
      (s.phase == Phase::kSweep || s.phase == Phase::kPrepare) && !s.previous.empty();
  if (!before) {
    v.route = s.target;
    v.reads = s.previous;
  } else {
    v.route = s.previous.front();
    if (s.phase == Phase::kPrepare) v.reads.push_back(s.target);
    for (auto r = s.previous.begin() + 1; r != s.previous.end(); ++r) {
      // A sweep reads nothing at the returning server (what it holds may be older than what was
      // written meanwhile until the sweep is over): not its home routing (PoolState::homes).
      if (s.phase == Phase::kSweep && has(names_of(*r), s.returning) &&
          !has(r->ejected, s.returning))
        continue;
      v.reads.push_back(*r);
    }
  }
  for (const auto& [server, home] : s.homes) {
    if (has(v.route.ejected, server)) v.homes.emplace(server, home);
  }
  return v;
}

std::vector<Routing> routings_now(const PoolState& s) {
  // view_of's route and reads, without the sweep's filter: a change made during a sweep keeps
  // every routing a key may be found by.
  const bool before =
      (s.phase == Phase::kSweep || s.phase == Phase::kPrepare) && !s.previous.empty();
  if (!before) {
    std::vector<Routing> out{s.target};
    out.insert(out.end(), s.previous.begin(), s.previous.end());
    return out;
  }
  std::vector<Routing> out{s.previous.front()};
  if (s.phase == Phase::kPrepare) out.push_back(s.target);
  out.insert(out.end(), s.previous.begin() + 1, s.previous.end());
  return out;
}

namespace {

// Drops entries equal to an earlier one or to `route`, and the oldest past kMaxPrevious.
void dedupe(std::vector<Routing>& v, const Routing* route) {
  std::vector<Routing> out;
  for (auto& r : v) {
    if (route != nullptr && r == *route) continue;
    if (std::find(out.begin(), out.end(), r) != out.end()) continue;
    out.push_back(std::move(r));
  }
  if (out.size() > kMaxPrevious) out.resize(kMaxPrevious);
  v = std::move(out);
}

PoolState next_epoch(const PoolState& s, std::int64_t now_ms) {
  PoolState n = s;
  ++n.epoch;
  n.since_ms = now_ms;
  n.held = false;
  n.flushed = false;
  return n;
}

}  // namespace

PoolState normalize(PoolState s) {
  if (s.phase == Phase::kSweep || s.phase == Phase::kPrepare) {
    if (s.previous.empty()) {
      s.phase = Phase::kStable;
    } else if (s.previous.front() == s.target) {
      // Everyone routes by the target already: the reads it kept are commit's.
      s.previous.erase(s.previous.begin());
      s.phase = Phase::kCommit;
    } else {
      Routing route = s.previous.front();
      std::vector<Routing> rest(s.previous.begin() + 1, s.previous.end());
      dedupe(rest, &route);
      std::vector<Routing> kept{route};
      for (auto& r : rest) {
        if (!(r == s.target)) kept.push_back(std::move(r));
      }
      if (kept.size() > kMaxPrevious) kept.resize(kMaxPrevious);
      s.previous = std::move(kept);
    }
  }
  if (s.phase == Phase::kCommit || s.phase == Phase::kStable) {
    dedupe(s.previous, &s.target);
    if (s.previous.empty()) s.phase = Phase::kStable;
  }
  if (s.phase == Phase::kStable) {
    s.previous.clear();
    s.returning.clear();
    s.returning_since = 0;
  }
  if (s.phase != Phase::kSweep) {
    s.held = false;
    s.flushed = false;
  }
  std::erase_if(s.homes, [&](const auto& kv) {
    return kv.first != s.returning && !has(s.target.ejected, kv.first);
  });
  return s;
}

PoolState change_membership(const PoolState& s, std::vector<std::string> servers,
                            const std::vector<std::string>& names, std::int64_t revision,
                            std::int64_t now_ms) {
  PoolState n = next_epoch(s, now_ms);
  n.revision = revision;
  Routing t;
  t.servers = std::move(servers);
  for (const auto& e : s.target.ejected) {
    if (has(names, e)) t.ejected.push_back(e);
  }
  std::erase_if(n.ejected_at, [&](const auto& kv) { return !has(t.ejected, kv.first); });
  // A server out since before this change keeps the routing it holds keys by (PoolState::homes).
  for (const auto& e : t.ejected) {
    if (n.homes.count(e) != 0) continue;
    Routing home = s.target;
    std::erase(home.ejected, e);
    if (!(home.servers == t.servers)) n.homes.emplace(e, std::move(home));
  }
  n.previous = routings_now(s);
  n.target = std::move(t);
  n.phase = Phase::kPrepare;
  n.returning.clear();
  dedupe(n.previous, nullptr);
  return normalize(std::move(n));
}

PoolState eject(const PoolState& s, const std::string& server, std::int64_t now_ms) {
  PoolState n = next_epoch(s, now_ms);
  bool changed = false;
  auto apply = [&](Routing& r) {
    if (has(r.ejected, server) || !has(names_of(r), server)) return;
    r.ejected.push_back(server);
    std::sort(r.ejected.begin(), r.ejected.end());
    changed = true;
  };
  const bool was_routed = !has(n.target.ejected, server);
  apply(n.target);
  for (auto& r : n.previous) apply(r);
  if (!changed) return s;
  // Another's home routing has it out too: its return reads nothing here (not swept).
  for (auto& [home_of, r] : n.homes) {
    if (home_of != server && has(names_of(r), server) && !has(r.ejected, server)) {
      r.ejected.push_back(server);
      std::sort(r.ejected.begin(), r.ejected.end());
    }
  }
  if (was_routed && has(n.target.ejected, server)) n.ejected_at[server] = n.epoch;
  // Out again while coming back: its return is over (a new absence begins).
  if (n.returning == server) {
    n.returning.clear();
    n.returning_since = 0;
  }
  return normalize(std::move(n));
}

PoolState begin_return(const PoolState& s, const std::string& server, std::int64_t now_ms) {
  PoolState n = next_epoch(s, now_ms);
  n.previous = routings_now(s);
  // Read through last: the routing its keys were placed by before the changes of its absence.
  if (const auto home = s.homes.find(server); home != s.homes.end())
    n.previous.push_back(home->second);
  std::erase(n.target.ejected, server);
  n.phase = Phase::kSweep;
  n.returning = server;
  const auto at = n.ejected_at.find(server);
  n.returning_since = at == n.ejected_at.end() ? 0 : at->second;
  if (at != n.ejected_at.end()) n.ejected_at.erase(at);
  dedupe(n.previous, nullptr);
  return normalize(std::move(n));
}

PoolState advance(const PoolState& s, std::int64_t now_ms) {
  PoolState n = next_epoch(s, now_ms);
  switch (s.phase) {
    case Phase::kSweep:
      n.phase = Phase::kPrepare;
      break;
    case Phase::kPrepare:
      n.phase = Phase::kCommit;
      break;
    case Phase::kCommit:
    case Phase::kStable:
      n.phase = Phase::kStable;
      n.previous.clear();
      n.returning.clear();
      break;
  }
  return normalize(std::move(n));
}

bool acked(const Registration& r, const std::string& pool, std::uint64_t epoch, Phase phase) {
  const auto it = r.pools.find(pool);
  if (it == r.pools.end()) return true;  // it does not serve this pool
  const PoolReport& p = it->second;
  if (p.epoch != epoch || p.phase != phase) return false;
  return phase != Phase::kSweep || p.swept || p.overflow;
}

std::size_t quorum_of(std::size_t live, std::uint32_t quorum) noexcept {
  if (quorum != 0) return quorum;
  return live / 2 + 1;
}

}  // namespace chash::proxy::fleet
