// SPDX-License-Identifier: Apache-2.0
#include "membership/failback.h"

#include <pthread.h>
#include <signal.h>

#include "base/log.h"
#include "membership/control_client.h"
#include "membership/topology.h"
#include "proto/memcache/protocol.h"
#include "proto/redis/resp.h"

namespace chash::proxy {

namespace {

constexpr std::size_t kBatch = 200;  // keys per DEL / per pipelined md run
constexpr int kMaxRounds = 8;        // sweeps while the backend is still out
constexpr auto kTimeout = std::chrono::milliseconds(5000);

// Deletes `keys` on backend `s`; false (and `error`) when it could not.
bool remove_keys(const PoolConfig& pc, const ServerConfig& s, const Endpoint& to,
                 const std::vector<std::string>& keys, std::string& error) {
  for (std::size_t at = 0; at < keys.size(); at += kBatch) {
    const std::size_t end = std::min(keys.size(), at + kBatch);
    std::string req;
    if (pc.protocol == PoolProtocol::kRedis) {
      const std::size_t prelude = append_redis_prelude(pc, s, req);
      std::vector<std::string_view> del = {"UNLINK"};
      for (std::size_t i = at; i < end; ++i) del.push_back(keys[i]);
      redis::append_command(req, del);
      const QueryResult r = query(to, req, prelude + 1, kTimeout, s.tls.get());
      error = r.error;
      if (error.empty() && r.replies.back().type == '-') error = r.replies.back().str;
    } else {
      // md with q answers only NF (not there) and errors; mn then says the run is over.
      // A key no text command can name (a meta request's binary key) goes base64 with `b`.
      for (std::size_t i = at; i < end; ++i) {
        req += "md ";
        if (memcache::text_key_ok(keys[i])) {
          req += keys[i];
          req += " q\r\n";
        } else {
          memcache::base64_encode(keys[i], req);
          req += " b q\r\n";
        }
      }
      req += "mn\r\n";
      const std::string out = exchange(to, req, "MN\r\n", kTimeout, s.tls.get(), error);
      if (error.empty() && out.find("ERROR") != std::string::npos)
        error = "unexpected reply: " + out.substr(0, 80);
    }
    if (!error.empty()) return false;
  }
  return true;
}

bool flush_backend(const PoolConfig& pc, const ServerConfig& s, const Endpoint& to,
                   std::string& error) {
  std::string req;
  if (pc.protocol == PoolProtocol::kRedis) {
    const std::size_t prelude = append_redis_prelude(pc, s, req);
    redis::append_command(req, {"FLUSHDB"});
    const QueryResult r = query(to, req, prelude + 1, kTimeout, s.tls.get());
    error = r.error;
    if (error.empty() && r.replies.back().type == '-') error = r.replies.back().str;
  } else {
    const std::string out =
        exchange(s.address, "flush_all\r\n", "\r\n", kTimeout, s.tls.get(), error);
    if (error.empty() && out != "OK\r\n") error = "unexpected reply: " + out.substr(0, 80);
  }
  return error.empty();
}

}  // namespace

// ---- AbsenceLog ---------------------------------------------------------------------------------

void AbsenceLog::note(std::string_view key, std::size_t limit) {
  std::lock_guard lock(mu_);
  if (overflow_) return;
  if (keys_.size() >= limit && !keys_.count(std::string(key))) {
    overflow_ = true;  // the log can no longer say which keys are stale
    keys_.clear();
    size_.store(0, std::memory_order_release);
    changes_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (keys_.emplace(key).second) {
    noted_.fetch_add(1, std::memory_order_relaxed);
    changes_.fetch_add(1, std::memory_order_relaxed);
    size_.store(keys_.size(), std::memory_order_release);
  }
}

bool AbsenceLog::take(std::string_view key) {
  std::lock_guard lock(mu_);
  const bool noted = keys_.erase(std::string(key)) > 0;
  if (noted) changes_.fetch_add(1, std::memory_order_relaxed);
  size_.store(keys_.size(), std::memory_order_release);
  // The last stale copy is gone: requests stop looking here (a new absence notes afresh).
  if (noted && keys_.empty() && phase() == Phase::kFlipped) set_phase(Phase::kNormal);
  return noted;
}

bool AbsenceLog::contains(std::string_view key) const {
  std::lock_guard lock(mu_);
  return keys_.count(std::string(key)) > 0;
}

std::vector<std::string> AbsenceLog::swap() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out(keys_.begin(), keys_.end());
  keys_.clear();
  size_.store(0, std::memory_order_release);
  changes_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

std::vector<std::string> AbsenceLog::keys(bool& overflow) const {
  std::lock_guard lock(mu_);
  overflow = overflow_;
  return {keys_.begin(), keys_.end()};
}

void AbsenceLog::restore(const std::vector<std::string>& keys, bool overflow, std::size_t limit) {
  if (overflow) {
    std::lock_guard lock(mu_);
    overflow_ = true;
    keys_.clear();
    size_.store(0, std::memory_order_release);
    changes_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  for (const auto& k : keys) note(k, limit);
}

bool AbsenceLog::overflowed() const {
  std::lock_guard lock(mu_);
  return overflow_;
}

bool AbsenceLog::empty() const {
  std::lock_guard lock(mu_);
  return keys_.empty() && !overflow_;
}

void AbsenceLog::clear() {
  std::lock_guard lock(mu_);
  keys_.clear();
  size_.store(0, std::memory_order_release);
  overflow_ = false;
  changes_.fetch_add(1, std::memory_order_relaxed);
}

// ---- FailbackSweeper ----------------------------------------------------------------------------

FailbackSweeper::FailbackSweeper(TopologyFn topology, QuiesceFn quiesce, PublishFn publish)
    : topology_(std::move(topology)), quiesce_(std::move(quiesce)), publish_(std::move(publish)) {
  thread_ = std::thread([this] { run(); });
  ::pthread_setname_np(thread_.native_handle(), "failback");
}

FailbackSweeper::~FailbackSweeper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void FailbackSweeper::returned(const std::string& pool, const std::string& backend) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back({pool, backend, Kind::kReturn, nullptr});
  }
  cv_.notify_all();
}

void FailbackSweeper::sweep_for_fleet(const std::string& pool, const std::string& backend,
                                      DoneFn done) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back({pool, backend, Kind::kFleetSweep, std::move(done)});
  }
  cv_.notify_all();
}

void FailbackSweeper::flush_for_fleet(const std::string& pool, const std::string& backend,
                                      DoneFn done) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back({pool, backend, Kind::kFleetFlush, std::move(done)});
  }
  cv_.notify_all();
}

bool FailbackSweeper::flush(const std::string& pool, const std::string& backend,
                            std::string& message) {
  const auto t = topology_();
  for (const auto& p : t->pools) {
    if (p->config.name != pool) continue;
    for (NodeId i = 0; i < p->nodes; ++i) {
      if (p->servers[i].name != backend) continue;
      {
        std::lock_guard lock(mu_);
        jobs_.push_back({pool, backend, Kind::kFlush, nullptr});
      }
      cv_.notify_all();
      message = "flushing " + pool + "/" + backend + "; it takes traffic once it is empty";
      return true;
    }
  }
  message = "no backend '" + backend + "' in pool '" + pool + "'";
  return false;
}

void FailbackSweeper::run() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (job.kind == Kind::kFleetSweep || job.kind == Kind::kFleetFlush) {
      fleet_job(job);
    } else {
      sweep(job);
    }
  }
}

struct FailbackSweeper::Target {
  std::shared_ptr<const Topology> topology;  // holds `pool` alive
  const Pool* pool = nullptr;
  NodeId node = kNoNode;
  std::shared_ptr<const ResolvedAddress> resolved;
  // Where the workers connect (membership/resolver.h's address: a name is not looked up again
  // here).
  Endpoint to() const {
    Endpoint e{pool->servers[node].address};
    if (resolved != nullptr) {
      e.resolved = &resolved->addr;
      e.len = resolved->len;
    }
    return e;
  }
};

FailbackSweeper::Target FailbackSweeper::locate(const Job& job) const {
  Target t;
  t.topology = topology_();
  for (const auto& p : t.topology->pools) {
    if (p->config.name != job.pool) continue;
    for (NodeId i = 0; i < p->nodes; ++i) {
      if (p->servers[i].name == job.backend) {
        t.pool = p.get();
        t.node = i;
        t.resolved = p->states[i]->resolved();
      }
    }
  }
  return t;
}

bool FailbackSweeper::sweep_rounds(const Target& t, std::string& error) {
  const PoolConfig& pc = t.pool->config;
  const ServerConfig& server = t.pool->servers[t.node];
  AbsenceLog& absence = t.pool->states[t.node]->absence;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<std::string> keys = absence.swap();
    if (keys.empty()) break;
    if (!remove_keys(pc, server, t.to(), keys, error)) {
      for (const auto& k : keys) absence.note(k, pc.failover_track_keys);
      return false;
    }
    absence.count_swept(keys.size());
  }
  return true;
}

void FailbackSweeper::fleet_job(const Job& job) {
  Outcome out;
  Target t = locate(job);
  if (t.pool == nullptr) {
    // Not a member any more (the fleet moved on): nothing of ours to sweep there.
    out.ok = true;
    if (job.done) job.done(out);
    return;
  }
  const PoolConfig& pc = t.pool->config;
  AbsenceLog& absence = t.pool->states[t.node]->absence;
  quiesce_();  // every write routed while it was out is in the log now
  const std::uint64_t before = absence.swept();
  if (job.kind == Kind::kFleetFlush) {
    out.ok = flush_backend(pc, t.pool->servers[t.node], t.to(), out.error);
    if (out.ok) absence.clear();
  } else if (absence.overflowed()) {
    out.overflow = true;
    out.ok = true;
  } else {
    out.ok = sweep_rounds(t, out.error);
  }
  out.keys = absence.swept() - before;
  if (job.done) job.done(out);
}

void FailbackSweeper::sweep(const Job& job) {
  Target t = locate(job);
  if (t.pool == nullptr) return;  // reloaded away meanwhile
  const Pool* pool = t.pool;
  const NodeId node = t.node;
  const PoolConfig& pc = pool->config;
  const ServerConfig& server = pool->servers[node];
  BackendState& st = *pool->states[node];
  AbsenceLog& absence = st.absence;
  const Endpoint to = t.to();
  absence.set_phase(AbsenceLog::Phase::kSweeping);
  quiesce_();  // every write routed while it was out is in the log now
  std::string error;
  const bool overflowed = absence.overflowed();
  const bool flush = job.kind == Kind::kFlush;
  if (flush || overflowed) {
    if (!flush && !pc.failover_overflow_flush) {
      absence.set_phase(AbsenceLog::Phase::kHeld);
      log(LogLevel::kError,
          "backend kept out: more keys were written while it was down than failover_track_keys; "
          "flush it (POST /flush?pool=...&backend=...) to let it back",
          {{"pool", pc.name}, {"backend", st.name}});
      return;
    }
    if (!flush_backend(pc, server, to, error)) {
      absence.set_phase(AbsenceLog::Phase::kNormal);  // still down: the next probe tries again
      log(LogLevel::kWarn, "backend flush failed; it stays down",
          {{"pool", pc.name}, {"backend", st.name}, {"reason", error}});
      return;
    }
    absence.clear();
    log(LogLevel::kInfo,
        overflowed ? "backend flushed before it takes traffic (its absence log overflowed)"
                   : "backend flushed",
        {{"pool", pc.name}, {"backend", st.name}});
  }
  // Sweep while it is still out: writes go elsewhere meanwhile and keep being noted.
  if (!sweep_rounds(t, error)) {
    absence.set_phase(AbsenceLog::Phase::kNormal);
    log(LogLevel::kWarn, "backend could not be swept; it stays down",
        {{"pool", pc.name}, {"backend", st.name}, {"reason", error}});
    return;
  }
  // What was written at its keys' next choice meanwhile stays readable there: the next
  // topology reads it through (the warm-up path) on a miss here.
  if (publish_ && pc.warmup) {
    pool->shared->note_returned(st.name);
    publish_();
  }
  // In: from now on a request for a key still noted deletes it first (Phase::kFlipped).
  absence.set_phase(AbsenceLog::Phase::kFlipped);
  st.probe_successes = 0;
  st.failures = 0;
  st.down = false;
  log(LogLevel::kInfo, "backend up",
      {{"pool", pc.name}, {"backend", st.name}, {"swept_keys", std::to_string(absence.swept())}});
  // What was routed elsewhere just before the flip is noted too, and stays noted: each such key
  // is deleted here before the first request for it (on the request's own connection, so the
  // delete cannot overtake a newer write). A sweep of them from this thread could: between its
  // swap of the log and its DEL, a worker may write the key here (no longer noted, so without
  // a delete first), and the sweep's DEL would then remove that acknowledged write.
  // The phase ends when the last noted key has been taken (AbsenceLog::take), or here when
  // nothing was noted once every worker is past the flip.
  quiesce_();
  if (absence.empty()) absence.set_phase(AbsenceLog::Phase::kNormal);
  if (in_hook_ && pc.warmup) in_hook_(pc.name);
}

}  // namespace chash::proxy
