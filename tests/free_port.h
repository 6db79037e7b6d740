// SPDX-License-Identifier: Apache-2.0
// A TCP port on 127.0.0.1 for a server a test starts (shared by tests/proxy/e2e_util.h and
// tests/tools/live_servers.h).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <mutex>
#include <random>
#include <set>

namespace chash::testing {

namespace detail {
// Whether 127.0.0.1:port can be bound now (then released).
inline bool bindable(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}
}  // namespace detail

// Taken below the kernel's ephemeral range (ip_local_port_range), where no outgoing
// connection's source port ever lands. A port that bind(0) hands out lies inside that range and
// is free only until some connect() anywhere on the machine takes it as its source port; a test
// binding it later then fails ("admin: listen on 127.0.0.1:53157: Address already in use", in
// one CI run). Random, so that test processes running side by side rarely pick the same one;
// never the same twice in one process; checked by a bind. The race left: another process
// binding the same port between this check and the test's own bind — a random pick among ~20k
// makes that rare.
inline std::uint16_t free_port() {
  static std::mutex mu;
  static std::set<std::uint16_t> given;
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  const std::lock_guard lock(mu);
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  constexpr int kLow = 10000;
  if (ephemeral_low > kLow + 1000) {
    for (int tries = 0; tries < 1000; ++tries) {
      const auto port = static_cast<std::uint16_t>(
          kLow + static_cast<int>(rng() % static_cast<unsigned>(ephemeral_low - kLow)));
      if (given.count(port) != 0 || !detail::bindable(port)) continue;
      given.insert(port);
      return port;
    }
  }
  // An unusual range (or nothing free below it): the kernel's choice.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace chash::testing
