// SPDX-License-Identifier: Apache-2.0
// chash-proxy — safe failover and return: a backend that comes back never serves a value older
// than one written while it was out.
//
// While a backend is down (auto_eject_hosts), its keys are read and written at their next
// choice. The workers note every key whose write or delete went elsewhere in the backend's
// AbsenceLog (bounded: failover_track_keys). When its probes say it is back, it does not take
// traffic at once: the FailbackSweeper (a thread of its own; blocking control connections)
//   1. waits until every worker has finished what it was doing (Proxy's quiesce: each worker
//      runs a posted no-op), so every write routed while it was down has been noted;
//   2. deletes the noted keys on it (Redis DEL, memcached md), swapping the log out, until a
//      round finds nothing new (writes keep going elsewhere meanwhile, and keep being noted);
//   3. lets it take traffic (down = false). What was noted after the last round (written
//      elsewhere just before the flip) stays noted (Phase::kFlipped): a request routed to it for
//      such a key is preceded, on the same connection, by a delete of that key — so no read
//      reaches a stale copy, and no delete can overtake a write made after the flip (a sweep
//      from this thread could: docs/FAILURES.md "Safe failover and return"). The phase ends when
//      the last noted key has been taken.
// A log that overflowed cannot say which keys are stale: `failover_overflow: flush` empties the
// backend first (FLUSHDB / flush_all), `keep_ejected` keeps it down (logged) until
// POST /flush?pool=P&backend=B. What is not covered: values written to the backend by anyone
// but this proxy (other proxies, other clients) — see docs/FAILURES.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

namespace chash::proxy {

struct Topology;

class AbsenceLog {
 public:
  enum class Phase : std::uint8_t {
    kNormal,    // nothing to do (the backend is up, or down and noting)
    kSweeping,  // probes passed; still down for routing while the log is swept
    kFlipped,   // taking traffic; a request for a noted key deletes it first
    kHeld,      // the log overflowed and failover_overflow is keep_ejected: stays down
  };

  // A write or delete of `key` went elsewhere: noted (at most `limit` keys; more overflows).
  void note(std::string_view key, std::size_t limit);
  // kFlipped: true (and the key forgotten) when `key` was noted — the caller deletes it first.
  bool take(std::string_view key);
  // Whether `key` is noted (the rebalance leaves such a key to its first request, see
  // membership/rebalance.cc).
  bool contains(std::string_view key) const;
  std::vector<std::string> swap();  // the noted keys, forgotten
  // A copy of the noted keys and whether it overflowed (a binary hand-over passes it on,
  // control/handover.h); restore() adds what a predecessor passed, as note() would.
  std::vector<std::string> keys(bool& overflow) const;
  void restore(const std::vector<std::string>& keys, bool overflow, std::size_t limit);
  bool overflowed() const;
  bool empty() const;
  // Whether any key is noted, without the lock (a replicated pool's requests ask it per home
  // that is up: proto/memcache/session_replicas.cc).
  bool any_noted() const noexcept { return size_.load(std::memory_order_acquire) != 0; }
  void clear();

  Phase phase() const noexcept { return phase_.load(std::memory_order_acquire); }
  void set_phase(Phase p) noexcept { phase_.store(p, std::memory_order_release); }
  std::uint64_t noted() const noexcept { return noted_.load(std::memory_order_relaxed); }
  std::uint64_t swept() const noexcept { return swept_.load(std::memory_order_relaxed); }
  // Bumped by every change of the noted keys (chash_proxy.state_file writes when it moves).
  std::uint64_t changes() const noexcept { return changes_.load(std::memory_order_relaxed); }
  void count_swept(std::uint64_t n) noexcept { swept_.fetch_add(n, std::memory_order_relaxed); }

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> keys_;
  bool overflow_ = false;
  std::atomic<Phase> phase_{Phase::kNormal};
  std::atomic<std::uint64_t> noted_{0}, swept_{0}, changes_{0};
  std::atomic<std::size_t> size_{0};  // keys_.size(), stored under mu_ by every change
};

class FailbackSweeper {
 public:
  using TopologyFn = std::function<std::shared_ptr<const Topology>()>;
  // Returns once every worker has run an event boundary after the call.
  using QuiesceFn = std::function<void()>;
  // Publishes a topology of the running config (Proxy::republish).
  using PublishFn = std::function<void()>;
  FailbackSweeper(TopologyFn topology, QuiesceFn quiesce, PublishFn publish = nullptr);
  ~FailbackSweeper();  // stops and joins the thread
  FailbackSweeper(const FailbackSweeper&) = delete;
  FailbackSweeper& operator=(const FailbackSweeper&) = delete;

  // Thread-safe: backend `backend` of pool `pool` passed its probes; sweep it, then let it in.
  void returned(const std::string& pool, const std::string& backend);
  // Called (on the sweeper's thread) once a returned backend of a warm-up pool is in: the values
  // written at its keys' fallbacks meanwhile are readable only through this process's warm-up
  // routing until moved home — Proxy starts the pool's rebalance, so that a restart of this
  // proxy soon after does not leave them where nothing reads. Set before the first return.
  void set_in_hook(std::function<void(const std::string& pool)> hook) { in_hook_ = std::move(hook); }
  // Thread-safe: empty backend `backend` (FLUSHDB / flush_all) and let it in (POST /flush).
  // False with `message` when there is no such backend.
  bool flush(const std::string& pool, const std::string& backend, std::string& message);

  // Fleet returns (membership/fleet/agent.h): the fleet, not this proxy, lets a server back in.
  struct Outcome {
    bool ok = false;
    bool overflow = false;  // the log could not say which keys (failover_track_keys passed)
    std::uint64_t keys = 0;
    std::string error;
  };
  using DoneFn = std::function<void(const Outcome&)>;
  // Thread-safe: deletes on `backend` the keys this proxy wrote elsewhere while it was out,
  // round after round until one finds nothing new, and leaves it out; `done` (on the sweeper's
  // thread) gets the outcome.
  void sweep_for_fleet(const std::string& pool, const std::string& backend, DoneFn done);
  // Thread-safe: empties `backend` (FLUSHDB / flush_all) for the fleet; `done` as above.
  void flush_for_fleet(const std::string& pool, const std::string& backend, DoneFn done);

 private:
  enum class Kind : std::uint8_t { kReturn, kFlush, kFleetSweep, kFleetFlush };
  struct Job {
    std::string pool, backend;
    Kind kind = Kind::kReturn;
    DoneFn done;
  };
  // A job's backend as the current topology has it.
  struct Target;
  Target locate(const Job& job) const;
  void run();
  void sweep(const Job& job);
  void fleet_job(const Job& job);
  // Deletes the noted keys until a round finds none (at most kMaxRounds); false with `error`.
  bool sweep_rounds(const Target& t, std::string& error);

  TopologyFn topology_;
  QuiesceFn quiesce_;
  PublishFn publish_;
  std::function<void(const std::string& pool)> in_hook_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace chash::proxy
