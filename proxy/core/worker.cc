// SPDX-License-Identifier: Apache-2.0
#include "core/worker.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <future>

#include "base/log.h"
#include "core/protocols.h"
#include "core/session.h"
#include "net/socket.h"

namespace chash::proxy {

ListenSocket::~ListenSocket() {
  if (fd >= 0) ::close(fd);
}

class Worker::Listener : public net::Pollable {
 public:
  Listener(Worker& w, std::size_t pool_index, std::shared_ptr<ListenSocket> socket)
      : worker_(w), pool_index_(pool_index), socket_(std::move(socket)), fd_(socket_->fd) {}
  const std::shared_ptr<ListenSocket>& socket() const noexcept { return socket_; }
  std::size_t slot() const noexcept { return pool_index_; }
  // Out of the worker's epoll set; an event already returned in this batch is ignored.
  void stop() noexcept { stopped_ = true; }

  void on_event(std::uint32_t) override {
    if (stopped_) return;
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof peer;
      const int c = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                              SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR) continue;
        // EAGAIN: another worker took it. EMFILE & co: try again on the next wakeup.
        return;
      }
      const Pool& pool = *worker_.pool(pool_index_);
      auto& m = worker_.metrics();
      m.clients_accepted.fetch_add(1, std::memory_order_relaxed);
      // client_connections is per pool (nutcracker's meaning), counted across workers.
      const auto open = pool.shared->clients.fetch_add(1, std::memory_order_relaxed) + 1;
      if (pool.config.client_connections != 0 &&
          open > static_cast<std::int64_t>(pool.config.client_connections)) {
        pool.shared->clients.fetch_sub(1, std::memory_order_relaxed);
        m.clients_rejected.fetch_add(1, std::memory_order_relaxed);
        const std::string_view full = too_many_clients_reply(pool.config.protocol);
        if (!full.empty()) {
          [[maybe_unused]] const auto n =
              ::send(c, full.data(), full.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        ::close(c);
        continue;
      }
      m.clients_open.fetch_add(1, std::memory_order_relaxed);
      if (pool.config.address_is_tcp()) net::set_nodelay(c);
      accept_client(worker_, pool_index_, c, peer,
                    peer_len);  // owns itself; freed by the loop when it closes
    }
  }

 private:
  Worker& worker_;
  std::size_t pool_index_;
  std::shared_ptr<ListenSocket> socket_;
  int fd_;
  bool stopped_ = false;
};

Worker::Worker(unsigned index, const Listeners& listeners, std::shared_ptr<const Topology> topology,
               Metrics& metrics)
    : index_(index), metrics_(metrics) {
  apply_topology(std::move(topology));
  loop_.set_batch_end([this] { flush_dirty(); });
  apply_listeners(listeners);
  tick();
}

Worker::~Worker() {
  stop();
  std::vector<ClientConn*> open;
  for (const auto& [c, info] : clients_) open.push_back(c);
  for (ClientConn* c : open) delete c;  // their destructors do not call back into the worker
  for (BackendConn* b : std::vector<BackendConn*>(all_backends_.begin(), all_backends_.end()))
    delete b;
}

void Worker::start() {
  thread_ = std::thread([this] { loop_.run(); });
  // Named for `top -H` and for tests that check what runs where ("worker-0", ...).
  const std::string name = "worker-" + std::to_string(index_);
  ::pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  loop_.post([this] { loop_.stop(); });
  thread_.join();
}

void Worker::set_topology(std::shared_ptr<const Topology> t, Listeners listeners) {
  // One posted step: no connection is accepted between the two (a listener of a removed pool
  // is gone before a client could land on it).
  loop_.post([this, t = std::move(t), l = std::move(listeners)]() mutable {
    apply_topology(std::move(t));
    if (!draining_) apply_listeners(l);
  });
}

void Worker::drain() {
  loop_.post([this] {
    draining_ = true;
    apply_listeners({});
    std::vector<ClientConn*> open;
    for (const auto& [c, info] : clients_) open.push_back(c);
    for (ClientConn* c : open) c->drain();  // may close (and unregister) at once
  });
}

void Worker::quiesce(std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  loop_.post([done] { done->set_value(); });
  f.wait_for(timeout);
}

void Worker::apply_listeners(const Listeners& listeners) {
  // Gone: out of epoll here, on this thread, before this worker's reference goes.
  for (auto& l : listeners_) {
    bool keep = false;
    for (const auto& [slot, socket] : listeners) keep |= socket == l->socket() && slot == l->slot();
    if (keep) continue;
    loop_.remove(l->socket()->fd);
    l->stop();
    loop_.defer_delete(std::move(l));
  }
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), nullptr), listeners_.end());
  for (const auto& [slot, socket] : listeners) {
    bool have = false;
    for (const auto& l : listeners_) have |= l->socket() == socket && l->slot() == slot;
    if (have) continue;
    listeners_.push_back(std::make_unique<Listener>(*this, slot, socket));
    loop_.add(socket->fd, EPOLLIN | EPOLLEXCLUSIVE, listeners_.back().get());
  }
}

void Worker::drain_slot(std::size_t slot) {
  std::vector<ClientConn*> open;
  for (const auto& [c, info] : clients_) {
    if (info.slot == slot) open.push_back(c);
  }
  for (ClientConn* c : open) c->drain();
}

void Worker::release_pool(WorkerPool& wp) {
  for (auto& conns : wp.backends) {
    for (BackendConn* b : conns) {
      if (b != nullptr) b->drain();
    }
  }
  wp = WorkerPool{};
}

void Worker::apply_topology(std::shared_ptr<const Topology> t) {
  std::vector<WorkerPool> next(std::max(t->slots, pools_.size()));
  for (const auto& p : t->pools) {
    next[p->slot].pool = p;
    next[p->slot].backends.resize(p->states.size());
  }
  std::vector<std::size_t> removed;
  // Keep open connections to backends that stay (same pool, name and address); drain the rest.
  for (std::size_t i = 0; i < pools_.size(); ++i) {
    if (pools_[i].pool == nullptr) continue;
    if (next[i].pool == nullptr || pools_[i].removed) {
      // The pool left the topology: its clients finish on its last snapshot, then it goes.
      next[i] = std::move(pools_[i]);
      if (!next[i].removed) removed.push_back(i);
      next[i].removed = true;
      continue;
    }
    next[i].clients = pools_[i].clients;
    const Pool& old = *pools_[i].pool;
    const Pool* np = next[i].pool.get();
    for (std::size_t j = 0; j < pools_[i].backends.size(); ++j) {
      auto& conns = pools_[i].backends[j];
      bool kept = false;
      if (np != nullptr) {
        for (std::size_t k = 0; k < np->servers.size(); ++k) {
          if (np->servers[k].name == old.servers[j].name &&
              np->servers[k].address.text() == old.servers[j].address.text() &&
              np->config.server_connections == old.config.server_connections) {
            next[i].backends[k] = std::move(conns);
            kept = true;
            break;
          }
        }
      }
      if (!kept) {
        for (BackendConn* b : conns) {
          if (b != nullptr) b->drain();
        }
      }
    }
  }
  // Per-worker protocol state survives a reload that leaves the pool's servers as they were.
  for (std::size_t i = 0; i < pools_.size(); ++i) {
    if (pools_[i].pool == nullptr || next[i].removed || next[i].pool == nullptr) continue;
    const auto& a = pools_[i].pool->config;
    const auto& b = next[i].pool->config;
    bool same = a.name == b.name && a.servers.size() == b.servers.size();
    for (std::size_t k = 0; same && k < a.servers.size(); ++k) {
      same = a.servers[k].name == b.servers[k].name && a.servers[k].weight == b.servers[k].weight;
    }
    if (same) next[i].state = std::move(pools_[i].state);
  }
  pools_ = std::move(next);
  applied_version_.store(t->version, std::memory_order_release);
  topology_ = std::move(t);
  for (const std::size_t slot : removed) {
    if (pools_[slot].clients == 0) {
      release_pool(pools_[slot]);
    } else {
      drain_slot(slot);
    }
  }
}

void Worker::tick() {
  // Draining clients close when quiet (ClientSession::close_if_drained): look again.
  std::vector<ClientConn*> draining;
  for (const auto& [c, info] : clients_) {
    if (draining_ || pools_[info.slot].removed) draining.push_back(c);
  }
  for (ClientConn* c : draining) c->drain();
  bool any_timeout = false;
  for (const auto& p : pools_)
    any_timeout |= p.pool != nullptr && p.pool->config.timeout_ms.has_value();
  // Idle connections to a master that moved close too (Worker::backend drains busy ones on use).
  for (BackendConn* b : std::vector<BackendConn*>(all_backends_.begin(), all_backends_.end())) {
    if (!all_backends_.count(b) || !b->stale()) continue;
    for (auto& wp : pools_) {
      for (auto& conns : wp.backends)
        std::replace(conns.begin(), conns.end(), b, static_cast<BackendConn*>(nullptr));
    }
    b->drain();
  }
  if (any_timeout) {
    const auto now = net::Clock::now();
    for (BackendConn* b : std::vector<BackendConn*>(all_backends_.begin(), all_backends_.end())) {
      if (all_backends_.count(b)) b->check_timeout(now);
    }
  }
  loop_.add_timer(std::chrono::milliseconds(20), [this] { tick(); });
}

BackendConn* Worker::backend(std::size_t pool_index, NodeId node, std::string& error,
                             bool bypass_busy) {
  WorkerPool& wp = pools_[pool_index];
  auto& slots = wp.backends[node];
  // server_connections shared connections, and after them (made on first need) the one that
  // bypasses a connection waiting on a script.
  const std::size_t n = std::max<std::size_t>(wp.pool->config.server_connections, 1);
  if (slots.empty()) slots.assign(n, nullptr);
  std::size_t index = wp.next_conn++ % n;
  if (bypass_busy && slots[index] != nullptr &&
      slots[index]->busy_with_script(loop_.now(), kScriptBypassAfter)) {
    if (slots.size() == n) slots.push_back(nullptr);
    index = n;
  }
  BackendConn*& slot = slots[index];
  if (slot != nullptr && slot->stale()) {
    // The backend's master moved (membership/sentinel.h): finish what is in flight there, send the
    // rest to the new address.
    BackendConn* old = slot;
    slot = nullptr;
    old->drain();
  }
  if (slot == nullptr) {
    auto b = open_backend(wp, node, error);
    if (b == nullptr) return nullptr;
    slot = b.release();
    all_backends_.insert(slot);
  }
  return slot;
}

BackendConn* Worker::backend_named(std::size_t pool_index, std::string_view name,
                                   std::string& error) {
  const auto& pool = this->pool(pool_index);
  if (pool != nullptr) {
    for (NodeId i = 0; i < pool->servers.size(); ++i) {
      if (pool->servers[i].name == name) return backend(pool_index, i, error);
    }
  }
  error = "it has left the pool";
  return nullptr;
}

std::int64_t own_connection_limit(const PoolConfig& config, const BackendState& state) noexcept {
  std::int64_t limit = config.max_own_connections == 0 ? -1 : config.max_own_connections;
  const std::int64_t maxclients = state.maxclients.load(std::memory_order_relaxed);
  if (maxclients > 0) {
    const std::int64_t room = std::max(maxclients / 2, maxclients - kOwnReserve);
    limit = limit < 0 ? room : std::min(limit, room);
  }
  return limit;
}

BackendConn* Worker::dedicated_backend(std::size_t pool_index, NodeId node, std::string& error) {
  WorkerPool& wp = pools_[pool_index];
  BackendState& st = *wp.pool->states[node];
  const std::int64_t limit = own_connection_limit(wp.pool->config, st);
  if (limit >= 0 && st.own_connections.load(std::memory_order_relaxed) >= limit) {
    wp.pool->shared->own_refused.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t maxclients = st.maxclients.load(std::memory_order_relaxed);
    error = "no room for another connection of a client's own (" + std::to_string(limit) +
            " open: " +
            (maxclients > 0 && limit < static_cast<std::int64_t>(wp.pool->config.max_own_connections)
                 ? "the server's maxclients " + std::to_string(maxclients) +
                       " less the room kept for the proxy's shared connections"
                 : "max_own_connections") +
            ")";
    return nullptr;
  }
  // The shared connection first: clients' own connections never take the room the one every
  // other client of this worker uses needs (a server at maxclients refuses the next connect).
  std::string ignored;
  (void)backend(pool_index, node, ignored);
  auto b = open_backend(wp, node, error, true);
  if (b == nullptr) return nullptr;
  BackendConn* conn = b.release();
  all_backends_.insert(conn);
  return conn;
}

std::unique_ptr<BackendConn> Worker::open_backend(WorkerPool& wp, NodeId node, std::string& error,
                                                  bool own) {
  const BackendState& st = *wp.pool->states[node];
  if (!resolved_for(st, wp.pool->servers[node].address)) {
    // Not a failure of the backend's: the resolver marks a name that does not resolve down.
    error = !wp.pool->servers[node].sentinel_master.empty()
                ? "no master known yet (no majority of its Sentinels has named one)"
            : st.resolving.load() ? "its address is being resolved"
                                  : "its address does not resolve";
    return nullptr;
  }
  auto b = make_backend(*this, wp.pool, node);
  if (b == nullptr) {
    error = std::string("protocol ") + protocol_name(wp.pool->config.protocol) +
            " has no backend connections";
    return nullptr;
  }
  if (own) b->mark_own();
  if (!b->start(error)) {
    if (!own) record_failure(*wp.pool->states[node], wp.pool->config, error);
    return nullptr;
  }
  return b;
}

void Worker::client_opened(ClientConn* c, std::size_t pool_index) {
  clients_.emplace(c, ClientInfo{pools_[pool_index].pool->shared, pool_index});
  ++pools_[pool_index].clients;
  open_clients_.store(clients_.size(), std::memory_order_release);
}

void Worker::client_closed(ClientConn* c) {
  const auto it = clients_.find(c);
  if (it == clients_.end()) return;
  it->second.shared->clients.fetch_sub(1, std::memory_order_relaxed);
  metrics_.clients_open.fetch_sub(1, std::memory_order_relaxed);
  WorkerPool& wp = pools_[it->second.slot];
  clients_.erase(it);
  open_clients_.store(clients_.size(), std::memory_order_release);
  // The last client of a removed pool: its backend connections go too.
  if (--wp.clients == 0 && wp.removed) release_pool(wp);
}

void Worker::mark_dirty(BackendConn* b) {
  if (b->dirty()) return;
  b->set_dirty(true);
  dirty_.push_back(b);
}

void Worker::flush_dirty() {
  // A flush may fail a backend, complete replies and mark others dirty; writing a client's
  // replies may resume its paused input and queue more backend requests: loop until quiet.
  while (!dirty_.empty() || !outputs_.empty()) {
    std::vector<BackendConn*> batch;
    batch.swap(dirty_);
    for (BackendConn* b : batch) {
      if (!all_backends_.count(b)) continue;
      b->set_dirty(false);
      b->flush();
    }
    std::vector<ClientSession*> clients;
    clients.swap(outputs_);
    for (ClientSession* c : clients) c->flush_output();  // closed clients cancel themselves
  }
}

void Worker::cancel_output(ClientSession* c) {
  outputs_.erase(std::remove(outputs_.begin(), outputs_.end(), c), outputs_.end());
}

void Worker::backend_closed(BackendConn* b) {
  for (auto& wp : pools_) {
    for (auto& conns : wp.backends) {
      for (auto& c : conns) {
        if (c == b) c = nullptr;
      }
    }
  }
  dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), b), dirty_.end());
  all_backends_.erase(b);
  loop_.defer_delete(std::unique_ptr<net::Pollable>(b));
}

}  // namespace chash::proxy
