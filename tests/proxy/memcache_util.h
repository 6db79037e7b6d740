// SPDX-License-Identifier: Apache-2.0
// Test helpers for memcache pools: a blocking text-protocol client and memcached processes on
// unix sockets (shared by the memcache and warm-up end-to-end tests).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "e2e_util.h"
#include "proto/memcache/binary.h"
#include "proto/memcache/protocol.h"

namespace chash::proxy::testing {

// ---- A blocking memcached text-protocol client (5 s timeouts) --------------------------------

inline bool is_retrieval_request(std::string_view r) {
  return r.starts_with("get ") || r.starts_with("gets ") || r.starts_with("gat ") ||
         r.starts_with("gats ");
}

class McClient {
 public:
  explicit McClient(int fd) : fd_(fd) {}
  McClient(McClient&& o) noexcept : fd_(std::exchange(o.fd_, -1)), in_(std::move(o.in_)) {}
  ~McClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool send(std::string_view bytes) { return send_all(fd_, bytes); }
  // One whole reply: a retrieval's VALUE blocks up to END (or its error line), else one line.
  // "<eof>" / "<bad reply ...>" mark what went wrong.
  std::string read(bool retrieval, bool meta = false) {
    memcache::ReplyParser p(std::size_t{64} << 20);
    p.expect_values(retrieval);
    p.expect_meta(meta);
    std::string out;
    for (;;) {
      const auto r = p.parse(in_);
      if (r == memcache::ParseResult::kDone) {
        out += p.span().in(in_);
        const auto kind = p.kind();
        p.next();
        in_.erase(0, p.start());
        p.consume(p.start());
        if (kind != memcache::ReplyKind::kValue) return out;
        continue;
      }
      if (r == memcache::ParseResult::kError) return out + "<bad reply: " + p.error() + ">";
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out + "<eof>";
      in_.append(buf, static_cast<std::size_t>(n));
    }
  }
  // (A meta command — mg, ms, md, ma, me, mn — gets its one-element reply.)
  std::string call(std::string_view request) {
    send(request);
    const bool meta =
        request.size() > 2 && request[0] == 'm' && (request[2] == ' ' || request[2] == '\r');
    return read(is_retrieval_request(request), meta);
  }
  bool closed_by_peer() { return testing::closed_by_peer(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string in_;
};

inline std::string value(std::string_view key, std::string_view data, int flags = 0) {
  return "VALUE " + std::string(key) + " " + std::to_string(flags) + " " +
         std::to_string(data.size()) + "\r\n" + std::string(data) + "\r\n";
}
inline std::string set(std::string_view key, std::string_view data, std::string_view verb = "set") {
  return std::string(verb) + " " + std::string(key) + " 0 0 " + std::to_string(data.size()) +
         "\r\n" + std::string(data) + "\r\n";
}

// ---- A blocking memcached binary-protocol client -------------------------------------------

// One response packet (proto/memcache/binary.h).
struct BinResp {
  std::uint8_t opcode = 0;
  std::uint16_t status = 0xffff;  // 0xffff: none (EOF or timeout)
  std::uint32_t opaque = 0;
  std::uint64_t cas = 0;
  std::string extras, key, value;
  std::uint32_t flags() const {
    return extras.size() == 4 ? memcache::binary::be32(extras.data()) : ~0u;
  }
  std::uint64_t number() const {
    return value.size() == 8 ? memcache::binary::be64(value.data()) : ~0ull;
  }
};

inline std::string be32s(std::uint32_t v) {
  std::string s;
  memcache::binary::append_be32(s, v);
  return s;
}
inline std::string be64s(std::uint64_t v) {
  std::string s;
  memcache::binary::append_be64(s, v);
  return s;
}

inline std::string packet(std::uint8_t opcode, std::string_view key, std::string_view extras = {},
                          std::string_view value = {}, std::uint32_t opaque = 0,
                          std::uint64_t cas = 0) {
  std::string p;
  p += static_cast<char>(memcache::binary::kRequestMagic);
  p += static_cast<char>(opcode);
  p += static_cast<char>(key.size() >> 8);
  p += static_cast<char>(key.size());
  p += static_cast<char>(extras.size());
  p += std::string(3, '\0');
  memcache::binary::append_be32(
      p, static_cast<std::uint32_t>(extras.size() + key.size() + value.size()));
  memcache::binary::append_be32(p, opaque);
  memcache::binary::append_be64(p, cas);
  p += extras;
  p += key;
  p += value;
  return p;
}
inline std::string store(std::uint8_t opcode, std::string_view key, std::string_view value,
                         std::uint32_t flags = 0, std::uint32_t exptime = 0,
                         std::uint32_t opaque = 0, std::uint64_t cas = 0) {
  return packet(opcode, key, be32s(flags) + be32s(exptime), value, opaque, cas);
}
inline std::string arith(std::uint8_t opcode, std::string_view key, std::uint64_t delta,
                         std::uint64_t initial, std::uint32_t exptime, std::uint32_t opaque = 0) {
  return packet(opcode, key, be64s(delta) + be64s(initial) + be32s(exptime), {}, opaque);
}

// A blocking binary-protocol client (5 s timeouts).
class BinClient {
 public:
  explicit BinClient(int fd) : fd_(fd) {}
  BinClient(BinClient&& o) noexcept : fd_(std::exchange(o.fd_, -1)), in_(std::move(o.in_)) {}
  ~BinClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool send(std::string_view bytes) { return testing::send_all(fd_, bytes); }
  BinResp read() {
    BinResp r;
    while (in_.size() < memcache::binary::kHeaderSize ||
           in_.size() < memcache::binary::kHeaderSize + body_len()) {
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return r;
      in_.append(buf, static_cast<std::size_t>(n));
    }
    const char* h = in_.data();
    if (static_cast<unsigned char>(h[0]) != memcache::binary::kResponseMagic) {
      r.status = 0xfffe;  // not a response: the test sees a status no server sends
      return r;
    }
    r.opcode = static_cast<std::uint8_t>(h[1]);
    const std::size_t keylen = memcache::binary::be16(h + 2),
                      extlen = static_cast<unsigned char>(h[4]);
    r.status = memcache::binary::be16(h + 6);
    r.opaque = memcache::binary::be32(h + 12);
    r.cas = memcache::binary::be64(h + 16);
    const std::size_t body = body_len();
    r.extras = in_.substr(memcache::binary::kHeaderSize, extlen);
    r.key = in_.substr(memcache::binary::kHeaderSize + extlen, keylen);
    r.value = in_.substr(memcache::binary::kHeaderSize + extlen + keylen, body - extlen - keylen);
    in_.erase(0, memcache::binary::kHeaderSize + body);
    return r;
  }
  BinResp call(std::string_view request) {
    send(request);
    return read();
  }
  bool closed_by_peer() { return in_.empty() && testing::closed_by_peer(fd_); }

 private:
  std::size_t body_len() const { return memcache::binary::be32(in_.data() + 8); }
  int fd_;
  std::string in_;
};

// ---- memcached processes ---------------------------------------------------------------------

class MemcachedServer {
 public:
  MemcachedServer(const fs::path& dir, const std::string& name)
      : server_((dir / (name + ".sock")).string()) {}
  const std::string& socket() const { return server_.socket(); }
  bool start() {
    std::vector<std::string> args = {"memcached", "-s", socket(), "-U", "0", "-t", "1", "-m", "64"};
    if (::geteuid() == 0) {  // memcached refuses to run as root without -u
      args.push_back("-u");
      args.push_back("root");
    }
    return server_.start(args);
  }
  void stop() { server_.stop(); }
  pid_t pid() const { return server_.pid(); }
  McClient client() const { return McClient(testing::dial_unix(socket())); }

 private:
  UnixSocketServer server_;
};

// A test of memcache pools over `n` real memcached processes (m1..mn, unix sockets in a test
// directory) and an in-process proxy; servers stopped with SIGSTOP (listed in `stopped`) are
// resumed before they are killed.
class MemcacheServersTest : public ::testing::Test {
 protected:
  void start_servers(const std::string& dir_prefix, int n) {
    std::vector<std::string> names;
    for (int i = 1; i <= n; ++i) names.push_back("m" + std::to_string(i));
    start_servers(dir_prefix, names);
  }
  void start_servers(const std::string& dir_prefix, const std::vector<std::string>& names) {
    ASSERT_TRUE(have_program("memcached")) << "memcached not installed (scripts/bootstrap.sh)";
    ::signal(SIGPIPE, SIG_IGN);
    dir = make_test_dir(dir_prefix);
    for (const std::string& name : names) {
      servers.push_back(std::make_unique<MemcachedServer>(dir, name));
      ASSERT_TRUE(servers.back()->start()) << "memcached " << name << " did not start";
    }
  }
  void TearDown() override {
    for (const pid_t pid : stopped) ::kill(pid, SIGCONT);
    proxy.stop();
    servers.clear();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // "    - <socket>:1 m<i>\n" for servers first..last (1-based): a pool's `servers:` lines.
  std::string server_lines(int first, int last) const {
    std::string y;
    for (int i = first; i <= last; ++i) {
      y += "    - " + servers[static_cast<std::size_t>(i - 1)]->socket() + ":1 m" +
           std::to_string(i) + "\n";
    }
    return y;
  }
  // Server i (0-based) stopped with SIGSTOP (every thread: its requests time out), and resumed.
  void stop(std::size_t i) {
    ASSERT_TRUE(stop_process(servers[i]->pid()));
    stopped.push_back(servers[i]->pid());
  }
  void resume(std::size_t i) {
    ::kill(servers[i]->pid(), SIGCONT);
    std::erase(stopped, servers[i]->pid());
  }
  // A request sent to server i (0-based) directly.
  std::string on(std::size_t i, const std::string& request) {
    return servers[i]->client().call(request);
  }
  const Pool& pool(std::size_t i = 0) { return *proxy->topology()->pools[i]; }
  McClient client(std::size_t pool_index = 0) {
    return McClient(dial_tcp(proxy->port(pool_index)));
  }

  fs::path dir;
  std::vector<std::unique_ptr<MemcachedServer>> servers;
  std::vector<pid_t> stopped;
  ProxyRunner proxy;
};

}  // namespace chash::proxy::testing
