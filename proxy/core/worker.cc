// SPDX-License-Identifier: Apache-2.0
#include "core/worker.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/log.h"
#include "core/protocols.h"
#include "core/session.h"
#include "net/socket.h"

namespace chash::proxy {

class Worker::Listener : public net::Pollable {
 public:
  Listener(Worker& w, std::size_t pool_index, int fd)
      : worker_(w), pool_index_(pool_index), fd_(fd) {}
  void on_event(std::uint32_t) override {
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
  int fd_;
};

Worker::Worker(unsigned index, std::vector<int> listen_fds,
               std::shared_ptr<const Topology> topology, Metrics& metrics)
    : index_(index), metrics_(metrics) {
  apply_topology(std::move(topology));
  loop_.set_batch_end([this] { flush_dirty(); });
  for (std::size_t i = 0; i < listen_fds.size(); ++i) {
    listeners_.push_back(std::make_unique<Listener>(*this, i, listen_fds[i]));
    loop_.add(listen_fds[i], EPOLLIN | EPOLLEXCLUSIVE, listeners_.back().get());
  }
  tick();
}

Worker::~Worker() {
  stop();
  std::vector<net::Pollable*> open;
  for (const auto& [c, shared] : clients_) open.push_back(c);
  for (net::Pollable* c : open) delete c;  // their destructors do not call back into the worker
  for (BackendConn* b : std::vector<BackendConn*>(all_backends_.begin(), all_backends_.end()))
    delete b;
}

void Worker::start() {
  thread_ = std::thread([this] { loop_.run(); });
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  loop_.post([this] { loop_.stop(); });
  thread_.join();
}

void Worker::set_topology(std::shared_ptr<const Topology> t) {
  loop_.post([this, t = std::move(t)]() mutable { apply_topology(std::move(t)); });
}

void Worker::apply_topology(std::shared_ptr<const Topology> t) {
  std::vector<WorkerPool> next(t->pools.size());
  for (std::size_t i = 0; i < t->pools.size(); ++i) {
    next[i].pool = t->pools[i];
    next[i].backends.resize(t->pools[i]->states.size());
  }
  // Keep open connections to backends that stay (same pool, name and address); drain the rest.
  for (std::size_t i = 0; i < pools_.size(); ++i) {
    const Pool& old = *pools_[i].pool;
    const Pool* np = i < next.size() && next[i].pool->config.name == old.config.name
                         ? next[i].pool.get()
                         : nullptr;
    for (std::size_t j = 0; j < pools_[i].backends.size(); ++j) {
      auto& conns = pools_[i].backends[j];
      bool kept = false;
      if (np != nullptr) {
        for (std::size_t k = 0; k < np->config.servers.size(); ++k) {
          if (np->config.servers[k].name == old.config.servers[j].name &&
              np->config.servers[k].address.text() == old.config.servers[j].address.text() &&
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
  for (std::size_t i = 0; i < pools_.size() && i < next.size(); ++i) {
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
}

void Worker::tick() {
  bool any_timeout = false;
  for (const auto& p : pools_) any_timeout |= p.pool->config.timeout_ms.has_value();
  if (any_timeout) {
    const auto now = net::Clock::now();
    for (BackendConn* b : std::vector<BackendConn*>(all_backends_.begin(), all_backends_.end())) {
      if (all_backends_.count(b)) b->check_timeout(now);
    }
  }
  loop_.add_timer(std::chrono::milliseconds(20), [this] { tick(); });
}

BackendConn* Worker::backend(std::size_t pool_index, NodeId node, std::string& error) {
  WorkerPool& wp = pools_[pool_index];
  auto& slots = wp.backends[node];
  if (slots.empty()) slots.assign(wp.pool->config.server_connections, nullptr);
  BackendConn*& slot = slots[wp.next_conn++ % slots.size()];
  if (slot == nullptr) {
    auto b = make_backend(*this, wp.pool, node);
    if (b == nullptr) {
      error = std::string("protocol ") + protocol_name(wp.pool->config.protocol) +
              " has no backend connections";
      return nullptr;
    }
    if (!b->start(error)) {
      record_failure(*wp.pool->states[node], wp.pool->config, error);
      return nullptr;
    }
    slot = b.release();
    all_backends_.insert(slot);
  }
  return slot;
}

void Worker::client_opened(net::Pollable* c, std::size_t pool_index) {
  clients_.emplace(c, pools_[pool_index].pool->shared);
}

void Worker::client_closed(net::Pollable* c) {
  const auto it = clients_.find(c);
  if (it == clients_.end()) return;
  it->second->clients.fetch_sub(1, std::memory_order_relaxed);
  metrics_.clients_open.fetch_sub(1, std::memory_order_relaxed);
  clients_.erase(it);
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
