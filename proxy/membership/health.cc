// SPDX-License-Identifier: Apache-2.0
#include "membership/health.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/log.h"
#include "core/protocols.h"
#include "membership/probe_check.h"
#include "membership/resolver.h"
#include "net/socket.h"
#include "net/tls.h"

namespace chash::proxy {

namespace {
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr std::uint32_t kDefaultProbeTimeoutMs = 1000;  // pools without `timeout`
constexpr std::int64_t kReplicaCheckMs = 1000;
}  // namespace

bool probe_due(const BackendState& s, const PoolConfig& pool, std::int64_t now, ServerRole role,
               bool fleet_out) noexcept {
  if (s.probing.load()) return false;
  // Ejected by the fleet while this proxy has not seen it fail: no request goes there, so only
  // probes can tell the fleet whether this proxy reaches it (its vote for a return).
  if (fleet_out && !s.down.load()) {
    return now - s.last_check_ms.load() >= static_cast<std::int64_t>(pool.server_retry_timeout_ms);
  }
  // A replica is read from only while its probes say it is usable: checked at least every
  // kReplicaCheckMs, and again soon after it was found wanting (it may have caught up).
  const bool replica = role == ServerRole::kReplica;
  if (s.down.load()) {
    const auto wait = replica
                          ? std::min<std::int64_t>(pool.server_retry_timeout_ms, kReplicaCheckMs)
                          : static_cast<std::int64_t>(pool.server_retry_timeout_ms);
    return now - s.down_since_ms.load() >= wait;
  }
  auto every = static_cast<std::int64_t>(pool.health_check_interval_ms);
  if (replica && (every == 0 || every > kReplicaCheckMs)) every = kReplicaCheckMs;
  return every != 0 && now - s.last_check_ms.load() >= every;
}

void apply_probe_result(BackendState& s, const PoolConfig& pool, bool was_down, bool ok,
                        std::string_view why, ServerRole role, const std::function<bool()>& hold) {
  s.last_check_ms = steady_ms();
  if (!was_down && !ok && role == ServerRole::kReplica) {
    // Lagging or loading is a state, not a failure to count: reads leave it at once.
    s.probe_successes = 0;
    s.down_since_ms = steady_ms();
    if (!s.down.exchange(true)) {
      log(LogLevel::kWarn, "replica not usable",
          {{"pool", pool.name}, {"backend", s.name}, {"reason", why}});
    }
    return;
  }
  if (!was_down) {
    // A routine check of a backend in service: failures count like request failures.
    if (ok) {
      record_success(s);
    } else {
      record_failure(s, pool, "health check: " + std::string(why));
    }
  } else if (ok) {
    const std::uint32_t n = s.probe_successes.fetch_add(1) + 1;
    if (n >= pool.rise && hold && hold()) {
      s.probe_successes = 0;
      s.down_since_ms = steady_ms();  // probed again later (the return may be held)
    } else if (n >= pool.rise) {
      s.probe_successes = 0;
      s.failures = 0;
      s.down = false;
      log(LogLevel::kInfo, "backend up", {{"pool", pool.name}, {"backend", s.name}});
    } else {
      s.down_since_ms = steady_ms();  // the next probe after server_retry_timeout
    }
  } else {
    s.probe_successes = 0;
    s.down_since_ms = steady_ms();
    s.set_last_error(why);
    log(LogLevel::kDebug, "probe failed",
        {{"pool", pool.name}, {"backend", s.name}, {"reason", why}});
  }
}

// ---- One probe: a fresh connection, the protocol's question, a verdict; frees itself ----------

class HealthChecker::Probe : public net::Pollable {
 public:
  Probe(net::EventLoop& loop, std::shared_ptr<const Pool> pool, NodeId node,
        const HealthChecker::ReturnHook* hook, std::unordered_set<Probe*>* live)
      : loop_(loop),
        hook_(hook),
        live_(live),
        node_(node),
        pool_(std::move(pool)),
        state_(pool_->states[node]),
        check_(make_probe_check(pool_->config, pool_->servers[node])),
        out_(check_->request()),
        address_(pool_->servers[node].address),
        tls_ctx_(pool_->servers[node].tls),
        role_(pool_->servers[node].role) {}
  ~Probe() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Its checker is going: out of the loop, and freed by the caller.
  void abandon() {
    loop_.cancel_timer(timer_);
    if (fd_ >= 0) loop_.remove(fd_);
    state_->probing = false;
  }

  void start() {
    live_->insert(this);
    state_->probing = true;
    was_down_ = state_->down.load();
    std::string error = "its address does not resolve";
    const auto address = state_->resolved();
    if (address != nullptr && address->source == address_.text()) {
      fd_ = net::connect_addr(address->addr, address->len, address->source, error);
    }
    if (fd_ >= 0 && tls_ctx_) {
      // Probes speak TLS like the sessions do: a TLS-only backend must be able to come back up.
      tls_ = net::TlsStream::connect(*tls_ctx_, fd_, address_.host, error);
      if (!tls_) {
        ::close(fd_);
        fd_ = -1;
      }
    }
    if (fd_ < 0 || !loop_.add(fd_, EPOLLIN | EPOLLOUT, this)) {
      finish(false, error);
      return;
    }
    timer_ = loop_.add_timer(
        std::chrono::milliseconds(pool_->config.timeout_ms.value_or(kDefaultProbeTimeoutMs)),
        [this] { finish(false, "probe timed out"); });
  }

  void on_event(std::uint32_t events) override {
    if (done_) return;
    if (events & EPOLLERR) {
      finish(false, std::string("connect: ") + std::strerror(net::socket_error(fd_)));
      return;
    }
    // Nothing to ask (tcp): the connect completing is the answer; over TLS, the handshake
    // (the certificate is checked as the relays check it).
    if (check_->request().empty()) {
      if (tls_ == nullptr) {
        if (events & EPOLLOUT) finish(true, "");
        return;
      }
      const int h = tls_->handshake();
      if (h != 0) {
        finish(h == 1, h == 1 ? "" : tls_->error());
        return;
      }
      rearm();
      return;
    }
    // With TLS the request's write also drives the handshake, which needs the socket readable.
    const std::uint32_t may_write = EPOLLOUT | (tls_ ? EPOLLIN : 0u);
    if ((events & may_write) && !out_.empty()) {
      const ssize_t n = tls_ ? tls_->send(out_.data(), out_.size())
                             : ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) {
        finish(false, io_error("write: "));
        return;
      }
      if (n > 0) out_.erase(0, static_cast<std::size_t>(n));
    }
    if (events & (EPOLLIN | EPOLLHUP)) {
      char buf[4096];
      const ssize_t n = tls_ ? tls_->recv(buf, sizeof buf) : ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN) {
          rearm();
          return;
        }
        finish(false, n == 0 ? std::string("connection closed") : io_error("read: "));
        return;
      }
      in_.append(buf, static_cast<std::size_t>(n));
      std::string why;
      const ProbeVerdict v = check_->check(in_, why);
      if (v != ProbeVerdict::kNeedMore) {
        finish(v == ProbeVerdict::kUp, why);
        return;
      }
    }
    rearm();
  }

 private:
  // EPOLLOUT only while there is something to write (plaintext) or TLS waits for it.
  void rearm() {
    const bool w = tls_ ? tls_->wants_write() : !out_.empty();
    if (w == want_write_) return;
    want_write_ = w;
    loop_.modify(fd_, EPOLLIN | (w ? EPOLLOUT : 0u), this);
  }

  std::string io_error(const char* plain) const {
    if (tls_ && errno == EPROTO && !tls_->error().empty()) return tls_->error();
    return plain + std::string(std::strerror(errno));
  }

  void finish(bool ok, const std::string& why) {
    if (done_) return;
    done_ = true;
    live_->erase(this);
    loop_.cancel_timer(timer_);
    if (fd_ >= 0) loop_.remove(fd_);
    apply_probe_result(*state_, pool_->config, was_down_, ok, why, role_,
                       [this] { return hook_ != nullptr && *hook_ && (*hook_)(*pool_, node_); });
    state_->probing = false;
    loop_.defer_delete(std::unique_ptr<net::Pollable>(this));
  }

  net::EventLoop& loop_;
  const HealthChecker::ReturnHook* hook_;
  std::unordered_set<Probe*>* live_;  // the checker's probes under way
  NodeId node_;
  std::shared_ptr<const Pool> pool_;
  std::shared_ptr<BackendState> state_;
  std::unique_ptr<ProbeCheck> check_;
  std::string out_, in_;
  Address address_;
  int fd_ = -1;
  std::shared_ptr<const net::TlsContext> tls_ctx_;  // the server's server_tls (null: plaintext)
  ServerRole role_;
  std::unique_ptr<net::TlsStream> tls_;
  bool want_write_ = true;
  bool done_ = false;
  bool was_down_ = false;
  net::EventLoop::TimerId timer_ = 0;
};

// ---- HealthChecker ------------------------------------------------------------------------------

HealthChecker::HealthChecker(net::EventLoop& loop, TopologySource topology, Resolver* resolver)
    : loop_(loop), topology_(std::move(topology)), resolver_(resolver) {}

HealthChecker::~HealthChecker() {
  for (Probe* p : std::vector<Probe*>(probes_.begin(), probes_.end())) {
    p->abandon();
    delete p;
  }
}

void HealthChecker::start() {
  loop_.add_timer(kTick, [this] {
    tick();
    start();
  });
}

void HealthChecker::tick() {
  const auto t = topology_();
  const std::int64_t now = steady_ms();
  for (const auto& pool : t->pools) {
    for (NodeId i = 0; i < pool->states.size(); ++i) {
      const bool fleet_out = i < pool->fleet_out.size() && pool->fleet_out[i] != 0;
      if (!probe_due(*pool->states[i], pool->config, now, pool->servers[i].role, fleet_out))
        continue;
      // A backend that is down may have moved: look its name up again (off this thread); the
      // probe after the next server_retry_timeout uses what it finds.
      if (resolver_ != nullptr && pool->states[i]->down.load()) resolver_->refresh(pool, i);
      (new Probe(loop_, pool, i, &return_hook_, &probes_))->start();  // frees itself
    }
  }
}

}  // namespace chash::proxy
