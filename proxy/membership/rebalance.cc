// SPDX-License-Identifier: Apache-2.0
#include "membership/rebalance.h"

#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cstring>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "chash/internal/uri_decode.h"
#include "base/log.h"
#include "base/text.h"
#include "membership/control_client.h"
#include "proto/redis/resp.h"

namespace chash::proxy {

namespace {

constexpr std::size_t kBatch = 500;
constexpr auto kTimeout = std::chrono::milliseconds(10000);
constexpr auto kDumpTimeout = std::chrono::minutes(30);  // a whole metadump

std::int64_t wall_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How to reach member `m` of `pool`: its address as the workers connect, its credentials.
struct Member {
  std::string name;
  ServerConfig server;
  std::shared_ptr<const ResolvedAddress> resolved;
  Endpoint endpoint() const {
    Endpoint e{server.address};
    if (resolved != nullptr) {
      e.resolved = &resolved->addr;
      e.len = resolved->len;
    }
    return e;
  }
};

Member member(const Pool& p, NodeId i) {
  return {p.servers[i].name, p.servers[i], p.states[i]->resolved()};
}

// Whether `a` and `b` are one server: one unix path, one host:port as written, or one resolved
// socket address.
bool same_endpoint(const Member& a, const Member& b) {
  const Address& x = a.server.address;
  const Address& y = b.server.address;
  if (!x.unix_path.empty() || !y.unix_path.empty()) return x.unix_path == y.unix_path;
  if (x.host == y.host && x.port == y.port) return true;
  return a.resolved != nullptr && b.resolved != nullptr && a.resolved->len == b.resolved->len &&
         std::memcmp(&a.resolved->addr, &b.resolved->addr, a.resolved->len) == 0;
}

// A RESP call on `m` with its prelude; the replies after it (error: why it failed).
QueryResult call(const PoolConfig& pc, const Member& m, const std::string& commands,
                 std::size_t replies) {
  std::string req;
  const std::size_t n = append_redis_prelude(pc, m.server, req);
  req += commands;
  QueryResult r = query(m.endpoint(), req, n + replies, kTimeout, m.server.tls.get());
  if (r.error.empty()) {
    for (std::size_t i = 0; i < n; ++i) {
      if (r.replies[i].type == '-') r.error = "AUTH/SELECT refused: " + r.replies[i].str;
    }
    r.replies.erase(r.replies.begin(),
                    r.replies.begin() + static_cast<std::ptrdiff_t>(std::min(n, r.replies.size())));
  }
  return r;
}

// Moves a batch of keys found on `from`: each to its owner now; counts into `run`.
class Mover {
 public:
  struct Counts {
    std::uint64_t moved = 0, skipped = 0, failed = 0;
    std::uint64_t conflicts = 0;  // the target holds another value: neither copy touched
    // Keys noted in a just-returned owner's absence log (kFlipped): it may hold a stale copy,
    // which the key's first request deletes before it reads through to this copy — moved here
    // first, that delete would remove the moved value. Left to that request; the run does not
    // end the warm-up window while any is.
    std::uint64_t deferred = 0;
    std::string error;
  };
  Mover(const Pool& pool, const Member& from) : pool_(pool), from_(from) {}

  Counts move(const std::vector<std::string>& keys) {
    Counts c;
    std::map<NodeId, std::vector<std::string>> by_owner;
    for (const auto& k : keys) {
      const NodeId o = pool_.route(k);
      if (o == kNoNode || pool_.servers[o].name == from_.name) {
        ++c.skipped;  // at home (or nowhere to go)
        continue;
      }
      if (same_endpoint(member(pool_, o), from_)) {
        // Two members on one server (refused in configs, but a resolver or an old etcd value
        // can still make one): the "target" is the source, and a move would delete the only copy.
        ++c.skipped;
        c.error = "members " + from_.name + " and " + pool_.servers[o].name +
                  " are one server (" + from_.server.address.text() + "): nothing moved between them";
        continue;
      }
      // (A single proxy's return only: a fleet's returns are the fleet's phases, whose leader
      // rebalances in commit.)
      const AbsenceLog& absence = pool_.states[o]->absence;
      if (pool_.config.etcd == nullptr && absence.phase() == AbsenceLog::Phase::kFlipped &&
          absence.contains(k)) {
        ++c.deferred;
        continue;
      }
      by_owner[o].push_back(k);
    }
    for (const auto& [owner, ks] : by_owner) {
      if (pool_.config.protocol == PoolProtocol::kRedis) {
        redis_move(member(pool_, owner), ks, c);
      } else {
        memcache_move(member(pool_, owner), ks, c);
      }
    }
    return c;
  }

 private:
  // Moving a key is a compare-and-set (docs/FAILURES.md "Online rebalance"): the source copy goes
  // only while it still is exactly the value the target now holds. RESTORE without REPLACE puts
  // the payload there unless the target has something; then
  //   - restored: the source copy is unlinked by a script that compares it with the payload
  //     first (a write that reached the source after the DUMP keeps it, and the copy just made at
  //     the target is taken back the same way, so a miss there reads the source's newer value);
  //   - BUSYKEY: the target's own DUMP decides: the same payload (a warm-up or an earlier run
  //     copied it) lets the source copy go; another value is a conflict — neither copy is
  //     touched and it is counted, since nothing here can tell which one is newer (a write
  //     through the proxy to the target deletes the source copy itself).
  // A payload compares equal only between servers of one RDB version: across versions every
  // busy key is a conflict, never a deletion. The script is kRedisUnlinkIfSame (rebalance.h).

  // kRedisUnlinkIfSame on `m` for each key with its payload: per key 1 (removed), 0 (gone
  // meanwhile), -1 (another value there), -2 (the call failed); `error` for a failed call.
  std::vector<int> unlink_if_same(const Member& m, const std::vector<std::string>& keys,
                                  const std::vector<std::string>& payloads, std::string& error) {
    std::vector<int> out(keys.size(), -2);
    if (keys.empty()) return out;
    std::string req;
    for (std::size_t i = 0; i < keys.size(); ++i)
      redis::append_command(req, {"EVAL", kRedisUnlinkIfSame, "1", keys[i], payloads[i]});
    const QueryResult r = call(pool_.config, m, req, keys.size());
    if (!r.error.empty()) {
      error = m.name + ": " + r.error;
      return out;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const RespValue& v = r.replies[i];
      std::int64_t n = 0;
      if (v.type == ':' && redis::parse_int(v.str, n)) {
        out[i] = n > 0 ? 1 : n == 0 ? 0 : -1;
      } else {
        error = m.name + ": EVAL " + keys[i].substr(0, 64) + ": " + v.str.substr(0, 120);
      }
    }
    return out;
  }

  void redis_move(const Member& to, const std::vector<std::string>& keys, Counts& c) {
    const PoolConfig& pc = pool_.config;
    std::string dump;
    for (const auto& k : keys) {
      redis::append_command(dump, {"PTTL", k});
      redis::append_command(dump, {"DUMP", k});
    }
    const QueryResult d = call(pc, from_, dump, 2 * keys.size());
    if (!d.error.empty()) {
      c.failed += keys.size();
      c.error = from_.name + ": " + d.error;
      return;
    }
    std::string restore;
    std::vector<std::size_t> sent;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const RespValue& payload = d.replies[2 * i + 1];
      if (payload.type != '$' || payload.nil) {
        ++c.skipped;  // gone meanwhile (expired, deleted, read through)
        continue;
      }
      std::int64_t ttl = 0;
      if (!redis::parse_int(d.replies[2 * i].str, ttl) || ttl < 0) ttl = 0;
      const std::string t = std::to_string(ttl);
      redis::append_command(restore, {"RESTORE", keys[i], t, payload.str});
      sent.push_back(i);
    }
    if (sent.empty()) return;
    const QueryResult r = call(pc, to, restore, sent.size());
    if (!r.error.empty()) {
      c.failed += sent.size();
      c.error = to.name + ": " + r.error;
      return;
    }
    // The keys whose source copy may go (the target holds the payload), and of those the ones
    // this run put there (to be taken back if the source changed meanwhile).
    std::vector<std::string> same, same_payload, busy, busy_payload;
    std::vector<bool> restored;
    for (std::size_t j = 0; j < sent.size(); ++j) {
      const RespValue& v = r.replies[j];
      const std::string& k = keys[sent[j]];
      const std::string& payload = d.replies[2 * sent[j] + 1].str;
      if (v.type != '-') {
        same.push_back(k);
        same_payload.push_back(payload);
        restored.push_back(true);
      } else if (v.str.starts_with("BUSYKEY")) {
        busy.push_back(k);
        busy_payload.push_back(payload);
      } else {
        ++c.failed;
        c.error = to.name + ": RESTORE " + k.substr(0, 64) + ": " + v.str.substr(0, 120);
      }
    }
    if (!busy.empty()) {
      std::string req;
      for (const auto& k : busy) redis::append_command(req, {"DUMP", k});
      const QueryResult b = call(pc, to, req, busy.size());
      if (!b.error.empty()) {
        c.failed += busy.size();
        c.error = to.name + ": " + b.error;
      } else {
        for (std::size_t j = 0; j < busy.size(); ++j) {
          const RespValue& v = b.replies[j];
          if (v.type == '$' && !v.nil && v.str == busy_payload[j]) {
            same.push_back(busy[j]);
            same_payload.push_back(busy_payload[j]);
            restored.push_back(false);
          } else {
            ++c.conflicts;  // another value at the target: both stay
          }
        }
      }
    }
    std::string error;
    const std::vector<int> gone = unlink_if_same(from_, same, same_payload, error);
    std::vector<std::string> undo, undo_payload;
    for (std::size_t j = 0; j < same.size(); ++j) {
      if (gone[j] == 1 || gone[j] == 0) {
        ++c.moved;
      } else if (gone[j] == -1) {
        ++c.conflicts;  // written at the source after the DUMP: the source's value is newer
        if (restored[j]) {
          undo.push_back(same[j]);
          undo_payload.push_back(same_payload[j]);
        }
      } else {
        ++c.failed;
        if (restored[j]) {
          undo.push_back(same[j]);
          undo_payload.push_back(same_payload[j]);
        }
      }
    }
    if (!error.empty()) c.error = error;
    // The copies this run made of a value the source no longer holds: taken back (unless the
    // target has been written since), so that a miss there reads the source's newer value.
    if (!undo.empty()) {
      unlink_if_same(to, undo, undo_payload, error);
      if (!error.empty()) c.error = error;
    }
  }

  // One meta reply: its line ("VA 3 t-1 f0 c12", "HD c13", "NS", "EN", an error), and the data
  // of a VA.
  struct MetaReply {
    std::string line;
    std::string data;
    // The number after flag `f` in the line ("c12" -> 12), or `otherwise`.
    std::int64_t flag(char f, std::int64_t otherwise) const {
      for (std::size_t i = line.find(' '); i != std::string::npos; i = line.find(' ', i + 1)) {
        if (i + 2 < line.size() && line[i + 1] == f) {
          std::int64_t v = 0;
          const char* b = line.data() + i + 2;
          const char* e = line.data() + std::min(line.find(' ', i + 1), line.size());
          if (std::from_chars(b, e, v).ec == std::errc()) return v;
        }
      }
      return otherwise;
    }
  };

  // Sends `requests` (`n` meta commands) and "mn" to `m`; their `n` replies in order. Empty
  // with `error` when the exchange failed or the replies were not meta replies.
  static std::vector<MetaReply> meta(const Member& m, const std::string& requests, std::size_t n,
                                     std::string& error) {
    std::vector<MetaReply> out;
    bool bad = false;
    stream(
        m.endpoint(), requests + "mn\r\n", kTimeout, m.server.tls.get(),
        [&](std::string& in) {
          for (;;) {
            if (out.size() == n) return in.starts_with("MN\r\n") || in.size() >= 4;
            const std::size_t nl = in.find("\r\n");
            if (nl == std::string::npos) return false;
            MetaReply r{in.substr(0, nl), {}};
            std::size_t used = nl + 2;
            if (r.line.starts_with("VA ")) {
              std::size_t size = 0;
              const std::size_t e = std::min(r.line.find(' ', 3), r.line.size());
              std::from_chars(r.line.data() + 3, r.line.data() + e, size);
              if (in.size() < used + size + 2) return false;  // the data is not all here
              r.data = in.substr(used, size);
              used += size + 2;
            } else if (r.line.starts_with("MN") || r.line.find("ERROR") != std::string::npos) {
              bad = true;  // an error line (or the end before every reply)
              error = m.name + ": " + r.line.substr(0, 120);
              return true;
            }
            in.erase(0, used);
            out.push_back(std::move(r));
          }
        },
        error);
    if (!error.empty() || bad || out.size() != n) {
      if (error.empty()) error = m.name + ": unexpected meta reply";
      return {};
    }
    return out;
  }

  // The same compare-and-set as redis_move, with memcached's CAS: `ms ... ME` (add) at the
  // target, the target's own value compared when it had one, then `md k C<cas>` at the source
  // (removed only if unchanged since it was read); a copy whose source changed meanwhile is
  // taken back with the CAS the target returned.
  void memcache_move(const Member& to, const std::vector<std::string>& keys, Counts& c) {
    std::string error, req;
    for (const auto& k : keys) req += "mg " + k + " v t f c\r\n";
    const std::vector<MetaReply> got = meta(from_, req, keys.size(), error);
    if (got.empty()) {
      c.failed += keys.size();
      c.error = error;
      return;
    }
    struct Item {
      const std::string* key;
      const MetaReply* at_source;
      std::int64_t target_cas = -1;  // -1: not stored by this run
    };
    std::vector<Item> items;
    req.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!got[i].line.starts_with("VA ")) {
        ++c.skipped;  // EN: gone meanwhile
        continue;
      }
      const std::int64_t ttl = got[i].flag('t', -1);
      req += "ms " + keys[i] + " " + std::to_string(got[i].data.size()) + " T" +
             std::to_string(ttl < 0 ? 0 : ttl) + " F" + std::to_string(got[i].flag('f', 0)) +
             " ME c\r\n" + got[i].data + "\r\n";
      items.push_back({&keys[i], &got[i]});
    }
    if (items.empty()) return;
    const std::vector<MetaReply> stored = meta(to, req, items.size(), error);
    if (stored.empty()) {
      c.failed += items.size();
      c.error = error;  // the source copies stay: nothing is lost
      return;
    }
    std::vector<std::size_t> busy;
    for (std::size_t j = 0; j < items.size(); ++j) {
      if (stored[j].line.starts_with("HD")) {
        items[j].target_cas = stored[j].flag('c', 0);
      } else {
        busy.push_back(j);  // NS: the target has a value
      }
    }
    std::vector<bool> same(items.size(), true);
    if (!busy.empty()) {
      req.clear();
      for (const std::size_t j : busy) req += "mg " + *items[j].key + " v\r\n";
      const std::vector<MetaReply> there = meta(to, req, busy.size(), error);
      for (std::size_t b = 0; b < busy.size(); ++b) {
        const bool equal = !there.empty() && there[b].line.starts_with("VA ") &&
                           there[b].data == items[busy[b]].at_source->data;
        same[busy[b]] = equal;
        if (!equal) ++c.conflicts;  // another value at the target: both stay
      }
      if (there.empty()) c.error = error;
    }
    req.clear();
    std::vector<std::size_t> deleting;
    for (std::size_t j = 0; j < items.size(); ++j) {
      if (!same[j]) continue;
      req += "md " + *items[j].key + " C" + std::to_string(items[j].at_source->flag('c', 0)) +
             "\r\n";
      deleting.push_back(j);
    }
    if (deleting.empty()) return;
    const std::vector<MetaReply> deleted = meta(from_, req, deleting.size(), error);
    req.clear();
    std::size_t undo = 0;
    for (std::size_t d = 0; d < deleting.size(); ++d) {
      const Item& it = items[deleting[d]];
      const bool gone = !deleted.empty() && (deleted[d].line.starts_with("HD") ||
                                             deleted[d].line.starts_with("NF"));
      if (gone) {
        ++c.moved;
        continue;
      }
      if (!deleted.empty()) ++c.conflicts; else ++c.failed;  // EX: written there since
      if (it.target_cas >= 0) {
        req += "md " + *it.key + " C" + std::to_string(it.target_cas) + "\r\n";
        ++undo;
      }
    }
    if (deleted.empty()) c.error = error;
    // The copies this run made of a value the source no longer holds: taken back (unless the
    // target has been written since), so that a miss there reads the source's newer value.
    if (undo > 0 && meta(to, req, undo, error).empty()) c.error = error;
  }

  const Pool& pool_;
  const Member& from_;
};

}  // namespace

Rebalancer::Rebalancer(TopologyFn topology, PublishFn publish)
    : topology_(std::move(topology)), publish_(std::move(publish)) {}

Rebalancer::~Rebalancer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool Rebalancer::start(const std::string& pool, double rate, std::string& message) {
  const auto t = topology_();
  const Pool* p = nullptr;
  for (const auto& x : t->pools) {
    if (x->config.name == pool) p = x.get();
  }
  if (p == nullptr) {
    message = "no pool '" + pool + "'";
    return false;
  }
  if (p->config.protocol == PoolProtocol::kTcp || p->config.is_cluster()) {
    message = "pool '" + pool + "' has no keys the proxy moves (tcp, or a Redis Cluster)";
    return false;
  }
  if (!p->warming()) {
    message = "pool '" + pool + "' has nothing to move: no reload has moved its keys lately";
    return false;
  }
  std::lock_guard lock(mu_);
  if (active_.load() != 0) {
    message = "a rebalance is running (see /status)";
    return false;
  }
  if (thread_.joinable()) thread_.join();
  stop_ = false;
  Run r;
  r.pool = pool;
  r.rate = rate;
  r.started_ms = wall_ms();
  runs_[pool] = r;
  active_ = 1;
  thread_ = std::thread([this, pool, rate] { run(pool, rate); });
  ::pthread_setname_np(thread_.native_handle(), "rebalance");
  message = "rebalancing pool '" + pool + "' (progress in /status)";
  return true;
}

bool Rebalancer::stop(std::string& message) {
  if (active_.load() == 0) {
    message = "no rebalance is running";
    return false;
  }
  stop_ = true;
  message = "stopping the rebalance at its next batch";
  return true;
}

void Rebalancer::wait() const {
  while (active_.load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void Rebalancer::run(std::string pool_name, double rate) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  const auto pool_now = [&]() -> std::shared_ptr<const Pool> {
    const auto t = topology_();
    for (const auto& p : t->pools) {
      if (p->config.name == pool_name) return p;
    }
    return nullptr;
  };
  auto p = pool_now();
  const std::int64_t window = p != nullptr && p->warming() ? p->previous.front().until_ms : 0;
  // The members that owned keys under a previous routing — not one that is out now, nor a
  // retired one every routing naming it had out: while out, its keys were read and written at
  // their next choice, so what it holds may be older than the value there. Moved from it, a
  // stale copy could land at a key's new owner before the newest one does and be served from
  // there (chaos kill-change, chash-etcd, seed 1: n1 killed, a server added while it was out,
  // n1 back with its AOF before its return — its old value of a key the add moved was copied to
  // the new owner: 2 acknowledged writes lost, 4 stale reads, in 1 run of 6). A member back in
  // has been swept first (safe return; a fleet return's sweep also covers the keys of the
  // routing it was last in, fleet::PoolState::homes), so its return's rebalance moves what it
  // holds for others.
  // Where this proxy decides health, a member skipped because it is down keeps the run from
  // completing (the window stays, and its keys are read through when it is back); a fleet's
  // out member is covered by its home routing instead.
  std::set<std::string> sources, down;
  if (p != nullptr) {
    for (const auto& prev : p->previous) {
      for (std::size_t i = 0; i < prev.member.size(); ++i) {
        const NodeId m = prev.member[i];
        if (m == kNoNode) continue;
        const bool was_out = i < prev.out.size() && prev.out[i] != 0;
        if (m < p->nodes ? p->up(m) : !was_out) {
          sources.insert(p->servers[m].name);
        } else if (m < p->nodes && p->fleet_out.empty()) {
          down.insert(p->servers[m].name);
        }
      }
    }
  }
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t total = 0;
  std::string error;
  auto record = [&](const Mover::Counts& c, std::uint64_t scanned) {
    std::lock_guard lock(mu_);
    Run& r = runs_[pool_name];
    r.scanned += scanned;
    r.moved += c.moved;
    r.skipped += c.skipped;
    r.failed += c.failed;
    r.conflicts += c.conflicts;
    r.deferred += c.deferred;
    if (!c.error.empty()) r.error = c.error;
    Totals& t = totals_[pool_name];
    t.scanned += scanned;
    t.moved += c.moved;
    t.skipped += c.skipped;
    t.failed += c.failed;
    t.conflicts += c.conflicts;
  };
  // Keeps to `rate` keys a second over the whole run.
  auto pace = [&](std::size_t n) {
    total += n;
    if (rate <= 0) return;
    const auto due = started + std::chrono::duration<double>(static_cast<double>(total) / rate);
    // In slices, so that a stop (or the proxy's shutdown) need not wait out a slow rate.
    while (!stop_ && std::chrono::steady_clock::now() < due) {
      std::this_thread::sleep_until(std::min<std::chrono::steady_clock::time_point>(
          std::chrono::time_point_cast<std::chrono::steady_clock::duration>(due),
          std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    }
  };
  for (const auto& source : sources) {
    if (stop_) break;
    p = pool_now();
    if (p == nullptr) break;
    NodeId id = kNoNode;
    for (NodeId i = 0; i < p->servers.size(); ++i) {
      if (p->servers[i].name == source) id = i;
    }
    if (id == kNoNode) continue;  // gone since (its window ended)
    const Member from = member(*p, id);
    if (p->config.protocol == PoolProtocol::kRedis) {
      std::string cursor = "0";
      do {
        std::string scan;
        redis::append_command(scan, {"SCAN", cursor, "COUNT", std::to_string(kBatch)});
        const QueryResult r = call(p->config, from, scan, 1);
        if (!r.error.empty() || r.replies[0].type != '*' || r.replies[0].items.size() != 2) {
          error = source + ": SCAN: " + (r.error.empty() ? "unexpected reply" : r.error);
          break;
        }
        cursor = r.replies[0].items[0].str;
        std::vector<std::string> keys;
        for (const auto& k : r.replies[0].items[1].items) keys.push_back(k.str);
        p = pool_now();
        if (p == nullptr) break;
        record(Mover(*p, from).move(keys), keys.size());
        pace(keys.size());
      } while (cursor != "0" && !stop_);
    } else {
      // The whole metadump, processed in batches as it arrives.
      std::vector<std::string> keys;
      std::string why;
      bool busy = false;
      auto flush = [&] {
        const auto np = pool_now();
        if (np != nullptr && !keys.empty()) record(Mover(*np, from).move(keys), keys.size());
        pace(keys.size());
        keys.clear();
      };
      stream(
          from.endpoint(), "lru_crawler metadump all\r\n", kDumpTimeout, from.server.tls.get(),
          [&](std::string& in) {
            std::size_t pos = 0;
            for (;;) {
              // Item lines end in "\n" alone, END in "\r\n".
              const std::size_t nl = in.find('\n', pos);
              if (nl == std::string::npos) break;
              std::string_view line(in.data() + pos, nl - pos);
              if (line.ends_with('\r')) line.remove_suffix(1);
              pos = nl + 1;
              if (line == "END") {
                in.erase(0, pos);
                return true;
              }
              if (line.starts_with("BUSY")) {
                busy = true;
                return true;
              }
              if (!line.starts_with("key=")) continue;
              std::string key;
              if (internal::uri_decode(line.substr(4, line.find(' ') - 4), key))
                keys.push_back(key);
              if (keys.size() >= kBatch) flush();
              if (stop_) return true;
            }
            in.erase(0, pos);
            return false;
          },
          why);
      flush();
      if (busy) error = source + ": lru_crawler is busy (another crawl runs); try again";
      else if (!why.empty()) error = source + ": metadump: " + why;
    }
    if (!error.empty()) break;
  }
  if (error.empty() && !down.empty()) {
    error = "not moved from " + *down.begin() + (down.size() > 1 ? " and others" : "") +
            ": down (run again once it is back)";
  }
  bool ended = false;
  {
    std::lock_guard lock(mu_);
    Run& r = runs_[pool_name];
    r.finished_ms = wall_ms();
    if (!error.empty()) r.error = error;
    r.state = stop_ ? "stopped" : !error.empty() || r.failed != 0 ? "failed" : "done";
    ended = r.state == "done" && r.deferred == 0;
    if (r.state == "done" && r.deferred != 0) {
      error = std::to_string(r.deferred) + " keys left to their first request (noted while their "
              "owner was out)";
    }
  }
  // Every key is home: the window ends, unless a reload moved keys again meanwhile. A fleet pool's
  // window is the fleet's to end (membership/fleet/agent.h).
  p = pool_now();
  {
    std::lock_guard hook_lock(hook_mu_);
    if (done_hook_ && p != nullptr && p->config.etcd != nullptr) {
      done_hook_(pool_name, ended);
      active_ = 0;
      return;
    }
  }
  if (ended && p != nullptr && p->warming() && p->previous.front().until_ms == window) {
    p->shared->end_warmup.store(true);
    publish_();
    log(LogLevel::kInfo, "rebalance done; the warm-up window ends", {{"pool", pool_name}});
  } else if (!ended) {
    log(LogLevel::kWarn, "rebalance did not complete; the warm-up window stays",
        {{"pool", pool_name}, {"reason", error}});
  }
  active_ = 0;
}

std::string Rebalancer::status_json() const {
  std::lock_guard lock(mu_);
  std::string o = "\"rebalance\":[";
  bool first = true;
  for (const auto& [k, r] : runs_) {
    o += std::string(first ? "" : ",") + "{\"pool\":\"" + json_escape(r.pool) + "\",\"state\":\"" +
         r.state + "\",\"scanned\":" + std::to_string(r.scanned) +
         ",\"moved\":" + std::to_string(r.moved) + ",\"skipped\":" + std::to_string(r.skipped) +
         ",\"failed\":" + std::to_string(r.failed) +
         ",\"conflicts\":" + std::to_string(r.conflicts) +
         ",\"started_ms\":" + std::to_string(r.started_ms) +
         ",\"finished_ms\":" + std::to_string(r.finished_ms) + ",\"error\":\"" +
         json_escape(r.error) + "\"}";
    first = false;
  }
  return o + "]";
}

std::string Rebalancer::prometheus() const {
  std::vector<std::string> pools;
  for (const auto& p : topology_()->pools) {
    if (p->config.protocol != PoolProtocol::kTcp && !p->config.is_cluster()) {
      pools.push_back(p->config.name);
    }
  }
  if (pools.empty()) return "";
  std::lock_guard lock(mu_);
  std::string o;
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& pool : pools) {
      const auto t = totals_.find(pool);
      const auto r = runs_.find(pool);
      o += std::string(name) + "{pool=\"" + prometheus_label_escape(pool) + "\"} " +
           std::to_string(value(t == totals_.end() ? Totals{} : t->second,
                                r != runs_.end() && r->second.state == "running")) +
           "\n";
    }
  };
  family("chash_proxy_rebalance_scanned_total", "counter",
         "Rebalance: keys listed at previous owners (SCAN, metadump), every run.",
         [](const Totals& t, bool) { return t.scanned; });
  family("chash_proxy_rebalance_moved_total", "counter",
         "Rebalance: keys moved to their owner, every run.",
         [](const Totals& t, bool) { return t.moved; });
  family("chash_proxy_rebalance_skipped_total", "counter",
         "Rebalance: keys already home, gone meanwhile, or with nowhere to go, every run.",
         [](const Totals& t, bool) { return t.skipped; });
  family("chash_proxy_rebalance_failed_total", "counter",
         "Rebalance: keys that could not be moved, every run.",
         [](const Totals& t, bool) { return t.failed; });
  family("chash_proxy_rebalance_conflicts_total", "counter",
         "Rebalance: keys left at both owners because the owner holds another value, every run.",
         [](const Totals& t, bool) { return t.conflicts; });
  family("chash_proxy_rebalance_running", "gauge", "1 while a rebalance of the pool runs.",
         [](const Totals&, bool running) -> std::uint64_t { return running ? 1 : 0; });
  return o;
}

}  // namespace chash::proxy
