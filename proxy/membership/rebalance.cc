// SPDX-License-Identifier: Apache-2.0
#include "membership/rebalance.h"

#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "chash/internal/uri_decode.h"
#include "control/log.h"
#include "control/status.h"
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
    std::vector<std::string_view> unlink = {"UNLINK"};
    for (std::size_t j = 0; j < sent.size(); ++j) {
      const RespValue& v = r.replies[j];
      // OK, or BUSYKEY: the owner has a newer value. Either way the old copy goes.
      if (v.type == '-' && !v.str.starts_with("BUSYKEY")) {
        ++c.failed;
        c.error =
            to.name + ": RESTORE " + keys[sent[j]].substr(0, 64) + ": " + v.str.substr(0, 120);
        continue;
      }
      unlink.push_back(keys[sent[j]]);
      ++c.moved;
    }
    if (unlink.size() == 1) return;
    std::string del;
    redis::append_command(del, unlink);
    const QueryResult u = call(pc, from_, del, 1);
    if (!u.error.empty()) c.error = from_.name + ": " + u.error;
  }

  void memcache_move(const Member& to, const std::vector<std::string>& keys, Counts& c) {
    std::string mg;
    for (const auto& k : keys) mg += "mg " + k + " v t f\r\n";
    mg += "mn\r\n";  // answered after every mg: the end of the batch
    std::string ms, md, error;
    std::size_t answered = 0;
    bool bad = false;
    // Each answer: "VA <size> t<ttl> f<flags>\r\n<data>\r\n" or "EN\r\n"; then "MN\r\n".
    stream(
        from_.endpoint(), mg, kTimeout, from_.server.tls.get(),
        [&](std::string& in) {
          for (;;) {
            if (answered == keys.size()) return in.starts_with("MN\r\n");
            const std::size_t nl = in.find("\r\n");
            if (nl == std::string::npos) return false;
            const std::string_view line(in.data(), nl);
            if (line == "EN") {
              ++c.skipped;
            } else if (line.starts_with("VA ")) {
              std::size_t size = 0;
              std::int64_t ttl = -1;
              std::uint32_t flags = 0;
              std::size_t i = 3;
              std::size_t e = std::min(line.find(' ', i), line.size());
              std::from_chars(line.data() + i, line.data() + e, size);
              for (i = e; i < line.size();) {
                while (i < line.size() && line[i] == ' ') ++i;
                e = std::min(line.find(' ', i), line.size());
                const std::string_view tok = line.substr(i, e - i);
                if (tok.size() > 1 && tok[0] == 't')
                  std::from_chars(tok.data() + 1, tok.data() + tok.size(), ttl);
                if (tok.size() > 1 && tok[0] == 'f')
                  std::from_chars(tok.data() + 1, tok.data() + tok.size(), flags);
                i = e;
              }
              if (in.size() < nl + 2 + size + 2) return false;  // the data is not all here
              const std::string& k = keys[answered];
              ms += "ms " + k + " " + std::to_string(size) + " T" +
                    std::to_string(ttl < 0 ? 0 : ttl) + " F" + std::to_string(flags) + " ME\r\n";
              ms.append(in, nl + 2, size);
              ms += "\r\n";
              md += "md " + k + " q\r\n";
              ++c.moved;
              in.erase(0, nl + 2 + size + 2);
              ++answered;
              continue;
            } else {
              bad = true;  // an error line: the rest of the batch is not moved
              return true;
            }
            in.erase(0, nl + 2);
            ++answered;
          }
        },
        error);
    if (!error.empty() || bad || answered < keys.size()) {
      c.failed += keys.size() - answered;
      c.error = from_.name + ": " + (error.empty() ? "unexpected meta reply" : error);
    }
    if (ms.empty()) return;
    std::string out =
        exchange(to.endpoint(), ms + "mn\r\n", "MN\r\n", kTimeout, to.server.tls.get(), error);
    if (!error.empty() || out.find("ERROR") != std::string::npos) {
      c.error = to.name + ": " + (error.empty() ? out.substr(0, 80) : error);
      return;  // the old copies stay: nothing is lost
    }
    out = exchange(from_.endpoint(), md + "mn\r\n", "MN\r\n", kTimeout, from_.server.tls.get(),
                   error);
    if (!error.empty()) c.error = from_.name + ": " + error;
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
  // The members that owned keys under a previous routing.
  std::set<std::string> sources;
  if (p != nullptr) {
    for (const auto& prev : p->previous) {
      for (const NodeId m : prev.member) {
        if (m != kNoNode) sources.insert(p->servers[m].name);
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
    if (!c.error.empty()) r.error = c.error;
    Totals& t = totals_[pool_name];
    t.scanned += scanned;
    t.moved += c.moved;
    t.skipped += c.skipped;
    t.failed += c.failed;
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
  bool ended = false;
  {
    std::lock_guard lock(mu_);
    Run& r = runs_[pool_name];
    r.finished_ms = wall_ms();
    if (!error.empty()) r.error = error;
    r.state = stop_ ? "stopped" : !error.empty() || r.failed != 0 ? "failed" : "done";
    ended = r.state == "done";
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
  family("chash_proxy_rebalance_running", "gauge", "1 while a rebalance of the pool runs.",
         [](const Totals&, bool running) -> std::uint64_t { return running ? 1 : 0; });
  return o;
}

}  // namespace chash::proxy
