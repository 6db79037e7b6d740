// SPDX-License-Identifier: Apache-2.0
// Redis Cluster pools end to end: real clusters of redis-server processes on 127.0.0.1 made by
// `redis-cli --cluster create`, and scripted nodes that misbehave. Asserts: keys land on their
// slot's master; multi-key commands split by slot and merge in order; same-slot rules as the
// cluster's own (CROSSSLOT); transactions on one slot; a reshard by `redis-cli --cluster
// reshard` under load with every reply correct and every key readable after; reads from
// replicas (read_policy) and a replica killed; a redirection loop bounded; TRYAGAIN retried;
// CLUSTERDOWN and unserved slots named; no seed answering at start, then the cluster appears.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chash/redis_slots.h"
#include "cluster_util.h"
#include "control/proxy.h"

namespace chash::proxy::testing {
namespace {

std::string pool_yaml(const std::string& seeds, const std::string& extra = "") {
  return "c:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 2000\n  cluster: [" + seeds + "]\n" +
         extra;
}

// The proxy has learnt a map covering `slots` slots.
bool map_covers(Proxy& proxy, std::uint32_t slots) {
  return eventually([&] {
    const auto t = proxy.topology();
    return t->pools[0]->cluster != nullptr && t->pools[0]->cluster->covered == slots;
  });
}

class ClusterE2E : public ::testing::Test {
 protected:
  void SetUp() override { dir = make_test_dir("chash-cluster"); }
  void TearDown() override {
    proxy.stop();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::uint16_t port() { return proxy->port(std::size_t{0}); }
  fs::path dir;
  ProxyRunner proxy;
};

TEST_F(ClusterE2E, RoutesBySlotSplitsAndChecksSameSlot) {
  RedisCluster cluster(dir, 3);
  ASSERT_TRUE(cluster.start());
  proxy.start(dir, pool_yaml(cluster.seed(1)));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  EXPECT_EQ(proxy->topology()->pools[0]->nodes, 3u);
  RespClient c(RespClient::dial_tcp(port()));
  std::vector<int> per_node(3, 0);
  for (int i = 0; i < 60; ++i) {
    const std::string k = "key:" + std::to_string(i);
    ASSERT_EQ(c.call({"SET", k, "v" + std::to_string(i)}), "+OK\r\n") << k;
    const int owner = cluster.owner(k);
    ASSERT_GE(owner, 0);
    ++per_node[static_cast<std::size_t>(owner)];
    // It is on its slot's master (a plain GET there answers it, not MOVED).
    EXPECT_EQ(call_port(cluster.ports()[static_cast<std::size_t>(owner)], {"GET", k}),
              bulk("v" + std::to_string(i)));
  }
  for (const int n : per_node) EXPECT_GT(n, 5);
  // MGET / MSET / DEL / EXISTS over many slots: split per slot, merged in the client's order.
  std::vector<std::string> mget = {"MGET"}, mset = {"MSET"}, del = {"DEL"};
  std::string expect = "*41\r\n";
  for (int i = 0; i < 40; ++i) {
    mget.push_back("key:" + std::to_string(i));
    expect += bulk("v" + std::to_string(i));
    mset.push_back("m:" + std::to_string(i));
    mset.push_back(std::to_string(i * i));
    del.push_back("m:" + std::to_string(i));
  }
  mget.push_back("missing");
  expect += "$-1\r\n";
  EXPECT_EQ(c.call(mget), expect);
  EXPECT_EQ(c.call(mset), "+OK\r\n");
  EXPECT_EQ(c.call({"GET", "m:7"}), bulk("49"));
  EXPECT_EQ(c.call({"EXISTS", "m:1", "m:2", "nope", "key:3"}), ":3\r\n");
  del.push_back("nope");
  EXPECT_EQ(c.call(del), ":40\r\n");
  // Several keys that must share a slot: hash tags, or the cluster's own CROSSSLOT.
  EXPECT_EQ(c.call({"SADD", "{t}a", "x", "y"}), ":2\r\n");
  EXPECT_EQ(c.call({"SADD", "{t}b", "y", "z"}), ":2\r\n");
  EXPECT_EQ(c.call({"SUNIONSTORE", "{t}c", "{t}a", "{t}b"}), ":3\r\n");
  EXPECT_EQ(c.call({"RENAME", "key:1", "key:2"}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  // A transaction on one slot runs; one over two slots is refused as the cluster would.
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "{u}1", "a"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"INCR", "{u}2"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "*2\r\n+OK\r\n:1\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "{u}1", "a"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"SET", "{v}1", "a"}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  EXPECT_EQ(c.call({"EXEC"}).substr(0, 9), "-EXECABOR");
  // The status names the nodes and their slot ranges.
  const std::string status = proxy->status_json();
  EXPECT_NE(status.find("\"cluster\":[{\"pool\":\"c\",\"status\":\"ok\""), std::string::npos)
      << status;
  EXPECT_NE(status.find("\"ranges\":\"0-5460\""), std::string::npos) << status;
  EXPECT_NE(proxy->prometheus().find("chash_proxy_cluster_slots_covered{pool=\"c\"} 16384"),
            std::string::npos);
}

// Pub/Sub through a cluster pool: a pattern subscriber gets every master's keyspace
// notifications (they stay on the master where the key changed) and each published message once
// (the masters pass a PUBLISH on to each other); a channel subscriber meets its publisher.
TEST_F(ClusterE2E, PatternsGetEveryMastersKeyspaceNotificationsAndEachMessageOnce) {
  RedisCluster cluster(dir, 3, 0, {"--notify-keyspace-events", "KEA"});
  ASSERT_TRUE(cluster.start());
  proxy.start(dir, pool_yaml(cluster.seed(1)));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  RespClient sub(RespClient::dial_tcp(port()));
  RespClient c(RespClient::dial_tcp(port()));
  const std::string confirm = sub.call({"PSUBSCRIBE", "__keyspace@0__:n:*"});
  ASSERT_NE(confirm.find("psubscribe"), std::string::npos) << confirm;
  ASSERT_EQ(sub.call({"PSUBSCRIBE", "news.*"}).find("psubscribe") != std::string::npos, true);
  std::set<int> masters;
  std::set<std::string> want;
  for (int i = 0; i < 30; ++i) {
    const std::string k = "n:" + std::to_string(i);
    masters.insert(cluster.owner(k));
    ASSERT_EQ(c.call({"SET", k, "v"}), "+OK\r\n");
    want.insert("__keyspace@0__:" + k);
  }
  ASSERT_EQ(masters.size(), 3u);
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(c.call({"PUBLISH", "news." + std::to_string(i), "m"}).substr(0, 1), ":");
  testing::set_timeouts(sub.fd(), 5);
  std::multiset<std::string> got, news;
  while (got.size() < want.size() || news.size() < 5) {
    const std::string r = sub.read_reply();
    ASSERT_FALSE(r.empty()) << got.size() << " notifications, " << news.size() << " messages";
    // *4 $8 pmessage $n pattern $n channel $n message: the channel is the 7th line.
    std::vector<std::string> lines;
    for (std::size_t at = 0, nl; (nl = r.find("\r\n", at)) != std::string::npos; at = nl + 2)
      lines.push_back(r.substr(at, nl - at));
    ASSERT_GE(lines.size(), 7u) << r;
    ASSERT_EQ(lines[2], "pmessage") << r;
    (lines[6].starts_with("news.") ? news : got).insert(lines[6]);
  }
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), want);
  EXPECT_EQ(got.size(), want.size());  // each once
  // Nothing more on its way: no message twice.
  EXPECT_EQ(sub.call({"PING"}), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
  EXPECT_EQ(news.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(news.count("news." + std::to_string(i)), 1u) << i;
}

// Traffic through the proxy while redis-cli reshards: every reply is what was written, and
// every key is readable afterwards.
TEST_F(ClusterE2E, ReshardUnderLoadLosesNothing) {
  RedisCluster cluster(dir, 3);
  ASSERT_TRUE(cluster.start());
  proxy.start(dir, pool_yaml(cluster.seed(0) + ", " + cluster.seed(2)));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  constexpr int kKeys = 2000;
  {
    RespClient c(RespClient::dial_tcp(port()));
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_EQ(c.call({"SET", "r:" + std::to_string(i), std::to_string(i)}), "+OK\r\n");
    }
  }
  std::atomic<bool> stop{false};
  std::atomic<long> ok{0}, wrong{0}, failed{0};
  std::vector<std::thread> load;
  std::mutex bad_mu;
  std::string bad;
  for (int t = 0; t < 3; ++t) {
    load.emplace_back([&, t] {
      RespClient c(RespClient::dial_tcp(port()));
      int i = t;
      while (!stop) {
        const std::string k = "r:" + std::to_string(i % kKeys);
        // Writes the same value it holds (readers always know what to expect), then reads it.
        const std::string w = c.call({"SET", k, std::to_string(i % kKeys)});
        const std::string r = c.call({"GET", k});
        if (w == "+OK\r\n" && r == bulk(std::to_string(i % kKeys))) {
          ++ok;
        } else if (w.starts_with("-") || r.starts_with("-")) {
          ++failed;
          std::lock_guard lock(bad_mu);
          if (bad.size() < 600) bad += w + " " + r + "; ";
        } else {
          ++wrong;
        }
        i += 3;
      }
    });
  }
  const auto [out1, rc1] = cluster.reshard(0, 1, 1500);
  const auto [out2, rc2] = cluster.reshard(2, 0, 800);
  stop = true;
  for (auto& th : load) th.join();
  ASSERT_EQ(rc1, 0) << out1;
  ASSERT_EQ(rc2, 0) << out2;
  std::printf("[cluster] reshard of 2300 slots under load: %ld ok, %ld failed, %ld wrong\n",
              ok.load(), failed.load(), wrong.load());
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(failed.load(), 0) << bad;
  EXPECT_GT(ok.load(), 1000);
  const auto t = proxy->topology();
  EXPECT_GT(t->pools[0]->shared->moved.load() + t->pools[0]->shared->ask.load(), 0u);
  ASSERT_TRUE(cluster.wait_ok());
  RespClient c(RespClient::dial_tcp(port()));
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(c.call({"GET", "r:" + std::to_string(i)}), bulk(std::to_string(i))) << i;
  }
  EXPECT_TRUE(eventually([&] {
    const std::string s = proxy->status_json();
    return s.find("\"ranges\":\"0-5460\"") == std::string::npos;  // the map followed
  }));
}

// read_policy: reads go to replicas (READONLY), writes to masters; a replica killed: its reads
// go to the master (prefer_replica), those in flight to it included.
TEST_F(ClusterE2E, ReplicaReadsAndAKilledReplica) {
  RedisCluster cluster(dir, 3, 1);
  ASSERT_TRUE(cluster.start());
  proxy.start(dir, pool_yaml(cluster.seed(0), "  read_policy: prefer_replica\n"));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  // Replicas come up once the map names them (a node may still have called itself a master
  // when the proxy first read it) and their probes (INFO replication) say they are usable.
  ASSERT_TRUE(eventually([&] {
    const auto t = proxy->topology();
    const Pool& pool = *t->pools[0];
    if (pool.servers.size() != 6) return false;
    std::size_t replicas = 0;
    for (std::size_t i = 0; i < 6; ++i) {
      if (pool.servers[i].role != ServerRole::kReplica) continue;
      if (pool.states[i]->down.load()) return false;
      ++replicas;
    }
    return replicas == 3;
  }));
  RespClient c(RespClient::dial_tcp(port()));
  for (int i = 0; i < 30; ++i) ASSERT_EQ(c.call({"SET", "k" + std::to_string(i), "v"}), "+OK\r\n");
  std::vector<long> masters_before, replicas_before;
  for (std::size_t i = 0; i < 6; ++i) {
    (cluster.is_master(i) ? masters_before : replicas_before).push_back(cluster.calls(i, "get"));
  }
  for (int i = 0; i < 30; ++i) {
    // A replica may lag a write by a moment: read until it has it.
    EXPECT_TRUE(eventually([&] { return c.call({"GET", "k" + std::to_string(i)}) == bulk("v"); }));
  }
  long master_gets = 0, replica_gets = 0;
  std::size_t mi = 0, ri = 0;
  int replica_index = -1;
  for (std::size_t i = 0; i < 6; ++i) {
    if (cluster.is_master(i)) {
      master_gets += cluster.calls(i, "get") - masters_before[mi++];
    } else {
      replica_gets += cluster.calls(i, "get") - replicas_before[ri++];
      replica_index = static_cast<int>(i);
    }
  }
  EXPECT_EQ(master_gets, 0);
  EXPECT_GE(replica_gets, 30);
  EXPECT_GE(proxy->topology()->pools[0]->shared->replica_reads.load(), 30u);
  // One replica killed: after the reads in flight to it fail, every read is answered again.
  ASSERT_GE(replica_index, 0);
  cluster.kill(static_cast<std::size_t>(replica_index));
  int failed = 0;
  for (int i = 0; i < 200; ++i) {
    if (c.call({"GET", "k" + std::to_string(i % 30)}) != bulk("v")) ++failed;
  }
  std::printf("[cluster] reads failed after a replica was killed: %d of 200\n", failed);
  EXPECT_EQ(failed, 0);  // reads lost with the replica went to its master
  EXPECT_TRUE(eventually([&] {
    for (int i = 0; i < 30; ++i) {
      if (c.call({"GET", "k" + std::to_string(i)}) != bulk("v")) return false;
    }
    return true;
  }));
}

// A master fails over under load: by CLUSTER FAILOVER on its replica (graceful) and by a kill
// (the cluster promotes the replica after cluster-node-timeout). Traffic follows the map; the
// requests that fail and the time until writes land on the new master are printed.
TEST_F(ClusterE2E, FailoverUnderLoadIsFollowed) {
  RedisCluster cluster(dir, 3, 1);
  ASSERT_TRUE(cluster.start());
  proxy.start(dir, pool_yaml(cluster.seed(0) + ", " + cluster.seed(1)));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  // A key of the master that will move, and its replica.
  std::size_t master = 0, replica = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    if (!cluster.is_master(i)) continue;
    master = i;
    break;
  }
  const std::string master_id = cluster.id(master);
  for (std::size_t i = 0; i < 6; ++i) {
    if (call_port(cluster.ports()[i], {"ROLE"}).find(std::to_string(cluster.ports()[master])) !=
            std::string::npos &&
        !cluster.is_master(i))
      replica = i;
  }
  ASSERT_NE(replica, master);
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    if (cluster.owner("f" + std::to_string(i)) == static_cast<int>(master))
      key = "f" + std::to_string(i);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, hung{0};
  std::thread load([&] {
    RespClient c(RespClient::dial_tcp(port()));
    for (int i = 0; !stop; ++i) {
      const std::string r = c.call({"SET", "load:" + std::to_string(i % 300), "v"});
      if (r == "+OK\r\n") ++ok;
      else if (r.empty()) ++hung;
      else ++failed;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  struct Join {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{stop, load};
  // Waits for `to` to be a master (up to `limit_ms`) and then for a write through the proxy to
  // land on it (up to 10 s more): the ms until the cluster promoted it, and until the proxy
  // followed (-1: not in time).
  auto follow = [&](std::size_t to, long limit_ms = 15000) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto since = [&] {
      return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - t0)
                                   .count());
    };
    long promoted = -1;
    while (promoted < 0 ? since() < limit_ms : since() - promoted < 10000) {
      if (promoted < 0 && cluster.is_master(to)) promoted = since();
      RespClient c(RespClient::dial_tcp(port()));
      // The write went through and `to` is the key's master now: it landed there.
      if (promoted >= 0 && c.call({"SET", key, "x"}) == "+OK\r\n" &&
          call_port(cluster.ports()[to], {"GET", key}) == bulk("x")) {
        return std::pair{promoted, since()};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::pair{promoted, -1L};
  };
  // CLUSTER FAILOVER on replica `to`, then follow(). A replica refuses a manual failover until
  // it has caught up with its master, and one accepted can still time out (Redis's 5 s) on a
  // loaded machine without a promotion: then it is asked again. A promotion the proxy did not
  // follow is not retried: that is the failure this test looks for.
  auto fail_over_to = [&](std::size_t to) {
    std::pair<long, long> r{-1, -1};
    for (int attempt = 0; attempt < 3 && r.first < 0; ++attempt) {
      if (!eventually([&] {
            return call_port(cluster.ports()[to], {"CLUSTER", "FAILOVER"}) == "+OK\r\n";
          })) {
        break;
      }
      r = follow(to, 8000);
      if (r.first < 0) std::printf("[cluster] CLUSTER FAILOVER %d: no promotion in 8 s\n", attempt);
    }
    return r;
  };
  // 1. Graceful: the replica takes over (CLUSTER FAILOVER), no write is lost.
  const auto [graceful_promoted, graceful_ms] = fail_over_to(replica);
  ASSERT_GE(graceful_promoted, 0) << "the cluster never promoted the replica";
  ASSERT_GE(graceful_ms, 0) << "writes never reached the promoted replica";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int failed_graceful = failed.load();
  std::printf(
      "[cluster] CLUSTER FAILOVER: promoted after %ld ms, proxy writes there after %ld "
      "ms; load: %d ok, %d failed, %d unanswered\n",
      graceful_promoted, graceful_ms, ok.load(), failed_graceful, hung.load());
  // 2. A kill: the old master (now a replica) is back in charge first, then killed.
  ASSERT_TRUE(cluster.wait_ok());
  const auto [failback_promoted, failback_ms] = fail_over_to(master);
  ASSERT_GE(failback_promoted, 0) << "the cluster never promoted the old master again";
  ASSERT_GE(failback_ms, 0) << "writes never reached the old master again";
  ASSERT_TRUE(cluster.wait_ok());
  const int before_kill = failed.load();
  cluster.kill(master);
  const auto [kill_promoted, kill_ms] = follow(replica);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  load.join();
  std::printf(
      "[cluster] master killed: the cluster promoted its replica after %ld ms "
      "(cluster-node-timeout 1000), proxy writes there after %ld ms; load: %d ok, %d "
      "failed during the kill, %d unanswered\n",
      kill_promoted, kill_ms, ok.load(), failed.load() - before_kill, hung.load());
  EXPECT_LE(graceful_ms - graceful_promoted, 2000);  // the proxy's part of the switch
  EXPECT_LE(failed_graceful, 50);  // -READONLY / -TRYAGAIN at the switch are retried: few left
  EXPECT_GE(kill_ms, 0);
  EXPECT_EQ(hung.load(), 0);
  EXPECT_GT(ok.load(), 200);
}

// A node that always answers MOVED to itself: the hop limit ends it with a clear error.
TEST_F(ClusterE2E, RedirectionLoopIsBounded) {
  std::string self;
  ScriptedRedis node([&](const std::vector<std::string>& argv) -> std::string {
    if (argv.size() == 2 && argv[0] == "CLUSTER" && argv[1] == "NODES") return one_node_map(self);
    return "-MOVED 866 " + self + "\r\n";
  });
  self = node.address();
  proxy.start(dir, pool_yaml(self, "  cluster_max_redirects: 3\n"));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  RespClient c(RespClient::dial_tcp(port()));
  EXPECT_EQ(
      c.call({"GET", "k"}),
      "-ERR chash-proxy: too many cluster redirections (3), the last: MOVED 866 " + self + "\r\n");
  EXPECT_EQ(c.call({"PING"}), "+PONG\r\n");  // the connection is fine
}

// TRYAGAIN (keys split by a migration) is retried; CLUSTERDOWN is passed on with its slot.
TEST_F(ClusterE2E, TryAgainRetriedClusterDownNamed) {
  std::string self;
  std::atomic<int> tries{0};
  ScriptedRedis node([&](const std::vector<std::string>& argv) -> std::string {
    if (argv.size() == 2 && argv[0] == "CLUSTER" && argv[1] == "NODES") return one_node_map(self);
    if (argv[0] == "MGET") {
      return ++tries <= 2 ? "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
                          : "*2\r\n$1\r\na\r\n$1\r\nb\r\n";
    }
    return "-CLUSTERDOWN The cluster is down\r\n";
  });
  self = node.address();
  proxy.start(dir, pool_yaml(self));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots));
  RespClient c(RespClient::dial_tcp(port()));
  EXPECT_EQ(c.call({"MGET", "{x}1", "{x}2"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(tries.load(), 3);
  EXPECT_EQ(c.call({"GET", "foo"}), "-CLUSTERDOWN The cluster is down (slot " +
                                        std::to_string(redis_key_slot("foo")) + ")\r\n");
}

// Slots no master serves are answered by the proxy, naming the slot; the others work.
TEST_F(ClusterE2E, UnservedSlotsAreNamed) {
  RedisCluster cluster(dir, 3, 0, {"--cluster-require-full-coverage", "no"});
  ASSERT_TRUE(cluster.start());
  // Slot 0..99 leave node 0 (which served 0-5460).
  std::vector<std::string> delslots = {"CLUSTER", "DELSLOTSRANGE", "0", "99"};
  for (std::size_t i = 0; i < 3; ++i) call_port(cluster.ports()[i], delslots);
  proxy.start(dir, pool_yaml(cluster.seed(0)));
  ASSERT_TRUE(map_covers(*proxy, kRedisSlots - 100));
  RespClient c(RespClient::dial_tcp(port()));
  std::string in_gap;
  for (int i = 0; in_gap.empty(); ++i) {
    const std::string k = "g" + std::to_string(i);
    if (redis_key_slot(k) < 100) in_gap = k;
  }
  EXPECT_EQ(c.call({"GET", in_gap}), "-CLUSTERDOWN Hash slot not served (slot " +
                                         std::to_string(redis_key_slot(in_gap)) +
                                         " has no master in the cluster map)\r\n");
  EXPECT_EQ(c.call({"SET", "key:1", "v"}), "+OK\r\n");
  EXPECT_NE(proxy->status_json().find("\"status\":\"100 slots not served\""), std::string::npos);
}

// No seed answers at start: the proxy starts, says why, and follows the cluster once it is up.
TEST_F(ClusterE2E, NoSeedAtStartThenTheClusterComes) {
  RedisCluster cluster(dir, 3);
  cluster.pick_ports();
  proxy.start(dir, pool_yaml(cluster.seed(0), "  cluster_refresh: 200\n"));
  RespClient c(RespClient::dial_tcp(port()));
  EXPECT_EQ(c.call({"GET", "k"}),
            "-CLUSTERDOWN the cluster's slot map is not known yet (no node has answered CLUSTER "
            "NODES; see /status)\r\n");
  const std::string status = proxy->status_json();
  EXPECT_NE(status.find("\"status\":\"no node answers\""), std::string::npos) << status;
  EXPECT_NE(status.find(cluster.seed(0) + ": connect: Connection refused"), std::string::npos)
      << status;
  ASSERT_TRUE(cluster.start());
  EXPECT_TRUE(eventually([&] { return c.call({"SET", "k", "v"}) == "+OK\r\n"; }));
  EXPECT_EQ(c.call({"GET", "k"}), bulk("v"));
}

TEST(ClusterConfigTest, ErrorsNameTheProblem) {
  const auto load = [](const std::string& yaml) {
    try {
      parse_config(yaml, "t.yml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "p:\n  listen: 127.0.0.1:9\n  redis: true\n";
  EXPECT_EQ(load(head + "  cluster: [127.0.0.1:7000]\n"), "no error");
  EXPECT_EQ(load(head + "  cluster: [127.0.0.1:7000]\n  servers: [127.0.0.1:1:1]\n"),
            "t.yml:4: pool 'p': give either 'servers' or 'cluster' (a Redis Cluster's seed "
            "nodes), not both");
  EXPECT_EQ(load(head + "  cluster: [127.0.0.1:7000]\n  distribution: ketama\n"),
            "t.yml:4: pool 'p': a Redis Cluster routes by its own slot map: drop distribution, "
            "preset, algorithm, ring, hash and vnodes");
  EXPECT_EQ(load("p:\n  listen: 127.0.0.1:9\n  cluster: [127.0.0.1:7000]\n"),
            "t.yml:3: pool 'p': 'cluster' applies to redis pools only");
  EXPECT_EQ(load(head + "  cluster: [127.0.0.1:7000, 127.0.0.1:7000]\n"),
            "t.yml:4: pool 'p': cluster: 127.0.0.1:7000 is listed twice");
  EXPECT_EQ(load(head + "  servers: [127.0.0.1:1:1]\n  read_policy: sometimes\n"),
            "t.yml:5: pool 'p': unknown read_policy 'sometimes' (master, prefer_replica, "
            "replica, any)");
  EXPECT_EQ(load(head + "  cluster: [127.0.0.1:7000]\n  auto_eject_hosts: true\n"),
            "t.yml:4: pool 'p': a Redis Cluster's keys have one master each: auto_eject_hosts "
            "does not apply (the cluster fails over itself)");
  EXPECT_EQ(load("p:\n  listen: 127.0.0.1:9\n  redis: true\n"),
            "t.yml:1: pool 'p': 'servers' is required (or 'cluster:' seeds for a Redis Cluster)");
}

}  // namespace
}  // namespace chash::proxy::testing
