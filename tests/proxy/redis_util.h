// SPDX-License-Identifier: Apache-2.0
// Test helpers for Redis pools: a blocking RESP client and redis-server processes on unix
// sockets or TCP ports of 127.0.0.1 (started by the tests, stopped after).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "e2e_util.h"
#include "proto/redis/resp.h"

namespace chash::proxy::testing {

// ---- A blocking RESP client (5 s timeouts) --------------------------------------------------

class RespClient {
 public:
  static int dial_tcp(std::uint16_t port) { return testing::dial_tcp(port); }
  static int dial_unix(const std::string& path) { return testing::dial_unix(path); }
  explicit RespClient(int fd) : fd_(fd) {}
  ~RespClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool send_raw(std::string_view bytes) { return send_all(fd_, bytes); }
  void send(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    std::string out;
    redis::append_command(out, v);
    send_raw(out);
  }
  // One whole reply, raw ("" on timeout / EOF).
  std::string read_reply() {
    for (;;) {
      const auto r = parser_.parse(in_);
      if (r == redis::ParseResult::kDone) {
        std::string out(parser_.span().in(in_));
        parser_.next();
        in_.erase(0, parser_.start());
        parser_.consume(parser_.start());
        return out;
      }
      if (r == redis::ParseResult::kError) return "<bad reply>";
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return "";
      in_.append(buf, static_cast<std::size_t>(n));
    }
  }
  std::string call(const std::vector<std::string>& argv) {
    send(argv);
    return read_reply();
  }
  // True when the peer closed the connection (EOF within the timeout).
  bool closed_by_peer() { return testing::closed_by_peer(fd_); }

 private:
  int fd_;
  std::string in_;
  redis::ReplyParser parser_;
};

inline std::string bulk(std::string_view s) {
  std::string o;
  redis::append_bulk(o, s);
  return o;
}

// ---- redis-server processes ------------------------------------------------------------------

class RedisServer {
 public:
  RedisServer(fs::path dir, std::string name, std::string password = "")
      : dir_(std::move(dir)),
        name_(std::move(name)),
        password_(std::move(password)),
        server_((dir_ / (name_ + ".sock")).string()) {}
  const std::string& socket() const { return server_.socket(); }

  bool start() {
    std::vector<std::string> args = {"redis-server",
                                     "--port",
                                     "0",
                                     "--unixsocket",
                                     socket(),
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--enable-debug-command",
                                     "yes",
                                     "--dir",
                                     dir_.string(),
                                     "--logfile",
                                     (dir_ / (name_ + ".log")).string()};
    if (!password_.empty()) {
      args.push_back("--requirepass");
      args.push_back(password_);
    }
    return server_.start(args);
  }
  void stop() { server_.stop(); }
  pid_t pid() const { return server_.pid(); }
  std::vector<std::string> keys() {
    RespClient c(RespClient::dial_unix(socket()));
    if (!password_.empty()) c.call({"AUTH", password_});
    c.send({"KEYS", "*"});
    std::string r = c.read_reply();
    redis::ReplyParser p;
    p.set_record_elements(true);
    std::vector<std::string> out;
    if (p.parse(r) != redis::ParseResult::kDone) return out;
    for (const auto& e : p.elements()) {
      const std::string_view b = e.in(r);
      const std::size_t nl = b.find("\r\n");
      out.emplace_back(b.substr(nl + 2, b.size() - nl - 4));
    }
    return out;
  }

 private:
  fs::path dir_;
  std::string name_, password_;
  UnixSocketServer server_;
};

// A redis-server on a TCP port of 127.0.0.1, optionally a replica of `master`.
class TcpRedisServer {
 public:
  bool start(const fs::path& dir, const std::string& name, std::uint16_t master = 0) {
    port_ = free_port();
    std::vector<std::string> argv = {"redis-server",
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--repl-diskless-sync-delay",  // replicas sync at once
                                     "0",
                                     "--dir",
                                     dir.string(),
                                     "--logfile",
                                     (dir / (name + ".log")).string()};
    if (master != 0) argv.insert(argv.end(), {"--replicaof", "127.0.0.1", std::to_string(master)});
    const std::uint16_t p = port_;
    return process_.start(argv, [p] {
      const int fd = dial_tcp(p);
      if (fd < 0) return false;
      ::close(fd);
      return true;
    });
  }
  void stop() { process_.stop(); }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string call(const std::vector<std::string>& argv) const {
    RespClient c(RespClient::dial_tcp(port_));
    return c.call(argv);
  }
  // GET calls it has answered (INFO commandstats).
  long gets() const {
    const std::string r = call({"INFO", "commandstats"});
    const std::size_t at = r.find("cmdstat_get:calls=");
    return at == std::string::npos ? 0L : std::stol(r.substr(at + 18));
  }

 private:
  std::uint16_t port_ = 0;
  ChildProcess process_;
};

inline bool have_redis() { return have_program("redis-server"); }

}  // namespace chash::proxy::testing
