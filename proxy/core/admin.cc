// SPDX-License-Identifier: Apache-2.0
#include "core/admin.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace chash::proxy {

namespace {

constexpr std::size_t kMaxRequestHead = 8192;

const char* reason(int code) noexcept {
  return code == 200 ? " OK" : code == 404 ? " Not Found" : " Conflict";
}

}  // namespace

AdminServer::AdminServer(net::EventLoop& loop, int listen_fd, Handlers handlers)
    : fd_(listen_fd), handlers_(std::move(handlers)) {
  loop.add(fd_, EPOLLIN, this);
}

void AdminServer::on_event(std::uint32_t) {
  for (;;) {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);  // blocking: tiny exchanges
    if (c < 0) return;  // the listener is non-blocking: EAGAIN ends the loop
    timeval tv{1, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    serve(c);
    ::close(c);
  }
}

std::string AdminServer::respond(std::string_view req) const {
  const std::size_t sp1 = req.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : req.find(' ', sp1 + 1);
  const std::string_view method = req.substr(0, sp1);
  const std::string_view path =
      sp2 == std::string_view::npos ? std::string_view() : req.substr(sp1 + 1, sp2 - sp1 - 1);
  int code = 200;
  std::string type = "text/plain; version=0.0.4", body;
  if (method == "GET" && path == "/metrics") {
    body = handlers_.metrics();
  } else if (method == "GET" && (path == "/status" || path == "/")) {
    type = "application/json";
    body = handlers_.status();
  } else if (method == "POST" && path == "/reload") {
    std::string message;
    code = handlers_.reload(message) ? 200 : 409;
    body = message + "\n";
  } else {
    code = 404;
    body = "not found: GET /metrics, GET /status, POST /reload\n";
  }
  return "HTTP/1.1 " + std::to_string(code) + reason(code) + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

void AdminServer::serve(int c) const {
  std::string req;
  char buf[2048];
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < kMaxRequestHead) {
    const ssize_t n = ::recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    req.append(buf, static_cast<std::size_t>(n));
  }
  const std::string resp = respond(req);
  std::size_t off = 0;
  while (off < resp.size()) {
    const ssize_t n = ::send(c, resp.data() + off, resp.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace chash::proxy
