// SPDX-License-Identifier: Apache-2.0
// systemd's notify protocol, units: one datagram to $NOTIFY_SOCKET, a path or an "@" abstract
// name; nothing without it (control/sd_notify.h).
#include "control/sd_notify.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "e2e_util.h"

namespace chash::proxy {
namespace {

// A datagram socket bound to `name` ("/path" or "@abstract"), as systemd's notify socket.
int bind_notify_socket(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (name[0] == '@') {
    a.sun_path[0] = '\0';
  } else {
    ++len;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    ::close(fd);
    return -1;
  }
  testing::set_timeouts(fd, 5);
  return fd;
}

std::string receive(int fd) {
  char buf[4096];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

TEST(ProxySdNotify, PathAndAbstractSockets) {
  const auto dir = testing::make_test_dir("chash-sd");
  for (const std::string& name :
       {(dir / "notify.sock").string(), "@chash-sd-test-" + std::to_string(::getpid())}) {
    const int fd = bind_notify_socket(name);
    ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
    ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
    EXPECT_TRUE(sd_notify_ready("serving 127.0.0.1:1\nsecond line"));
    EXPECT_EQ(receive(fd), "READY=1\nMAINPID=" + std::to_string(::getpid()) +
                               "\nSTATUS=serving 127.0.0.1:1;second line\n");
    EXPECT_TRUE(sd_notify_reloading());
    const std::string r = receive(fd);
    EXPECT_EQ(r.rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << r;
    EXPECT_TRUE(sd_notify_stopping());
    EXPECT_EQ(receive(fd), "STOPPING=1\nSTATUS=stopping\n");
    ::close(fd);
  }
  ::setenv("NOTIFY_SOCKET", "relative/path", 1);
  EXPECT_FALSE(sd_notify("READY=1"));
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(sd_notify("READY=1"));  // not under systemd: a no-op
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace chash::proxy
