// SPDX-License-Identifier: Apache-2.0
#include "core/admin.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace chash::proxy {

namespace {

const char* reason(int code) noexcept {
  switch (code) {
    case 200:
      return " OK";
    case 404:
      return " Not Found";
    case 409:
      return " Conflict";
    case 431:
      return " Request Header Fields Too Large";
    default:
      return " Service Unavailable";
  }
}

std::string response(int code, std::string_view type, std::string_view body) {
  return "HTTP/1.1 " + std::to_string(code) + reason(code) +
         "\r\nContent-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

constexpr std::string_view kText = "text/plain; version=0.0.4";

}  // namespace

// One admin client: reads a request head, then writes the whole response, never blocking; the
// deadline timer closes it whatever it is doing.
class AdminServer::Conn final : public net::Pollable {
 public:
  Conn(AdminServer& server, int fd) : server_(server), fd_(fd) {}
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
    ::close(fd_);
    fd_ = -1;
  }

  void on_event(std::uint32_t) override {
    if (out_.empty() && !read()) return;  // finished: do not touch this again
    if (!out_.empty()) write();
  }

 private:
  // Reads what there is; false when the client is finished (closed without asking anything).
  bool read() {
    char buf[2048];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        in_.append(buf, static_cast<std::size_t>(n));
        if (in_.find("\r\n\r\n") != std::string::npos) break;
        if (in_.size() > server_.limits_.max_request_head) {
          // Drop what else has arrived (up to 64 KiB), so that closing after the answer does
          // not reset the connection under a client still reading it.
          for (int i = 0; i < 32 && ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
          }
          out_ = response(
              431, kText,
              "request head over " + std::to_string(server_.limits_.max_request_head) + " bytes\n");
          return true;
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;  // more later
      if (n < 0 && errno == EINTR) continue;
      if (in_.empty()) {  // closed (or failed) without asking anything
        server_.finish(this);
        return false;
      }
      break;  // the client half-closed after a request without the blank line: answer it
    }
    out_ = server_.respond(in_);
    return true;
  }

  void write() {
    while (off_ < out_.size()) {
      const ssize_t n =
          ::send(fd_, out_.data() + off_, out_.size() - off_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        off_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!writing_) server_.loop_.modify(fd_, EPOLLOUT, this);
        writing_ = true;
        return;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // the client went away
    }
    server_.finish(this);
  }

  AdminServer& server_;
  int fd_;
  net::EventLoop::TimerId timer_ = 0;
  std::string in_, out_;
  std::size_t off_ = 0;
  bool writing_ = false;
};

AdminServer::AdminServer(net::EventLoop& loop, int listen_fd, Handlers handlers, Limits limits)
    : loop_(loop), fd_(listen_fd), handlers_(std::move(handlers)), limits_(limits) {
  loop_.add(fd_, EPOLLIN, this);
}

AdminServer::~AdminServer() {
  for (auto& [c, owned] : conns_) c->stop();
  conns_.clear();
  loop_.remove(fd_);
}

void AdminServer::on_event(std::uint32_t) {
  for (;;) {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return;  // the listener is non-blocking: EAGAIN ends the loop
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
    auto conn = std::make_unique<Conn>(*this, c);
    Conn* p = conn.get();
    if (!p->start()) continue;  // closes c
    conns_.emplace(p, std::move(conn));
    p->on_event(EPOLLIN);  // the request is often there already
  }
}

void AdminServer::finish(Conn* c) {
  const auto it = conns_.find(c);
  if (it == conns_.end()) return;
  c->stop();
  std::unique_ptr<Conn> owned = std::move(it->second);
  conns_.erase(it);
  loop_.defer_delete(std::move(owned));  // this may be running inside c's own on_event
}

std::string AdminServer::respond(std::string_view req) const {
  const std::size_t sp1 = req.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : req.find(' ', sp1 + 1);
  const std::string_view method = req.substr(0, sp1);
  std::string_view path =
      sp2 == std::string_view::npos ? std::string_view() : req.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));  // the query string is not used
  if (method == "GET" && path == "/metrics") return response(200, kText, handlers_.metrics());
  if (method == "GET" && (path == "/status" || path == "/")) {
    return response(200, "application/json", handlers_.status());
  }
  if (method == "POST" && path == "/reload") {
    std::string message;
    const bool ok = handlers_.reload(message);
    return response(ok ? 200 : 409, kText, message + "\n");
  }
  return response(404, kText, "not found: GET /metrics, GET /status, POST /reload\n");
}

}  // namespace chash::proxy
