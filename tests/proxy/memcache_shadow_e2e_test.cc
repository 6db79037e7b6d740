// SPDX-License-Identifier: Apache-2.0
// The shadow route (`shadow:`; proto/memcache/session_shadow.cc) against real memcached: a
// pool's requests are copied to its shadow pool's servers (read directly here) while the client
// gets the pool's own replies; a key fraction shadows exactly the keys in it; a stopped shadow
// server costs the pool nothing but dropped (counted) copies; shadowed reads change no reply.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "chash/hash.h"
#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"

namespace chash::proxy::testing {
namespace {

namespace op = memcache::binary::op;

class MemcacheShadowE2E : public MemcacheServersTest {
 protected:
  // m1, m2: the pool's own servers; c1, c2: the shadow pool's.
  void SetUp() override { start_servers("mcs", {"m1", "m2", "c1", "c2"}); }
  // Pool "main" over m1, m2 with `shadow` (the map's lines), and pool "canary" over c1, c2.
  std::string config(const std::string& shadow) {
    return "main:\n  listen: 127.0.0.1:0\n  servers:\n    - " + servers[0]->socket() +
           ":1 m1\n    - " + servers[1]->socket() + ":1 m2\n  shadow:\n" + shadow +
           "canary:\n  listen: 127.0.0.1:0\n  servers:\n    - " + servers[2]->socket() +
           ":1 c1\n    - " + servers[3]->socket() + ":1 c2\n";
  }
  // The shadow server (index into servers) that owns `key` in the canary pool.
  std::size_t canary_of(const std::string& key) { return 2 + pool(1).router.route(key); }
  std::uint64_t sent() { return pool(0).shared->shadow_sent.load(); }
  std::uint64_t dropped() { return pool(0).shared->shadow_dropped.load(); }
  // Every copy sent has been answered by the shadow servers (each connection's replies are in
  // order, so what was sent before is in too).
  bool shadows_answered() {
    for (const auto& s : pool(1).states) {
      if (s->shadow_outstanding.load() != 0) return false;
    }
    return true;
  }
  // Errors on the shadow pool's connections (an unparsable reply stream would be one).
  std::uint64_t canary_errors() {
    std::uint64_t n = 0;
    for (const auto& s : pool(1).states) n += s->errors.load() + s->conn_errors.load();
    return n;
  }
  // memcached's own count of keys asked by get/gets/mg at `server`.
  std::uint64_t cmd_get(std::size_t server) {
    const int fd = dial_unix(servers[server]->socket());
    send_all(fd, "stats\r\n");
    const std::string all =
        recv_until(fd, [](const std::string& s) { return s.find("END\r\n") != std::string::npos; });
    ::close(fd);
    const std::size_t at = all.find("STAT cmd_get ");
    return at == std::string::npos ? ~0ull : std::stoull(all.substr(at + 13));
  }
};

// fraction 1 (every key): text, meta (quiet too) and binary writes reach the key's owner in the
// shadow pool as well; the client's replies are the pool's own.
TEST_F(MemcacheShadowE2E, EveryWriteReachesTheShadowPool) {
  proxy.start(dir, config("    pool: canary\n    fraction: 1\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  for (int i = 0; i < 20; ++i) {
    const std::string k = "k" + std::to_string(i), v = "v" + std::to_string(i);
    ASSERT_EQ(c.call(set(k, v)), "STORED\r\n");
  }
  ASSERT_TRUE(eventually([&] { return shadows_answered() && sent() == 20; })) << sent();
  for (int i = 0; i < 20; ++i) {
    const std::string k = "k" + std::to_string(i), v = "v" + std::to_string(i);
    EXPECT_EQ(on(canary_of(k), "get " + k + "\r\n"), value(k, v) + "END\r\n") << k;
  }
  // The client's reply is the pool's even where the shadow server answers otherwise: `add` of a
  // key only the shadow pool has is stored by the pool (its copy is refused there, unseen).
  ASSERT_EQ(on(canary_of("only"), set("only", "canary")), "STORED\r\n");
  EXPECT_EQ(c.call(set("only", "main", "add")), "STORED\r\n");
  EXPECT_EQ(c.call("delete k1\r\n"), "DELETED\r\n");
  EXPECT_EQ(c.call("incr k2 5\r\n"), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  ASSERT_EQ(c.call(set("n", "41")), "STORED\r\n");
  EXPECT_EQ(c.call("incr n 1\r\n"), "42\r\n");
  EXPECT_EQ(c.call("touch k3 100\r\n"), "TOUCHED\r\n");
  c.send("set k4 0 0 2 noreply\r\nxx\r\n");
  EXPECT_EQ(c.call("get k4\r\n"), value("k4", "xx") + "END\r\n");
  // Meta: a plain ms, quiet ms, md and mg behind the client's mn, ma.
  EXPECT_EQ(c.call("ms m1 2 T60\r\nhi\r\n"), "HD\r\n");
  // (A quiet mg that hits has a reply before the MN: its copy must be read as quiet too.)
  c.send("ms q1 1 q\r\na\r\nms q2 1 q\r\nb\r\nmd k5 q\r\nmg k0 v q\r\nmg q1 v\r\nmn\r\n");
  EXPECT_EQ(c.read(false, true), "VA 2\r\nv0\r\n");
  EXPECT_EQ(c.read(false, true), "VA 1\r\na\r\n");
  EXPECT_EQ(c.read(false, true), "MN\r\n");
  EXPECT_EQ(c.call("ma n\r\n"), "HD\r\n");
  // Binary: set, a quiet setq ended by a noop, delete.
  BinClient b(dial_tcp(proxy->port(std::size_t{0})));
  EXPECT_EQ(b.call(store(op::kSet, "b1", "bin", 0, 0, 7)).status, 0);
  b.send(store(op::kSetQ, "b2", "quiet", 0, 0, 8) + packet(op::kNoop, ""));
  const BinResp noop = b.read();
  EXPECT_EQ(noop.opcode, op::kNoop);
  EXPECT_EQ(b.call(packet(op::kDelete, "k6")).status, 0);
  ASSERT_TRUE(eventually([&] { return shadows_answered() && sent() == 38; })) << sent();
  EXPECT_EQ(on(canary_of("only"), "get only\r\n"), value("only", "canary") + "END\r\n");
  EXPECT_EQ(on(canary_of("k1"), "get k1\r\n"), "END\r\n");
  EXPECT_EQ(on(canary_of("n"), "get n\r\n"), value("n", "43") + "END\r\n");
  EXPECT_EQ(on(canary_of("k4"), "get k4\r\n"), value("k4", "xx") + "END\r\n");
  EXPECT_EQ(on(canary_of("m1"), "mg m1 v\r\n"), "VA 2\r\nhi\r\n");
  EXPECT_EQ(on(canary_of("q1"), "mg q1 v\r\n"), "VA 1\r\na\r\n");
  EXPECT_EQ(on(canary_of("q2"), "mg q2 v\r\n"), "VA 1\r\nb\r\n");
  EXPECT_EQ(on(canary_of("k5"), "mg k5\r\n"), "EN\r\n");
  EXPECT_EQ(on(canary_of("b1"), "get b1\r\n"), value("b1", "bin") + "END\r\n");
  EXPECT_EQ(on(canary_of("b2"), "get b2\r\n"), value("b2", "quiet") + "END\r\n");
  EXPECT_EQ(on(canary_of("k6"), "get k6\r\n"), "END\r\n");
  // Every copy's reply was read as one: no shadow connection saw a reply it could not match.
  EXPECT_EQ(canary_errors(), 0u);
  EXPECT_EQ(dropped(), 0u);
  // Counted in /metrics and shown on /status.
  EXPECT_NE(proxy->prometheus().find("chash_proxy_shadow_sent_total{pool=\"main\"} 38\n"),
            std::string::npos);
  EXPECT_NE(proxy->prometheus().find("chash_proxy_shadow_dropped_total{pool=\"main\"} 0\n"),
            std::string::npos);
  EXPECT_NE(proxy->status_json().find(
                R"("shadow":{"pool":"canary","commands":"all","sent":38,"dropped":0})"),
            std::string::npos);
  // And the pool still answers in order on the same connections.
  EXPECT_EQ(c.call("get k0 k1 only\r\n"), value("k0", "v0") + value("only", "main") + "END\r\n");
}

// fraction 0.5: exactly the keys whose point (xxh3_64, seed "shad", top 53 bits) is below 0.5,
// every time they are written.
TEST_F(MemcacheShadowE2E, AKeyFractionShadowsExactlyTheKeysInIt) {
  proxy.start(dir, config("    pool: canary\n    fraction: 0.5\n    commands: writes\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  constexpr int kKeys = 300;
  const auto in_fraction = [](const std::string& k) {
    return static_cast<double>(chash::hash::xxh3_64(k, 0x73686164) >> 11) * 0x1p-53 < 0.5;
  };
  std::uint64_t want = 0;
  for (int i = 0; i < kKeys; ++i) want += in_fraction("key" + std::to_string(i)) ? 1 : 0;
  ASSERT_GT(want, 100u);
  ASSERT_LT(want, 200u);
  for (int round = 1; round <= 2; ++round) {
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = "key" + std::to_string(i);
      ASSERT_EQ(c.call(set(k, "r" + std::to_string(round))), "STORED\r\n");
    }
    ASSERT_TRUE(eventually([&] { return shadows_answered() && sent() == want * round; }))
        << sent() << " of " << want * round;
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = "key" + std::to_string(i);
      EXPECT_EQ(on(canary_of(k), "get " + k + "\r\n"),
                in_fraction(k) ? value(k, "r" + std::to_string(round)) + "END\r\n" : "END\r\n")
          << k;
    }
  }
  // commands: writes: reads are not copied.
  EXPECT_EQ(c.call("get key0 key1 key2\r\n").substr(0, 6), "VALUE ");
  EXPECT_EQ(c.call("mg key3 v\r\n"), "VA 2\r\nr2\r\n");
  ASSERT_TRUE(eventually([&] { return shadows_answered(); }));
  EXPECT_EQ(sent(), want * 2);
  EXPECT_EQ(cmd_get(2) + cmd_get(3), 2u * kKeys);  // only this test's direct gets
}

// sample 0.5: requests at random, whatever the key — one key's writes are copied about half
// the time (binomial: 400 requests, 200 ± 10 expected; the bounds are 8 standard deviations).
TEST_F(MemcacheShadowE2E, ASampleShadowsRequestsAtRandom) {
  proxy.start(dir, config("    pool: canary\n    sample: 0.5\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  constexpr int kRequests = 400;
  for (int i = 0; i < kRequests; ++i) ASSERT_EQ(c.call(set("same", "v")), "STORED\r\n");
  ASSERT_TRUE(eventually([&] { return shadows_answered(); }));
  EXPECT_GT(sent(), 120u);
  EXPECT_LT(sent(), 280u);
  EXPECT_EQ(dropped(), 0u);
  EXPECT_EQ(on(canary_of("same"), "get same\r\n"), value("same", "v") + "END\r\n");
}

// A shadow server that stops answering (SIGSTOP) does not slow the pool: its copies pile up to
// kShadowMaxOutstanding and the rest are dropped and counted; once it resumes, copies flow again.
TEST_F(MemcacheShadowE2E, AStoppedShadowServerNeverSlowsThePool) {
  proxy.start(dir, "main:\n  listen: 127.0.0.1:0\n  servers:\n    - " + servers[0]->socket() +
                       ":1 m1\n  shadow:\n    pool: canary\n" +
                       "canary:\n  listen: 127.0.0.1:0\n  servers:\n    - " +
                       servers[2]->socket() + ":1 c1\n");
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  ASSERT_EQ(c.call(set("warm", "x")), "STORED\r\n");  // the shadow connection is open
  ASSERT_TRUE(eventually([&] { return shadows_answered() && sent() == 1; }));
  stop(2);
  constexpr int kRequests = 3000;
  const std::string big(2000, 'z');  // the copies fill the socket too, not only the count
  auto slowest = std::chrono::nanoseconds(0);
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < kRequests; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(c.call(set("s" + std::to_string(i), big)), "STORED\r\n") << i;
    slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
  }
  const auto total = std::chrono::steady_clock::now() - begin;
  EXPECT_LT(slowest, std::chrono::milliseconds(300));
  EXPECT_LT(total, std::chrono::seconds(10));
  const auto outstanding = pool(1).states[0]->shadow_outstanding.load();
  EXPECT_EQ(outstanding, kShadowMaxOutstanding);
  EXPECT_EQ(sent(), 1u + static_cast<std::uint64_t>(kShadowMaxOutstanding));
  EXPECT_EQ(dropped(), static_cast<std::uint64_t>(kRequests - kShadowMaxOutstanding));
  EXPECT_EQ(c.call("get s0\r\n"), value("s0", big) + "END\r\n");
  // Resumed: the queued copies are answered (the first ones stored), and new ones flow again.
  resume(2);
  ASSERT_TRUE(eventually([&] { return shadows_answered(); }));
  EXPECT_EQ(on(2, "get s0\r\n"), value("s0", big) + "END\r\n");
  EXPECT_EQ(on(2, "get s" + std::to_string(kRequests - 1) + "\r\n"), "END\r\n");  // dropped
  ASSERT_EQ(c.call(set("after", "y")), "STORED\r\n");
  ASSERT_TRUE(eventually([&] { return shadows_answered() && on(2, "get after\r\n") ==
                                                               value("after", "y") + "END\r\n"; }));
  EXPECT_EQ(canary_errors(), 0u);
}

// commands: reads — gets, multi-gets, mg and binary gets are copied (the shadow servers count
// them) and the client is answered by the pool alone, whatever the shadow servers hold.
TEST_F(MemcacheShadowE2E, ShadowedReadsDoNotChangeTheReply) {
  proxy.start(dir, config("    pool: canary\n    commands: reads\n"));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  ASSERT_EQ(c.call(set("a", "main-a")), "STORED\r\n");
  ASSERT_EQ(c.call(set("b", "main-b")), "STORED\r\n");
  // The shadow pool holds other values for a, b and a key the pool does not have.
  ASSERT_EQ(on(canary_of("a"), set("a", "canary-a")), "STORED\r\n");
  ASSERT_EQ(on(canary_of("b"), set("b", "canary-b")), "STORED\r\n");
  ASSERT_EQ(on(canary_of("z"), set("z", "canary-z")), "STORED\r\n");
  const std::uint64_t gets_before = cmd_get(2) + cmd_get(3);
  EXPECT_EQ(sent(), 0u);  // writes are not copied
  EXPECT_EQ(c.call("get a\r\n"), value("a", "main-a") + "END\r\n");
  EXPECT_EQ(c.call("get z a nosuch b\r\n"), value("a", "main-a") + value("b", "main-b") + "END\r\n");
  EXPECT_EQ(c.call("mg z v\r\n"), "EN\r\n");
  EXPECT_EQ(c.call("mg b v\r\n"), "VA 6\r\nmain-b\r\n");
  c.send("mg z v q\r\nmg a v q\r\nmn\r\n");
  EXPECT_EQ(c.read(false, true), "VA 6\r\nmain-a\r\n");
  EXPECT_EQ(c.read(false, true), "MN\r\n");
  BinClient b(dial_tcp(proxy->port(std::size_t{0})));
  const BinResp r = b.call(packet(op::kGet, "a"));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.value, "main-a");
  EXPECT_EQ(b.call(packet(op::kGet, "z")).status, 1);  // not found: the pool's answer
  // 1 + 4 + 2 + 2 + 2 copies, every one a get at the shadow servers.
  ASSERT_TRUE(eventually([&] { return shadows_answered() && sent() == 11; })) << sent();
  EXPECT_EQ(cmd_get(2) + cmd_get(3) - gets_before, 11u);
  EXPECT_EQ(on(canary_of("a"), "get a\r\n"), value("a", "canary-a") + "END\r\n");
  EXPECT_EQ(canary_errors(), 0u);
  EXPECT_EQ(dropped(), 0u);
}

}  // namespace
}  // namespace chash::proxy::testing
