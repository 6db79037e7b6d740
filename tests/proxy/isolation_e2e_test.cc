// SPDX-License-Identifier: Apache-2.0
// chash-proxy end to end: what one client can and cannot do to the others sharing a pool
// (docs/RELIABILITY.md, "What one client, user or operator can and cannot do to others"),
// against real redis-server processes.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

// The value of the first sample of `series` ("name{labels}") in a Prometheus text, -1 if absent.
std::int64_t sample(const std::string& text, const std::string& series) {
  const auto at = text.find(series + " ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + series.size() + 1));
}

class IsolationE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(have_redis());
    dir = make_test_dir("chash-isolation");
    for (int i = 1; i <= 2; ++i) {
      servers.push_back(std::make_unique<RedisServer>(dir, "r" + std::to_string(i)));
      ASSERT_TRUE(servers.back()->start());
    }
  }
  void TearDown() override {
    proxy.stop();
    servers.clear();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // A pool of both servers that ejects a backend on its first timeout (500 ms).
  std::string yaml(const std::string& extra) {
    std::string y =
        "p:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 500\n  auto_eject_hosts: true\n"
        "  server_failure_limit: 1\n  server_retry_timeout: 5000\n" +
        extra + "  servers:\n";
    for (std::size_t i = 0; i < servers.size(); ++i) {
      y += "    - " + servers[i]->socket() + ":1 r" + std::to_string(i + 1) + "\n";
    }
    return y;
  }
  std::uint16_t port() { return proxy->port(std::size_t{0}); }

  fs::path dir;
  std::vector<std::unique_ptr<RedisServer>> servers;
  ProxyRunner proxy;
};

// Issue 40, case 4: two clients pipeline 1024 GETs of a 100 KiB value each and read nothing.
// The shared backend connection keeps being read (its other clients are answered, the backend
// is never judged on the slow readers), and each slow reader is closed once its unread replies
// pass client_output_limit — the proxy holds ~1 MiB for it, not 100 MiB.
TEST_F(IsolationE2E, AClientThatNeverReadsIsClosedAtItsOutputLimitAndHarmsNoOne) {
  proxy.start(dir, yaml("  client_output_limit: 1048576\n"), 1);
  RespClient c(RespClient::dial_tcp(port()));
  const std::string big(100 * 1024, 'x');
  ASSERT_EQ(c.call({"SET", "big", big}), "+OK\r\n");
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(c.call({"SET", "k" + std::to_string(i), "v" + std::to_string(i)}), "+OK\r\n");
  }
  std::string gets;
  for (int i = 0; i < 1024; ++i) gets += "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
  std::vector<std::unique_ptr<RespClient>> slow;
  for (int j = 0; j < 2; ++j) {
    const int fd = RespClient::dial_tcp(port());
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    slow.push_back(std::make_unique<RespClient>(fd));
    ASSERT_TRUE(slow.back()->send_raw(gets));
  }
  // Another client reads every key right, the whole time.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int reads = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 100; ++i) {
      const std::string k = "k" + std::to_string(i);
      ASSERT_EQ(c.call({"GET", k}), bulk("v" + std::to_string(i))) << k << " after " << reads;
      ++reads;
    }
  }
  std::string m;
  for (int i = 0; i < 100; ++i) {
    m = proxy->prometheus();
    if (sample(m, "chash_proxy_client_output_limit_total{pool=\"p\"}") == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(sample(m, "chash_proxy_client_output_limit_total{pool=\"p\"}"), 2) << m;
  EXPECT_EQ(sample(m, "chash_proxy_backend_ejections_total{pool=\"p\",backend=\"r1\"}"), 0) << m;
  EXPECT_EQ(sample(m, "chash_proxy_backend_ejections_total{pool=\"p\",backend=\"r2\"}"), 0) << m;
  EXPECT_EQ(sample(m, "chash_proxy_pool_clients{pool=\"p\"}"), 1) << m;
  EXPECT_EQ(c.call({"GET", "big"}), bulk(big));
}

// client_output_limit: 0 keeps Redis's own default for normal clients: no limit.
TEST_F(IsolationE2E, NoOutputLimitWhenSetToZero) {
  proxy.start(dir, yaml("  client_output_limit: 0\n"), 1);
  RespClient c(RespClient::dial_tcp(port()));
  const std::string big(100 * 1024, 'y');
  ASSERT_EQ(c.call({"SET", "big", big}), "+OK\r\n");
  std::string gets;
  for (int i = 0; i < 64; ++i) gets += "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
  RespClient slow(RespClient::dial_tcp(port()));
  ASSERT_TRUE(slow.send_raw(gets));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // 6.4 MB wait, unread
  for (int i = 0; i < 64; ++i) ASSERT_EQ(slow.read_reply(), bulk(big)) << i;
  EXPECT_EQ(sample(proxy->prometheus(), "chash_proxy_client_output_limit_total{pool=\"p\"}"), 0);
}

// Issue 40, case 5: clients each holding a WATCH (a connection of their own to the key's server)
// cannot exhaust the servers' maxclients. Past the room the proxy keeps (maxclients less
// kOwnReserve, learnt with CONFIG GET), a WATCH is refused with an error naming the limit; no
// backend is ejected, and a new client's GET and SET work throughout.
TEST_F(IsolationE2E, ClientsOwnConnectionsNeverExhaustTheServersMaxclients) {
  for (int i = 1; i <= 2; ++i) {
    RespClient d(RespClient::dial_unix(servers[static_cast<std::size_t>(i - 1)]->socket()));
    ASSERT_EQ(d.call({"CONFIG", "SET", "maxclients", "50"}), "+OK\r\n");
  }
  proxy.start(dir, yaml(""), 2);
  std::vector<std::unique_ptr<RespClient>> watchers;
  int ok = 0, refused = 0;
  for (int i = 0; i < 150; ++i) {
    watchers.push_back(std::make_unique<RespClient>(RespClient::dial_tcp(port())));
    const std::string r = watchers.back()->call({"WATCH", "w" + std::to_string(i)});
    if (r == "+OK\r\n") {
      ++ok;
    } else {
      ++refused;
      EXPECT_TRUE(r.starts_with("-ERR backend r") &&
                  r.find("no room for another connection of a client's own") != std::string::npos &&
                  r.find("maxclients 50") != std::string::npos)
          << r;
    }
  }
  // maxclients 50 less the reserve (32), at least half: 25 a server.
  int on_r1 = 0;
  {
    const auto t = proxy->topology();
    const auto& pool = *t->pools[0];
    for (int i = 0; i < 150; ++i)
      on_r1 += pool.servers[pool.route("w" + std::to_string(i))].name == "r1" ? 1 : 0;
  }
  const int want = std::min(on_r1, 25) + std::min(150 - on_r1, 25);
  EXPECT_EQ(ok, want);
  EXPECT_EQ(refused, 150 - want);
  ASSERT_GT(refused, 0);
  RespClient c(RespClient::dial_tcp(port()));
  for (int i = 0; i < 100; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(c.call({"SET", k, "v"}), "+OK\r\n") << k;
    ASSERT_EQ(c.call({"GET", k}), bulk("v")) << k;
  }
  const std::string m = proxy->prometheus();
  EXPECT_EQ(sample(m, "chash_proxy_backend_ejections_total{pool=\"p\",backend=\"r1\"}"), 0) << m;
  EXPECT_EQ(sample(m, "chash_proxy_backend_ejections_total{pool=\"p\",backend=\"r2\"}"), 0) << m;
  EXPECT_EQ(sample(m, "chash_proxy_own_refused_total{pool=\"p\"}"), 150 - want) << m;
  EXPECT_EQ(sample(m, "chash_proxy_backend_own_connections{pool=\"p\",backend=\"r1\"}"),
            std::min(on_r1, 25))
      << m;
  // A watcher that got its connection still runs its transaction.
  for (auto& w : watchers) {
    if (w->call({"MULTI"}) != "+OK\r\n") continue;
    EXPECT_EQ(w->call({"EXEC"}), "*0\r\n");
    break;
  }
  watchers.clear();  // their connections go with them
  for (int i = 0; i < 100; ++i) {
    if (sample(proxy->prometheus(), "chash_proxy_backend_own_connections{pool=\"p\",backend=\"r1\"}") == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(sample(proxy->prometheus(), "chash_proxy_backend_own_connections{pool=\"p\",backend=\"r1\"}"), 0);
}

// max_own_connections caps them below the server's room, and the error names it.
TEST_F(IsolationE2E, MaxOwnConnectionsIsTheCap) {
  proxy.start(dir, yaml("  max_own_connections: 3\n"), 1);
  std::vector<std::unique_ptr<RespClient>> clients;
  int ok = 0;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<RespClient>(RespClient::dial_tcp(port())));
    const std::string r = clients.back()->call({"BLPOP", "q", "0.05"});
    if (r == "*-1\r\n") ++ok;  // timed out: it ran (and its connection went)
    ASSERT_TRUE(r == "*-1\r\n") << r;
  }
  EXPECT_EQ(ok, 5);
  clients.clear();
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<RespClient>(RespClient::dial_tcp(port())));
    const std::string r = clients.back()->call({"WATCH", "same"});
    if (i < 3) {
      EXPECT_EQ(r, "+OK\r\n") << i;
    } else {
      EXPECT_NE(r.find("(3 open: max_own_connections)"), std::string::npos) << r;
    }
  }
}

}  // namespace
}  // namespace chash::proxy::testing
