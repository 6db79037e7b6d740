// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a worker thread: one event loop, its clients, its own backend connections.
//
// Workers share nothing mutable but the Topology snapshot pointer (swapped by post()) and the
// atomic counters (BackendState, Metrics). Every worker accepts from every pool's listening
// socket (EPOLLEXCLUSIVE: the kernel wakes one), so clients spread over workers without a
// dispatcher thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/connection.h"
#include "core/metrics.h"
#include "membership/topology.h"
#include "net/event_loop.h"

namespace chash::proxy {

// Room a backend's maxclients keeps beyond clients' own connections: the shared connections of
// a few proxies' workers, their probes, an operator's redis-cli. The limit is never below half
// of maxclients (a small server still takes some).
inline constexpr std::int64_t kOwnReserve = 32;
// Worker::backend: how long a shared connection waits on a script before clients with nothing
// in flight bypass it. Short: a server busy with a script answers nobody before its
// busy-reply-threshold (5 s by default) anyway, and -BUSY once past it; a command that only took
// this long meanwhile costs one more connection, once.
inline constexpr std::chrono::milliseconds kScriptBypassAfter{20};
// How many connections of clients' own backend `state` may have open at once (-1: no limit):
// max_own_connections, and at most its maxclients less kOwnReserve once the server has said.
std::int64_t own_connection_limit(const PoolConfig& config, const BackendState& state) noexcept;

class Worker;
class ClientSession;

// A listening socket shared by every worker (each polls it; the kernel wakes one). Closed when
// the last holder lets go: the Proxy's table and each worker's Listener, which a worker drops
// on its own thread after taking the fd out of its epoll set — so no worker ever accepts on a
// closed (or reused) descriptor.
struct ListenSocket {
  ListenSocket(int f, std::string k) : fd(f), key(std::move(k)) {}
  ~ListenSocket();
  ListenSocket(const ListenSocket&) = delete;
  ListenSocket& operator=(const ListenSocket&) = delete;
  const int fd;
  const std::string key;  // the address as configured ("127.0.0.1:22121", "/tmp/p.sock")
};
// What each pool slot (Pool::slot) accepts on.
using Listeners = std::vector<std::pair<std::size_t, std::shared_ptr<ListenSocket>>>;

// Per-worker, per-pool state a protocol may keep (e.g. a tcp pool's round-robin position).
// Reset when a reload changes the pool's servers.
struct PoolState {
  virtual ~PoolState() = default;
};

struct WorkerPool {
  std::shared_ptr<const Pool> pool;  // null: no pool has this slot (any more)
  bool removed = false;              // a reload removed the pool: its clients drain, then it goes
  std::size_t clients = 0;
  // [node][i]: server_connections connections per backend, created on first use.
  std::vector<std::vector<BackendConn*>> backends;
  std::uint32_t next_conn = 0;
  std::unique_ptr<PoolState> state;
};

class Worker {
 public:
  Worker(unsigned index, const Listeners& listeners, std::shared_ptr<const Topology> topology,
         Metrics& metrics);
  ~Worker();

  void start();  // spawns the thread
  void stop();   // thread-safe; joins
  // Thread-safe: routes with `t` from the next event on, and accepts on exactly `listeners`
  // (a reload may add and remove pools and listen addresses).
  void set_topology(std::shared_ptr<const Topology> t, Listeners listeners);
  // Thread-safe: stop accepting and drain every client (ClientConn::drain).
  void drain();
  // Thread-safe: returns once this worker has finished the event it was handling (it runs a
  // posted no-op), or after `timeout` (a stopped worker). What it routed before the call is
  // then fully dispatched (membership/failback.h waits on this).
  void quiesce(std::chrono::milliseconds timeout);
  // Open client connections (thread-safe): a drain is over when every worker has none.
  std::size_t open_clients() const noexcept {
    return open_clients_.load(std::memory_order_acquire);
  }
  // The version of the topology this worker routes with (thread-safe): a reload has taken
  // effect on this worker once this reaches the new version.
  std::uint64_t applied_version() const noexcept {
    return applied_version_.load(std::memory_order_acquire);
  }

  // ---- On the worker's thread --------------------------------------------------------------
  net::EventLoop& loop() noexcept { return loop_; }
  Metrics& metrics() noexcept { return metrics_; }
  unsigned index() const noexcept { return index_; }
  // The pool in slot `slot` (Pool::slot) as this worker routes now.
  const std::shared_ptr<const Pool>& pool(std::size_t slot) const noexcept {
    return pools_[slot].pool;
  }
  // A connection to backend `node` of pool `pool_index` (connecting if needed); nullptr when a
  // connection cannot even be started (the error says why).
  // `bypass_busy`: the caller has nothing in flight (no order to keep with its earlier
  // requests), so while the shared connection waits on a script for longer than
  // kScriptBypassAfter its request goes on a second shared connection instead, which a server
  // busy with the script answers at once (-BUSY), as it answers its other clients.
  BackendConn* backend(std::size_t pool_index, NodeId node, std::string& error,
                       bool bypass_busy = false);
  // The same for the member named `name` of the pool as this worker routes it now (warm-up
  // steps name members, not ids: a reload between two steps renumbers them).
  BackendConn* backend_named(std::size_t pool_index, std::string_view name, std::string& error);
  // A new connection to backend `node` that no other client shares (redis WATCH ... EXEC): the
  // worker flushes it, times it out and frees it when it closes, as its own; the caller
  // drain()s it when done. nullptr (with `error`) when it cannot be started, or when the
  // backend's clients' own connections are at own_connection_limit (PoolShared::own_refused).
  // Its failures never count against the backend (BackendConn::mark_own).
  BackendConn* dedicated_backend(std::size_t pool_index, NodeId node, std::string& error);
  // Backends with queued output are flushed once per batch of client input.
  void mark_dirty(BackendConn* b);
  void flush_dirty();
  void backend_closed(BackendConn* b);  // forget it (it deletes itself)
  // Clients with replies to write, written (flush_output) after the backends at batch end.
  void schedule_output(ClientSession* c) { outputs_.push_back(c); }
  void cancel_output(ClientSession* c);
  // Client bookkeeping: the accept path has counted the client (process and pool); closing
  // uncounts it. The worker deletes clients still open when it is destroyed.
  void client_opened(ClientConn* c, std::size_t pool_index);
  void client_closed(ClientConn* c);
  std::size_t client_count() const noexcept { return clients_.size(); }
  std::unique_ptr<PoolState>& pool_state(std::size_t pool_index) noexcept {
    return pools_[pool_index].state;
  }

 private:
  class Listener;
  struct ClientInfo {
    std::shared_ptr<PoolShared> shared;
    std::size_t slot;
  };
  void apply_topology(std::shared_ptr<const Topology> t);
  void apply_listeners(const Listeners& listeners);
  void drain_slot(std::size_t slot);
  void release_pool(WorkerPool& wp);
  void tick();
  std::unique_ptr<BackendConn> open_backend(WorkerPool& wp, NodeId node, std::string& error,
                                            bool own = false);

  unsigned index_;
  Metrics& metrics_;
  net::EventLoop loop_;
  std::thread thread_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::shared_ptr<const Topology> topology_;
  std::atomic<std::uint64_t> applied_version_{0};
  std::vector<WorkerPool> pools_;
  std::vector<BackendConn*> dirty_;
  std::vector<ClientSession*> outputs_;
  std::unordered_set<BackendConn*> all_backends_;
  std::unordered_map<ClientConn*, ClientInfo> clients_;
  std::atomic<std::size_t> open_clients_{0};
  bool draining_ = false;
};

}  // namespace chash::proxy
