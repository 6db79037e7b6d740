// SPDX-License-Identifier: Apache-2.0
// Addresses (config's parse_address, Address::text) and the net/ socket helpers on loopback.
#include "net/socket.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "chash/error.h"
#include "config/config.h"

namespace chash::proxy {
namespace {

std::string address_error(std::string_view text) {
  try {
    parse_address(text, "listen");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AddressTest, HostPort) {
  const Address a = parse_address("127.0.0.1:6379", "listen");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6379);
  EXPECT_TRUE(a.unix_path.empty());
  EXPECT_EQ(a.text(), "127.0.0.1:6379");
  const Address named = parse_address("cache-1.internal:11211", "server");
  EXPECT_EQ(named.host, "cache-1.internal");
  EXPECT_EQ(named.port, 11211);
  EXPECT_EQ(parse_address("127.0.0.1:0", "listen").port, 0);
  EXPECT_EQ(parse_address("127.0.0.1:65535", "listen").port, 65535);
}

TEST(AddressTest, BracketedIpv6) {
  const Address a = parse_address("[::1]:6380", "listen");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.text(), "[::1]:6380");  // printed back with brackets
  // A bare IPv6 address splits at the last colon.
  const Address bare = parse_address("2001:db8::7:11211", "listen");
  EXPECT_EQ(bare.host, "2001:db8::7");
  EXPECT_EQ(bare.port, 11211);
  EXPECT_EQ(bare.text(), "[2001:db8::7]:11211");
}

TEST(AddressTest, UnixPathsWithAndWithoutMode) {
  const Address a = parse_address("/tmp/chash.sock", "listen");
  EXPECT_EQ(a.unix_path, "/tmp/chash.sock");
  EXPECT_EQ(a.mode, 0u);
  EXPECT_TRUE(a.host.empty());
  EXPECT_EQ(a.text(), "/tmp/chash.sock");
  const Address m = parse_address("/tmp/chash.sock 0666", "listen");
  EXPECT_EQ(m.unix_path, "/tmp/chash.sock");
  EXPECT_EQ(m.mode, 0666u);
  EXPECT_EQ(m.text(), "/tmp/chash.sock");  // without the mode
}

TEST(AddressTest, ErrorsNameWhatAndTheText) {
  EXPECT_EQ(address_error("localhost"),
            "listen: expected host:port or /unix/path, got 'localhost'");
  EXPECT_EQ(address_error(":6379"), "listen: expected host:port or /unix/path, got ':6379'");
  EXPECT_EQ(address_error(""), "listen: expected host:port or /unix/path, got ''");
  EXPECT_EQ(address_error("h:65536"), "listen: port '65536' is not a number from 0 to 65535");
  EXPECT_EQ(address_error("h:"), "listen: port '' is not a number from 0 to 65535");
  EXPECT_EQ(address_error("h:80x"), "listen: port '80x' is not a number from 0 to 65535");
  EXPECT_EQ(address_error("/tmp/s 0999"), "listen: '0999' is not an octal permission mode");
  EXPECT_EQ(address_error("/tmp/s 01777"), "listen: '01777' is not an octal permission mode");
}

// ---- Sockets ------------------------------------------------------------------------------------

// Waits up to 2 s for `events` on fd; returns the revents.
short wait_for(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, 2000) == 1 ? p.revents : 0;
}

TEST(SocketTest, ListenAndConnectOnLoopback) {
  std::string error;
  const int l = net::listen_on(parse_address("127.0.0.1:0", "listen"), 16, error);
  ASSERT_GE(l, 0) << error;
  const std::uint16_t port = net::local_port(l);
  ASSERT_NE(port, 0);
  const int c =
      net::connect_to(parse_address("127.0.0.1:" + std::to_string(port), "server"), error);
  ASSERT_GE(c, 0) << error;
  ASSERT_TRUE(wait_for(c, POLLOUT) & POLLOUT);
  EXPECT_EQ(net::socket_error(c), 0);
  ASSERT_TRUE(wait_for(l, POLLIN) & POLLIN);
  const int a = ::accept(l, nullptr, nullptr);
  ASSERT_GE(a, 0);
  EXPECT_EQ(::send(c, "hi", 2, 0), 2);
  char buf[4] = {};
  ASSERT_TRUE(wait_for(a, POLLIN) & POLLIN);
  EXPECT_EQ(::recv(a, buf, sizeof buf, 0), 2);
  EXPECT_EQ(std::string(buf, 2), "hi");
  EXPECT_TRUE(net::set_keepalive(c));
  EXPECT_TRUE(net::set_nodelay(c));
  ::close(a);
  ::close(c);
  ::close(l);
}

TEST(SocketTest, ListenOnABusyPortSaysWhich) {
  std::string error;
  const int l = net::listen_on(parse_address("127.0.0.1:0", "listen"), 16, error);
  ASSERT_GE(l, 0) << error;
  const std::string text = "127.0.0.1:" + std::to_string(net::local_port(l));
  EXPECT_EQ(net::listen_on(parse_address(text, "listen"), 16, error), -1);
  EXPECT_EQ(error, "listen on " + text + ": Address already in use");
  ::close(l);
}

TEST(SocketTest, ConnectToAClosedPortFails) {
  std::string error;
  const int l = net::listen_on(parse_address("127.0.0.1:0", "listen"), 16, error);
  ASSERT_GE(l, 0) << error;
  const std::string text = "127.0.0.1:" + std::to_string(net::local_port(l));
  ::close(l);  // nothing listens there now
  const int c = net::connect_to(parse_address(text, "server"), error);
  if (c < 0) {
    EXPECT_EQ(error, "connect to " + text + ": Connection refused");
  } else {  // non-blocking: the refusal arrives later
    wait_for(c, POLLOUT);
    EXPECT_EQ(net::socket_error(c), ECONNREFUSED);
    ::close(c);
  }
}

TEST(SocketTest, UnixSocketGetsItsModeAndAcceptsConnections) {
  char dir[] = "/tmp/chash-socket-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/p.sock";
  std::string error;
  const int l = net::listen_on(parse_address(path + " 0600", "listen"), 16, error);
  ASSERT_GE(l, 0) << error;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(net::local_port(l), 0);  // not a TCP socket
  const int c = net::connect_to(parse_address(path, "server"), error);
  ASSERT_GE(c, 0) << error;
  ASSERT_TRUE(wait_for(l, POLLIN) & POLLIN);
  const int a = ::accept(l, nullptr, nullptr);
  EXPECT_GE(a, 0);
  ::close(a);
  ::close(c);
  ::close(l);
  // A second listener on the same path replaces the stale socket file (it is unlinked first).
  const int again = net::listen_on(parse_address(path, "listen"), 16, error);
  EXPECT_GE(again, 0) << error;
  ::close(again);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(SocketTest, UnixPathTooLongIsAnError) {
  const std::string path = "/tmp/" + std::string(200, 'x');
  std::string error;
  EXPECT_EQ(net::listen_on(parse_address(path, "listen"), 16, error), -1);
  EXPECT_EQ(error, "unix socket path too long: " + path);
  error.clear();
  EXPECT_EQ(net::connect_to(parse_address(path, "server"), error), -1);
  EXPECT_EQ(error, "unix socket path too long: " + path);
}

}  // namespace
}  // namespace chash::proxy
