// SPDX-License-Identifier: Apache-2.0
// proxy/hotkeys/: the Space-Saving sketch's guarantees, the per-pool tracker's window, hot set,
// write generations and cache bounds.
#include "hotkeys/hot_keys.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

namespace chash::proxy::hotkeys {
namespace {

TEST(SpaceSaving, CountsExactlyWhileEveryKeyFits) {
  SpaceSaving s(8);
  for (int i = 0; i < 5; ++i) s.add("a");
  s.add("b", 3);
  s.add("c");
  const auto top = s.top(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].key, "a");
  EXPECT_EQ(top[0].count, 5u);
  EXPECT_EQ(top[0].error, 0u);
  EXPECT_EQ(top[1].key, "b");
  EXPECT_EQ(top[2].key, "c");
  EXPECT_EQ(s.total(), 9u);
}

// Metwally et al.: any key with more than total/capacity occurrences is monitored, and every
// monitored count is within [true, true + error] with error <= total/capacity.
TEST(SpaceSaving, FindsHeavyHittersInAZipfStreamWithBoundedError) {
  SpaceSaving s(64);
  std::mt19937_64 rng(7);
  std::map<std::string, std::uint64_t> truth;
  // One key at 30%, a second at 10%, the rest spread over 100,000 keys.
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t r = rng() % 100;
    const std::string k = r < 30 ? "hot" : r < 40 ? "warm" : "k" + std::to_string(rng() % 100000);
    ++truth[k];
    s.add(k);
  }
  const auto top = s.top(2);
  EXPECT_EQ(top[0].key, "hot");
  EXPECT_EQ(top[1].key, "warm");
  for (const auto& e : s.top(64)) {
    EXPECT_LE(e.count - e.error, truth[e.key]) << e.key;
    EXPECT_GE(e.count, truth[e.key]) << e.key;
    EXPECT_LE(e.error, s.total() / s.capacity());
  }
}

TEST(SpaceSaving, MergeSumsCountsAndKeepsTheBounds) {
  SpaceSaving a(4), b(4);
  for (int i = 0; i < 10; ++i) a.add("x");
  for (int i = 0; i < 7; ++i) b.add("x");
  for (int i = 0; i < 3; ++i) b.add("y");
  a.merge(b);
  const auto top = a.top(2);
  EXPECT_EQ(top[0].key, "x");
  EXPECT_EQ(top[0].count, 17u);
  EXPECT_EQ(top[1].key, "y");
  EXPECT_EQ(a.total(), 20u);
  a.clear();
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(a.top(5).empty());
}

Config every_request(std::uint32_t window_ms = 1000) {
  Config c;
  c.sample = 1;
  c.window_ms = window_ms;
  c.top = 3;
  c.min_rate = 5;
  c.log_rate = 0;
  return c;
}

TEST(HotKeys, RotateMergesWorkersIntoRatesAndOwners) {
  HotKeys h;
  h.configure(every_request(2000), CacheConfig{}, 2);
  for (int i = 0; i < 60; ++i) h.record(0, "hot");
  for (int i = 0; i < 40; ++i) h.record(1, "hot");
  for (int i = 0; i < 4; ++i) h.record(1, "cold");
  EXPECT_FALSE(h.any_hot());
  h.rotate("p", 1234, 0, [](std::string_view k) { return "owner-of-" + std::string(k); });
  const auto v = h.view();
  ASSERT_EQ(v->top.size(), 2u);
  EXPECT_EQ(v->at_ms, 1234);
  EXPECT_EQ(v->top[0].shown, "hot");
  EXPECT_EQ(v->top[0].count, 100u);
  EXPECT_DOUBLE_EQ(v->top[0].rate, 50.0);  // 100 over a 2 s window
  EXPECT_EQ(v->top[0].owner, "owner-of-hot");
  EXPECT_EQ(v->requests, 104u);
  EXPECT_TRUE(h.hot(0, "hot"));
  EXPECT_TRUE(h.hot(1, "hot"));
  EXPECT_FALSE(h.hot(0, "cold")) << "2 requests/s is under min_rate 5";
  // The next window starts empty: nothing sampled, nothing hot.
  h.rotate("p", 2234, 2000, nullptr);
  EXPECT_TRUE(h.view()->top.empty());
  EXPECT_FALSE(h.any_hot());
  EXPECT_FALSE(h.due(3999));
  EXPECT_TRUE(h.due(4000));
}

TEST(HotKeys, HashKeysShowsAStableHmacNotTheKey) {
  HotKeys h;
  Config c = every_request();
  c.hash_keys = true;
  h.configure(c, CacheConfig{}, 1);
  for (int i = 0; i < 10; ++i) h.record(0, "user:42:secret");
  h.rotate("p", 1, 0, nullptr);
  const auto v = h.view();
  ASSERT_EQ(v->top.size(), 1u);
  EXPECT_EQ(v->top[0].shown.size(), 32u);
  EXPECT_EQ(v->top[0].shown.find("user"), std::string::npos);
  EXPECT_EQ(v->top[0].shown, HotKeys::hmac("user:42:secret"));
  EXPECT_NE(HotKeys::hmac("a"), HotKeys::hmac("b"));
}

TEST(HotKeys, SamplingCountsOneInNOnAverage) {
  HotKeys h;
  Config c = every_request();
  c.sample = 16;
  h.configure(c, CacheConfig{}, 1);
  int sampled = 0;
  for (int i = 0; i < 160000; ++i) sampled += h.sample() ? 1 : 0;
  EXPECT_NEAR(sampled, 10000, 600);
}

struct CacheFixture : ::testing::Test {
  HotKeys h;
  void SetUp() override {
    CacheConfig cache;
    cache.enabled = true;
    cache.ttl_ms = 100;
    cache.max_keys = 2;
    cache.max_bytes = 1000;
    h.configure(every_request(), cache, 1);
    for (const char* k : {"a", "b", "c"}) {
      for (int i = 0; i < 10; ++i) h.record(0, k);
    }
    h.rotate("p", 1, 0, nullptr);
  }
};

TEST_F(CacheFixture, ServesAFreshCopyUntilTheTtl) {
  h.fill(0, "a", "$1\r\nA\r\n", h.stamp("a"), 1000);
  EXPECT_EQ(h.lookup(0, "a", 1050).value_or(""), "$1\r\nA\r\n");
  EXPECT_FALSE(h.lookup(0, "a", 1100).has_value()) << "ttl 100 ms";
}

TEST_F(CacheFixture, AWriteThroughAnyWorkerInvalidates) {
  const std::uint64_t before = h.stamp("a");
  h.fill(0, "a", "$1\r\nA\r\n", before, 1000);
  h.wrote("a");
  EXPECT_FALSE(h.lookup(0, "a", 1001).has_value());
  // A read that started before the write cannot fill a copy after it.
  h.fill(0, "a", "$1\r\nA\r\n", before, 1002);
  EXPECT_FALSE(h.lookup(0, "a", 1003).has_value());
  h.fill(0, "a", "$1\r\nB\r\n", h.stamp("a"), 1004);
  EXPECT_EQ(h.lookup(0, "a", 1005).value_or(""), "$1\r\nB\r\n");
  h.wrote_all();  // FLUSHALL, EXEC, a script
  EXPECT_FALSE(h.lookup(0, "a", 1006).has_value());
  EXPECT_GE(h.counters.cache_invalidations.load(), 2u);
}

TEST_F(CacheFixture, OnlyHotKeysAndWithinTheBounds) {
  h.fill(0, "zzz", "$1\r\nZ\r\n", h.stamp("zzz"), 1000);
  EXPECT_FALSE(h.lookup(0, "zzz", 1001).has_value()) << "not hot";
  h.fill(0, "a", "$1\r\nA\r\n", h.stamp("a"), 1000);
  h.fill(0, "b", "$1\r\nB\r\n", h.stamp("b"), 1001);
  h.fill(0, "c", "$1\r\nC\r\n", h.stamp("c"), 1002);  // max_keys 2: the oldest ("a") goes
  EXPECT_FALSE(h.lookup(0, "a", 1003).has_value());
  EXPECT_TRUE(h.lookup(0, "b", 1003).has_value());
  EXPECT_TRUE(h.lookup(0, "c", 1003).has_value());
  h.fill(0, "b", std::string(2000, 'x'), h.stamp("b"), 1004);  // over max_bytes: not kept
  EXPECT_EQ(h.lookup(0, "b", 1005).value_or(""), "$1\r\nB\r\n");
  // A key that cools is dropped at the next rotation.
  h.rotate("p", 2, 1000, nullptr);
  EXPECT_FALSE(h.lookup(0, "c", 1006).has_value());
}

TEST(HotKeys, WorkersRecordWhileTheControlLoopRotates) {
  HotKeys h;
  h.configure(every_request(), CacheConfig{}, 4);
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < 4; ++w) {
    workers.emplace_back([&h, w] {
      for (int i = 0; i < 20000; ++i) {
        if (h.sample()) h.record(w, i % 3 == 0 ? "hot" : "k" + std::to_string(i));
        (void)h.hot(w, "hot");
        h.wrote("x");
      }
    });
  }
  int hot_first = 0;  // windows in which "hot" (a third of the requests) ranked first
  for (int r = 0; r < 20; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    h.rotate("p", r, r, nullptr);
    const auto v = h.view();
    if (!v->top.empty() && v->top[0].key == "hot") ++hot_first;
  }
  for (auto& t : workers) t.join();
  h.rotate("p", 99, 99, nullptr);
  const auto v = h.view();
  if (!v->top.empty() && v->top[0].key == "hot") ++hot_first;
  EXPECT_GT(hot_first, 0);
}

}  // namespace
}  // namespace chash::proxy::hotkeys
