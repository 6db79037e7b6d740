// SPDX-License-Identifier: Apache-2.0
// Real redis-server and memcached processes for the CLI tests that talk to live servers (detect,
// rebalance): started on 127.0.0.1 with free ports and killed after (scripts/bootstrap.sh
// installs both), plus raw socket helpers. Every wait is bounded.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../free_port.h"

namespace chash::testing {

using namespace std::chrono_literals;

// ---- Sockets --------------------------------------------------------------------------------------

// A blocking connection to 127.0.0.1:port with 5 s timeouts; -1 if refused.
inline int dial(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends `request` and reads until `replies` lines ending in "\r\n" arrived (or timeout/EOF).
inline bool exchange(std::uint16_t port, const std::string& request, std::size_t replies) {
  const int fd = dial(port);
  if (fd < 0) return false;
  std::size_t off = 0;
  while (off < request.size()) {
    const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  std::string in;
  std::size_t lines = 0;
  char buf[65536];
  while (lines < replies) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  }
  ::close(fd);
  return lines >= replies;
}

// ---- Server processes -----------------------------------------------------------------------------

inline bool have_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

class Server {
 public:
  Server(std::vector<std::string> argv, std::uint16_t port) : port_(port) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> av;
      for (auto& a : argv) av.push_back(a.data());
      av.push_back(nullptr);
      ::execvp(av[0], av.data());
      ::_exit(127);
    }
    for (int i = 0; i < 500 && !ready_; ++i) {  // up to 5 s
      const int fd = dial(port_);
      if (fd >= 0) {
        ::close(fd);
        ready_ = true;
      } else {
        std::this_thread::sleep_for(10ms);
      }
    }
  }
  ~Server() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  bool ready() const { return ready_; }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::uint16_t port_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

inline std::unique_ptr<Server> start_redis(const std::filesystem::path& dir) {
  const std::uint16_t port = free_port();
  return std::make_unique<Server>(
      std::vector<std::string>{"redis-server", "--port", std::to_string(port), "--bind",
                               "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
                               dir.string(), "--logfile",
                               (dir / ("redis-" + std::to_string(port) + ".log")).string()},
      port);
}

inline std::unique_ptr<Server> start_memcached() {
  const std::uint16_t port = free_port();
  std::vector<std::string> argv = {
      "memcached", "-l", "127.0.0.1", "-p", std::to_string(port), "-U", "0", "-t", "1", "-m", "64"};
  if (::geteuid() == 0) argv.insert(argv.end(), {"-u", "nobody"});  // memcached refuses root
  return std::make_unique<Server>(std::move(argv), port);
}

}  // namespace chash::testing
