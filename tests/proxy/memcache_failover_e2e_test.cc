// SPDX-License-Identifier: Apache-2.0
// The failover route of single-owner memcache pools (`failover:`; proto/memcache/
// session_replicas.cc, docs/MEMCACHED.md "Failover route") against three real memcached: an
// owner stopped (timeouts) or killed (connection refused) before it is ejected has its reads and
// writes answered by the key's next owner; return_best_on_error and on_miss choose what a
// failed read answers; a write the owner missed is deleted there before it serves the key again.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"

namespace chash::proxy::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTimeoutMs = 400;

class MemcacheFailoverE2E : public MemcacheServersTest {
 protected:
  void SetUp() override { start_servers("mcf", 3); }
  // A pool over m1..m`n` that ejects nobody within a test (the failures stay below the limit):
  // what is checked is the failover before ejection. `failover` is the block's body.
  std::string pool_yaml(const std::string& name, const std::string& failover, int n = 3) {
    return name + ":\n  listen: 127.0.0.1:0\n  protocol: memcache\n  timeout: " +
           std::to_string(kTimeoutMs) +
           "\n  auto_eject_hosts: true\n  server_failure_limit: 1000\n"
           "  failover_ttl: 60000\n  failover:\n" +
           failover + "  servers:\n" + server_lines(1, n);
  }
  // The key's owners (0-based server indexes), in the router's order.
  std::vector<std::size_t> owners(const std::string& key, std::size_t p = 0) {
    std::array<NodeId, 3> out{};
    const std::size_t got = pool(p).router.route_n(key, std::span<NodeId>(out.data(), 3));
    return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(got)};
  }
  // A key whose owner is server `s` (and, with `next` >= 0, whose next owner is `next`).
  std::string key_owned_by(std::size_t s, const std::string& prefix, int next = -1) {
    for (int i = 0; i < 1000; ++i) {
      const std::string k = prefix + std::to_string(i);
      const auto o = owners(k);
      if (o[0] == s && (next < 0 || o[1] == static_cast<std::size_t>(next))) return k;
    }
    ADD_FAILURE() << "no key owned by m" << s + 1;
    return prefix;
  }
  // `call` answered within the pool timeout and a margin (it waited for one owner at most).
  template <class F>
  auto timed(F call) {
    const auto t0 = Clock::now();
    auto r = call();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    EXPECT_LT(ms, kTimeoutMs + 800) << "answered after " << ms << " ms";
    return r;
  }
};

// The owner stopped (its requests time out): text, meta and multi-key reads and writes are
// answered by the next owner about one pool timeout later; stores there live failover_ttl at
// most; the owner is not ejected.
TEST_F(MemcacheFailoverE2E, AStoppedOwnersRequestsGoToTheNextOwner) {
  proxy.start(dir, pool_yaml("p", "    tries: 2\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  const std::string k = key_owned_by(0, "k"), other = key_owned_by(1, "o");
  const std::size_t next = owners(k)[1];
  ASSERT_EQ(c.call(set(k, "v0")), "STORED\r\n");
  ASSERT_EQ(c.call(set(other, "w")), "STORED\r\n");
  stop(0);
  EXPECT_EQ(timed([&] { return c.call(set(k, "v1")); }), "STORED\r\n");
  EXPECT_EQ(on(next, "mg " + k + " v\r\n"), "VA 2\r\nv1\r\n");
  const std::string ttl = on(next, "mg " + k + " t\r\n");
  ASSERT_TRUE(ttl.starts_with("HD t")) << ttl;
  const int t = std::stoi(ttl.substr(4));
  EXPECT_TRUE(t > 0 && t <= 60) << ttl;  // failover_ttl, though the set asked for none
  EXPECT_EQ(timed([&] { return c.call("get " + k + "\r\n"); }), value(k, "v1") + "END\r\n");
  EXPECT_EQ(timed([&] { return c.call("get " + other + " " + k + "\r\n"); }),
            value(other, "w") + value(k, "v1") + "END\r\n");
  EXPECT_EQ(timed([&] { return c.call("ms " + k + " 2 T30\r\nv2\r\n"); }), "HD\r\n");
  EXPECT_EQ(timed([&] { return c.call("mg " + k + " v\r\n"); }), "VA 2\r\nv2\r\n");
  EXPECT_EQ(timed([&] { return c.call("delete " + k + "\r\n"); }), "DELETED\r\n");
  EXPECT_EQ(on(next, "mg " + k + " v\r\n"), "EN\r\n");
  EXPECT_FALSE(pool().states[0]->down.load());  // not ejected: the failover answered
}

// The owner killed (connection refused): the next owner answers at once, binary clients too.
TEST_F(MemcacheFailoverE2E, AKilledOwnersRequestsGoToTheNextOwner) {
  namespace op = memcache::binary::op;
  proxy.start(dir, pool_yaml("p", "    tries: 3\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  BinClient b(dial_tcp(proxy->port(std::size_t{0})));
  const std::string k = key_owned_by(2, "k");
  const std::size_t next = owners(k)[1];
  servers[2]->stop();
  EXPECT_EQ(timed([&] { return c.call(set(k, "v1")); }), "STORED\r\n");
  EXPECT_EQ(on(next, "mg " + k + " v\r\n"), "VA 2\r\nv1\r\n");
  EXPECT_EQ(timed([&] { return c.call("get " + k + "\r\n"); }), value(k, "v1") + "END\r\n");
  // A quiet ms the owner cannot take is taken by the next owner, and stays quiet.
  const std::string qk = key_owned_by(2, "q");
  c.send("ms " + qk + " 1 q\r\nx\r\nmn\r\n");
  EXPECT_EQ(c.read(false, true), "MN\r\n");
  EXPECT_EQ(on(owners(qk)[1], "mg " + qk + " v\r\n"), "VA 1\r\nx\r\n");
  EXPECT_EQ(c.call(set(k, "41")), "STORED\r\n");
  EXPECT_EQ(c.call("incr " + k + " 1\r\n"), "42\r\n");
  const std::string bk = key_owned_by(2, "b");
  const BinResp s = b.call(store(op::kSet, bk, "bin", 5, 0, 7));
  EXPECT_EQ(s.status, memcache::binary::status::kSuccess);
  EXPECT_EQ(on(owners(bk)[1], "mg " + bk + " v f\r\n"), "VA 3 f5\r\nbin\r\n");
  const BinResp g = b.call(packet(op::kGet, bk, {}, {}, 8));
  EXPECT_EQ(g.status, memcache::binary::status::kSuccess);
  EXPECT_EQ(g.value, "bin");
  // With the owner and its next one gone, the third answers (tries: 3).
  const std::string k2 = key_owned_by(2, "t");
  servers[owners(k2)[1]]->stop();
  EXPECT_EQ(c.call(set(k2, "x")), "STORED\r\n");
  EXPECT_EQ(on(owners(k2)[2], "mg " + k2 + " v\r\n"), "VA 1\r\nx\r\n");
}

// Every owner asked failed: with return_best_on_error a miss one of them gave answers, else
// the last error; on_miss sends a read that missed on to the next owner.
TEST_F(MemcacheFailoverE2E, ReturnBestOnErrorAndOnMiss) {
  namespace op = memcache::binary::op;
  proxy.start(dir, pool_yaml("plain", "    tries: 2\n") +
                       pool_yaml("miss", "    tries: 2\n    on_miss: true\n") +
                       pool_yaml("best",
                                 "    tries: 2\n    on_miss: true\n"
                                 "    return_best_on_error: true\n"));
  McClient plain(dial_tcp(proxy->port(std::size_t{0})));
  McClient miss(dial_tcp(proxy->port(std::size_t{1})));
  McClient best(dial_tcp(proxy->port(std::size_t{2})));
  BinClient bbest(dial_tcp(proxy->port(std::size_t{2})));
  const std::string k = key_owned_by(0, "k", 1);
  // on_miss: a value only the next owner holds is found there.
  ASSERT_EQ(on(1, set(k, "there")), "STORED\r\n");
  EXPECT_EQ(plain.call("get " + k + "\r\n"), "END\r\n");
  EXPECT_EQ(miss.call("get " + k + "\r\n"), value(k, "there") + "END\r\n");
  EXPECT_EQ(miss.call("mg " + k + " v\r\n"), "VA 5\r\nthere\r\n");
  ASSERT_EQ(on(1, "delete " + k + "\r\n"), "DELETED\r\n");
  // The owner misses, the next one times out.
  stop(1);
  const std::string err = timed([&] { return miss.call("get " + k + "\r\n"); });
  EXPECT_TRUE(err.starts_with("SERVER_ERROR backend m2")) << err;
  EXPECT_EQ(timed([&] { return best.call("get " + k + "\r\n"); }), "END\r\n");
  EXPECT_EQ(timed([&] { return best.call("mg " + k + " v\r\n"); }), "EN\r\n");
  EXPECT_EQ(timed([&] { return bbest.call(packet(op::kGet, k, {}, {}, 3)); }).status,
            memcache::binary::status::kKeyNotFound);
  const std::string merr = timed([&] { return miss.call("mg " + k + " v\r\n"); });
  EXPECT_TRUE(merr.starts_with("SERVER_ERROR")) << merr;
  // Without on_miss the owner's miss answers at once.
  EXPECT_EQ(timed([&] { return plain.call("get " + k + "\r\n"); }), "END\r\n");
  // Both owners failing: an error, whatever return_best_on_error says (no owner missed).
  stop(0);
  const std::string both = timed([&] { return best.call("get " + k + "\r\n"); });
  EXPECT_TRUE(both.starts_with("SERVER_ERROR")) << both;
}

// A write the stopped owner missed is not served by it once it answers again: the key is
// deleted there first, even when a request for it reached the owner while it was still stopped.
TEST_F(MemcacheFailoverE2E, AWriteTheOwnerMissedIsNotServedStale) {
  proxy.start(dir, pool_yaml("p", "    tries: 2\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  const std::string k = key_owned_by(0, "k"), j = key_owned_by(0, "j");
  ASSERT_EQ(c.call(set(k, "old")), "STORED\r\n");
  ASSERT_EQ(c.call(set(j, "old")), "STORED\r\n");
  stop(0);
  EXPECT_EQ(c.call(set(k, "new")), "STORED\r\n");
  EXPECT_EQ(c.call(set(j, "new")), "STORED\r\n");
  // j is read while the owner still hangs: the delete sent before it times out as well.
  EXPECT_EQ(c.call("get " + j + "\r\n"), value(j, "new") + "END\r\n");
  resume(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The owner holds the value it had before (its stopped connections' requests may have reached
  // it once resumed: put the old values back, as an owner that never got the writes has them).
  ASSERT_EQ(on(0, set(k, "old")), "STORED\r\n");
  ASSERT_EQ(on(0, set(j, "old")), "STORED\r\n");
  EXPECT_EQ(c.call("get " + k + "\r\n"), "END\r\n");  // deleted at the owner before the get
  EXPECT_EQ(c.call("get " + j + "\r\n"), "END\r\n");
  EXPECT_EQ(on(0, "mg " + k + " v\r\n"), "EN\r\n");
  EXPECT_EQ(on(0, "mg " + j + " v\r\n"), "EN\r\n");
  // Noted once only: the next write and read are the owner's own.
  EXPECT_EQ(c.call(set(k, "newer")), "STORED\r\n");
  EXPECT_EQ(c.call("get " + k + "\r\n"), value(k, "newer") + "END\r\n");
}

// While a reload's warm-up window is open, reads still fail over (regression: a failover pool's
// gets took the single-owner path while warming, and a stopped owner's key answered
// SERVER_ERROR); a key the reload moved is read through from its previous owner meanwhile.
TEST_F(MemcacheFailoverE2E, ReadsFailOverWhileAReloadWarmsUp) {
  proxy.start(dir, pool_yaml("p", "    tries: 2\n", 2));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  std::vector<std::size_t> before;
  for (int i = 0; i < 200; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(c.call(set(k, "v" + std::to_string(i))), "STORED\r\n");
    before.push_back(owners(k)[0]);
  }
  proxy.rewrite(pool_yaml("p", "    tries: 2\n", 3));
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(reload_applied(*proxy));
  ASSERT_TRUE(pool().warming());
  int stay = -1, moved = -1;  // owned by m1 before and after; moved from m2 to m3
  for (int i = 0; i < 200; ++i) {
    const std::size_t now = owners("k" + std::to_string(i))[0];
    if (stay < 0 && before[static_cast<std::size_t>(i)] == 0 && now == 0) stay = i;
    if (moved < 0 && before[static_cast<std::size_t>(i)] == 1 && now == 2) moved = i;
  }
  ASSERT_GE(stay, 0);
  ASSERT_GE(moved, 0);
  const std::string ks = "k" + std::to_string(stay), km = "k" + std::to_string(moved);
  stop(0);
  EXPECT_EQ(timed([&] { return c.call(set(ks, "new")); }), "STORED\r\n");
  EXPECT_EQ(timed([&] { return c.call("get " + ks + "\r\n"); }), value(ks, "new") + "END\r\n");
  EXPECT_EQ(timed([&] { return c.call("get " + km + " " + ks + "\r\n"); }),
            value(km, "v" + std::to_string(moved)) + value(ks, "new") + "END\r\n");
}

// A cas is the owner's: its failure answers (no other server has its cas values).
TEST_F(MemcacheFailoverE2E, CasIsNotFailedOver) {
  proxy.start(dir, pool_yaml("p", "    tries: 2\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  const std::string k = key_owned_by(0, "k");
  ASSERT_EQ(c.call(set(k, "v")), "STORED\r\n");
  const std::string gets = c.call("gets " + k + "\r\n");
  const std::string line = gets.substr(0, gets.find("\r\n"));
  const std::string cas = line.substr(line.rfind(' ') + 1);
  servers[0]->stop();
  const std::string r = c.call("cas " + k + " 0 0 1 " + cas + "\r\nw\r\n");
  EXPECT_TRUE(r.starts_with("SERVER_ERROR backend m1")) << r;
  EXPECT_EQ(on(owners(k)[1], "mg " + k + " v\r\n"), "EN\r\n");
}

}  // namespace
}  // namespace chash::proxy::testing
