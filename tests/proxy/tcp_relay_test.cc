// SPDX-License-Identifier: Apache-2.0
// chash-proxy tcp pools end to end: tiny echo backends in this process (each greets a new
// connection with its own port, and the PROXY header it received when told to expect one), the
// proxy in-process on 127.0.0.1, and clients bound to many loopback sources 127.x.y.z.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chash/router.h"
#include "config/config.h"
#include "control/proxy.h"
#include "e2e_util.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::dial_tcp;
using testing::eventually;
using testing::send_all;

// ---- A tiny backend -----------------------------------------------------------------------------
// One thread, poll(). A connection gets "port=P proxy=HEX\n" (HEX: the PROXY header it read first,
// when expecting one; empty otherwise), then an echo of everything it sends; on EOF the backend
// writes what is left and "bye\n", then closes. It stops reading a connection with 256 KiB unsent
// (its own backpressure).

class EchoBackend {
 public:
  ~EchoBackend() { stop(); }

  void expect(ProxyProtocol p) { expect_ = p; }
  bool start(std::uint16_t port = 0) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1, size = 256 << 10;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // Fixed socket buffers (accepted sockets inherit them): the relay tests see the proxy's own
    // buffering, not megabytes of autotuned kernel buffers at the backend.
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 512) != 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
      return false;
    }
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    if (::pipe(wake_) != 0) return false;
    stopping_ = false;
    thread_ = std::thread([this] { run(); });
    return true;
  }
  // Closes the listener and every connection (clients see a reset or EOF; new connects are
  // refused).
  void stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    [[maybe_unused]] const auto n = ::write(wake_[1], "x", 1);
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  struct Conn {
    int fd;
    std::string in, out;
    bool header_done = false;
    bool eof = false;
  };

  static std::string hex(std::string_view s) {
    static const char* d = "0123456789abcdef";
    std::string o;
    for (const unsigned char c : s) {
      o += d[c >> 4];
      o += d[c & 15];
    }
    return o;
  }

  // The PROXY header at the front of c.in: its length, 0 if incomplete.
  std::size_t header_length(const Conn& c) const {
    if (expect_ == ProxyProtocol::kV1) {
      const std::size_t e = c.in.find("\r\n");
      return e == std::string::npos ? 0 : e + 2;
    }
    if (c.in.size() < 16) return 0;
    const std::size_t n =
        16 + (static_cast<unsigned char>(c.in[14]) << 8 | static_cast<unsigned char>(c.in[15]));
    return c.in.size() >= n ? n : 0;
  }

  void greet(Conn& c, std::string_view header) {
    c.out += "port=" + std::to_string(port_) + " proxy=" + hex(header) + "\n";
    c.header_done = true;
  }

  void run() {
    std::vector<Conn> conns;
    while (!stopping_) {
      std::vector<pollfd> fds;
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const Conn& c : conns) {
        short ev = 0;
        if (!c.eof && c.out.size() < (256u << 10)) ev |= POLLIN;
        if (!c.out.empty()) ev |= POLLOUT;
        fds.push_back({c.fd, ev, 0});
      }
      if (::poll(fds.data(), fds.size(), 1000) < 0) continue;
      if (fds[1].revents & POLLIN) {
        for (;;) {
          const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          accepted_.fetch_add(1);
          Conn c{fd, {}, {}};
          if (expect_ == ProxyProtocol::kNone) greet(c, "");
          conns.push_back(std::move(c));
        }
      }
      for (std::size_t i = 0; i + 2 < fds.size() && i < conns.size(); ++i) {
        Conn& c = conns[i];
        const short re = fds[i + 2].revents;
        bool dead = false;
        if (re & (POLLIN | POLLHUP | POLLERR)) {
          char buf[65536];
          const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
          if (n > 0) {
            if (c.header_done) {
              c.out.append(buf, static_cast<std::size_t>(n));
            } else {
              c.in.append(buf, static_cast<std::size_t>(n));
              if (const std::size_t h = header_length(c); h != 0) {
                greet(c, std::string_view(c.in).substr(0, h));
                c.out += c.in.substr(h);
                c.in.clear();
              }
            }
          } else if (n == 0) {
            c.eof = true;
            c.out += "bye\n";
          } else if (errno != EAGAIN && errno != EINTR) {
            dead = true;
          }
        }
        if (!dead && !c.out.empty()) {
          const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
          if (n > 0) {
            c.out.erase(0, static_cast<std::size_t>(n));
          } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            dead = true;
          }
        }
        if (dead || (c.eof && c.out.empty())) {
          ::close(c.fd);
          c.fd = -1;
        }
      }
      conns.erase(
          std::remove_if(conns.begin(), conns.end(), [](const Conn& c) { return c.fd < 0; }),
          conns.end());
    }
    for (const Conn& c : conns) ::close(c.fd);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }

  std::atomic<ProxyProtocol> expect_{ProxyProtocol::kNone};
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// ---- Clients --------------------------------------------------------------------------------------

// 200 distinct loopback sources, with many different first three octets (ip-hash keys on those).
std::string source(int i) {
  return "127." + std::to_string(1 + i / 100) + "." + std::to_string(i * 37 % 256) + "." +
         std::to_string(1 + i % 250);
}

std::string read_line(int fd) {
  return testing::recv_until(
      fd, [](const std::string& s) { return s.find('\n') != std::string::npos; });
}

std::string unhex(std::string_view h) {
  std::string o;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    o += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  return o;
}

std::uint16_t local_port_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

class TcpRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("chash-proxy-tcp");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(add_backend());
  }
  void TearDown() override {
    proxy_.stop();
    backends_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  bool add_backend() {
    backends_.push_back(std::make_unique<EchoBackend>());
    return backends_.back()->start();
  }

  // A tcp pool over the first `n` backends (all by default), named b1..bn.
  std::string yaml(const std::string& extra, std::vector<std::uint32_t> weights = {},
                   std::size_t n = 0) {
    if (n == 0) n = backends_.size();
    std::string y = "tcp:\n  listen: 127.0.0.1:0\n  protocol: tcp\n" + extra + "  servers:\n";
    for (std::size_t i = 0; i < n; ++i) {
      y += "    - 127.0.0.1:" + std::to_string(backends_[i]->port()) + ":" +
           std::to_string(i < weights.size() ? weights[i] : 1) + " b" + std::to_string(i + 1) +
           "\n";
    }
    return y;
  }
  void start_proxy(const std::string& y, unsigned workers = 2) { proxy_.start(dir_, y, workers); }

  int index_of_port(std::uint16_t port) const {
    for (std::size_t i = 0; i < backends_.size(); ++i) {
      if (backends_[i]->port() == port) return static_cast<int>(i);
    }
    return -1;
  }
  // The backend index a greeting names, -1 if none.
  int backend_in(const std::string& greeting) const {
    if (!greeting.starts_with("port=")) return -1;
    return index_of_port(static_cast<std::uint16_t>(std::stoi(greeting.substr(5))));
  }
  // Connects from `src`, reads the greeting, closes: which backend took it (-1: none).
  int which(const std::string& src) {
    const int fd = dial_tcp(proxy_->port(0), src.c_str());
    if (fd < 0) return -1;
    const int b = backend_in(read_line(fd));
    ::close(fd);
    return b;
  }
  std::vector<int> map_sources(int n = 200) {
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(which(source(i)));
    return out;
  }
  chash::Router router() {
    const auto& pc = proxy_->topology()->pools[0]->config;
    return chash::Router::build(pc.routing, pc.nodes());
  }
  std::shared_ptr<const Pool> pool() { return proxy_->topology()->pools[0]; }
  bool all_idle() {
    return eventually([&] {
      for (const auto& s : pool()->states) {
        if (s->active.load() != 0) return false;
      }
      return true;
    });
  }
  // `chash route` for the 200 sources with `flags`: the node names, one per source.
  std::vector<std::string> chash_route([[maybe_unused]] const std::string& flags) {
    std::vector<std::string> names;
#ifdef CHASH_CLI_PATH
    std::string in;
    for (int i = 0; i < 200; ++i) in += source(i) + "\n";
    std::ofstream(dir_ / "sources.txt") << in;
    const std::string cmd = std::string(CHASH_CLI_PATH) + " route " + flags + " < " +
                            (dir_ / "sources.txt").string() + " > " + (dir_ / "route.txt").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream out(dir_ / "route.txt");
    std::string line;
    while (std::getline(out, line)) names.push_back(line);
#else
    ADD_FAILURE() << "the chash CLI was not built";
#endif
    return names;
  }

  fs::path dir_;
  std::vector<std::unique_ptr<EchoBackend>> backends_;
  testing::ProxyRunner proxy_;
};

// ---- Picking the backend --------------------------------------------------------------------------

TEST_F(TcpRelayTest, IpHashIsStickyAndMatchesChashRoute) {
  start_proxy(yaml("  balance: ip-hash\n"));
  const auto first = map_sources();
  const auto again = map_sources();
  EXPECT_EQ(first, again);  // stickiness
  const auto r = router();
  const auto names = chash_route("--preset nginx-ip-hash --nodes b1,b2,b3");
  ASSERT_EQ(names.size(), 200u);
  std::vector<int> count(3, 0);
  for (int i = 0; i < 200; ++i) {
    ASSERT_GE(first[i], 0) << source(i);
    EXPECT_EQ(first[i], static_cast<int>(r.route(source(i)))) << source(i);
    EXPECT_EQ("b" + std::to_string(first[i] + 1), names[i]) << source(i);
    ++count[first[i]];
  }
  for (const int c : count) EXPECT_GT(c, 30);  // every backend takes a share
}

TEST_F(TcpRelayTest, DefaultHashIsNginxHashConsistentOnTheClientAddress) {
  start_proxy(yaml(""));
  EXPECT_EQ(pool()->config.routing.preset, "nginx-hash-consistent");
  const auto first = map_sources();
  EXPECT_EQ(first, map_sources());
  const auto r = router();
  const auto names = chash_route("--preset nginx-hash-consistent --nodes b1,b2,b3");
  ASSERT_EQ(names.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(first[i], static_cast<int>(r.route(source(i)))) << source(i);
    EXPECT_EQ("b" + std::to_string(first[i] + 1), names[i]) << source(i);
  }
}

TEST_F(TcpRelayTest, AlgorithmRoutesTheAddressAsTheLibraryRouter) {
  for (const std::string algo : {"jump", "ring"}) {
    start_proxy(yaml("  algorithm: " + algo + "\n"));
    const auto first = map_sources();
    const auto r = router();
    std::vector<int> count(3, 0);
    for (int i = 0; i < 200; ++i) {
      ASSERT_GE(first[i], 0);
      EXPECT_EQ(first[i], static_cast<int>(r.route(source(i)))) << algo << " " << source(i);
      ++count[first[i]];
    }
    for (const int c : count) EXPECT_GT(c, 30) << algo;
    const auto names = chash_route("--algo " + algo + " --nodes b1,b2,b3");
    ASSERT_EQ(names.size(), 200u);
    for (int i = 0; i < 200; ++i)
      EXPECT_EQ("b" + std::to_string(first[i] + 1), names[i]) << algo << " " << source(i);
    proxy_.stop();
  }
}

TEST_F(TcpRelayTest, RoundRobinSpreadsEvenly) {
  start_proxy(yaml("  balance: round-robin\n", {5, 1, 1}), 1);  // weights ignored
  std::string seq;
  std::vector<int> count(3, 0);
  for (int i = 0; i < 300; ++i) {
    const int b = which(source(i % 7));
    ASSERT_GE(b, 0);
    ++count[b];
    if (i < 9) seq += static_cast<char>('a' + b);
  }
  EXPECT_EQ(seq, "abcabcabc");
  EXPECT_EQ(count, std::vector<int>({100, 100, 100}));
}

TEST_F(TcpRelayTest, WeightedRoundRobinFollowsWeights) {
  start_proxy(yaml("  balance: weighted-round-robin\n", {5, 1, 1}), 1);
  std::string seq;
  for (int i = 0; i < 70; ++i) {
    const int b = which("127.0.0.1");
    ASSERT_GE(b, 0);
    seq += static_cast<char>('a' + b);
  }
  EXPECT_EQ(seq.substr(0, 14), "aabacaaaabacaa");  // nginx's smooth sequence for 5,1,1
  EXPECT_EQ(std::count(seq.begin(), seq.end(), 'a'), 50);
  EXPECT_EQ(std::count(seq.begin(), seq.end(), 'b'), 10);
  EXPECT_EQ(std::count(seq.begin(), seq.end(), 'c'), 10);
}

TEST_F(TcpRelayTest, LeastConnPrefersTheIdleBackend) {
  start_proxy(yaml("  balance: least-conn\n"), 2);
  std::vector<int> fds, where;
  for (int i = 0; i < 6; ++i) {
    fds.push_back(dial_tcp(proxy_->port(0), source(i).c_str()));
    ASSERT_GE(fds.back(), 0);
    where.push_back(backend_in(read_line(fds.back())));
  }
  std::vector<int> count(3, 0);
  for (const int b : where) ++count[b];
  EXPECT_EQ(count, std::vector<int>({2, 2, 2}));
  for (int b = 0; b < 3; ++b) EXPECT_EQ(pool()->states[b]->active.load(), 2);
  // Free backend b2: the next two connections go there, whoever else is open.
  for (int i = 0; i < 6; ++i) {
    if (where[i] == 1) {
      ::close(fds[i]);
      fds[i] = -1;
    }
  }
  ASSERT_TRUE(eventually([&] { return pool()->states[1]->active.load() == 0; }));
  for (int i = 0; i < 2; ++i) {
    fds.push_back(dial_tcp(proxy_->port(0), source(10 + i).c_str()));
    EXPECT_EQ(backend_in(read_line(fds.back())), 1);
  }
  for (const int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  EXPECT_TRUE(all_idle());
}

// hash_balance_factor: one client address opens 30 long-lived relays. Hashing alone puts all of
// them on one backend; with a factor of 125 no backend holds more than 1.25x the average (+1 for
// the connection being placed), the overflow goes to the address's next choices in the router's
// preference order, and the first relay is still on the address's own backend.
TEST_F(TcpRelayTest, HashBalanceFactorSpreadsOneAddressesRelays) {
  for (const std::string factor : {"0", "125"}) {
    SCOPED_TRACE("hash_balance_factor " + factor);
    start_proxy(yaml("  algorithm: maglev\n  hash_balance_factor: " + factor + "\n"), 2);
    EXPECT_EQ(pool()->router.balance_factor(), std::stoul(factor));
    const auto r = router();
    std::vector<int> fds;
    std::vector<int> count(3, 0);
    int first = -1;
    for (int i = 0; i < 30; ++i) {
      fds.push_back(dial_tcp(proxy_->port(0), "127.0.5.5"));
      ASSERT_GE(fds.back(), 0);
      const int b = backend_in(read_line(fds.back()));
      ASSERT_GE(b, 0);
      if (first < 0) first = b;
      ++count[b];
      // The relay is counted before the next connection is placed.
      ASSERT_TRUE(eventually([&] { return pool()->states[b]->active.load() == count[b]; }));
    }
    EXPECT_EQ(first, static_cast<int>(r.route("127.0.5.5")));
    if (factor == "0") {
      EXPECT_EQ(count[first], 30);
    } else {
      for (const int c : count) EXPECT_LE(c, 13);  // 1.25 * 30 / 3 = 12.5, +1 for the one placed
      EXPECT_GE(count[first], 12);  // the owner fills to its bound before the next choice
      // The overflow follows the address's preference order: its second choice fills next.
      NodeId prefs[3];
      ASSERT_EQ(r.route_n("127.0.5.5", prefs), 3u);
      EXPECT_GE(count[prefs[1]], 12);
    }
    for (const int fd : fds) ::close(fd);
    EXPECT_TRUE(all_idle());
    proxy_.stop();
  }
}

// ---- Relaying -------------------------------------------------------------------------------------

TEST_F(TcpRelayTest, HalfCloseKeepsTheOtherDirection) {
  start_proxy(yaml(""));
  const int fd = dial_tcp(proxy_->port(0), "127.0.9.9");
  ASSERT_GE(fd, 0);
  const std::string greeting = read_line(fd);
  ASSERT_GE(backend_in(greeting), 0) << greeting;
  ASSERT_TRUE(send_all(fd, "hello"));
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  // The backend sees the EOF only after "hello", echoes it, says bye, and closes: all of it
  // arrives after our half-close, then the EOF.
  const std::string rest = testing::recv_until(fd, [](const std::string&) { return false; });
  EXPECT_EQ(rest,
            "hello"
            "bye\n");
  EXPECT_TRUE(testing::closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(all_idle());
  // The worker counts the client closed after it has released the backend (and after we saw
  // the EOF), so this, like `active`, is awaited rather than read once.
  EXPECT_TRUE(eventually([&] { return proxy_->metrics().clients_open.load() == 0; }));
  // Bytes relayed count per pool and per backend, each way; the relay ended normally (client_eof).
  const std::string greeted = greeting + rest;
  EXPECT_EQ(pool()->shared->request_bytes.load(), 5u);
  EXPECT_EQ(pool()->shared->response_bytes.load(), greeted.size());
  const int b = backend_in(greeting);
  EXPECT_EQ(pool()->states[b]->request_bytes.load(), 5u);
  EXPECT_EQ(pool()->states[b]->response_bytes.load(), greeted.size());
  EXPECT_EQ(pool()->shared->client_eof.load(), 1u);
}

// The test stream: byte i is pattern[i % P], P prime so no chunk size lines up with it.
const std::vector<char>& pattern() {
  static const std::vector<char> p = [] {
    std::vector<char> v(1048573);
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (char& c : v) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    return v;
  }();
  return p;
}

// Copies stream bytes [offset, offset + n) to `out`.
void fill(char* out, std::size_t n, std::size_t offset) {
  const auto& p = pattern();
  while (n > 0) {
    const std::size_t at = offset % p.size();
    const std::size_t k = std::min(n, p.size() - at);
    std::memcpy(out, p.data() + at, k);
    out += k;
    offset += k;
    n -= k;
  }
}

void small_buffers(int fd) {
  const int size = 256 << 10;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

TEST_F(TcpRelayTest, LargeTransferBothWaysWithSlowReader) {
  start_proxy(yaml("  idle_timeout: 0\n"));
  const int fd = dial_tcp(proxy_->port(0), "127.0.7.7");
  ASSERT_GE(fd, 0);
  small_buffers(fd);  // so that the proxy's own buffering shows
  ASSERT_GE(backend_in(read_line(fd)), 0);
  constexpr std::size_t kTotal = std::size_t{64} << 20;
  std::atomic<std::size_t> sent{0};
  std::atomic<bool> send_ok{true};
  std::thread writer([&] {
    std::vector<char> chunk(64 << 10);
    while (sent < kTotal) {
      const std::size_t n = std::min(chunk.size(), kTotal - sent);
      fill(chunk.data(), n, sent);
      if (!send_all(fd, std::string_view(chunk.data(), n))) {
        send_ok = false;
        return;
      }
      sent += n;
    }
    ::shutdown(fd, SHUT_WR);
  });
  // Nobody reads for a while: the writer must stall, with bytes waiting in its own socket (the
  // proxy stopped reading it: backpressure reached the client, nothing piles up in between).
  // Wait until it has stalled (no progress in 300 ms; a sanitized or loaded run gets there later).
  std::size_t stalled = ~std::size_t{0};
  for (int i = 0; i < 30 && sent.load() != stalled; ++i) {
    stalled = sent.load();
    std::this_thread::sleep_for(300ms);
  }
  int unsent = 0;
  ASSERT_EQ(::ioctl(fd, SIOCOUTQ, &unsent), 0);
  EXPECT_GT(unsent, 0) << "the proxy kept draining a client nobody reads from";
  EXPECT_LT(sent.load(), kTotal) << "64 MiB buffered with no reader";
  EXPECT_LE(sent.load() - stalled, std::size_t{1} << 20) << "the writer kept going with no reader";
  // Now read it all, slowly at first, and check every byte.
  std::vector<char> buf(256 << 10), want(256 << 10);
  std::size_t got = 0;
  bool same = true;
  int reads = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (got < kTotal) {
    if (reads++ < 50) std::this_thread::sleep_for(2ms);  // slow reader
    const ssize_t n = ::recv(fd, buf.data(), std::min(buf.size(), kTotal - got), 0);
    if (n <= 0) break;
    fill(want.data(), static_cast<std::size_t>(n), got);
    same = same && std::memcmp(buf.data(), want.data(), static_cast<std::size_t>(n)) == 0;
    got += static_cast<std::size_t>(n);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  writer.join();
  EXPECT_TRUE(send_ok.load());
  EXPECT_EQ(got, kTotal);
  EXPECT_TRUE(same);
  EXPECT_EQ(testing::recv_until(fd, [](const std::string&) { return false; }), "bye\n");
  ::close(fd);
  EXPECT_TRUE(all_idle());
  std::printf(
      "[          ] writer stalled at %.1f MiB in flight (%d bytes unsent in its socket); "
      "then %.0f MiB echoed in %.2f s\n",
      static_cast<double>(stalled) / (1 << 20), unsent, static_cast<double>(kTotal) / (1 << 20),
      secs);
}

TEST_F(TcpRelayTest, IdleTimeoutClosesQuietRelaysOnly) {
  // busy talks every 100 ms, 6 times inside the 600 ms idle timeout: a loaded machine may
  // stretch a gap a lot before busy looks idle.
  start_proxy(yaml("  idle_timeout: 600\n"));
  const int quiet = dial_tcp(proxy_->port(0), "127.0.3.3");
  const int busy = dial_tcp(proxy_->port(0), "127.0.4.4");
  ASSERT_GE(backend_in(read_line(quiet)), 0);
  ASSERT_GE(backend_in(read_line(busy)), 0);
  const auto t0 = std::chrono::steady_clock::now();
  // busy talks every 100 ms for 1.2 s: never 600 ms quiet.
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(send_all(busy, "x"));
    ASSERT_EQ(testing::recv_until(busy, [](const std::string& s) { return !s.empty(); }), "x");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(testing::closed_by_peer(quiet));
  const auto quiet_for = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(quiet_for, 550ms);
  ASSERT_TRUE(send_all(busy, "y"));
  EXPECT_EQ(testing::recv_until(busy, [](const std::string& s) { return !s.empty(); }), "y");
  EXPECT_TRUE(testing::closed_by_peer(busy));  // quiet from now on: closed too
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  ::close(quiet);
  ::close(busy);
  EXPECT_TRUE(all_idle());
}

// ---- Failures, reload -----------------------------------------------------------------------------

TEST_F(TcpRelayTest, BackendDownMovesOnlyItsClientsAndTheyReturn) {
  start_proxy(yaml("  server_failure_limit: 1\n  server_retry_timeout: 200\n  timeout: 1000\n"));
  const auto before = map_sources();
  const auto r = router();
  const std::uint16_t port = backends_[1]->port();
  backends_[1]->stop();
  const auto during = map_sources();
  EXPECT_TRUE(pool()->states[1]->down.load());
  int moved = 0;
  for (int i = 0; i < 200; ++i) {
    if (before[i] != 1) {
      EXPECT_EQ(during[i], before[i]) << source(i) << ": only b2's clients move";
      continue;
    }
    ++moved;
    NodeId prefs[3];
    ASSERT_EQ(r.route_n(source(i), prefs), 3u);
    EXPECT_EQ(during[i], static_cast<int>(prefs[1])) << source(i) << ": its next choice";
  }
  EXPECT_GT(moved, 20);
  EXPECT_GE(pool()->states[1]->errors.load(), 1u);
  // Back on the same port: the probe brings it back, and exactly its clients return.
  ASSERT_TRUE(backends_[1]->start(port));
  ASSERT_TRUE(eventually([&] { return !pool()->states[1]->down.load(); }));
  EXPECT_EQ(map_sources(), before);
  EXPECT_TRUE(all_idle());
}

TEST_F(TcpRelayTest, AllBackendsDownClosesTheClient) {
  start_proxy(yaml("  balance: round-robin\n  server_failure_limit: 2\n"));
  for (auto& b : backends_) b->stop();
  const int fd = dial_tcp(proxy_->port(0), "127.0.2.2");
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(testing::closed_by_peer(fd));
  ::close(fd);
  std::uint64_t errors = 0, requests = 0;
  for (const auto& s : pool()->states) {
    errors += s->errors.load();
    requests += s->requests.load();
  }
  EXPECT_EQ(errors, 3u);  // every backend tried once
  EXPECT_EQ(requests, 3u);
  EXPECT_TRUE(all_idle());
  EXPECT_TRUE(eventually([&] { return proxy_->metrics().clients_open.load() == 0; }));
}

TEST_F(TcpRelayTest, ReloadAddingABackendMovesOnlyItsShare) {
  start_proxy(yaml("", {}, 3));
  const auto before = map_sources();
  ASSERT_TRUE(add_backend());
  proxy_.rewrite(yaml("", {}, 4));
  std::string message;
  ASSERT_TRUE(proxy_->reload_from_file(message)) << message;
  ASSERT_TRUE(testing::reload_applied(*proxy_));  // workers swap the snapshot on their own threads
  const auto r4 = router();
  ASSERT_EQ(pool()->states.size(), 4u);
  const auto after = map_sources();
  int moved = 0;
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(after[i], static_cast<int>(r4.route(source(i)))) << source(i);
    if (after[i] != before[i]) {
      ++moved;
      EXPECT_EQ(after[i], 3) << source(i) << ": a source moves only to the new backend";
    }
  }
  EXPECT_GT(moved, 200 / 4 / 3);  // about a quarter
  EXPECT_LT(moved, 200 / 2);
}

TEST_F(TcpRelayTest, UnixSocketClientsOfAHashPoolShareOneBackend) {
  const std::string path = (dir_ / "tcp.sock").string();
  std::string y = yaml("");
  y.replace(y.find("127.0.0.1:0"), 11, path);
  start_proxy(y);
  const int want = static_cast<int>(router().route("unix:"));  // nginx's $remote_addr for them
  for (int i = 0; i < 5; ++i) {
    const int fd = testing::dial_unix(path);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(backend_in(read_line(fd)), want);
    ::close(fd);
  }
}

// ---- PROXY protocol ---------------------------------------------------------------------------------

TEST_F(TcpRelayTest, ProxyProtocolV1AndV2CarryTheClientAddress) {
  for (const ProxyProtocol v : {ProxyProtocol::kV1, ProxyProtocol::kV2}) {
    for (auto& b : backends_) b->expect(v);
    start_proxy(
        yaml(std::string("  proxy_protocol: ") + (v == ProxyProtocol::kV1 ? "v1" : "v2") + "\n"));
    const int fd = dial_tcp(proxy_->port(0), "127.0.5.6");
    ASSERT_GE(fd, 0);
    const std::string greeting = read_line(fd);
    ASSERT_GE(backend_in(greeting), 0) << greeting;
    const std::string got = unhex(greeting.substr(greeting.find("proxy=") + 6,
                                                  greeting.size() - greeting.find("proxy=") - 7));
    const std::uint16_t sport = local_port_of(fd), dport = proxy_->port(0);
    std::string want;
    if (v == ProxyProtocol::kV1) {
      want = "PROXY TCP4 127.0.5.6 127.0.0.1 " + std::to_string(sport) + " " +
             std::to_string(dport) + "\r\n";
    } else {
      const unsigned char sig[] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51,
                                   0x55, 0x49, 0x54, 0x0A, 0x21, 0x11, 0x00, 0x0C,
                                   127,  0,    5,    6,    127,  0,    0,    1};
      want.assign(reinterpret_cast<const char*>(sig), sizeof sig);
      for (const std::uint16_t p : {sport, dport}) {
        want += static_cast<char>(p >> 8);
        want += static_cast<char>(p & 0xff);
      }
    }
    EXPECT_EQ(got, want);
    // Client bytes follow the header, unchanged.
    ASSERT_TRUE(send_all(fd, "ping"));
    EXPECT_EQ(testing::recv_until(fd, [](const std::string& s) { return s.size() >= 4; }), "ping");
    ::close(fd);
    proxy_.stop();
  }
}

// ---- Against real nginx (stream module) ------------------------------------------------------------
// nginx 1.22 with `hash $remote_addr consistent` in front of the same three backends: every
// source lands on the same backend through nginx and through chash-proxy; and nginx, listening
// with `proxy_protocol`, reads our v1 and v2 headers back to us.

class NginxStream {
 public:
  bool start(const fs::path& dir, const std::string& stream_block) {
    const fs::path conf = dir / "nginx.conf";
    std::ofstream(conf) << "load_module /usr/lib/nginx/modules/ngx_stream_module.so;\n"
                           "daemon off;\nmaster_process off;\nworker_processes 1;\n"
                           "pid "
                        << (dir / "nginx.pid").string()
                        << ";\n"
                           "error_log "
                        << (dir / "nginx-error.log").string()
                        << " warn;\n"
                           "events { worker_connections 256; }\n"
                           "stream {\n"
                        << stream_block << "}\n";
    ports_.clear();
    for (std::size_t pos = 0;
         (pos = stream_block.find("listen 127.0.0.1:", pos)) != std::string::npos; pos += 17) {
      ports_.push_back(static_cast<std::uint16_t>(std::stoi(stream_block.substr(pos + 17))));
    }
    return process_.start({"nginx", "-p", dir.string(), "-c", conf.string(), "-e",
                           (dir / "nginx-error.log").string()},
                          [&] {
                            for (const std::uint16_t p : ports_) {
                              const int fd = testing::dial_tcp(p);
                              if (fd < 0) return false;
                              ::close(fd);
                            }
                            return true;
                          });
  }

 private:
  std::vector<std::uint16_t> ports_;
  testing::ChildProcess process_;
};

TEST_F(TcpRelayTest, SameBackendAsNginxHashRemoteAddrConsistent) {
  ASSERT_TRUE(testing::have_program("nginx"))
      << "nginx not installed (apt-get install nginx-light libnginx-mod-stream)";
  ASSERT_TRUE(fs::exists("/usr/lib/nginx/modules/ngx_stream_module.so"))
      << "libnginx-mod-stream not installed";
  const std::uint16_t nport = testing::free_port();
  std::string block = "  upstream u {\n    hash $remote_addr consistent;\n";
  std::string servers;
  for (const auto& b : backends_) {
    block += "    server 127.0.0.1:" + std::to_string(b->port()) + ";\n";
    servers += "    - 127.0.0.1:" + std::to_string(b->port()) +
               ":1\n";  // named host:port, as nginx hashes
  }
  block += "  }\n  server {\n    listen 127.0.0.1:" + std::to_string(nport) +
           ";\n    proxy_pass u;\n  }\n";
  NginxStream nginx;
  ASSERT_TRUE(nginx.start(dir_, block))
      << "nginx did not start; see " << (dir_ / "nginx-error.log");
  start_proxy("tcp:\n  listen: 127.0.0.1:0\n  protocol: tcp\n  servers:\n" + servers);
  const auto ours = map_sources();
  std::vector<int> theirs;
  for (int i = 0; i < 200; ++i) {
    const int fd = dial_tcp(nport, source(i).c_str());
    ASSERT_GE(fd, 0);
    theirs.push_back(backend_in(read_line(fd)));
    ::close(fd);
  }
  EXPECT_EQ(ours, theirs);
  std::vector<int> count(3, 0);
  for (const int b : ours) {
    ASSERT_GE(b, 0);
    ++count[b];
  }
  for (const int c : count) EXPECT_GT(c, 20);
}

TEST_F(TcpRelayTest, NginxReadsOurProxyProtocolHeaders) {
  ASSERT_TRUE(testing::have_program("nginx"))
      << "nginx not installed (apt-get install nginx-light libnginx-mod-stream)";
  ASSERT_TRUE(fs::exists("/usr/lib/nginx/modules/ngx_stream_module.so"))
      << "libnginx-mod-stream not installed";
  const std::uint16_t nport = testing::free_port();
  NginxStream nginx;
  ASSERT_TRUE(nginx.start(
      dir_, "  server {\n    listen 127.0.0.1:" + std::to_string(nport) +
                " proxy_protocol;\n    return \"$proxy_protocol_addr $proxy_protocol_port "
                "$proxy_protocol_server_addr $proxy_protocol_server_port\\n\";\n  }\n"))
      << "nginx did not start; see " << (dir_ / "nginx-error.log");
  for (const std::string v : {"v1", "v2"}) {
    start_proxy("tcp:\n  listen: 127.0.0.1:0\n  protocol: tcp\n  proxy_protocol: " + v +
                "\n  servers:\n    - 127.0.0.1:" + std::to_string(nport) + ":1\n");
    const int fd = dial_tcp(proxy_->port(0), "127.0.5.6");
    ASSERT_GE(fd, 0);
    EXPECT_EQ(read_line(fd), "127.0.5.6 " + std::to_string(local_port_of(fd)) + " 127.0.0.1 " +
                                 std::to_string(proxy_->port(0)) + "\n")
        << v;
    ::close(fd);
    proxy_.stop();
  }
}

}  // namespace
}  // namespace chash::proxy
