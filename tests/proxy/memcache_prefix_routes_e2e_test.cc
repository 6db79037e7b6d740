// SPDX-License-Identifier: Apache-2.0
// Prefix routes (`prefix_routes:`, proto/memcache/session.cc; mcrouter's PrefixSelectorRoute)
// against five real memcached: one listener, each key placed by the pool its prefix names (the
// longest that matches) exactly as that pool's own listener places it, text, meta and binary
// requests alike; a get over several pools answers in the client's key order under one END, and
// each pool's failure handling (a replicated pool reading on) applies to its keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"

namespace chash::proxy::testing {
namespace {

namespace op = memcache::binary::op;

class MemcachePrefixRoutesE2E : public MemcacheServersTest {
 protected:
  void SetUp() override { start_servers("mcp", 5); }
  // front (m1, m2) routes "u:" to users (m3, m4) and "u:vip:" to vip (m5). `users_extra`: more
  // of users' settings.
  void start(const std::string& users_extra = "") {
    proxy.start(dir,
                "front:\n  listen: 127.0.0.1:0\n  timeout: 400\n  prefix_routes:\n"
                "    \"u:\": users\n    \"u:vip:\": vip\n  servers:\n" +
                    server_lines(1, 2) + "users:\n  listen: 127.0.0.1:0\n  timeout: 400\n" +
                    users_extra + "  servers:\n" + server_lines(3, 4) +
                    "vip:\n  listen: 127.0.0.1:0\n  timeout: 400\n  servers:\n" +
                    server_lines(5, 5));
  }
  // The pool a key belongs to by its prefix (0 front, 1 users, 2 vip), and the server (0-based)
  // that pool's router places it on.
  static std::size_t pool_of(const std::string& key) {
    if (key.starts_with("u:vip:")) return 2;
    return key.starts_with("u:") ? 1 : 0;
  }
  std::size_t server_of(const std::string& key) {
    const std::size_t p = pool_of(key);
    const std::size_t first[] = {0, 2, 4};
    return first[p] + pool(p).route(key);
  }
  // Which servers hold `key` (asked directly).
  std::vector<std::size_t> holders(const std::string& key) {
    std::vector<std::size_t> h;
    for (std::size_t s = 0; s < servers.size(); ++s) {
      if (on(s, "mg " + key + " v\r\n").starts_with("VA ")) h.push_back(s);
    }
    return h;
  }
};

TEST_F(MemcachePrefixRoutesE2E, KeysGoToThePoolTheirLongestPrefixNames) {
  start();
  ASSERT_EQ(pool(0).prefix_slots.size(), 2u);
  EXPECT_EQ(pool(0).prefix_slots[0].first, "u:vip:") << "longest first";
  EXPECT_NE(proxy->status_json().find(
                R"("prefix_routes":[{"prefix":"u:","pool":"users"},{"prefix":"u:vip:","pool":"vip"}])"),
            std::string::npos)
      << proxy->status_json();
  auto c = client(0);
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    const std::string n = std::to_string(i);
    // "u:v" is users' ("u:vip:" does not match it), "user" the front's ("u:" does not).
    for (const std::string& k : {"k" + n, "u:" + n, "u:vip:" + n, "u:v" + n, "user" + n}) {
      keys.push_back(k);
    }
  }
  for (const std::string& k : keys) ASSERT_EQ(c.call(set(k, "v-" + k)), "STORED\r\n") << k;
  std::size_t per_pool[3] = {0, 0, 0};
  for (const std::string& k : keys) {
    ++per_pool[pool_of(k)];
    EXPECT_EQ(holders(k), std::vector<std::size_t>{server_of(k)}) << k;
  }
  EXPECT_EQ(per_pool[0], 80u);
  EXPECT_EQ(per_pool[1], 80u);
  EXPECT_EQ(per_pool[2], 40u);
  // Each target pool's own listener reads them where the front put them.
  auto users = client(1);
  EXPECT_EQ(users.call("get u:1\r\n"), value("u:1", "v-u:1") + "END\r\n");
  auto vip = client(2);
  EXPECT_EQ(vip.call("get u:vip:1\r\n"), value("u:vip:1", "v-u:vip:1") + "END\r\n");

  // A get over all three pools, shuffled, with misses and a repeated key: the blocks come back
  // in the client's order under one END, as one memcached answers.
  std::vector<std::string> asked(keys.begin(), keys.begin() + 60);
  asked.push_back("u:nosuch");
  asked.push_back("u:vip:nosuch");
  asked.push_back("nosuch");
  asked.push_back("u:3");
  std::shuffle(asked.begin(), asked.end(), std::mt19937(7));
  std::string request = "get", want;
  for (const std::string& k : asked) {
    request += " " + k;
    if (k.find("nosuch") == std::string::npos) want += value(k, "v-" + k);
  }
  EXPECT_EQ(c.call(request + "\r\n"), want + "END\r\n");
  // 2,000 keys (every key ten times over): each pool's share is cut into several lines per
  // server, and merged back into one reply in the client's order.
  std::string big = "get", big_want;
  for (int round = 0; round < 10; ++round) {
    for (const std::string& k : keys) {
      big += " " + k;
      big_want += value(k, "v-" + k);
    }
  }
  EXPECT_TRUE(c.call(big + "\r\n") == big_want + "END\r\n");
  // One pool's keys only (the request is that pool's as a whole).
  EXPECT_EQ(c.call("get u:1 u:2\r\n"),
            value("u:1", "v-u:1") + value("u:2", "v-u:2") + "END\r\n");
  // gets over pools: each block with its server's cas.
  const std::string gets = c.call("gets k1 u:1 u:vip:1\r\n");
  EXPECT_EQ(std::count(gets.begin(), gets.end(), '\n'), 7) << gets;
  EXPECT_TRUE(gets.starts_with("VALUE k1 0 4 ")) << gets;

  // Writes of every kind go to the key's pool.
  EXPECT_EQ(c.call(set("u:n", "41")), "STORED\r\n");
  EXPECT_EQ(c.call("incr u:n 1\r\n"), "42\r\n");
  EXPECT_EQ(on(server_of("u:n"), "mg u:n v\r\n"), "VA 2\r\n42\r\n");
  EXPECT_EQ(c.call("touch u:n 100\r\n"), "TOUCHED\r\n");
  EXPECT_EQ(c.call("delete u:vip:2\r\n"), "DELETED\r\n");
  EXPECT_EQ(on(server_of("u:vip:2"), "mg u:vip:2 v\r\n"), "EN\r\n");

  // Meta: placed by the decoded key (b), quiet requests over pools keep order up to mn.
  EXPECT_EQ(c.call("ms dTp2aXA6bQ== 2 b\r\nhi\r\n"), "HD\r\n");  // "u:vip:m"
  EXPECT_EQ(on(4, "mg u:vip:m v\r\n"), "VA 2\r\nhi\r\n");
  EXPECT_EQ(c.call("mg u:vip:m v\r\n"), "VA 2\r\nhi\r\n");
  c.send("ms u:q1 1 q\r\na\r\nms q2 1 q\r\nb\r\nmg u:q1 v\r\nmg q2 v\r\nmg u:vip:q3 v q\r\nmn\r\n");
  EXPECT_EQ(c.read(false, true), "VA 1\r\na\r\n");
  EXPECT_EQ(c.read(false, true), "VA 1\r\nb\r\n");
  EXPECT_EQ(c.read(false, true), "MN\r\n");
  EXPECT_EQ(holders("u:q1"), std::vector<std::size_t>{server_of("u:q1")});
  EXPECT_EQ(holders("q2"), std::vector<std::size_t>{server_of("q2")});

  // Binary: a set and a getk of a vip key.
  BinClient b(dial_tcp(proxy->port(std::size_t{0})));
  EXPECT_EQ(b.call(store(op::kSet, "u:vip:bin", "bv", 5, 0, 9)).status, 0);
  EXPECT_EQ(on(4, "mg u:vip:bin v f\r\n"), "VA 2 f5\r\nbv\r\n");
  const BinResp r = b.call(packet(op::kGetK, "u:vip:bin", {}, {}, 10));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.key, "u:vip:bin");
  EXPECT_EQ(r.value, "bv");
  EXPECT_EQ(r.opaque, 10u);
}

// A key's pool decides how its failure is answered: with users' server m3 gone, a get that
// includes one of its keys fails whole (a SERVER_ERROR in place of VALUE ... END, as one memcached
// would), the other pools' keys are served, and the client's connection goes on.
TEST_F(MemcachePrefixRoutesE2E, AGetOverPoolsFailsWholeWhenOnePoolCannotAnswer) {
  start();
  auto c = client(0);
  std::string on_m3;
  for (int i = 0; on_m3.empty(); ++i) {
    if (server_of("u:" + std::to_string(i)) == 2) on_m3 = "u:" + std::to_string(i);
  }
  ASSERT_EQ(c.call(set("k1", "a")), "STORED\r\n");
  ASSERT_EQ(c.call(set("u:vip:1", "b")), "STORED\r\n");
  servers[2]->stop();
  EXPECT_TRUE(c.call("get k1 " + on_m3 + " u:vip:1\r\n").starts_with("SERVER_ERROR backend m3"));
  EXPECT_TRUE(c.call(set(on_m3, "x")).starts_with("SERVER_ERROR backend m3"));
  EXPECT_EQ(c.call("get k1 u:vip:1\r\n"), value("k1", "a") + value("u:vip:1", "b") + "END\r\n");
}

// A replicated target pool reads on through the front: with a key's first home killed, the
// read of it — alone, or as one key of a get over pools — is answered by its second home.
TEST_F(MemcachePrefixRoutesE2E, AReplicatedTargetPoolReadsOnThroughThePrefix) {
  start("  replicas: 2\n  auto_eject_hosts: true\n  server_failure_limit: 3\n"
        "  server_retry_timeout: 60000\n");
  auto c = client(0);
  std::vector<std::string> first_on_m3;
  for (int i = 0; first_on_m3.size() < 5; ++i) {
    const std::string k = "u:r" + std::to_string(i);
    std::array<NodeId, 2> h{};
    ASSERT_EQ(pool(1).router.route_n(k, std::span<NodeId>(h.data(), 2)), 2u);
    if (h[0] == 0) first_on_m3.push_back(k);
  }
  for (const std::string& k : first_on_m3) ASSERT_EQ(c.call(set(k, "v-" + k)), "STORED\r\n");
  ASSERT_EQ(c.call(set("k1", "a")), "STORED\r\n");
  for (const std::string& k : first_on_m3) EXPECT_EQ(holders(k), (std::vector<std::size_t>{2, 3}));
  servers[2]->stop();
  EXPECT_EQ(c.call("get " + first_on_m3[0] + "\r\n"),
            value(first_on_m3[0], "v-" + first_on_m3[0]) + "END\r\n");
  std::string request = "get k1", want = value("k1", "a");
  for (const std::string& k : first_on_m3) {
    request += " " + k;
    want += value(k, "v-" + k);
  }
  EXPECT_EQ(c.call(request + "\r\n"), want + "END\r\n");
}

}  // namespace
}  // namespace chash::proxy::testing
