// SPDX-License-Identifier: Apache-2.0
// Replica reads of plain redis pools (read_policy, `replicas:` listed per server) against a
// real master and replica on 127.0.0.1, and scripted replicas that lag, load, or are not
// replicas: writes to the master, reads to a usable replica; the policies' fallbacks.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "cluster_util.h"
#include "control/proxy.h"

namespace chash::proxy::testing {
namespace {

// INFO as a replica in good health, or with one field changed.
std::string replica_info(const std::string& change = "") {
  std::string text =
      "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:1\r\n"
      "master_link_status:up\r\nmaster_last_io_seconds_ago:1\r\nmaster_sync_in_progress:0\r\n"
      "# Persistence\r\nloading:0\r\n";
  if (!change.empty()) {
    const std::string field = change.substr(0, change.find(':') + 1);
    const std::size_t at = text.find(field);
    text.replace(at, text.find("\r\n", at) - at, change);
  }
  return bulk(text);
}

std::string pool(const std::string& master, const std::vector<std::string>& replicas,
                 const std::string& policy) {
  std::string r;
  for (const auto& a : replicas) r += (r.empty() ? "" : ", ") + a;
  return "p:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 2000\n  read_policy: " + policy +
         "\n  servers:\n    - {server: \"" + master + ":1 shard\", replicas: [" + r + "]}\n";
}

class ReplicaE2E : public ::testing::Test {
 protected:
  void SetUp() override { dir = make_test_dir("chash-replica"); }
  void TearDown() override {
    proxy.stop();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::uint16_t port() { return proxy->port(std::size_t{0}); }
  bool replica_usable(std::size_t member) {
    return eventually([&] { return !proxy->topology()->pools[0]->states[member]->down.load(); });
  }
  fs::path dir;
  ProxyRunner proxy;
};

TEST_F(ReplicaE2E, ListedReplicaTakesTheReadsAndThePoliciesFallBack) {
  TcpRedisServer master, replica;
  ASSERT_TRUE(master.start(dir, "master"));
  ASSERT_TRUE(replica.start(dir, "replica", master.port()));
  proxy.start(dir, pool(master.address(), {replica.address()}, "replica"));
  ASSERT_TRUE(replica_usable(1)) << proxy->status_json();
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_EQ(c.call({"SET", "k", "v"}), "+OK\r\n");  // writes: the master
  ASSERT_TRUE(eventually([&] { return call_port(replica.port(), {"GET", "k"}) == bulk("v"); }));
  const long before = master.gets();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(c.call({"GET", "k"}), bulk("v"));
  EXPECT_EQ(c.call({"MGET", "k", "x"}), "*2\r\n" + bulk("v") + "$-1\r\n");
  EXPECT_EQ(c.call({"STRLEN", "k"}), ":1\r\n");
  EXPECT_GE(replica.gets(), 20);
  EXPECT_EQ(master.gets(), before);
  EXPECT_NE(proxy->status_json().find("\"role\":\"replica\",\"replica_of\":\"shard\""),
            std::string::npos);
  replica.stop();
  // read_policy replica: with the replica gone, reads fail with a reason (writes still work).
  EXPECT_TRUE(eventually([&] {
    return c.call({"GET", "k"}) ==
           "-ERR no replica of backend shard is usable (read_policy: replica)\r\n";
  }));
  EXPECT_EQ(c.call({"SET", "k", "w"}), "+OK\r\n");
}

// A replica that lags, loads, resyncs or is a master is not read from: its probe says why.
TEST_F(ReplicaE2E, UnusableReplicasAreLeftOut) {
  TcpRedisServer master;
  ASSERT_TRUE(master.start(dir, "master"));
  std::atomic<int> replica_gets{0};
  const std::vector<std::string> states = {"master_last_io_seconds_ago:30", "loading:1",
                                           "master_sync_in_progress:1", "master_link_status:down",
                                           "role:master"};
  std::atomic<std::size_t> state{0};
  ScriptedRedis fake([&](const std::vector<std::string>& argv) -> std::string {
    if (argv[0] == "INFO") {
      // INFO replication and INFO persistence: the fields are looked for in both.
      return state < states.size() ? replica_info(states[state]) : replica_info();
    }
    if (argv[0] == "GET") ++replica_gets;
    return "$1\r\nr\r\n";
  });
  proxy.start(dir, pool(master.address(), {fake.address()}, "prefer_replica"));
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_EQ(c.call({"SET", "k", "m"}), "+OK\r\n");
  for (std::size_t i = 0; i < states.size(); ++i) {
    state = i;
    // A probe sees it (at least a second apart when down): reads stay on the master.
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    EXPECT_TRUE(proxy->topology()->pools[0]->states[1]->down.load()) << states[i];
    EXPECT_EQ(c.call({"GET", "k"}), bulk("m")) << states[i];
  }
  EXPECT_EQ(replica_gets.load(), 0);
  state = states.size();  // healthy now: it takes the reads
  ASSERT_TRUE(replica_usable(1));
  EXPECT_EQ(c.call({"GET", "k"}), bulk("r"));
  EXPECT_EQ(replica_gets.load(), 1);
}

// A replica that answers -LOADING (restarted, reading its dataset): the read goes to the master
// and the replica is out until a probe finds it usable.
TEST_F(ReplicaE2E, LoadingReplyFallsBackToTheMaster) {
  TcpRedisServer master;
  ASSERT_TRUE(master.start(dir, "master"));
  std::atomic<bool> loading{false};
  ScriptedRedis fake([&](const std::vector<std::string>& argv) -> std::string {
    if (argv[0] == "INFO") return replica_info(loading ? "loading:1" : "");
    if (loading) return "-LOADING Redis is loading the dataset in memory\r\n";
    return "$1\r\nr\r\n";
  });
  proxy.start(dir, pool(master.address(), {fake.address()}, "prefer_replica"));
  ASSERT_TRUE(replica_usable(1));
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_EQ(c.call({"SET", "k", "m"}), "+OK\r\n");
  EXPECT_EQ(c.call({"GET", "k"}), bulk("r"));
  loading = true;
  EXPECT_EQ(c.call({"GET", "k"}), bulk("m"));  // -LOADING: answered by the master instead
  EXPECT_TRUE(proxy->topology()->pools[0]->states[1]->down.load());
  EXPECT_EQ(c.call({"GET", "k"}), bulk("m"));
  EXPECT_GE(proxy->topology()->pools[0]->shared->replica_fallbacks.load(), 1u);
  loading = false;
  ASSERT_TRUE(replica_usable(1));
  EXPECT_EQ(c.call({"GET", "k"}), bulk("r"));
}

}  // namespace
}  // namespace chash::proxy::testing
