// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the admin HTTP port: GET / (or /ui) the status page (control/ui.h: HTML, inline
// SVG, no script), GET /ring.svg?pool=P a pool's key-space picture, GET /metrics, GET /status
// (JSON), POST /reload, /flush, /rebalance, GET /fleet, POST /fleet/<action>.
//
// HTTP/1.1 with one request per connection (Connection: close), served on the control loop
// without ever blocking it: each client is a non-blocking connection that reads a request head
// and writes the answer as the socket allows, with a total deadline for the whole exchange, a
// cap on the head's size and on open admin connections. So a client that sends a byte every half
// second, or connects and sends nothing (as nutcracker stats pollers do), costs one fd until its
// deadline and delays no other admin client, no reload, no health probe and no shutdown.
// A query string is passed to the handlers that take one (/ring.svg, /flush, /rebalance,
// /fleet/...) and ignored by the rest (`/metrics?x` is /metrics). What is shown is rendered by the
// handlers (control/status.h, control/ui.h); this file only speaks HTTP.
// With an AdminAuth (`chash_proxy: admin_auth:`), POST /reload — or with protect: all, every
// request — needs `Authorization: Bearer <token>` or `Authorization: Basic <user:password>`;
// anything else is answered 401 with a WWW-Authenticate header. Secrets are compared as
// SHA-256 digests with CRYPTO_memcmp, so the time taken does not depend on how much matched.
// With `chash_proxy: admin_tls:` the port speaks HTTPS only (the handshake runs within the same
// deadline; a reload re-reads the certificate for new connections).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "config/config.h"
#include "net/event_loop.h"

namespace chash::proxy {

class AdminServer : public net::Pollable {
 public:
  struct Handlers {
    std::function<std::string()> metrics;              // GET /metrics (Prometheus text)
    std::function<std::string()> status;               // GET /status (JSON)
    std::function<bool(std::string& message)> reload;  // POST /reload: 200 when true, else 409
    // POST /flush?pool=P&backend=B (its query string): 200 when true, else 409.
    std::function<bool(std::string_view query, std::string& message)> flush;
    // POST /rebalance?pool=P[&rate=N]: 202 when started, else 409.
    std::function<bool(std::string_view query, std::string& message)> rebalance = nullptr;
    // GET /fleet: the fleet as this proxy sees it (JSON, membership/fleet/agent.h); POST
    // /fleet/<action>?pool=P&server=S (add, remove, drain, set): a membership edit through
    // etcd, 200 when made, else 409.
    std::function<std::string()> fleet_status = nullptr;
    std::function<bool(std::string_view action, std::string_view query, std::string& message)>
        fleet_edit = nullptr;
    // GET / and GET /ui: the status page (HTML).
    std::function<std::string()> ui = nullptr;
    // GET /ring.svg?pool=P: true with the SVG in `body`, else false with a message (404).
    std::function<bool(std::string_view query, std::string& body)> ring_svg = nullptr;
  };
  struct Limits {
    std::chrono::milliseconds deadline{5000};  // accept to last byte written
    // At the limit a new client takes the place of the one waiting longest for its request (an
    // idle or slow client); when every one is being answered, it gets 503.
    std::size_t max_connections = 64;
    std::size_t max_request_head = 8192;       // a longer head is answered 431
  };
  // Serves `listen_fd` (non-blocking, listening) on `loop`; the caller keeps the fd.
  AdminServer(net::EventLoop& loop, int listen_fd, Handlers handlers, Limits limits);
  AdminServer(net::EventLoop& loop, int listen_fd, Handlers handlers)
      : AdminServer(loop, listen_fd, std::move(handlers), Limits{}) {}
  ~AdminServer() override;
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // The listener: accepts up to kAcceptsPerWakeup pending clients, answering each.
  void on_event(std::uint32_t events) override;
  static constexpr int kAcceptsPerWakeup = 8;

  // The whole HTTP response to the request bytes `request` (the head is enough).
  std::string respond(std::string_view request) const;
  // Thread-safe: who may use the port from now on (a reload may change the token).
  void set_auth(const AdminAuth& auth);
  // Thread-safe: HTTPS with this context for connections accepted from now on (null: HTTP).
  void set_tls(std::shared_ptr<const net::TlsContext> tls);
  std::size_t open_connections() const noexcept { return conns_.size(); }
  // Clients closed unanswered to make room for a new one (evict_oldest_idle).
  std::uint64_t evicted() const noexcept { return evicted_; }

 private:
  class Conn;
  void finish(Conn* c);  // closes and forgets a client
  void evict_oldest_idle();
  // Requests answered on slow_thread_ instead of the control loop (POST /fleet/...: etcd).
  bool slow_request(std::string_view request) const;
  // respond(request) on slow_thread_; the answer goes to the client `serial` on the loop.
  void answer_later(std::string request, std::uint64_t serial);
  void run_slow();
  std::shared_ptr<const net::TlsContext> tls_context() const;

  net::EventLoop& loop_;
  int fd_;
  Handlers handlers_;
  Limits limits_;
  mutable std::mutex auth_mu_;  // auth_, tls_
  AdminAuth auth_;
  std::shared_ptr<const net::TlsContext> tls_;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  std::uint64_t accepted_ = 0, evicted_ = 0;
  std::thread slow_thread_;
  std::mutex slow_mu_;  // slow_jobs_, slow_stop_
  std::condition_variable slow_cv_;
  std::deque<std::function<void()>> slow_jobs_;
  bool slow_stop_ = false;
  // False once the server is destroyed: answers posted to the loop check it (the loop's thread).
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
};

}  // namespace chash::proxy
