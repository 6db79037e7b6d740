// SPDX-License-Identifier: Apache-2.0
#include "control/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace chash::proxy {

namespace {
std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = c == '\n' ? ';' : c;
  return out;
}
}  // namespace

bool sd_notify(std::string_view state) {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr) return false;
  const std::string_view name = env;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() < 2 || name.size() >= sizeof addr.sun_path ||
      (name[0] != '/' && name[0] != '@')) {
    return false;
  }
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name[0] == '@') addr.sun_path[0] = '\0';  // abstract: the length bounds the name
  // A path is sent with its terminating NUL counted, an abstract name without (as systemd).
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                               (name[0] == '/' ? 1 : 0));
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const ssize_t n = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&addr), len);
  ::close(fd);
  return n == static_cast<ssize_t>(state.size());
}

bool sd_notify_ready(std::string_view status) {
  return sd_notify("READY=1\nMAINPID=" + std::to_string(::getpid()) +
                   "\nSTATUS=" + one_line(status) + "\n");
}

bool sd_notify_reloading() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const unsigned long long usec = static_cast<unsigned long long>(ts.tv_sec) * 1000000ull +
                                  static_cast<unsigned long long>(ts.tv_nsec) / 1000ull;
  return sd_notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=reloading\n");
}

bool sd_notify_stopping() { return sd_notify("STOPPING=1\nSTATUS=stopping\n"); }

}  // namespace chash::proxy
