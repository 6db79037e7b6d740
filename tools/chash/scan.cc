// SPDX-License-Identifier: Apache-2.0
#include "scan.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <thread>

#include "chash/error.h"
#include "chash/node.h"
#include "io.h"

namespace chash::cli {

std::string ScanTarget::address() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ScanTarget parse_scan_target(std::string_view text, ScanTarget::Kind kind, std::string_view flag) {
  auto fail = [&](const std::string& why) {
    throw Error(ErrorCode::kParse, std::string(flag) + " \"" + std::string(text.substr(0, 128)) +
                                       "\": " + why + " (expected NAME=HOST:PORT or HOST:PORT)");
  };
  ScanTarget t;
  t.kind = kind;
  std::string_view addr = text;
  // NAME=HOST:PORT: the address is after the last '=' (a name may hold '=', an address not).
  if (const auto eq = text.rfind('='); eq != std::string_view::npos) {
    if (eq == 0) fail("empty node name");
    t.name = std::string(text.substr(0, eq));
    addr = text.substr(eq + 1);
  }
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0) fail("no HOST:PORT");
  std::string_view host = addr.substr(0, colon);
  const std::string_view port = addr.substr(colon + 1);
  unsigned value = 0;
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || p != port.data() + port.size() || value == 0 || value > 65535) {
    fail("port \"" + std::string(port.substr(0, 16)) + "\" is not 1..65535");
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') fail("unbalanced [ ] around an IPv6 address");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    fail("write an IPv6 address in brackets, [::1]:6379");
  }
  t.host = std::string(host);
  t.port = static_cast<std::uint16_t>(value);
  if (t.name.empty()) t.name = std::string(addr);
  if (t.name.size() > kMaxNodeNameBytes) fail("node name too long");
  return t;
}

bool uri_decode(std::string_view in, std::string& out) {
  out.clear();
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// The longest line or bulk string a reply may hold (a key: as KeySource's limit).
constexpr std::size_t kMaxItemBytes = KeySource::kMaxKeyBytes;
// The most elements one SCAN reply may announce (COUNT 1000 is a hint; Redis returns about it).
constexpr std::int64_t kMaxScanBatch = 1 << 20;

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

// ---- Redis: SCAN cursor COUNT 1000 until the cursor is back at 0 ---------------------------------

std::string resp_command(std::initializer_list<std::string_view> argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto a : argv) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += "\r\n";
  }
  return out;
}

// A RESP header line "<type><number>": the number, checked to be in [min, max].
std::int64_t resp_count(Connection& c, std::string_view line, char type, std::int64_t min,
                        std::int64_t max, const char* what) {
  if (!line.empty() && line.front() == '-') {
    c.fail("SCAN answered \"" + std::string(line.substr(1, 200)) + "\"" +
           (line.starts_with("-NOAUTH") ? " (chash detect does not authenticate)" : ""));
  }
  std::int64_t v = 0;
  bool ok = !line.empty() && line.front() == type;
  if (ok) {
    const char* e = line.data() + line.size();
    const auto [p, ec] = std::from_chars(line.data() + 1, e, v);
    ok = ec == std::errc() && p == e && v >= min && v <= max;
  }
  if (!ok) {
    c.fail(std::string("unexpected reply to SCAN (") + what + "): \"" +
           std::string(line.substr(0, 64)) + "\"");
  }
  return v;
}

std::string_view resp_bulk(Connection& c, const char* what) {
  const std::string_view head = c.line();
  const auto n = resp_count(c, head, '$', 0, static_cast<std::int64_t>(kMaxItemBytes), what);
  return c.block(static_cast<std::size_t>(n));
}

std::vector<std::string> scan_redis(Connection& c, std::uint64_t limit) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    c.send(resp_command({"SCAN", cursor, "COUNT", "1000"}));
    resp_count(c, c.line(), '*', 2, 2, "not a two-element array");
    cursor = std::string(resp_bulk(c, "cursor"));
    if (cursor.empty() || cursor.find_first_not_of("0123456789") != std::string::npos) {
      c.fail("SCAN returned cursor \"" + cursor.substr(0, 32) + "\"");
    }
    const auto n = resp_count(c, c.line(), '*', 0, kMaxScanBatch, "keys");
    for (std::int64_t i = 0; i < n; ++i) {
      const std::string_view key = resp_bulk(c, "key");
      if (keys.size() < limit) keys.emplace_back(key);
    }
  } while (cursor != "0" && keys.size() < limit);
  return keys;
}

// ---- memcached: lru_crawler metadump all -------------------------------------------------------
// One line per item, "key=<URI-encoded key> exp=... la=... cas=... ...", then "END". BUSY when
// another crawl is running: retried for up to the timeout.

std::vector<std::string> scan_memcached(Connection& c, std::uint64_t limit,
                                        std::chrono::milliseconds timeout) {
  std::vector<std::string> keys;
  const auto give_up = Clock::now() + timeout;
  std::string key;
  for (;;) {
    c.send("lru_crawler metadump all\r\n");
    std::string_view l = c.line();
    if (l.starts_with("BUSY") && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    for (;; l = c.line()) {
      if (l == "END") return keys;
      if (!l.starts_with("key=")) {
        c.fail("lru_crawler metadump answered \"" + std::string(l.substr(0, 200)) +
               "\" (memcached 1.4.31 or later with the LRU crawler enabled is needed)");
      }
      const std::string_view field = l.substr(4, l.find(' ') - 4);
      if (!uri_decode(field, key)) {
        c.fail("metadump key \"" + std::string(field.substr(0, 64)) + "\" is not URI-encoded");
      }
      keys.push_back(key);
      if (keys.size() >= limit) return keys;  // the rest of the dump is dropped with the socket
    }
  }
}

}  // namespace

std::vector<std::string> scan_keys(const ScanTarget& target, std::uint64_t limit,
                                   std::chrono::milliseconds timeout) {
  if (limit == 0) return {};
  Connection c(target, timeout);
  if (target.kind == ScanTarget::Kind::kRedis) return scan_redis(c, limit);
  return scan_memcached(c, limit, timeout);
}

}  // namespace chash::cli
