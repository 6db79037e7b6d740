// SPDX-License-Identifier: Apache-2.0
// A small blocking TCP client for the subcommands that talk to live Redis and memcached servers
// (detect's scan, rebalance): connect and every read are bounded by a timeout, a reply line by
// size, and every error names the server's address.
#pragma once

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/error.h"
#include "io.h"
#include "scan.h"

namespace chash::cli {

using Clock = std::chrono::steady_clock;

// The longest line or bulk string a reply may hold (a key: as KeySource's limit).
inline constexpr std::size_t kMaxItemBytes = KeySource::kMaxKeyBytes;
// The most elements one SCAN reply may announce (COUNT 1000 is a hint; Redis returns about it).
inline constexpr std::int64_t kMaxScanBatch = 1 << 20;

// One blocking TCP connection; every wait is bounded by the timeout.
class Connection {
 public:
  Connection(const ScanTarget& t, std::chrono::milliseconds timeout)
      : what_(std::string(t.kind == ScanTarget::Kind::kRedis ? "redis " : "memcached ") +
              t.address()),
        timeout_(timeout) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(t.host.c_str(), std::to_string(t.port).c_str(), &hints, &res);
    if (rc != 0) fail(std::string("cannot resolve host: ") + ::gai_strerror(rc));
    std::string last = "no address";
    for (addrinfo* a = res; a != nullptr && fd_ < 0; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int err = 0;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
          err = wait(fd, POLLOUT, Clock::now() + timeout_) ? 0 : ETIMEDOUT;
          if (err == 0) {
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          }
        }
      }
      if (err == 0) {
        fd_ = fd;
      } else {
        last = err == ETIMEDOUT ? "no answer within " + seconds() : std::strerror(err);
        ::close(fd);
      }
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) fail("cannot connect: " + last);
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::kInvalidArgument, what_ + ": " + why);
  }

  void send(std::string_view bytes) {
    const auto deadline = Clock::now() + timeout_;
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (!wait(fd_, POLLOUT, deadline)) fail("cannot send within " + seconds());
      } else {
        fail(std::string("send: ") + std::strerror(errno));
      }
    }
  }

  // One line without its "\n" (and "\r"), at most kMaxItemBytes.
  std::string_view line() {
    for (;;) {
      const std::size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        std::string_view l(buf_.data() + pos_, nl - pos_);
        pos_ = nl + 1;
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        return l;
      }
      if (buf_.size() - pos_ > kMaxItemBytes) fail("a reply line longer than 1 MiB");
      fill();
    }
  }
  // Exactly n bytes followed by "\r\n".
  std::string_view block(std::size_t n) {
    while (buf_.size() - pos_ < n + 2) fill();
    std::string_view b(buf_.data() + pos_, n);
    if (buf_.compare(pos_ + n, 2, "\r\n") != 0) fail("a bulk string not ended by CRLF");
    pos_ += n + 2;
    return b;
  }
  const std::string& what() const noexcept { return what_; }

 private:
  static bool wait(int fd, short events, Clock::time_point deadline) {
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }
  std::string seconds() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(timeout_.count()) / 1000);
    return buf;
  }
  // Reads more bytes: what was consumed is dropped first. Each read waits at most the timeout.
  void fill() {
    if (pos_ > 0) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n > 0) {
        buf_.append(chunk, static_cast<std::size_t>(n));
        return;
      }
      if (n == 0) fail("connection closed in the middle of a reply");
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        if (!wait(fd_, POLLIN, Clock::now() + timeout_)) fail("no reply within " + seconds());
        continue;
      }
      fail(std::string("recv: ") + std::strerror(errno));
    }
  }

  std::string what_;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::string buf_;
  std::size_t pos_ = 0;
};

inline std::string resp_command(std::span<const std::string_view> argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto a : argv) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += "\r\n";
  }
  return out;
}

inline std::string resp_command(std::initializer_list<std::string_view> argv) {
  return resp_command(std::span<const std::string_view>(argv.begin(), argv.size()));
}

// Redis: one SCAN step from `cursor` (COUNT `count`, database 0), its keys appended to `keys`
// while it holds fewer than `limit`; the next cursor ("0" at the end). Throws Error.
std::string redis_scan_page(Connection& c, const std::string& cursor, std::size_t count,
                            std::vector<std::string>& keys, std::uint64_t limit = UINT64_MAX);

// memcached: `lru_crawler metadump all`, each key (URI-decoded) given to `each` in dump order
// until the dump ends or `each` returns false. BUSY (another crawl) is retried for `timeout`.
void metadump(Connection& c, std::chrono::milliseconds timeout,
              const std::function<bool(std::string&)>& each);

}  // namespace chash::cli
