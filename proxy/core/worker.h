// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a worker thread: one event loop, its clients, its own backend connections.
//
// Workers share nothing mutable but the Topology snapshot pointer (swapped by post()) and the
// atomic counters (BackendState, Metrics). Every worker accepts from every pool's listening
// socket (EPOLLEXCLUSIVE: the kernel wakes one), so clients spread over workers without a
// dispatcher thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/connection.h"
#include "core/metrics.h"
#include "core/topology.h"
#include "net/event_loop.h"

namespace chash::proxy {

class Worker;
class ClientSession;

// Per-worker, per-pool state a protocol may keep (e.g. a tcp pool's round-robin position).
// Reset when a reload changes the pool's servers.
struct PoolState {
  virtual ~PoolState() = default;
};

struct WorkerPool {
  std::shared_ptr<const Pool> pool;
  // [node][i]: server_connections connections per backend, created on first use.
  std::vector<std::vector<BackendConn*>> backends;
  std::uint32_t next_conn = 0;
  std::unique_ptr<PoolState> state;
};

class Worker {
 public:
  Worker(unsigned index, std::vector<int> listen_fds, std::shared_ptr<const Topology> topology,
         Metrics& metrics);
  ~Worker();

  void start();                                          // spawns the thread
  void stop();                                           // thread-safe; joins
  void set_topology(std::shared_ptr<const Topology> t);  // thread-safe
  // The version of the topology this worker routes with (thread-safe): a reload has taken
  // effect on this worker once this reaches the new version.
  std::uint64_t applied_version() const noexcept {
    return applied_version_.load(std::memory_order_acquire);
  }

  // ---- On the worker's thread --------------------------------------------------------------
  net::EventLoop& loop() noexcept { return loop_; }
  Metrics& metrics() noexcept { return metrics_; }
  unsigned index() const noexcept { return index_; }
  const std::shared_ptr<const Pool>& pool(std::size_t i) const noexcept { return pools_[i].pool; }
  // A connection to backend `node` of pool `pool_index` (connecting if needed); nullptr when a
  // connection cannot even be started (the error says why).
  BackendConn* backend(std::size_t pool_index, NodeId node, std::string& error);
  // Backends with queued output are flushed once per batch of client input.
  void mark_dirty(BackendConn* b);
  void flush_dirty();
  void backend_closed(BackendConn* b);  // forget it (it deletes itself)
  // Clients with replies to write, written (flush_output) after the backends at batch end.
  void schedule_output(ClientSession* c) { outputs_.push_back(c); }
  void cancel_output(ClientSession* c);
  // Client bookkeeping: the accept path has counted the client (process and pool); closing
  // uncounts it. The worker deletes clients still open when it is destroyed.
  void client_opened(net::Pollable* c, std::size_t pool_index);
  void client_closed(net::Pollable* c);
  std::size_t client_count() const noexcept { return clients_.size(); }
  std::unique_ptr<PoolState>& pool_state(std::size_t pool_index) noexcept {
    return pools_[pool_index].state;
  }

 private:
  class Listener;
  void apply_topology(std::shared_ptr<const Topology> t);
  void tick();

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
  std::unordered_map<net::Pollable*, std::shared_ptr<PoolShared>> clients_;
};

}  // namespace chash::proxy
