// SPDX-License-Identifier: Apache-2.0
// Warm-up on resize for memcache pools against real memcached (proto/memcache/session_warmup.cc):
// after a reload moves keys, get/gets/multi-get read through the previous owner, the value is
// copied with its TTL and flags (mg/ms meta commands), the old copy deleted; set, delete, incr
// and append of moved keys act at the new owner with the old value carried over.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"

namespace chash::proxy::testing {
namespace {

class WarmupMemcacheE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(have_program("memcached"));
    dir = make_test_dir("chash-warmup-mc");
    for (int i = 1; i <= 3; ++i) {
      servers.push_back(std::make_unique<MemcachedServer>(dir, "m" + std::to_string(i)));
      ASSERT_TRUE(servers.back()->start());
    }
  }
  void TearDown() override {
    proxy.stop();
    servers.clear();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string yaml(int n) {
    std::string y =
        "p:\n  listen: 127.0.0.1:0\n  protocol: memcache\n  timeout: 2000\n  servers:\n";
    for (int i = 1; i <= n; ++i)
      y += "    - " + servers[static_cast<std::size_t>(i - 1)]->socket() + ":1 m" +
           std::to_string(i) + "\n";
    return y;
  }
  int owner(const std::string& key) {
    const auto t = proxy->topology();
    return std::stoi(t->pools[0]->servers[t->pools[0]->route(key)].name.substr(1));
  }
  std::string on(int i, const std::string& request) {
    return servers[static_cast<std::size_t>(i - 1)]->client().call(request);
  }
  fs::path dir;
  std::vector<std::unique_ptr<MemcachedServer>> servers;
  ProxyRunner proxy;
};

TEST_F(WarmupMemcacheE2E, ReadsThroughCopiesTtlAndFlagsAndMovesWrites) {
  proxy.start(dir, yaml(2));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  std::map<std::string, int> before;
  for (int i = 0; i < 200; ++i) {
    const std::string k = "k" + std::to_string(i), v = binary_value(i);
    ASSERT_EQ(c.call("set " + k + " " + std::to_string(i) + " 600 " + std::to_string(v.size()) +
                     "\r\n" + v + "\r\n"),
              "STORED\r\n");
    before[k] = owner(k);
  }
  ASSERT_EQ(c.call(set("ctr", "41")), "STORED\r\n");
  ASSERT_EQ(c.call(set("app", "ab")), "STORED\r\n");
  ASSERT_EQ(c.call(set("del", "x")), "STORED\r\n");
  for (const std::string k : {"ctr", "app", "del"}) before[k] = owner(k);
  proxy.rewrite(yaml(3));
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(reload_applied(*proxy));
  int moved = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string k = "k" + std::to_string(i), v = binary_value(i);
    ASSERT_EQ(c.call("get " + k + "\r\n"), value(k, v, i) + "END\r\n") << k;
    if (owner(k) == before[k]) continue;
    ++moved;
    // At the new owner with its flags and about its TTL; gone from the old one (a get is
    // answered with the old value before the copy is done: the copy follows at once).
    std::string meta;
    EXPECT_TRUE(eventually([&] {
      meta = on(3, "mg " + k + " t f\r\n");
      return meta == "HD t600 f" + std::to_string(i) + "\r\n" ||
             meta == "HD t599 f" + std::to_string(i) + "\r\n";
    })) << k
        << " " << meta;
    EXPECT_TRUE(eventually([&] { return on(before[k], "mg " + k + "\r\n") == "EN\r\n"; })) << k;
  }
  EXPECT_GT(moved, 30);
  // A multi-get over moved and unmoved keys, after a second look at the moved ones.
  std::string keys, expect;
  for (int i = 0; i < 200; i += 9) {
    keys += " k" + std::to_string(i);
    expect += value("k" + std::to_string(i), binary_value(i), i);
  }
  EXPECT_EQ(c.call("get" + keys + "\r\n"), expect + "END\r\n");
  // Writes carry the old value over (incr, append) or replace it (set); delete removes both.
  EXPECT_EQ(c.call("incr ctr 1\r\n"), "42\r\n");
  EXPECT_EQ(c.call("append app 0 0 1\r\nc\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("get app\r\n"), value("app", "abc") + "END\r\n");
  EXPECT_EQ(c.call("delete del\r\n"), "DELETED\r\n");
  EXPECT_EQ(c.call("get del\r\n"), "END\r\n");
  for (int s = 1; s <= 3; ++s) EXPECT_EQ(on(s, "mg del\r\n"), "EN\r\n");
  // gets after a copy: the cas is the new owner's (a cas with it works).
  const std::string k = [&] {
    for (int i = 200;; ++i) {
      const std::string key = "g" + std::to_string(i);
      if (owner(key) == 3) return key;
    }
  }();
  ASSERT_EQ(on(1, set(k, "old")), "STORED\r\n");  // as if it were there before the change
  ASSERT_EQ(on(2, set(k, "old")), "STORED\r\n");
  const std::string gets = c.call("gets " + k + "\r\n");
  ASSERT_TRUE(gets.starts_with("VALUE " + k + " 0 3 ")) << gets;
  const std::string line = gets.substr(0, gets.find("\r\n"));
  const std::string cas = line.substr(line.rfind(' ') + 1);  // VALUE <key> <flags> <bytes> <cas>
  EXPECT_EQ(c.call("cas " + k + " 0 0 3 " + cas + "\r\nnew\r\n"), "STORED\r\n");
  const auto& shared = *proxy->topology()->pools[0]->shared;
  EXPECT_GT(shared.warmup_copies.load(), 30u);
}

// POST /rebalance on a memcache pool: lru_crawler metadump of the previous owners, each moved
// key copied with its TTL and flags and deleted there; then the window ends.
TEST_F(WarmupMemcacheE2E, RebalanceMovesEveryKey) {
  const auto admin = free_port();
  const std::string head = "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) + "\n";
  proxy.start(dir, head + yaml(2));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  constexpr int kKeys = 600;
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = "r" + std::to_string(i), v = "v" + std::to_string(i);
    ASSERT_EQ(c.call("set " + k + " 7 900 " + std::to_string(v.size()) + "\r\n" + v + "\r\n"),
              "STORED\r\n");
  }
  proxy.rewrite(head + yaml(3));
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(reload_applied(*proxy));
  const std::string r = http(admin, "POST /rebalance?pool=p HTTP/1.1\r\n\r\n");
  ASSERT_NE(r.find("202"), std::string::npos) << r;
  proxy->rebalancer().wait();
  const std::string status = proxy->status_json();
  EXPECT_NE(status.find("\"state\":\"done\""), std::string::npos) << status;
  ASSERT_TRUE(eventually([&] { return proxy->topology()->pools[0]->previous.empty(); }));
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = "r" + std::to_string(i);
    const int o = owner(k);
    for (int s = 1; s <= 3; ++s) {
      const std::string meta = on(s, "mg " + k + " t f v\r\n");
      if (s != o) {
        EXPECT_EQ(meta, "EN\r\n") << k << " on m" << s;  // only at its owner
        continue;
      }
      EXPECT_TRUE(meta.starts_with("VA " + std::to_string(std::to_string(i).size() + 1) + " t8") ||
                  meta.starts_with("VA " + std::to_string(std::to_string(i).size() + 1) + " t9"))
          << k << " " << meta;
      EXPECT_NE(meta.find(" f7\r\nv" + std::to_string(i) + "\r\n"), std::string::npos) << meta;
    }
    moved += o == 3;
  }
  EXPECT_GT(moved, 100);
}

// The memcache rebalance is a compare-and-set as well: `ms ... ME` at the owner, its own value
// compared when it had one, `md k C<cas>` at the source. A different value at the owner leaves
// both copies (a conflict, counted); the very value lets the source copy go.
TEST_F(WarmupMemcacheE2E, RebalanceIsACompareAndSet) {
  const auto admin = free_port();
  const std::string head = "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) + "\n";
  proxy.start(dir, head + yaml(2));
  McClient c(dial_tcp(proxy->port(std::size_t{0})));
  std::map<std::string, int> before;
  for (int i = 0; i < 300; ++i) {
    const std::string k = "cas" + std::to_string(i), v = "v" + std::to_string(i);
    ASSERT_EQ(c.call("set " + k + " 0 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n"),
              "STORED\r\n");
    before[k] = owner(k);
  }
  proxy.rewrite(head + yaml(3));
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(reload_applied(*proxy));
  std::vector<std::string> to_m3;
  for (const auto& [k, o] : before) {
    if (owner(k) == 3) to_m3.push_back(k);
  }
  ASSERT_GE(to_m3.size(), 3u);
  const std::string differ = to_m3[0], equal = to_m3[1];
  const std::string equal_value = "v" + equal.substr(3);
  ASSERT_EQ(on(3, "set " + differ + " 0 0 5\r\nother\r\n"), "STORED\r\n");
  ASSERT_EQ(on(3, "set " + equal + " 0 0 " + std::to_string(equal_value.size()) + "\r\n" +
                      equal_value + "\r\n"),
            "STORED\r\n");
  const std::string r = http(admin, "POST /rebalance?pool=p HTTP/1.1\r\n\r\n");
  ASSERT_NE(r.find("202"), std::string::npos) << r;
  proxy->rebalancer().wait();
  const std::string dv = "v" + differ.substr(3);
  EXPECT_EQ(on(before[differ], "mg " + differ + " v\r\n"),
            "VA " + std::to_string(dv.size()) + "\r\n" + dv + "\r\n");
  EXPECT_EQ(on(3, "mg " + differ + " v\r\n"), "VA 5\r\nother\r\n");
  for (const auto& k : to_m3) {
    if (k == differ) continue;
    const std::string v = "v" + k.substr(3);
    EXPECT_EQ(on(before[k], "mg " + k + " v\r\n"), "EN\r\n") << k;
    EXPECT_EQ(on(3, "mg " + k + " v\r\n"), "VA " + std::to_string(v.size()) + "\r\n" + v + "\r\n")
        << k;
  }
  const std::string status = proxy->status_json();
  EXPECT_NE(status.find("\"conflicts\":1"), std::string::npos) << status;
  EXPECT_NE(status.find("\"failed\":0"), std::string::npos) << status;
}

// A binary-protocol client across the same resize (proto/memcache/session_binary.cc sends its
// packets as meta commands, which warm up as mg/ms/ma do): gets of moved keys find their values
// and flags, getkq in a pipeline too, incr carries the old counter over.
TEST_F(WarmupMemcacheE2E, BinaryClientsReadThroughAfterAResize) {
  namespace op = memcache::binary::op;
  proxy.start(dir, yaml(2));
  BinClient c(dial_tcp(proxy->port(std::size_t{0})));
  std::map<std::string, int> before;
  for (int i = 0; i < 120; ++i) {
    const std::string k = "b" + std::to_string(i);
    ASSERT_EQ(
        c.call(store(op::kSet, k, binary_value(i), static_cast<std::uint32_t>(i), 600)).status, 0);
    before[k] = owner(k);
  }
  ASSERT_EQ(c.call(arith(op::kIncrement, "bctr", 1, 41, 0)).number(), 41u);
  before["bctr"] = owner("bctr");
  proxy.rewrite(yaml(3));
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(reload_applied(*proxy));
  int moved = 0;
  for (int i = 0; i < 120; i += 2) {
    const std::string k = "b" + std::to_string(i);
    const BinResp r = c.call(packet(op::kGet, k));
    EXPECT_EQ(r.status, 0) << k;
    EXPECT_EQ(r.value, binary_value(i)) << k;
    EXPECT_EQ(r.flags(), static_cast<std::uint32_t>(i)) << k;
    if (owner(k) != before[k]) ++moved;
  }
  EXPECT_GT(moved, 5);  // about a third of 60 (10 with this router)
  // The odd keys in one quiet pipeline: every one is a hit, in order, then the noop.
  std::string batch;
  for (int i = 1; i < 120; i += 2) {
    batch += packet(op::kGetKQ, "b" + std::to_string(i), {}, {}, static_cast<std::uint32_t>(i));
  }
  batch += packet(op::kNoop, "", {}, {}, 999);
  ASSERT_TRUE(c.send(batch));
  for (int i = 1; i < 120; i += 2) {
    const BinResp r = c.read();
    EXPECT_EQ(r.opaque, static_cast<std::uint32_t>(i));
    EXPECT_EQ(r.key, "b" + std::to_string(i));
    EXPECT_EQ(r.value, binary_value(i)) << r.key;
  }
  EXPECT_EQ(c.read().opaque, 999u);
  EXPECT_EQ(c.call(arith(op::kIncrement, "bctr", 1, 0, 0)).number(), 42u);
}

}  // namespace
}  // namespace chash::proxy::testing
