// SPDX-License-Identifier: Apache-2.0
#include "membership/failback.h"

#include <pthread.h>
#include <signal.h>

#include "control/log.h"
#include "membership/control_client.h"
#include "membership/topology.h"
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
      for (std::size_t i = at; i < end; ++i) req += "md " + keys[i] + " q\r\n";
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
    return;
  }
  if (keys_.emplace(key).second) noted_.fetch_add(1, std::memory_order_relaxed);
}

bool AbsenceLog::take(std::string_view key) {
  std::lock_guard lock(mu_);
  return keys_.erase(std::string(key)) > 0;
}

std::vector<std::string> AbsenceLog::swap() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out(keys_.begin(), keys_.end());
  keys_.clear();
  return out;
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
  overflow_ = false;
}

// ---- FailbackSweeper ----------------------------------------------------------------------------

FailbackSweeper::FailbackSweeper(TopologyFn topology, QuiesceFn quiesce)
    : topology_(std::move(topology)), quiesce_(std::move(quiesce)) {
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
    jobs_.push_back({pool, backend, false});
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
        jobs_.push_back({pool, backend, true});
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
      job = jobs_.front();
      jobs_.pop_front();
    }
    sweep(job);
  }
}

void FailbackSweeper::sweep(const Job& job) {
  const auto t = topology_();
  const Pool* pool = nullptr;
  NodeId node = kNoNode;
  for (const auto& p : t->pools) {
    if (p->config.name != job.pool) continue;
    for (NodeId i = 0; i < p->nodes; ++i) {
      if (p->servers[i].name == job.backend) {
        pool = p.get();
        node = i;
      }
    }
  }
  if (pool == nullptr) return;  // reloaded away meanwhile
  const PoolConfig& pc = pool->config;
  const ServerConfig& server = pool->servers[node];
  BackendState& st = *pool->states[node];
  AbsenceLog& absence = st.absence;
  // Where the workers connect (membership/resolver.h's address: a name is not looked up again
  // here).
  Endpoint to{server.address};
  const auto resolved = st.resolved();
  if (resolved != nullptr) {
    to.resolved = &resolved->addr;
    to.len = resolved->len;
  }
  absence.set_phase(AbsenceLog::Phase::kSweeping);
  quiesce_();  // every write routed while it was out is in the log now
  std::string error;
  const bool overflowed = absence.overflowed();
  if (job.flush || overflowed) {
    if (!job.flush && !pc.failover_overflow_flush) {
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
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<std::string> keys = absence.swap();
    if (keys.empty()) break;
    if (!remove_keys(pc, server, to, keys, error)) {
      for (const auto& k : keys) absence.note(k, pc.failover_track_keys);
      absence.set_phase(AbsenceLog::Phase::kNormal);
      log(LogLevel::kWarn, "backend could not be swept; it stays down",
          {{"pool", pc.name}, {"backend", st.name}, {"reason", error}});
      return;
    }
    absence.count_swept(keys.size());
  }
  // In: from now on a request for a key still noted deletes it first (Phase::kFlipped).
  absence.set_phase(AbsenceLog::Phase::kFlipped);
  st.probe_successes = 0;
  st.failures = 0;
  st.down = false;
  log(LogLevel::kInfo, "backend up",
      {{"pool", pc.name}, {"backend", st.name}, {"swept_keys", std::to_string(absence.swept())}});
  quiesce_();  // what was routed elsewhere just before the flip is noted now
  std::vector<std::string> keys = absence.swap();
  if (keys.empty() || remove_keys(pc, server, to, keys, error)) {
    absence.count_swept(keys.size());
    absence.set_phase(AbsenceLog::Phase::kNormal);
    return;
  }
  // Those keys stay noted and the phase stays: each is deleted before the first request for it.
  for (const auto& k : keys) absence.note(k, pc.failover_track_keys);
  log(LogLevel::kWarn, "backend's last sweep failed; its noted keys are deleted on first use",
      {{"pool", pc.name}, {"backend", st.name}, {"reason", error}});
}

}  // namespace chash::proxy
