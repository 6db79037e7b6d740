// SPDX-License-Identifier: Apache-2.0
// redis-cluster preset: the slot split redis-cli --cluster create prints, its round-robin over
// hosts, and what the peer vectors (tests/compat/vectors/redis-cluster__*.tsv) cannot show —
// 1 and 2 masters, weights, route_n.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"
#include "chash/redis_slots.h"

namespace chash {
namespace {

// A key whose slot is `slot` (searching "k0", "k1", ...).
std::string key_in_slot(std::uint16_t slot) {
  static const std::vector<std::string> by_slot = [] {
    std::vector<std::string> v(kRedisSlots);
    std::size_t found = 0;
    for (int i = 0; found < kRedisSlots; ++i) {
      std::string k = "k" + std::to_string(i);
      std::string& s = v[redis_key_slot(k)];
      if (s.empty()) {
        s = std::move(k);
        ++found;
      }
    }
    return v;
  }();
  return by_slot[slot];
}

std::vector<Node> masters(std::initializer_list<const char*> names) {
  std::vector<Node> out;
  for (const char* n : names) out.push_back({n, 1});
  return out;
}

// The owner of every slot boundary named in `ranges` ({first, last, node}).
struct Range {
  std::uint16_t first, last;
  NodeId node;
};
void expect_ranges(const Preset& p, const std::vector<Range>& ranges) {
  for (const Range& r : ranges) {
    for (std::uint16_t s : {r.first, r.last}) {
      EXPECT_EQ(p.route(key_in_slot(s)), r.node) << "slot " << s;
    }
  }
}

TEST(RedisClusterPresetTest, ThreeMastersSplitAsRedisCliPrints) {
  // redis-cli 7.0.15: "Master[0] -> Slots 0 - 5460", "5461 - 10922", "10923 - 16383".
  const auto p =
      make_preset("redis-cluster", masters({"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}));
  expect_ranges(*p, {{0, 5460, 0}, {5461, 10922, 1}, {10923, 16383, 2}});
}

TEST(RedisClusterPresetTest, MastersAreTakenRoundRobinAcrossHosts) {
  // clusterManagerCommandCreate interleaves by IP: a:7000 a:7001 b:7000 -> a:7000, b:7000,
  // a:7001; "@bus_port" is not part of the host.
  const auto p = make_preset("redis-cluster",
                             masters({"10.0.0.1:7000", "10.0.0.1:7001@17001", "10.0.0.2:7000"}));
  expect_ranges(*p, {{0, 5460, 0}, {5461, 10922, 2}, {10923, 16383, 1}});
}

TEST(RedisClusterPresetTest, OneAndTwoMastersUseTheSameSplit) {
  const auto one = make_preset("redis-cluster", masters({"a:1"}));
  expect_ranges(*one, {{0, 16383, 0}});
  const auto two = make_preset("redis-cluster", masters({"a:1", "a:2"}));
  expect_ranges(*two, {{0, 8191, 0}, {8192, 16383, 1}});
}

TEST(RedisClusterPresetTest, WeightZeroIsAMasterWithoutSlotsOtherWeightsAreRefused) {
  auto nodes = masters({"a:1", "a:2", "a:3", "a:4"});
  nodes[1].weight = 0;
  const auto p = make_preset("redis-cluster", nodes);
  EXPECT_EQ(p->node_count(), 4u);
  expect_ranges(*p, {{0, 5460, 0}, {5461, 10922, 2}, {10923, 16383, 3}});
  nodes[1].weight = 2;
  try {
    make_preset("redis-cluster", nodes);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
}

TEST(RedisClusterPresetTest, RefusesOptions) {
  for (int i = 0; i < 3; ++i) {
    PresetOptions o;
    if (i == 0) o.hash = "crc16";
    if (i == 1) o.hash_tag = "{}";
    if (i == 2) o.vnodes = 4;
    EXPECT_THROW(make_preset("redis-cluster", masters({"a:1", "a:2", "a:3"}), o), Error);
  }
}

TEST(RedisClusterPresetTest, HashTagsFollowRedis) {
  const auto p = make_preset("redis-cluster", masters({"a:1", "a:2", "a:3", "a:4", "a:5"}));
  EXPECT_EQ(p->route("{user1000}.following"), p->route("{user1000}.followers"));
  EXPECT_EQ(p->route("foo{{bar}}zap"), p->route("{bar"));
}

TEST(RedisClusterPresetTest, RouteNWalksTheFollowingSlotRanges) {
  auto nodes = masters({"a:1", "a:2", "a:3", "a:4"});
  nodes[3].weight = 0;
  const auto p = make_preset("redis-cluster", nodes);
  std::array<NodeId, 5> out{};
  ASSERT_EQ(p->route_n(key_in_slot(6000), out), 3u);
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[1], 2u);
  EXPECT_EQ(out[2], 0u);
  std::array<NodeId, 2> two{};
  ASSERT_EQ(p->route_n(key_in_slot(16383), two), 2u);
  EXPECT_EQ(two[0], 2u);
  EXPECT_EQ(two[1], 0u);
}

}  // namespace
}  // namespace chash
