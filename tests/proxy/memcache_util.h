// SPDX-License-Identifier: Apache-2.0
// Test helpers for memcache pools: a blocking text-protocol client and memcached processes on
// unix sockets (shared by the memcache and warm-up end-to-end tests).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "e2e_util.h"
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

}  // namespace chash::proxy::testing
