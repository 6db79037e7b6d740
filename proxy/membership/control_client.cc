// SPDX-License-Identifier: Apache-2.0
#include "membership/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <memory>

#include "net/socket.h"
#include "net/tls.h"
#include "proto/redis/resp.h"

namespace chash::proxy {

namespace {

constexpr std::size_t kMaxString = std::size_t{4} << 20;
constexpr std::int64_t kMaxElements = 100000;

// The integer on a RESP header line from `pos` (after the type byte); false if malformed.
int header(std::string_view in, std::size_t& pos, std::int64_t& n) {
  const std::size_t nl = in.find("\r\n", pos);
  if (nl == std::string_view::npos) return in.size() - pos > 32 ? -1 : 0;
  const auto [p, ec] = std::from_chars(in.data() + pos, in.data() + nl, n);
  if (ec != std::errc() || p != in.data() + nl) return -1;
  pos = nl + 2;
  return 1;
}

}  // namespace

int parse_resp(std::string_view in, std::size_t& pos, RespValue& out, int depth) {
  if (depth > 4) return -1;
  if (pos >= in.size()) return 0;
  std::size_t at = pos + 1;
  out.type = in[pos];
  switch (out.type) {
    case '+':
    case '-':
    case ':': {
      const std::size_t nl = in.find("\r\n", at);
      if (nl == std::string_view::npos) return in.size() - at > kMaxString ? -1 : 0;
      out.str.assign(in.substr(at, nl - at));
      pos = nl + 2;
      return 1;
    }
    case '$': {
      std::int64_t n = 0;
      const int h = header(in, at, n);
      if (h <= 0) return h;
      if (n == -1) {
        out.nil = true;
        pos = at;
        return 1;
      }
      if (n < 0 || static_cast<std::uint64_t>(n) > kMaxString) return -1;
      const auto len = static_cast<std::size_t>(n);
      if (in.size() - at < len + 2) return 0;
      if (in.substr(at + len, 2) != "\r\n") return -1;
      out.str.assign(in.substr(at, len));
      pos = at + len + 2;
      return 1;
    }
    case '*': {
      std::int64_t n = 0;
      const int h = header(in, at, n);
      if (h <= 0) return h;
      if (n == -1) {
        out.nil = true;
        pos = at;
        return 1;
      }
      if (n < 0 || n > kMaxElements) return -1;
      out.items.clear();
      for (std::int64_t i = 0; i < n; ++i) {
        RespValue item;
        const int r = parse_resp(in, at, item, depth + 1);
        if (r <= 0) return r;
        out.items.push_back(std::move(item));
      }
      pos = at;
      return 1;
    }
    default:
      return -1;
  }
}

namespace {

// Connects to `address`, [TLS], writes `request` and reads until done(in) or the deadline; the
// bytes read. `error` says why it ended early.
std::string converse(const Endpoint& to, std::string_view request,
                     std::chrono::milliseconds timeout, const net::TlsContext* tls,
                     const std::function<bool(std::string&)>& done, std::string& error) {
  std::string in;
  const Address& address = to.address;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (to.resolved != nullptr) {
    ss = *to.resolved;
    len = to.len;
  } else if (!net::resolve(address, ss, len, error)) {
    return in;
  }
  const int fd = net::connect_addr(ss, len, address.text(), error);
  if (fd < 0) return in;
  std::unique_ptr<net::TlsStream> stream;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t off = 0;
  bool connected = false;
  auto fail = [&](std::string why) {
    if (error.empty()) error = std::move(why);
  };
  while (!done(in)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      fail("timed out after " + std::to_string(timeout.count()) + " ms");
      break;
    }
    // Plaintext waits to write while there is something to write; TLS as OpenSSL asks.
    const bool want_out = !connected || (stream ? stream->wants_write() : off < request.size());
    pollfd p{fd, static_cast<short>(POLLIN | (want_out ? POLLOUT : 0)), 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // the deadline check above ends it
    if (!connected) {
      if (const int e = net::socket_error(fd); e != 0) {
        fail(std::string("connect: ") + std::strerror(e));
        break;
      }
      if (!(p.revents & (POLLOUT | POLLIN))) continue;
      connected = true;
      if (tls != nullptr) {
        std::string why;
        stream = net::TlsStream::connect(*tls, fd, address.host, why);
        if (!stream) {
          fail(why);
          break;
        }
      }
    }
    // Write what is left (TLS: also whenever the socket moved, the handshake may need it).
    if (off < request.size()) {
      const ssize_t n = stream
                            ? stream->send(request.data() + off, request.size() - off)
                            : ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        fail(stream && errno == EPROTO ? stream->error()
                                       : std::string("write: ") + std::strerror(errno));
        break;
      }
    }
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR)) && !stream) continue;
    char buf[16384];
    const ssize_t n = stream ? stream->recv(buf, sizeof buf) : ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) {
      fail("connection closed");
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      fail(stream && errno == EPROTO ? stream->error()
                                     : std::string("read: ") + std::strerror(errno));
      break;
    }
    in.append(buf, static_cast<std::size_t>(n));
    if (in.size() > kMaxControlInput) {
      fail("reply over " + std::to_string(kMaxControlInput >> 20) + " MiB");
      break;
    }
  }
  ::close(fd);
  return in;
}

}  // namespace

std::size_t append_redis_prelude(const PoolConfig& pc, const ServerConfig& s, std::string& out) {
  std::size_t n = 0;
  const auto& password = s.password ? s.password : pc.server_password;
  const auto& user = s.user ? s.user : pc.server_user;
  if (password && user) {
    redis::append_command(out, {"AUTH", *user, *password});
    ++n;
  } else if (password) {
    redis::append_command(out, {"AUTH", *password});
    ++n;
  }
  if (pc.redis_db != 0) {
    const std::string db = std::to_string(pc.redis_db);
    redis::append_command(out, {"SELECT", db});
    ++n;
  }
  return n;
}

QueryResult query(const Endpoint& to, std::string_view request, std::size_t replies,
                  std::chrono::milliseconds timeout, const net::TlsContext* tls) {
  QueryResult out;
  std::size_t pos = 0;
  bool malformed = false;
  // Done when `replies` values have been parsed (or the bytes are not RESP).
  const auto done = [&](std::string& in) {
    while (out.replies.size() < replies) {
      RespValue v;
      std::size_t at = pos;
      const int rc = parse_resp(in, at, v);
      if (rc == 0) return false;
      if (rc < 0) {
        malformed = true;
        return true;
      }
      pos = at;
      out.replies.push_back(std::move(v));
    }
    return true;
  };
  converse(to, request, timeout, tls, done, out.error);
  if (malformed && out.error.empty()) out.error = "malformed reply";
  return out;
}

std::string exchange(const Endpoint& to, std::string_view request, std::string_view until,
                     std::chrono::milliseconds timeout, const net::TlsContext* tls,
                     std::string& error) {
  error.clear();
  return converse(
      to, request, timeout, tls, [until](std::string& in) { return in.ends_with(until); }, error);
}

void stream(const Endpoint& to, std::string_view request, std::chrono::milliseconds timeout,
            const net::TlsContext* tls, const std::function<bool(std::string&)>& each,
            std::string& error) {
  error.clear();
  converse(to, request, timeout, tls, each, error);
}

}  // namespace chash::proxy
