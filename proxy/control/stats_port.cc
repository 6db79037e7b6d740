// SPDX-License-Identifier: Apache-2.0
#include "control/stats_port.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "control/status.h"

namespace chash::proxy {

namespace {

// nutcracker 0.5.0's stats, in its order, with its descriptions (nc_stats.h STATS_POOL_CODEC /
// STATS_SERVER_CODEC; `nutcracker -D` prints the same text).
struct StatDesc {
  const char* name;
  const char* description;
};
constexpr StatDesc kPoolStats[] = {
    {"client_eof", "# eof on client connections"},
    {"client_err", "# errors on client connections"},
    {"client_connections", "# active client connections"},
    {"server_ejects", "# times backend server was ejected"},
    {"forward_error", "# times we encountered a forwarding error"},
    {"fragments", "# fragments created from a multi-vector request"},
};
constexpr StatDesc kServerStats[] = {
    {"server_eof", "# eof on server connections"},
    {"server_err", "# errors on server connections"},
    {"server_timedout", "# timeouts on server connections"},
    {"server_connections", "# active server connections"},
    {"server_ejected_at", "timestamp when server was ejected in usec since epoch"},
    {"requests", "# requests"},
    {"request_bytes", "total request bytes"},
    {"responses", "# responses"},
    {"response_bytes", "total response bytes"},
    {"in_queue", "# requests in incoming queue"},
    {"in_queue_bytes", "current request bytes in incoming queue"},
    {"out_queue", "# requests in outgoing queue"},
    {"out_queue_bytes", "current request bytes in outgoing queue"},
};

std::int64_t relaxed(const std::atomic<std::uint64_t>& a) noexcept {
  return static_cast<std::int64_t>(a.load(std::memory_order_relaxed));
}
// Gauges summed across workers can be seen a hair below zero mid-update.
std::int64_t gauge(const std::atomic<std::int64_t>& a) noexcept {
  return std::max<std::int64_t>(0, a.load(std::memory_order_relaxed));
}

void add_num(std::string& o, const char* name, std::int64_t v, bool last = false) {
  o += '"';
  o += name;
  o += "\":";
  o += std::to_string(v);
  if (!last) o += ", ";
}

}  // namespace

std::string render_stats_pools(const Topology& t) {
  std::string o;
  for (std::size_t p = 0; p < t.pools.size(); ++p) {
    const Pool& pool = *t.pools[p];
    const PoolShared& ps = *pool.shared;
    std::int64_t ejects = 0;
    for (const auto& s : pool.states) ejects += relaxed(s->ejections);
    if (p != 0) o += ", ";
    o += '"' + json_escape(pool.config.name) + "\": {";
    const std::int64_t pool_values[] = {relaxed(ps.client_eof),     relaxed(ps.client_err),
                                        gauge(ps.clients),          ejects,
                                        relaxed(ps.forward_errors), relaxed(ps.fragments)};
    for (std::size_t i = 0; i < std::size(kPoolStats); ++i) {
      add_num(o, kPoolStats[i].name, pool_values[i],
              pool.states.empty() && i + 1 == std::size(kPoolStats));
    }
    for (std::size_t i = 0; i < pool.states.size(); ++i) {
      const BackendState& s = *pool.states[i];
      if (i != 0) o += ",";
      o += '"' + json_escape(s.name) + "\": {";
      const std::int64_t values[] = {
          relaxed(s.eofs),          relaxed(s.conn_errors),  relaxed(s.timeouts),
          gauge(s.active),          gauge(s.ejected_at_us),  relaxed(s.requests),
          relaxed(s.request_bytes), relaxed(s.responses),    relaxed(s.response_bytes),
          gauge(s.in_queue),        gauge(s.in_queue_bytes), gauge(s.out_queue),
          gauge(s.out_queue_bytes)};
      static_assert(std::size(values) == std::size(kServerStats));
      for (std::size_t k = 0; k < std::size(kServerStats); ++k) {
        add_num(o, kServerStats[k].name, values[k], k + 1 == std::size(kServerStats));
      }
      o += '}';
    }
    o += '}';
  }
  return o;
}

std::string render_stats_json(const StatsHeader& h, const std::string& pools) {
  // "service" stays nutcracker's: consumers written for twemproxy may key on it.
  std::string o = "{\"service\":\"nutcracker\", \"source\":\"" + json_escape(h.source) +
                  "\", \"version\":\"" + json_escape(h.version) + "\", ";
  add_num(o, "uptime", h.uptime);
  add_num(o, "timestamp", h.timestamp);
  add_num(o, "total_connections", static_cast<std::int64_t>(h.total_connections));
  add_num(o, "curr_connections", static_cast<std::int64_t>(h.curr_connections), pools.empty());
  o += pools;
  o += "}\n";
  return o;
}

std::string describe_stats() {
  std::string o = "pool stats:\n";
  auto line = [&o](const StatDesc& d) {
    std::string name = d.name;
    name.resize(std::max<std::size_t>(name.size() + 1, 20), ' ');
    o += "  " + name + "\"" + d.description + "\"\n";
  };
  for (const StatDesc& d : kPoolStats) line(d);
  o += "\nserver stats:\n";
  for (const StatDesc& d : kServerStats) line(d);
  return o;
}

// One stats client: the document is written as the socket allows; input is discarded; the
// deadline closes it whatever it is doing.
class StatsPort::Conn final : public net::Pollable {
 public:
  Conn(StatsPort& port, int fd, std::string doc) : port_(port), fd_(fd), out_(std::move(doc)) {}
  ~Conn() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool start() {
    if (!port_.loop_.add(fd_, EPOLLIN | EPOLLOUT, this)) return false;
    timer_ = port_.loop_.add_timer(port_.limits_.deadline, [this] {
      timer_ = 0;
      port_.finish(this);
    });
    return true;
  }
  void stop() {
    if (timer_ != 0) port_.loop_.cancel_timer(timer_);
    timer_ = 0;
    if (fd_ < 0) return;
    port_.loop_.remove(fd_);
    ::close(fd_);
    fd_ = -1;
  }

  void on_event(std::uint32_t events) override {
    if (events & (EPOLLERR | EPOLLHUP)) {  // reset, or both sides closed: nobody to write to
      port_.finish(this);
      return;
    }
    if ((events & EPOLLIN) && !discard_input()) {
      port_.finish(this);  // the client closed (or failed): nothing more to do
      return;
    }
    if (done_) return;
    while (off_ < out_.size()) {
      const ssize_t n =
          ::send(fd_, out_.data() + off_, out_.size() - off_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        off_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // EPOLLOUT will say
      port_.finish(this);                                              // the client went away
      return;
    }
    // A lingering close: our side ends now; the client's EOF (or the deadline) frees the slot.
    // Closing at once could reset the connection under bytes the client sent, and a reset may
    // discard the document before the client has read it.
    done_ = true;
    ::shutdown(fd_, SHUT_WR);
    port_.loop_.modify(fd_, EPOLLIN, this);
  }

 private:
  // Reads and drops what the client sent (bounded per call: a flood cannot hold the loop).
  // False once the client has closed or the socket failed.
  bool discard_input() {
    char buf[4096];
    for (int i = 0; i < 16; ++i) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return true;
  }

  StatsPort& port_;
  int fd_;
  net::EventLoop::TimerId timer_ = 0;
  std::string out_;
  std::size_t off_ = 0;
  bool done_ = false;  // everything written, our side shut down
};

StatsPort::StatsPort(net::EventLoop& loop, int listen_fd, Handlers handlers, Limits limits)
    : loop_(loop), fd_(listen_fd), handlers_(std::move(handlers)), limits_(limits) {
  loop_.add(fd_, EPOLLIN, this);
}

StatsPort::~StatsPort() {
  for (auto& [c, owned] : conns_) c->stop();
  conns_.clear();
  loop_.remove(fd_);
}

std::string StatsPort::document() {
  const auto now = net::Clock::now();
  if (!have_snapshot_ || now - snapshot_at_ >= limits_.interval) {
    snapshot_ = handlers_.pools();
    snapshot_at_ = now;
    have_snapshot_ = true;
  }
  return render_stats_json(handlers_.header(), snapshot_);
}

void StatsPort::on_event(std::uint32_t) {
  for (;;) {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return;  // EAGAIN (or an error the next wakeup retries)
    if (conns_.size() >= limits_.max_connections) {
      ::close(c);  // nutcracker would answer; a stalled poller fleet gets nothing rather than RAM
      continue;
    }
    auto conn = std::make_unique<Conn>(*this, c, document());
    Conn* p = conn.get();
    if (!p->start()) continue;  // closes c
    conns_.emplace(p, std::move(conn));
    p->on_event(EPOLLOUT);  // the document usually fits the socket buffer at once
  }
}

void StatsPort::finish(Conn* c) {
  const auto it = conns_.find(c);
  if (it == conns_.end()) return;
  c->stop();
  std::unique_ptr<Conn> owned = std::move(it->second);
  conns_.erase(it);
  loop_.defer_delete(std::move(owned));  // this may be running inside c's own on_event
}

}  // namespace chash::proxy
