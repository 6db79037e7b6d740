// SPDX-License-Identifier: Apache-2.0
#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chash::proxy::net {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool fill_unix(const std::string& path, sockaddr_un& sun, std::string& error) {
  std::memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  if (path.size() >= sizeof sun.sun_path) {
    error = "unix socket path too long: " + path;
    return false;
  }
  std::memcpy(sun.sun_path, path.data(), path.size());
  return true;
}

}  // namespace

bool resolve_numeric(const Address& a, sockaddr_storage& ss, socklen_t& len) {
  std::memset(&ss, 0, sizeof ss);
  if (!a.unix_path.empty()) {
    sockaddr_un sun;
    std::string error;
    if (!fill_unix(a.unix_path, sun, error)) return false;
    std::memcpy(&ss, &sun, sizeof sun);
    len = sizeof sun;
    return true;
  }
  auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
  if (::inet_pton(AF_INET, a.host.c_str(), &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons(a.port);
    len = sizeof(sockaddr_in);
    return true;
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
  std::string host = a.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (::inet_pton(AF_INET6, host.c_str(), &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(a.port);
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

bool resolve(const Address& a, sockaddr_storage& ss, socklen_t& len, std::string& error) {
  if (resolve_numeric(a, ss, len)) return true;
  if (!a.unix_path.empty()) {
    error = "unix socket path too long: " + a.unix_path;
    return false;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(a.port);
  const int rc = ::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    error = "cannot resolve " + a.host + ": " + ::gai_strerror(rc);
    if (res != nullptr) ::freeaddrinfo(res);
    return false;
  }
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  ::freeaddrinfo(res);
  return true;
}

int connect_addr(const sockaddr_storage& ss, socklen_t len, std::string_view what,
                 std::string& error) {
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno_text("socket");
    return -1;
  }
  if (ss.ss_family != AF_UNIX) set_nodelay(fd);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    error = errno_text(("connect to " + std::string(what)).c_str());
    ::close(fd);
    return -1;
  }
  return fd;
}

int listen_on(const Address& address, int backlog, std::string& error) {
  if (!address.unix_path.empty()) {
    sockaddr_un sun;
    if (!fill_unix(address.unix_path, sun, error)) return -1;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = errno_text("socket");
      return -1;
    }
    ::unlink(address.unix_path.c_str());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0 ||
        ::listen(fd, backlog) != 0) {
      error = errno_text(("listen on " + address.unix_path).c_str());
      ::close(fd);
      return -1;
    }
    if (address.mode != 0) ::chmod(address.unix_path.c_str(), address.mode);
    return fd;
  }
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!resolve(address, ss, len, error)) return -1;
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno_text("socket");
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, backlog) != 0) {
    error = errno_text(("listen on " + address.text()).c_str());
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_to(const Address& address, std::string& error) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!resolve(address, ss, len, error)) return -1;
  return connect_addr(ss, len, address.text(), error);
}

std::uint16_t local_port(int fd) {
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

bool set_nodelay(int fd) {
  const int one = 1;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
}

bool set_keepalive(int fd) {
  const int one = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) == 0;
}

int socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace chash::proxy::net
