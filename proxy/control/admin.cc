// SPDX-License-Identifier: Apache-2.0
#include "control/admin.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/text.h"
#include "net/tls.h"

namespace chash::proxy {

namespace {

const char* reason(int code) noexcept {
  switch (code) {
    case 200:
      return " OK";
    case 202:
      return " Accepted";
    case 401:
      return " Unauthorized";
    case 404:
      return " Not Found";
    case 405:
      return " Method Not Allowed";
    case 409:
      return " Conflict";
    case 431:
      return " Request Header Fields Too Large";
    default:
      return " Service Unavailable";
  }
}

std::string response(int code, std::string_view type, std::string_view body,
                     std::string_view extra_headers = {}) {
  return "HTTP/1.1 " + std::to_string(code) + reason(code) + "\r\n" + std::string(extra_headers) +
         "Content-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

constexpr std::string_view kText = "text/plain; version=0.0.4";

bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (ascii_lower(s[i]) != ascii_lower(prefix[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The value of the request head's Authorization header ("" when there is none).
std::string_view authorization(std::string_view head) noexcept {
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos) {
    const std::size_t start = pos + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string_view line =
        head.substr(start, end == std::string_view::npos ? end : end - start);
    if (line.empty()) break;  // end of the head
    if (istarts_with(line, "authorization:")) return trim(line.substr(14));
    pos = end;
  }
  return {};
}

// RFC 4648 base64 (padding optional); false on any other byte.
bool base64_decode(std::string_view in, std::string& out) {
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return true;
}

// Whether the request carries credentials `auth` accepts. Both secrets are compared as
// SHA-256 digests in constant time; the basic user name and password are both always checked.
bool authorized(std::string_view head, const AdminAuth& auth) {
  const std::string_view value = authorization(head);
  if (auth.token && istarts_with(value, "bearer ")) {
    return redis::equal_hash(redis::sha256(trim(value.substr(7))), *auth.token);
  }
  if (!auth.basic_user.empty() && istarts_with(value, "basic ")) {
    std::string decoded;
    const std::string_view b64 = trim(value.substr(6));
    if (b64.size() > 4096 || !base64_decode(b64, decoded)) return false;
    const std::size_t colon = decoded.find(':');
    if (colon == std::string::npos) return false;
    const bool user_ok = std::string_view(decoded).substr(0, colon) == auth.basic_user;
    const bool password_ok = redis::equal_hash(
        redis::sha256(std::string_view(decoded).substr(colon + 1)), auth.basic_password);
    return user_ok & password_ok;
  }
  return false;
}

std::string unauthorized(const AdminAuth& auth) {
  std::string headers;
  if (auth.token) headers += "WWW-Authenticate: Bearer realm=\"chash-proxy\"\r\n";
  if (!auth.basic_user.empty()) headers += "WWW-Authenticate: Basic realm=\"chash-proxy\"\r\n";
  return response(401, kText, "authentication required (admin_auth)\n", headers);
}

}  // namespace

// One admin client: reads a request head, then writes the whole response, never blocking; the
// deadline timer closes it whatever it is doing.
class AdminServer::Conn final : public net::Pollable {
 public:
  Conn(AdminServer& server, int fd, std::unique_ptr<net::TlsStream> tls, std::uint64_t serial)
      : server_(server), fd_(fd), tls_(std::move(tls)), serial_(serial) {}
  // Waiting for its request (nothing to answer yet): what a full server evicts, oldest first.
  bool idle() const noexcept { return out_.empty() && !deferred_; }
  // The answer of a request answered off the loop (AdminServer::slow_request) has come.
  void deferred_answer(std::string out) {
    deferred_ = false;
    out_ = std::move(out);
    if (!server_.loop_.add(fd_, events_, this)) {
      server_.finish(this);
      return;
    }
    write();
  }
  std::uint64_t serial() const noexcept { return serial_; }
  ~Conn() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool start() {
    if (!server_.loop_.add(fd_, EPOLLIN, this)) return false;
    timer_ = server_.loop_.add_timer(server_.limits_.deadline, [this] {
      timer_ = 0;
      server_.finish(this);
    });
    return true;
  }
  void stop() {
    if (timer_ != 0) server_.loop_.cancel_timer(timer_);
    timer_ = 0;
    server_.loop_.remove(fd_);
    if (tls_ != nullptr && off_ == out_.size() && !out_.empty()) tls_->shutdown();
    ::close(fd_);
    fd_ = -1;
  }

  void on_event(std::uint32_t) override {
    if (deferred_) return;
    if (out_.empty() && !read()) return;  // finished: do not touch this again
    if (!out_.empty()) write();
  }

 private:
  ssize_t recv_some(char* buf, std::size_t len) {
    return tls_ ? tls_->recv(buf, len) : ::recv(fd_, buf, len, MSG_DONTWAIT);
  }
  ssize_t send_some(const char* buf, std::size_t len) {
    return tls_ ? tls_->send(buf, len) : ::send(fd_, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  // Waits for `events`; over TLS, for what OpenSSL asked (a read may need to write, and back).
  void wait_for(std::uint32_t events) {
    if (tls_ != nullptr) events = tls_->wants_write() ? EPOLLOUT : EPOLLIN;
    if (events == events_) return;
    events_ = events;
    server_.loop_.modify(fd_, events, this);
  }

  // Reads what there is; false when the client is finished (closed without asking anything).
  bool read() {
    char buf[2048];
    for (;;) {
      const ssize_t n = recv_some(buf, sizeof buf);
      if (n > 0) {
        in_.append(buf, static_cast<std::size_t>(n));
        if (in_.find("\r\n\r\n") != std::string::npos) break;
        if (in_.size() > server_.limits_.max_request_head) {
          // Drop what else has arrived (up to 64 KiB), so that closing after the answer does
          // not reset the connection under a client still reading it.
          for (int i = 0; i < 32 && recv_some(buf, sizeof buf) > 0; ++i) {
          }
          out_ = response(
              431, kText,
              "request head over " + std::to_string(server_.limits_.max_request_head) + " bytes\n");
          return true;
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // more later
        wait_for(EPOLLIN);
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      if (in_.empty() || (n < 0 && tls_ != nullptr)) {  // closed (or failed) without a request
        server_.finish(this);
        return false;
      }
      break;  // the client half-closed after a request without the blank line: answer it
    }
    if (server_.slow_request(in_)) {
      // Answered on the admin server's own thread (an etcd edit may wait seconds): out of the
      // loop until then, so that a closed or readable socket does not wake it meanwhile.
      deferred_ = true;
      server_.loop_.remove(fd_);
      server_.answer_later(in_, serial_);
      return true;
    }
    out_ = server_.respond(in_);
    return true;
  }

  void write() {
    while (off_ < out_.size()) {
      const ssize_t n = send_some(out_.data() + off_, out_.size() - off_);
      if (n > 0) {
        off_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wait_for(EPOLLOUT);
        return;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // the client went away
    }
    server_.finish(this);
  }

  AdminServer& server_;
  int fd_;
  std::unique_ptr<net::TlsStream> tls_;  // admin_tls (null: plain HTTP)
  net::EventLoop::TimerId timer_ = 0;
  std::string in_, out_;
  std::size_t off_ = 0;
  std::uint32_t events_ = EPOLLIN;
  std::uint64_t serial_ = 0;  // accept order
  bool deferred_ = false;     // its answer is being made off the loop
};

AdminServer::AdminServer(net::EventLoop& loop, int listen_fd, Handlers handlers, Limits limits)
    : loop_(loop), fd_(listen_fd), handlers_(std::move(handlers)), limits_(limits) {
  loop_.add(fd_, EPOLLIN, this);
  slow_thread_ = std::thread([this] { run_slow(); });
}

AdminServer::~AdminServer() {
  {
    std::lock_guard lock(slow_mu_);
    slow_stop_ = true;
  }
  slow_cv_.notify_all();
  slow_thread_.join();  // a request under way finishes first (an etcd call: its own timeout)
  *alive_ = false;      // answers it posted to the loop find no server
  for (auto& [c, owned] : conns_) c->stop();
  conns_.clear();
  loop_.remove(fd_);
}

bool AdminServer::slow_request(std::string_view req) const {
  // Membership edits through etcd (POST /fleet/...): each is one or more etcd round trips that
  // a hung etcd makes last its timeout; on the control loop they held /metrics, SIGHUP and
  // SIGTERM that long (5.7-6 s measured).
  return handlers_.fleet_edit && req.starts_with("POST /fleet/");
}

void AdminServer::answer_later(std::string request, std::uint64_t serial) {
  {
    std::lock_guard lock(slow_mu_);
    slow_jobs_.push_back([this, request = std::move(request), serial, alive = alive_] {
      std::string out = respond(request);
      loop_.post([this, alive, serial, out = std::move(out)]() mutable {
        if (!*alive) return;  // the server is gone (shutdown)
        for (const auto& [c, owned] : conns_) {
          if (c->serial() == serial) {
            c->deferred_answer(std::move(out));
            return;
          }
        }
        // Closed meanwhile (its deadline, or evicted): the answer has no one to go to.
      });
    });
  }
  slow_cv_.notify_one();
}

void AdminServer::run_slow() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(slow_mu_);
      slow_cv_.wait(lock, [&] { return slow_stop_ || !slow_jobs_.empty(); });
      if (slow_stop_) return;
      job = std::move(slow_jobs_.front());
      slow_jobs_.pop_front();
    }
    job();
  }
}

void AdminServer::on_event(std::uint32_t) {
  // A few accepts a wakeup, then back to the loop (level-triggered: the rest wake it again).
  // Each request is answered inside this call, so clients that reconnect as fast as they are
  // answered would otherwise keep it here for ever, and the signals (SIGHUP, SIGTERM) and timers
  // that share the control loop would wait behind them.
  for (int accepted = 0; accepted < kAcceptsPerWakeup; ++accepted) {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return;  // the listener is non-blocking: EAGAIN ends the loop
    if (conns_.size() >= limits_.max_connections) evict_oldest_idle();
    if (conns_.size() >= limits_.max_connections) {
      // Best effort: what the client already sent is read first, so the close is not a reset.
      char drop[2048];
      for (int i = 0; i < 8 && ::recv(c, drop, sizeof drop, MSG_DONTWAIT) > 0; ++i) {
      }
      const std::string busy = response(503, kText, "too many admin connections\n");
      (void)::send(c, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(c);
      continue;
    }
    std::unique_ptr<net::TlsStream> tls;
    if (const auto ctx = tls_context()) {
      std::string error;
      tls = net::TlsStream::accept(*ctx, c, error);
      if (!tls) {
        ::close(c);
        continue;
      }
    }
    auto conn = std::make_unique<Conn>(*this, c, std::move(tls), ++accepted_);
    Conn* p = conn.get();
    if (!p->start()) continue;  // closes c
    conns_.emplace(p, std::move(conn));
    p->on_event(EPOLLIN);  // the request is often there already
  }
}

void AdminServer::evict_oldest_idle() {
  // Silent or slow clients (a connect and nothing sent, a head sent a byte at a time) must not
  // keep everyone else out: the one waiting longest for its request goes, closed unanswered.
  Conn* oldest = nullptr;
  for (const auto& [c, owned] : conns_) {
    if (c->idle() && (oldest == nullptr || c->serial() < oldest->serial())) oldest = c;
  }
  if (oldest == nullptr) return;
  ++evicted_;
  finish(oldest);
}

void AdminServer::finish(Conn* c) {
  const auto it = conns_.find(c);
  if (it == conns_.end()) return;
  c->stop();
  std::unique_ptr<Conn> owned = std::move(it->second);
  conns_.erase(it);
  loop_.defer_delete(std::move(owned));  // this may be running inside c's own on_event
}

void AdminServer::set_auth(const AdminAuth& auth) {
  std::lock_guard<std::mutex> lock(auth_mu_);
  auth_ = auth;
}

void AdminServer::set_tls(std::shared_ptr<const net::TlsContext> tls) {
  std::lock_guard<std::mutex> lock(auth_mu_);
  tls_ = std::move(tls);
}

std::shared_ptr<const net::TlsContext> AdminServer::tls_context() const {
  std::lock_guard<std::mutex> lock(auth_mu_);
  return tls_;
}

std::string AdminServer::respond(std::string_view req) const {
  const std::size_t sp1 = req.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : req.find(' ', sp1 + 1);
  const std::string_view method = req.substr(0, sp1);
  std::string_view path =
      sp2 == std::string_view::npos ? std::string_view() : req.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::size_t q = path.find('?');
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : path.substr(q + 1);
  path = path.substr(0, q);  // /ring.svg, /flush, /rebalance and /fleet/... read their query
  {
    std::lock_guard<std::mutex> lock(auth_mu_);
    // Mutating: anything but GET/HEAD (POST /reload today).
    const bool mutating = method != "GET" && method != "HEAD";
    if (auth_.enabled() && (auth_.protect_all || mutating) && !authorized(req, auth_)) {
      return unauthorized(auth_);
    }
  }
  if (method == "GET" && path == "/metrics") return response(200, kText, handlers_.metrics());
  if (method == "GET" && path == "/status") {
    return response(200, "application/json", handlers_.status());
  }
  if (method == "GET" && (path == "/" || path == "/ui") && handlers_.ui) {
    return response(200, "text/html; charset=utf-8", handlers_.ui());
  }
  if (method == "GET" && path == "/ring.svg" && handlers_.ring_svg) {
    std::string body;
    if (handlers_.ring_svg(query, body)) return response(200, "image/svg+xml", body);
    return response(404, kText, body + "\n");
  }
  if (method == "POST" && path == "/reload") {
    std::string message;
    const bool ok = handlers_.reload(message);
    return response(ok ? 200 : 409, kText, message + "\n");
  }
  if (method == "POST" && path == "/flush" && handlers_.flush) {
    std::string message;
    const bool ok = handlers_.flush(query, message);
    return response(ok ? 200 : 409, kText, message + "\n");
  }
  if (method == "POST" && path == "/rebalance" && handlers_.rebalance) {
    std::string message;
    const bool ok = handlers_.rebalance(query, message);
    return response(ok ? 202 : 409, kText, message + "\n");
  }
  if (method == "GET" && path == "/fleet" && handlers_.fleet_status) {
    return response(200, "application/json", handlers_.fleet_status());
  }
  if (method == "POST" && path.starts_with("/fleet/") && handlers_.fleet_edit) {
    std::string message;
    const bool ok = handlers_.fleet_edit(path.substr(7), query, message);
    return response(ok ? 200 : 409, kText, message + "\n");
  }
  // A known path asked with the other method: 405 with the one it takes (RFC 9110 15.5.6).
  const bool post_path = path == "/reload" || path == "/flush" || path == "/rebalance" ||
                         path.starts_with("/fleet/");
  const bool get_path = path == "/" || path == "/ui" || path == "/ring.svg" ||
                        path == "/metrics" || path == "/status" || path == "/fleet";
  if ((post_path && method != "POST") || (get_path && method != "GET")) {
    const std::string allow = post_path ? "POST" : "GET";
    return response(405, kText, std::string(method.substr(0, 16)) + " " + std::string(path.substr(0, 64)) + ": use " + allow + "\n",
                    "Allow: " + allow + "\r\n");
  }
  return response(404, kText,
                  "not found: GET / (or /ui), GET /ring.svg?pool=NAME, GET /metrics, "
                  "GET /status, POST /reload, POST /flush, POST /rebalance, GET /fleet, "
                  "POST /fleet/...\n");
}

}  // namespace chash::proxy
