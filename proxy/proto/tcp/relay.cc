// SPDX-License-Identifier: Apache-2.0
#include "proto/tcp/relay.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/log.h"
#include "core/worker.h"
#include "net/socket.h"
#include "proto/tcp/proxy_header.h"

namespace chash::proxy::tcp {

namespace {

constexpr int kRoundsPerEvent = 16;  // buffers moved per direction per wakeup (fairness)

bool would_block(int e) noexcept { return e == EAGAIN || e == EWOULDBLOCK; }

// The per-worker policy state for `pool`, (re)made when the worker has none for its servers
// (first use, or a reload that changed them).
TcpPoolState& state_for(Worker& worker, std::size_t pool_index, const Pool& pool) {
  std::unique_ptr<PoolState>& slot = worker.pool_state(pool_index);
  auto* s = dynamic_cast<TcpPoolState*>(slot.get());
  if (s == nullptr || !s->fits(pool.config)) {
    auto fresh = std::make_unique<TcpPoolState>(pool.config);
    s = fresh.get();
    slot = std::move(fresh);
  }
  return *s;
}

}  // namespace

Relay::Relay(Worker& worker, std::size_t pool_index, int fd, const sockaddr_storage& peer)
    : worker_(worker),
      pool_index_(pool_index),
      pool_(worker.pool(pool_index)),
      client_fd_(fd),
      chooser_(*pool_, client_key(peer, pool_->config.balance)),
      peer_(peer) {
  if (pool_->config.proxy_protocol != ProxyProtocol::kNone) {
    socklen_t len = sizeof local_;
    if (::getsockname(client_fd_, reinterpret_cast<sockaddr*>(&local_), &len) != 0)
      local_.ss_family = AF_UNSPEC;
    append_proxy_header(header_, pool_->config.proxy_protocol, peer_, local_);
  }
}

Relay::~Relay() {
  // Only the worker's destructor deletes an open relay: release what we hold, no callbacks.
  for (const auto t : {connect_timer_, idle_timer_, handshake_timer_, resume_timer_}) {
    if (t != 0) worker_.loop().cancel_timer(t);
  }
  if (client_fd_ >= 0) ::close(client_fd_);
  if (backend_fd_ >= 0) ::close(backend_fd_);
  if (counted_) counted_->active.fetch_sub(1, std::memory_order_relaxed);
}

void Relay::start() {
  worker_.client_opened(this, pool_index_);
  last_activity_ = worker_.loop().now();
  down_.dst_ready = true;  // a fresh socket has room
  if (const auto& ctx = pool_->config.tls) {
    std::string error;
    client_tls_ = net::TlsStream::accept(*ctx, client_fd_, error);
    if (!client_tls_) {
      log(LogLevel::kWarn, "TLS accept failed", {{"pool", pool_->config.name}, {"reason", error}});
      close("client TLS accept failed");
      return;
    }
    client_handshaking_ = true;
    handshake_timer_ =
        worker_.loop().add_timer(std::chrono::milliseconds(ctx->handshake_timeout_ms()), [this] {
          handshake_timer_ = 0;
          worker_.metrics().tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
          close("client TLS handshake timed out");
        });
    update_events();  // the ClientHello; the backend is chosen once the handshake is done
    return;
  }
  // Client bytes sent before the backend answers wait in up_ (and survive a retry).
  update_events();
  if (closed_) return;
  connect_next();
}

void Relay::client_handshake() {
  const int h = client_tls_->handshake();
  if (h < 0) {
    log(LogLevel::kDebug, "TLS client failed",
        {{"pool", pool_->config.name}, {"reason", client_tls_->error()}});
    worker_.metrics().tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
    close("client TLS handshake failed");
    return;
  }
  if (h == 0) {
    update_events();
    return;
  }
  worker_.loop().cancel_timer(handshake_timer_);
  handshake_timer_ = 0;
  client_handshaking_ = false;
  up_.src_ready = true;  // application data may already be here
  update_events();
  if (closed_) return;
  connect_next();
}

// ---- Connecting ---------------------------------------------------------------------------------

void Relay::connect_next() {
  const PoolConfig& pc = pool_->config;
  for (;;) {
    const NodeId n = chooser_.next(*pool_, state_for(worker_, pool_index_, *pool_));
    if (n == kNoNode) {
      pool_->shared->forward_errors.fetch_add(1, std::memory_order_relaxed);
      close("no backend available");
      return;
    }
    BackendState& st = *pool_->states[n];
    st.requests.fetch_add(1, std::memory_order_relaxed);
    std::string error;
    // The resolver's address (membership/resolver.h): a worker never looks a name up itself.
    const auto address = st.resolved();
    if (address == nullptr || address->source != pc.servers[n].address.text()) {
      chooser_.failed(*pool_, state_for(worker_, pool_index_, *pool_), n);
      continue;
    }
    const int fd = net::connect_addr(address->addr, address->len, address->source, error);
    if (fd < 0) {
      st.conn_errors.fetch_add(1, std::memory_order_relaxed);
      record_failure(st, pc, error);
      chooser_.failed(*pool_, state_for(worker_, pool_index_, *pool_), n);
      continue;
    }
    if (pc.tcpkeepalive) net::set_keepalive(fd);
    backend_fd_ = fd;
    node_ = n;
    connecting_ = true;
    counted_ = pool_->states[n];
    st.active.fetch_add(1, std::memory_order_relaxed);
    worker_.metrics().backend_connects.fetch_add(1, std::memory_order_relaxed);
    update_events();  // EPOLLOUT: the connect's outcome
    if (closed_) return;
    const std::uint32_t ms = pc.timeout_ms.value_or(kDefaultConnectTimeoutMs);
    connect_timer_ = worker_.loop().add_timer(std::chrono::milliseconds(ms), [this, ms] {
      connect_timer_ = 0;
      connect_failed("connect timed out after " + std::to_string(ms) + " ms", true);
    });
    return;
  }
}

void Relay::connect_failed(const std::string& why, bool timed_out) {
  if (connect_timer_ != 0) {
    worker_.loop().cancel_timer(connect_timer_);
    connect_timer_ = 0;
  }
  const std::shared_ptr<BackendState> st = counted_;
  close_backend_fd();
  connecting_ = false;
  backend_handshaking_ = false;
  if (st) {
    (timed_out ? st->timeouts : st->conn_errors).fetch_add(1, std::memory_order_relaxed);
    record_failure(*st, pool_->config, why);
    log(LogLevel::kDebug, "tcp connect failed",
        {{"pool", pool_->config.name}, {"backend", st->name}, {"reason", why}});
  }
  chooser_.failed(*pool_, state_for(worker_, pool_index_, *pool_), node_);
  node_ = kNoNode;
  connect_next();
}

void Relay::connected() {
  worker_.loop().cancel_timer(connect_timer_);
  connect_timer_ = 0;
  connecting_ = false;
  record_success(*counted_);
  up_.dst_ready = true;
  last_activity_ = worker_.loop().now();
  if (pool_->config.idle_timeout_ms != 0)
    arm_idle_timer(std::chrono::milliseconds(pool_->config.idle_timeout_ms));
  if (pump()) update_events();
}

// ---- Events -------------------------------------------------------------------------------------

void Relay::on_event(std::uint32_t events) {
  if (closed_) return;
  if (client_handshaking_) {
    client_handshake();
    return;
  }
  constexpr std::uint32_t in = EPOLLIN | EPOLLHUP | EPOLLERR, out = EPOLLOUT | EPOLLHUP | EPOLLERR;
  if ((events & in) || ((events & out) && client_wait_.read_wants_write)) up_.src_ready = true;
  if ((events & out) || ((events & in) && client_wait_.write_wants_read)) down_.dst_ready = true;
  if (pump()) update_events();
}

void Relay::on_backend_event(std::uint32_t events) {
  if (closed_) return;
  if (connecting_) {
    if (backend_handshaking_) {
      backend_handshake();
      return;
    }
    int err = net::socket_error(backend_fd_);
    if (err == 0 && (events & (EPOLLERR | EPOLLHUP))) err = ECONNRESET;
    if (err != 0) {
      connect_failed(std::string("connect: ") + std::strerror(err), false);
      return;
    }
    if (!(events & EPOLLOUT)) return;
    const auto& ctx = pool_->servers[node_].tls;
    if (ctx == nullptr) {
      connected();
      return;
    }
    // The PROXY header travels in the clear, before the ClientHello (as HAProxy sends it).
    while (header_off_ < header_.size()) {
      const ssize_t n = ::send(backend_fd_, header_.data() + header_off_,
                               header_.size() - header_off_, MSG_NOSIGNAL);
      if (n > 0) {
        header_off_ += static_cast<std::size_t>(n);
      } else if (n < 0 && would_block(errno)) {
        return;  // EPOLLOUT again
      } else if (n < 0 && errno != EINTR) {
        connect_failed(std::string("write: ") + std::strerror(errno), false);
        return;
      }
    }
    std::string error;
    backend_tls_ =
        net::TlsStream::connect(*ctx, backend_fd_, pool_->servers[node_].address.host, error);
    if (!backend_tls_) {
      connect_failed(error, false);
      return;
    }
    backend_handshaking_ = true;
    backend_handshake();
    return;
  }
  constexpr std::uint32_t in = EPOLLIN | EPOLLHUP | EPOLLERR, out = EPOLLOUT | EPOLLHUP | EPOLLERR;
  if ((events & in) || ((events & out) && backend_wait_.read_wants_write)) down_.src_ready = true;
  if ((events & out) || ((events & in) && backend_wait_.write_wants_read)) up_.dst_ready = true;
  if (pump()) update_events();
}

void Relay::backend_handshake() {
  const int h = backend_tls_->handshake();
  if (h == 0) {
    update_events();
    return;
  }
  if (h < 0) {
    // Named, at warn: a refused certificate is a configuration problem someone must see.
    const std::string why =
        backend_tls_->error() + " (" + pool_->servers[node_].address.text() + ")";
    log(LogLevel::kWarn, "backend TLS handshake failed",
        {{"pool", pool_->config.name}, {"backend", counted_->name}, {"reason", why}});
    connect_failed(why, false);
    return;
  }
  backend_handshaking_ = false;
  connected();
}

// ---- Copying ------------------------------------------------------------------------------------

bool Relay::pump() {
  resume_ = false;
  if (!pump_one(up_, true)) return false;
  if (connecting_) {
    if (resume_) schedule_resume();
    return true;
  }
  if (!pump_one(down_, false)) return false;
  if (up_.shut && down_.shut) {
    close("done");
    return false;
  }
  if (resume_) schedule_resume();
  return true;
}

void Relay::schedule_resume() {
  if (resume_timer_ != 0) return;
  resume_timer_ = worker_.loop().add_timer(std::chrono::milliseconds(0), [this] {
    resume_timer_ = 0;
    if (!closed_ && pump()) update_events();
  });
}

ssize_t Relay::recv_side(bool client, char* buf, std::size_t len) {
  net::TlsStream* tls = client ? client_tls_.get() : backend_tls_.get();
  if (tls == nullptr) return ::recv(client ? client_fd_ : backend_fd_, buf, len, 0);
  const ssize_t n = tls->recv(buf, len);
  (client ? client_wait_ : backend_wait_).read_wants_write =
      n < 0 && errno == EAGAIN && tls->wants_write();
  if (n < 0 && errno != EAGAIN && errno != EINTR) {
    log(LogLevel::kDebug, client ? "TLS client failed" : "TLS backend failed",
        {{"pool", pool_->config.name}, {"reason", tls->error()}});
  }
  return n;
}

ssize_t Relay::send_side(bool client, const char* buf, std::size_t len) {
  net::TlsStream* tls = client ? client_tls_.get() : backend_tls_.get();
  if (tls == nullptr) return ::send(client ? client_fd_ : backend_fd_, buf, len, MSG_NOSIGNAL);
  // One record at a time: a write retried after EAGAIN then has the same length (OpenSSL's rule).
  const ssize_t n = tls->send(buf, std::min<std::size_t>(len, 16384));
  (client ? client_wait_ : backend_wait_).write_wants_read =
      n < 0 && errno == EAGAIN && !tls->wants_write();
  return n;
}

void Relay::shut_side(bool client) {
  net::TlsStream* tls = client ? client_tls_.get() : backend_tls_.get();
  if (tls != nullptr) tls->shutdown();  // close_notify: the TLS end of the stream
  ::shutdown(client ? client_fd_ : backend_fd_, SHUT_WR);
}

void Relay::count_bytes(bool to_backend, std::uint64_t n) noexcept {
  PoolShared& ps = *pool_->shared;
  (to_backend ? ps.request_bytes : ps.response_bytes).fetch_add(n, std::memory_order_relaxed);
  if (counted_) {
    (to_backend ? counted_->request_bytes : counted_->response_bytes)
        .fetch_add(n, std::memory_order_relaxed);
  }
}

bool Relay::pump_one(Pipe& p, bool to_backend) {
  const bool can_write = !(to_backend && connecting_);
  // A TLS source returns at most one record per read: a short read says nothing of the socket.
  const bool src_tls = (to_backend ? client_tls_ : backend_tls_) != nullptr;
  bool moved = false;
  for (int round = 0; round < kRoundsPerEvent; ++round) {
    bool progress = false;
    if (!p.eof && p.src_ready) {
      if (p.len == kBufferBytes && p.off > 0) {  // full but partly sent: make room
        std::memmove(p.buf.get(), p.buf.get() + p.off, p.len - p.off);
        p.len -= p.off;
        p.off = 0;
      }
      if (p.len < kBufferBytes) {
        const std::size_t room = kBufferBytes - p.len;
        const ssize_t n = recv_side(to_backend, p.buf.get() + p.len, room);
        if (n > 0) {
          p.len += static_cast<std::size_t>(n);
          count_bytes(to_backend, static_cast<std::uint64_t>(n));
          // A short read drained the socket: wait for epoll rather than a recv that says EAGAIN.
          if (static_cast<std::size_t>(n) < room && !src_tls) p.src_ready = false;
          progress = moved = true;
        } else if (n == 0) {
          p.eof = true;
          progress = true;
        } else if (would_block(errno)) {
          p.src_ready = false;
        } else if (errno != EINTR) {
          close(to_backend ? "client read error" : "backend read error");
          return false;
        }
      }
    }
    if (can_write && p.dst_ready) {
      if (to_backend && header_off_ < header_.size()) {
        const ssize_t n = ::send(backend_fd_, header_.data() + header_off_,
                                 header_.size() - header_off_, MSG_NOSIGNAL);
        if (n > 0) {
          header_off_ += static_cast<std::size_t>(n);
          progress = true;
        } else if (n < 0 && would_block(errno)) {
          p.dst_ready = false;
        } else if (n < 0 && errno != EINTR) {
          close("backend write error");
          return false;
        }
      }
      if ((!to_backend || header_off_ == header_.size()) && p.dst_ready && p.pending()) {
        const ssize_t n = send_side(!to_backend, p.buf.get() + p.off, p.len - p.off);
        if (n > 0) {
          p.off += static_cast<std::size_t>(n);
          if (p.off == p.len) {
            p.off = p.len = 0;
          } else {
            p.dst_ready = false;  // a short write: the socket buffer is full
          }
          progress = moved = true;
        } else if (n < 0 && would_block(errno)) {
          p.dst_ready = false;
        } else if (n < 0 && errno != EINTR) {
          close(to_backend ? "backend write error" : "client write error");
          return false;
        }
      }
    }
    if (!progress) break;
    if (round + 1 == kRoundsPerEvent && src_tls && p.src_ready && !p.eof) resume_ = true;
  }
  if (moved) last_activity_ = worker_.loop().now();
  // The source ended and everything it sent is written: pass the EOF on (half-close).
  if (can_write && p.eof && !p.shut && !p.pending() &&
      (!to_backend || header_off_ == header_.size())) {
    shut_side(!to_backend);
    p.shut = true;
  }
  return true;
}

// ---- epoll interest: a socket is registered only while we wait for something from it, so a
// ---- hung-up socket (EPOLLHUP is reported whatever we ask for) cannot spin the loop.

void Relay::update_events() {
  if (closed_) return;
  auto room = [](const Pipe& p) { return !p.eof && (p.len < kBufferBytes || p.off > 0); };
  // A handshake waits for the direction OpenSSL asked for.
  auto handshake = [](const net::TlsStream& t) -> std::uint32_t {
    return t.wants_write() ? EPOLLOUT : EPOLLIN;
  };
  const std::uint32_t client =
      client_handshaking_ ? handshake(*client_tls_)
                          : (room(up_) || client_wait_.write_wants_read ? EPOLLIN : 0u) |
                                (down_.pending() || client_wait_.read_wants_write ? EPOLLOUT : 0u);
  std::uint32_t backend = 0;
  if (backend_fd_ >= 0) {
    if (backend_handshaking_) {
      backend = handshake(*backend_tls_);
    } else if (connecting_) {
      backend = EPOLLOUT;
    } else {
      backend = (room(down_) || backend_wait_.write_wants_read ? EPOLLIN : 0u) |
                (up_.pending() || header_off_ < header_.size() || backend_wait_.read_wants_write
                     ? EPOLLOUT
                     : 0u);
    }
  }
  set_events(client_fd_, client, client_events_, this);
  if (!closed_ && backend_fd_ >= 0)
    set_events(backend_fd_, backend, backend_events_, &backend_side_);
}

void Relay::set_events(int fd, std::uint32_t want, std::uint32_t& have, net::Pollable* p) {
  if (want == have) return;
  bool ok = true;
  if (have == 0) {
    ok = worker_.loop().add(fd, want, p);
  } else if (want == 0) {
    worker_.loop().remove(fd);
  } else {
    ok = worker_.loop().modify(fd, want, p);
  }
  if (!ok) {
    close("epoll_ctl failed");
    return;
  }
  have = want;
}

// ---- Idle timeout: one timer per relay, re-armed for the rest of the period when bytes moved.

void Relay::arm_idle_timer(std::chrono::milliseconds after) {
  idle_timer_ = worker_.loop().add_timer(after, [this] {
    idle_timer_ = 0;
    on_idle_timer();
  });
}

void Relay::on_idle_timer() {
  if (closed_) return;
  const auto idle = std::chrono::milliseconds(pool_->config.idle_timeout_ms);
  const auto quiet = worker_.loop().now() - last_activity_;
  if (quiet >= idle) {
    close("idle timeout");
    return;
  }
  arm_idle_timer(std::chrono::ceil<std::chrono::milliseconds>(idle - quiet));
}

// ---- Closing ------------------------------------------------------------------------------------

void Relay::close_backend_fd() {
  backend_tls_.reset();
  backend_wait_ = {};
  if (backend_fd_ >= 0) {
    if (backend_events_ != 0) worker_.loop().remove(backend_fd_);
    ::close(backend_fd_);
    backend_fd_ = -1;
    backend_events_ = 0;
  }
  if (counted_) {
    counted_->active.fetch_sub(1, std::memory_order_relaxed);
    counted_.reset();
  }
}

void Relay::close(const char* why) {
  if (closed_) return;
  closed_ = true;
  for (const auto t : {connect_timer_, idle_timer_, handshake_timer_, resume_timer_}) {
    if (t != 0) worker_.loop().cancel_timer(t);
  }
  connect_timer_ = idle_timer_ = handshake_timer_ = resume_timer_ = 0;
  client_tls_.reset();
  if (client_events_ != 0) worker_.loop().remove(client_fd_);
  ::close(client_fd_);
  client_fd_ = -1;
  client_events_ = 0;
  close_backend_fd();
  // nutcracker's client_eof / client_err: both sides ended normally / the client's socket failed.
  const std::string_view reason = why;
  if (reason == "done") {
    pool_->shared->client_eof.fetch_add(1, std::memory_order_relaxed);
  } else if (reason.starts_with("client ")) {
    pool_->shared->client_err.fetch_add(1, std::memory_order_relaxed);
  }
  log(LogLevel::kDebug, "tcp relay closed", {{"pool", pool_->config.name}, {"reason", why}});
  worker_.client_closed(this);
  worker_.loop().defer_delete(std::unique_ptr<net::Pollable>(this));
}

}  // namespace chash::proxy::tcp
