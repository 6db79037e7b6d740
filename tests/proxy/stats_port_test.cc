// SPDX-License-Identifier: Apache-2.0
// nutcracker's stats port (control/stats_port.h): the document's shape against nutcracker's own
// (its -D text, and the key set of a real nutcracker's document for the same config), its
// counts after real traffic through a real redis-server, and clients that never read or send
// garbage delaying nothing.
#include "control/stats_port.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "chash/version.h"
#include "config/config.h"
#include "control/proxy.h"
#include "e2e_util.h"
#include "net/socket.h"

namespace chash::proxy {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The whole document a stats port sends on connect.
std::string read_stats(std::uint16_t port) {
  const int fd = testing::dial_tcp(port);
  if (fd < 0) return {};
  testing::set_timeouts(fd);
  std::string doc = testing::recv_until(fd, [](const std::string&) { return false; });
  ::close(fd);
  return doc;
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

// Keys of the document with nesting: "alpha", "alpha/client_eof", "alpha/r1/requests", ...
std::set<std::string> key_paths(const json& j, const std::string& prefix = "") {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) {
    out.insert(prefix + k);
    if (v.is_object()) {
      for (const auto& p : key_paths(v, prefix + k + "/")) out.insert(p);
    }
  }
  return out;
}

const std::set<std::string> kHeader = {
    "service", "source", "version", "uptime", "timestamp", "total_connections", "curr_connections"};
const std::set<std::string> kPool = {"client_eof",    "client_err",    "client_connections",
                                     "server_ejects", "forward_error", "fragments"};
const std::set<std::string> kServer = {
    "server_eof",     "server_err",    "server_timedout", "server_connections", "server_ejected_at",
    "requests",       "request_bytes", "responses",       "response_bytes",     "in_queue",
    "in_queue_bytes", "out_queue",     "out_queue_bytes"};

std::string run(const std::string& command) {
  std::string out;
  if (FILE* f = ::popen(command.c_str(), "r")) {
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

TEST(StatsPortTest, DescribeStatsListsNutcrackersStats) {
  const std::string d = describe_stats();
  for (const auto& k : kPool) EXPECT_NE(d.find("  " + k + " "), std::string::npos) << k;
  for (const auto& k : kServer) EXPECT_NE(d.find("  " + k + " "), std::string::npos) << k;
  EXPECT_NE(d.find("  server_ejected_at   \"timestamp when server was ejected in usec since "
                   "epoch\"\n"),
            std::string::npos)
      << d;
}

// The text of `nutcracker -D` from "pool stats:" on, byte for byte.
TEST(StatsPortTest, DescribeStatsEqualsNutcrackerD) {
  // scripts/bootstrap.sh installs nutcracker: without it this fails, it is never skipped.
  ASSERT_TRUE(testing::have_program("nutcracker"))
      << "nutcracker not installed (run scripts/bootstrap.sh)";
  std::string nc = run("nutcracker -D 2>&1");
  const std::size_t at = nc.find("pool stats:");
  ASSERT_NE(at, std::string::npos) << nc;
  nc = nc.substr(at);
  while (!nc.empty() && (nc.back() == '\n' || nc.back() == ' ')) nc.pop_back();
  std::string ours = describe_stats();
  while (!ours.empty() && ours.back() == '\n') ours.pop_back();
  EXPECT_EQ(ours, nc);
}

TEST(StatsPortTest, DocumentHasNutcrackersShape) {
  const auto t = build_topology(parse_config(R"(alpha:
  listen: 127.0.0.1:0
  redis: true
  servers:
    - 127.0.0.1:7001:1 r1
    - 127.0.0.1:7002:2
beta:
  listen: 127.0.0.1:0
  servers:
    - 127.0.0.1:7101:1 m1
)",
                                             "t.yml"),
                                nullptr, 1);
  t->pools[0]->states[0]->requests = 5;
  t->pools[0]->shared->client_eof = 2;
  StatsHeader h{"host\"x", "0.2.0", 3, 1796083213, 9, 4};
  const std::string doc = render_stats_json(h, render_stats_pools(*t));
  ASSERT_TRUE(doc.ends_with("}\n"));
  const json j = json::parse(doc);
  std::set<std::string> top = kHeader;
  top.insert({"alpha", "beta"});
  EXPECT_EQ(keys(j), top);
  EXPECT_EQ(j["service"], "nutcracker");
  EXPECT_EQ(j["source"], "host\"x");
  EXPECT_EQ(j["total_connections"], 9);
  std::set<std::string> alpha = kPool;
  alpha.insert({"r1", "127.0.0.1:7002"});  // unnamed servers go by host:port, as in nutcracker
  EXPECT_EQ(keys(j["alpha"]), alpha);
  EXPECT_EQ(keys(j["alpha"]["r1"]), kServer);
  EXPECT_EQ(j["alpha"]["r1"]["requests"], 5);
  EXPECT_EQ(j["alpha"]["client_eof"], 2);
  EXPECT_EQ(keys(j["beta"]["m1"]), kServer);
}

// The deadline frees a client that never reads nor closes, and connections over the cap are
// closed at once; the loop is driven on this thread, so open_connections() is read safely.
TEST(StatsPortTest, DeadlineAndCapBoundSilentClients) {
  net::EventLoop loop;
  std::string error;
  const int lfd = net::listen_on(parse_address("127.0.0.1:0", "stats"), 64, error);
  ASSERT_GE(lfd, 0) << error;
  int renders = 0;
  StatsPort::Limits limits;
  limits.interval = std::chrono::milliseconds(3600000);
  limits.deadline = 200ms;
  limits.max_connections = 2;
  auto port = std::make_unique<StatsPort>(
      loop, lfd,
      StatsPort::Handlers{[] { return StatsHeader{"h", "v", 0, 0, 0, 0}; },
                          [&renders] {
                            ++renders;
                            return std::string();
                          }},
      limits);
  const std::uint16_t p = net::local_port(lfd);
  int fds[3];
  for (int& fd : fds) fd = testing::dial_tcp(p);
  for (int i = 0; i < 10; ++i) loop.run_once(10ms);
  EXPECT_EQ(port->open_connections(), 2u);  // two hold their slot (they neither read nor close)
  EXPECT_EQ(renders, 1);                    // one snapshot for the interval
  // The third was over the cap: closed with nothing sent.
  testing::set_timeouts(fds[2], 1);
  char c = 0;
  EXPECT_EQ(::recv(fds[2], &c, 1, 0), 0);
  // The others got the document before their deadline ...
  testing::set_timeouts(fds[0], 1);
  const std::string doc =
      testing::recv_until(fds[0], [](const std::string& in) { return in.ends_with("}\n"); });
  EXPECT_EQ(doc,
            "{\"service\":\"nutcracker\", \"source\":\"h\", \"version\":\"v\", \"uptime\":0, "
            "\"timestamp\":0, \"total_connections\":0, \"curr_connections\":0}\n");
  // ... and the deadline frees both slots although neither client closes.
  const auto t0 = std::chrono::steady_clock::now();
  while (port->open_connections() != 0 && std::chrono::steady_clock::now() - t0 < 2s) {
    loop.run_once(10ms);
  }
  EXPECT_EQ(port->open_connections(), 0u);
  const int again = testing::dial_tcp(p);
  for (int i = 0; i < 5; ++i) loop.run_once(10ms);
  EXPECT_EQ(port->open_connections(), 1u);
  port.reset();
  for (const int fd : fds) ::close(fd);
  ::close(again);
  ::close(lfd);
}

// ---- A real proxy, a real redis-server ------------------------------------------------------

class StatsPortE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::have_program("redis-server")) << "redis-server not installed";
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("chash-stats");
    for (int i = 1; i <= 2; ++i) {
      const std::string name = "r" + std::to_string(i);
      servers_.push_back(
          std::make_unique<testing::UnixSocketServer>((dir_ / (name + ".sock")).string()));
      const std::vector<std::string> argv = {
          "redis-server", "--port", "0",     "--unixsocket", servers_.back()->socket(),
          "--save",       "",       "--dir", dir_.string()};
      ASSERT_TRUE(servers_.back()->start(argv));
    }
  }
  void TearDown() override {
    proxy_.stop();
    servers_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string pool_yaml() const {
    return "alpha:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n    - " +
           servers_[0]->socket() + ":1 r1\n    - " + servers_[1]->socket() + ":1 r2\n";
  }

  fs::path dir_;
  std::vector<std::unique_ptr<testing::UnixSocketServer>> servers_;
  testing::ProxyRunner proxy_;
};

// Sends RESP commands on `fd` and reads until `replies` CRLF-terminated simple replies arrived.
std::string exchange(int fd, const std::string& bytes, std::size_t lines) {
  if (!testing::send_all(fd, bytes)) return {};
  return testing::recv_until(fd, [lines](const std::string& in) {
    std::size_t n = 0;
    for (std::size_t at = in.find("\r\n"); at != std::string::npos; at = in.find("\r\n", at + 2))
      ++n;
    return n >= lines;
  });
}

TEST_F(StatsPortE2E, CountsRealTrafficInNutcrackersFields) {
  proxy_.start(dir_, pool_yaml() + "chash_proxy:\n  stats: 127.0.0.1:0\n  stats_interval: 50\n", 1);
  ASSERT_NE(proxy_->stats_port(), 0);
  const int fd = testing::dial_tcp(proxy_->port(0));
  testing::set_timeouts(fd);
  // Ten keys, five on each backend.
  const auto held = proxy_->topology()->pools[0];  // alive while used
  const Pool& pool = *held;
  std::vector<std::string> ks;
  for (NodeId n = 0; n < 2; ++n) {
    for (int i = 10, taken = 0; i < 100 && taken < 5; ++i) {
      const std::string k = "k" + std::to_string(i);  // 3 bytes each
      if (pool.route(k) != n) continue;
      ks.push_back(k);
      ++taken;
    }
  }
  ASSERT_EQ(ks.size(), 10u);
  std::string sets;
  for (const auto& k : ks) sets += "*3\r\n$3\r\nSET\r\n$3\r\n" + k + "\r\n$1\r\nv\r\n";
  std::string oks;
  for (int i = 0; i < 10; ++i) oks += "+OK\r\n";
  ASSERT_EQ(exchange(fd, sets, 10), oks);
  // An MGET of every key: split over both backends (2 fragments).
  std::string mget = "*11\r\n$4\r\nMGET\r\n";
  for (const auto& k : ks) mget += "$3\r\n" + k + "\r\n";
  const std::string values = exchange(fd, mget, 21);
  ASSERT_TRUE(values.starts_with("*10\r\n")) << values;
  const int quitter = testing::dial_tcp(proxy_->port(0));
  ASSERT_TRUE(testing::eventually([&] { return proxy_->metrics().clients_open.load() == 2; }));
  ::close(quitter);  // a client EOF
  ASSERT_TRUE(testing::eventually([&] { return proxy_->metrics().clients_open.load() == 1; }));
  std::this_thread::sleep_for(100ms);  // past stats_interval: the next document is fresh

  const std::string doc = read_stats(proxy_->stats_port());
  const json j = json::parse(doc);
  std::set<std::string> top = kHeader;
  top.insert("alpha");
  EXPECT_EQ(keys(j), top) << doc;
  std::set<std::string> alpha = kPool;
  alpha.insert({"r1", "r2"});
  EXPECT_EQ(keys(j["alpha"]), alpha);
  EXPECT_EQ(j["version"], CHASH_VERSION_STRING);
  EXPECT_EQ(j["curr_connections"], 1 + 1 + 2);  // listener, client, one connection per backend
  EXPECT_EQ(j["total_connections"], 1 + 2 + 2);
  const json& a = j["alpha"];
  EXPECT_EQ(a["client_connections"], 1);
  EXPECT_EQ(a["client_eof"], 1);
  EXPECT_EQ(a["client_err"], 0);
  EXPECT_EQ(a["fragments"], 2);
  EXPECT_EQ(a["forward_error"], 0);
  EXPECT_EQ(a["server_ejects"], 0);
  std::int64_t requests = 0, responses = 0, request_bytes = 0;
  for (const char* r : {"r1", "r2"}) {
    EXPECT_EQ(keys(a[r]), kServer);
    EXPECT_EQ(a[r]["server_connections"], 1);
    EXPECT_EQ(a[r]["in_queue"], 0);
    EXPECT_EQ(a[r]["out_queue"], 0);
    EXPECT_EQ(a[r]["out_queue_bytes"], 0);
    EXPECT_GT(a[r]["requests"].get<std::int64_t>(), 1);
    requests += a[r]["requests"].get<std::int64_t>();
    responses += a[r]["responses"].get<std::int64_t>();
    request_bytes += a[r]["request_bytes"].get<std::int64_t>();
  }
  EXPECT_EQ(requests, 10 + 2);  // the SETs, then the MGET's two parts
  EXPECT_EQ(responses, 12);
  // The SETs as sent, then each MGET part: "*6\r\n$4\r\nMGET\r\n" and five "$3\r\nkNN\r\n".
  EXPECT_EQ(request_bytes, static_cast<std::int64_t>(sets.size()) + 14 * 2 + 9 * 10);
  ::close(fd);

  // A backend that goes away: server_eof, and (auto_eject off) no ejection.
  servers_[1]->stop();
  ASSERT_TRUE(testing::eventually(
      [&] { return proxy_->topology()->pools[0]->states[1]->eofs.load() == 1; }));
  std::this_thread::sleep_for(100ms);
  const json k = json::parse(read_stats(proxy_->stats_port()));
  EXPECT_EQ(k["alpha"]["r2"]["server_eof"], 1);
  EXPECT_EQ(k["alpha"]["r2"]["server_connections"], 0);
}

// Values are a snapshot refreshed every stats_interval (nutcracker's -i); the header is live.
TEST_F(StatsPortE2E, ValuesAreRefreshedEveryInterval) {
  proxy_.start(dir_,
               pool_yaml() + "chash_proxy:\n  stats: 127.0.0.1:0\n  stats_interval: 3600000\n", 1);
  const json before = json::parse(read_stats(proxy_->stats_port()));
  const int fd = testing::dial_tcp(proxy_->port(0));
  testing::set_timeouts(fd);
  ASSERT_EQ(exchange(fd, "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nv\r\n", 1), "+OK\r\n");
  const json after = json::parse(read_stats(proxy_->stats_port()));
  EXPECT_EQ(after["alpha"], before["alpha"]);  // within the interval: the same snapshot
  EXPECT_EQ(after["curr_connections"].get<int>(),
            before["curr_connections"].get<int>() + 2);  // live: the client and a backend
  ::close(fd);
}

// A stats client that never reads and one that floods garbage hold nothing up: another stats
// read and a /metrics read are answered at once, and a reload goes through.
TEST_F(StatsPortE2E, SilentAndGarbageClientsStallNothing) {
  proxy_.start(dir_,
               pool_yaml() +
                   "chash_proxy:\n  stats: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
                   "  stats_interval: 50\n",
               1);
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(testing::dial_tcp(proxy_->stats_port()));
  const int garbage = testing::dial_tcp(proxy_->stats_port());
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    const std::string junk(4096, 'x');
    while (!stop) {
      const ssize_t n = ::send(garbage, junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // closed by the proxy
      std::this_thread::sleep_for(1ms);
    }
  });
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string doc = read_stats(proxy_->stats_port());
    EXPECT_TRUE(json::accept(doc)) << doc;
    const std::string m = testing::http(proxy_->admin_port(), "GET /metrics HTTP/1.0\r\n\r\n");
    EXPECT_NE(m.find("HTTP/1.1 200"), std::string::npos);
    std::string msg;
    EXPECT_TRUE(proxy_->reload_from_file(msg)) << msg;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  }
  stop = true;
  flood.join();
  // The silent clients got their document without asking: it is in their socket buffers.
  testing::set_timeouts(silent[0]);
  const std::string first =
      testing::recv_until(silent[0], [](const std::string& in) { return in.ends_with("}\n"); });
  EXPECT_TRUE(json::accept(first)) << first;
  for (const int fd : silent) ::close(fd);
  ::close(garbage);
}

// The same config through a real nutcracker and chash-proxy: the documents have the same keys
// at every level (pool and server names included).
TEST_F(StatsPortE2E, KeySetEqualsARealNutcrackers) {
  // scripts/bootstrap.sh installs nutcracker: without it this fails, it is never skipped.
  ASSERT_TRUE(testing::have_program("nutcracker"))
      << "nutcracker not installed (run scripts/bootstrap.sh)";
  const std::uint16_t p1 = testing::free_port(), p2 = testing::free_port();
  auto pools = [&](const std::string& listen) {
    return "alpha:\n  listen: " + listen +
           "\n  redis: true\n  servers:\n    - 127.0.0.1:" + std::to_string(p1) +
           ":1 named\n    - 127.0.0.1:" + std::to_string(p2) + ":1\n";
  };
  const std::string nc_conf = (dir_ / "nc.yml").string();
  std::ofstream(nc_conf) << pools("127.0.0.1:" + std::to_string(testing::free_port()));
  const std::uint16_t nc_stats = testing::free_port();
  testing::ChildProcess nc;
  ASSERT_TRUE(nc.start({"nutcracker", "-c", nc_conf, "-s", std::to_string(nc_stats), "-a",
                        "127.0.0.1", "-o", (dir_ / "nc.log").string()},
                       [&] {
                         const int fd = testing::dial_tcp(nc_stats);
                         if (fd < 0) return false;
                         ::close(fd);
                         return true;
                       }));
  const std::string theirs = read_stats(nc_stats);
  nc.stop();
  proxy_.start(dir_, pools("127.0.0.1:0") + "chash_proxy:\n  stats: 127.0.0.1:0\n", 1);
  const std::string ours = read_stats(proxy_->stats_port());
  EXPECT_EQ(key_paths(json::parse(ours)), key_paths(json::parse(theirs)))
      << "ours: " << ours << "\nnutcracker: " << theirs;
}

}  // namespace
}  // namespace chash::proxy
