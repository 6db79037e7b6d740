// SPDX-License-Identifier: Apache-2.0
// Replicated memcache pools (`replicas:`, `write_policy:`; proto/memcache/session_replicas.cc)
// against three real memcached: writes reach every home, reads fall over on a miss, a home that
// is killed and restarted (empty) or stopped and resumed (holding older values) loses no
// acknowledged write and serves no value older than one it missed.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"

namespace chash::proxy::testing {
namespace {

class MemcacheReplicasE2E : public MemcacheServersTest {
 protected:
  void SetUp() override { start_servers("mcr", 3); }
  // One pool per (name, write_policy) over m1..m3, each with `replicas` homes.
  std::string pool_yaml(const std::string& name, int replicas, const std::string& policy) {
    std::string y = name + ":\n  listen: 127.0.0.1:0\n  protocol: memcache\n  timeout: 400\n" +
                    "  auto_eject_hosts: true\n  server_failure_limit: 1\n" +
                    "  server_retry_timeout: 200\n  replicas: " + std::to_string(replicas) + "\n";
    if (!policy.empty()) y += "  write_policy: " + policy + "\n";
    y += "  servers:\n" + server_lines(1, 3);
    return y;
  }
  // The key's homes (0-based server indexes), in the router's order.
  std::vector<std::size_t> homes(const std::string& key, std::size_t n, std::size_t p = 0) {
    std::array<NodeId, 8> out{};
    const std::size_t got = pool(p).router.route_n(key, std::span<NodeId>(out.data(), n));
    return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(got)};
  }
  bool down(std::size_t server, std::size_t p = 0) {
    return pool(p).states[server]->down.load();
  }
  // Requests through `c` for keys homed at `server` until the pool has ejected it.
  bool until_ejected(McClient& c, std::size_t server, std::size_t p = 0) {
    return eventually([&] {
      for (int i = 0; i < 50 && !down(server, p); ++i) {
        const std::string k = "probe" + std::to_string(i);
        if (homes(k, 1, p)[0] == server) c.call("get " + k + "\r\n");
      }
      return down(server, p);
    });
  }
};

TEST_F(MemcacheReplicasE2E, WritesReachEveryHomeAndOnlyThem) {
  proxy.start(dir, pool_yaml("p", 2, ""));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  for (int i = 0; i < 30; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(c.call(set(k, "v" + std::to_string(i))), "STORED\r\n");
    const auto h = homes(k, 2);
    ASSERT_EQ(h.size(), 2u);
    for (std::size_t s = 0; s < 3; ++s) {
      const bool home = s == h[0] || s == h[1];
      EXPECT_EQ(on(s, "mg " + k + " v\r\n"),
                home ? "VA " + std::to_string(("v" + std::to_string(i)).size()) + "\r\nv" +
                           std::to_string(i) + "\r\n"
                     : "EN\r\n")
          << k << " at m" << s + 1;
    }
  }
  // incr, append, touch and delete act on both homes; the reply is one home's.
  const auto h = homes("ctr", 2);
  ASSERT_EQ(c.call(set("ctr", "41")), "STORED\r\n");
  EXPECT_EQ(c.call("incr ctr 1\r\n"), "42\r\n");
  for (const std::size_t s : h) EXPECT_EQ(on(s, "mg ctr v\r\n"), "VA 2\r\n42\r\n");
  EXPECT_EQ(c.call("append ctr 0 0 1\r\n!\r\n"), "STORED\r\n");
  for (const std::size_t s : h) EXPECT_EQ(on(s, "mg ctr v\r\n"), "VA 3\r\n42!\r\n");
  EXPECT_EQ(c.call("delete ctr\r\n"), "DELETED\r\n");
  for (const std::size_t s : h) EXPECT_EQ(on(s, "mg ctr\r\n"), "EN\r\n");
  // Meta: ms stores at both homes, quiet mode keeps the client's order, mg reads.
  EXPECT_EQ(c.call("ms mk 2 T60\r\nhi\r\n"), "HD\r\n");
  for (const std::size_t s : homes("mk", 2)) EXPECT_EQ(on(s, "mg mk v\r\n"), "VA 2\r\nhi\r\n");
  c.send("ms q1 1 q\r\na\r\nms q2 1 q\r\nb\r\nmg q1 v\r\nmn\r\n");
  EXPECT_EQ(c.read(false, true), "VA 1\r\na\r\n");
  EXPECT_EQ(c.read(false, true), "MN\r\n");
  // A multi-get across homes, in the client's order.
  EXPECT_EQ(c.call("get k1 nosuch k2\r\n"), value("k1", "v1") + value("k2", "v2") + "END\r\n");
}

// The story of the issue: Zipf-free but the same — a home killed under writes and restarted
// empty, then a home stopped (it keeps its values) while the keys are rewritten and resumed.
// Every acknowledged write is read back, and no read returns a value older than the last
// acknowledged one.
TEST_F(MemcacheReplicasE2E, AHomeKilledOrStoppedLosesNoWriteServesNoStale) {
  proxy.start(dir, pool_yaml("p", 3, "majority"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  constexpr int kKeys = 120;
  std::vector<std::string> last(kKeys);
  auto write_all = [&](const std::string& v) {
    int acked = 0;
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = "key" + std::to_string(i), val = v + "-" + std::to_string(i);
      const std::string r = c.call(set(k, val));
      if (r == "STORED\r\n") {
        last[static_cast<std::size_t>(i)] = val;
        ++acked;
      } else {
        ADD_FAILURE() << k << " " << v << ": " << r;
      }
    }
    return acked;
  };
  auto read_all = [&](const char* when) {
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = "key" + std::to_string(i);
      EXPECT_EQ(c.call("get " + k + "\r\n"), value(k, last[static_cast<std::size_t>(i)]) + "END\r\n")
          << k << " " << when;
    }
  };
  ASSERT_EQ(write_all("v1"), kKeys);
  // Killed: the writes still reach two of three homes, a majority.
  servers[0]->stop();
  EXPECT_EQ(write_all("v2"), kKeys);
  EXPECT_TRUE(down(0));
  read_all("with m1 down");
  // Restarted empty: its reads miss and go on to the next home.
  ASSERT_TRUE(servers[0]->start());
  ASSERT_TRUE(eventually([&] { return !down(0); }));
  read_all("after m1 came back empty");
  // Stopped: it keeps v2 while the keys are rewritten to v3 elsewhere; resumed, it is swept first.
  const std::size_t m2 = 1;
  stop(m2);
  EXPECT_EQ(write_all("v3"), kKeys);
  EXPECT_TRUE(down(m2));
  read_all("with m2 stopped");
  resume(m2);
  ASSERT_TRUE(eventually([&] { return !down(m2); }));
  read_all("after m2 resumed");
  // Nothing older than v3 is left at m2 to be served: each key is v3 there or gone.
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = "key" + std::to_string(i);
    const std::string r = on(m2, "mg " + k + " v\r\n");
    EXPECT_TRUE(r == "EN\r\n" || r.find("v3-") != std::string::npos) << k << ": " << r;
  }
  EXPECT_GE(pool().states[m2]->absence.swept(), static_cast<std::uint64_t>(kKeys));
}

// A home's noted key is deleted there before its next request; when that delete fails too (the
// home still hangs), the key stays noted, so the value the home kept is never served once it
// answers again (regression: a failed delete dropped the note, and the resumed home's old value
// was read back).
TEST_F(MemcacheReplicasE2E, ADeleteThatFailsAtAHomeLeavesTheKeyNoted) {
  // Nobody ejected within the test: every request reaches the stopped home and times out there.
  proxy.start(dir, "p:\n  listen: 127.0.0.1:0\n  timeout: 300\n  auto_eject_hosts: true\n"
                   "  server_failure_limit: 1000\n  replicas: 2\n  write_policy: one\n"
                   "  servers:\n" + server_lines(1, 3));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  std::string k;
  for (int i = 0; k.empty(); ++i) {
    if (homes("k" + std::to_string(i), 2)[0] == 0) k = "k" + std::to_string(i);
  }
  const std::size_t second = homes(k, 2)[1];
  ASSERT_EQ(c.call(set(k, "v1")), "STORED\r\n");
  stop(0);
  EXPECT_EQ(c.call(set(k, "v2")), "STORED\r\n");  // the second home took it: noted at m1
  const AbsenceLog& noted = pool().states[0]->absence;
  ASSERT_TRUE(noted.contains(k));
  // Read while m1 still hangs: the delete sent there first times out, as does the read, which
  // goes on to the second home.
  EXPECT_EQ(c.call("get " + k + "\r\n"), value(k, "v2") + "END\r\n");
  EXPECT_TRUE(noted.contains(k)) << "the delete failed: the key must stay noted";
  resume(0);
  // m1 answers again holding the value it had (what reached it while stopped is put back).
  ASSERT_TRUE(eventually([&] { return on(0, set(k, "v1")) == "STORED\r\n"; }));
  EXPECT_EQ(c.call("get " + k + "\r\n"), value(k, "v2") + "END\r\n");
  EXPECT_EQ(on(0, "mg " + k + " v\r\n"), "EN\r\n");
  EXPECT_EQ(on(second, "mg " + k + " v\r\n"), "VA 2\r\nv2\r\n");
}

// write_policy counts a home that is down as one that did not take the write.
TEST_F(MemcacheReplicasE2E, WritePolicyCountsTheHomesThatTookIt) {
  proxy.start(dir, pool_yaml("all", 3, "all") + pool_yaml("maj", 3, "majority") +
                       pool_yaml("one", 3, "one"));
  std::vector<McClient> c;
  for (std::size_t p = 0; p < 3; ++p) c.emplace_back(dial_tcp(proxy->port(p)));
  for (std::size_t p = 0; p < 3; ++p) ASSERT_EQ(c[p].call(set("w", "0")), "STORED\r\n");
  servers[2]->stop();
  for (std::size_t p = 0; p < 3; ++p) ASSERT_TRUE(until_ejected(c[p], 2, p)) << p;
  EXPECT_EQ(c[0].call(set("w", "1")),
            "SERVER_ERROR chash-proxy: the write reached 2 of 3 homes (write_policy: all)\r\n");
  EXPECT_EQ(c[1].call(set("w", "2")), "STORED\r\n");
  EXPECT_EQ(c[2].call(set("w", "3")), "STORED\r\n");
  servers[1]->stop();
  for (std::size_t p = 0; p < 3; ++p) ASSERT_TRUE(until_ejected(c[p], 1, p)) << p;
  EXPECT_EQ(c[1].call(set("w", "4")),
            "SERVER_ERROR chash-proxy: the write reached 1 of 3 homes (write_policy: majority)\r\n");
  EXPECT_EQ(c[2].call(set("w", "5")), "STORED\r\n");
  EXPECT_EQ(c[2].call("get w\r\n"), value("w", "5") + "END\r\n");
  servers[0]->stop();
  for (std::size_t p = 0; p < 3; ++p) ASSERT_TRUE(until_ejected(c[p], 0, p)) << p;
  EXPECT_EQ(c[2].call("get w\r\n"),
            "SERVER_ERROR chash-proxy: every home of key 'w' is down (replicas: 3)\r\n");
}

// A compare-and-swap goes to the first home only (its cas values are that server's); the other
// homes have the key noted, so once the first is gone they answer a miss, never the old value.
TEST_F(MemcacheReplicasE2E, CasActsAtTheFirstHomeAndTheOthersForgetTheKey) {
  proxy.start(dir, pool_yaml("p", 2, "all"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  ASSERT_EQ(c.call(set("ck", "old")), "STORED\r\n");
  const auto h = homes("ck", 2);
  const std::string gets = c.call("gets ck\r\n");
  ASSERT_TRUE(gets.starts_with("VALUE ck 0 3 ")) << gets;
  const std::string line = gets.substr(0, gets.find("\r\n"));
  const std::string cas = line.substr(line.rfind(' ') + 1);
  EXPECT_EQ(c.call("cas ck 0 0 3 " + cas + "\r\nnew\r\n"), "STORED\r\n");
  EXPECT_EQ(on(h[0], "mg ck v\r\n"), "VA 3\r\nnew\r\n");
  EXPECT_EQ(on(h[1], "mg ck v\r\n"), "VA 3\r\nold\r\n");  // not asked yet: noted
  EXPECT_EQ(c.call("get ck\r\n"), value("ck", "new") + "END\r\n");
  servers[h[0]]->stop();
  ASSERT_TRUE(until_ejected(c, h[0]));
  EXPECT_EQ(c.call("get ck\r\n"), "END\r\n");  // deleted at the second home before it answered
  EXPECT_EQ(on(h[1], "mg ck v\r\n"), "EN\r\n");
}

// A binary-protocol client and a text client see one replicated pool the same way.
TEST_F(MemcacheReplicasE2E, BinaryWritesReplicateToo) {
  namespace op = memcache::binary::op;
  proxy.start(dir, pool_yaml("p", 3, "majority"));
  BinClient b(dial_tcp(proxy->port(std::size_t{0})));
  const BinResp s = b.call(store(op::kSet, "bk", "bin", 5, 0, 7));
  EXPECT_EQ(s.status, memcache::binary::status::kSuccess);
  EXPECT_EQ(s.opaque, 7u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(on(i, "mg bk v f\r\n"), "VA 3 f5\r\nbin\r\n");
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  EXPECT_EQ(c.call("get bk\r\n"), value("bk", "bin", 5) + "END\r\n");
  const BinResp g = b.call(packet(op::kGet, "bk", {}, {}, 8));
  EXPECT_EQ(g.value, "bin");
  EXPECT_EQ(g.flags(), 5u);
  const BinResp miss = b.call(packet(op::kGet, "nope", {}, {}, 9));
  EXPECT_EQ(miss.status, memcache::binary::status::kKeyNotFound);
}

}  // namespace
}  // namespace chash::proxy::testing
