// SPDX-License-Identifier: Apache-2.0
// Algorithm-specific checks beyond the shared property suite.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "chash/chash.h"
#include "test_nodes.h"

namespace chash {
namespace {

std::vector<Node> nodes(int n) { return testing::numbered_nodes(n); }

// ---- modulo ------------------------------------------------------------------------------------

TEST(ModuloTest, IsHashModN) {
  const auto t = ModuloTable::build(nodes(7));
  for (std::uint64_t h = 0; h < 100; ++h) EXPECT_EQ(t.pick(h * 977), (h * 977) % 7);
}

TEST(ModuloTest, WeightedWalksCumulativeWeights) {
  const auto t = ModuloTable::build(std::vector<Node>{{"a", 1}, {"b", 2}, {"c", 0}, {"d", 3}});
  // total 6: w 0 -> a, 1..2 -> b, 3..5 -> d
  const NodeId expect[] = {0, 1, 1, 3, 3, 3};
  for (std::uint64_t h = 0; h < 12; ++h) EXPECT_EQ(t.pick(h), expect[h % 6]);
}

TEST(ModuloTest, FourToFiveMovesAboutEightyPercent) {
  const auto four = ModuloTable::build(nodes(4));
  const auto five = ModuloTable::build(nodes(5));
  int moved = 0;
  for (int k = 0; k < 100000; ++k) {
    const auto h = hash::xxh3_64("k" + std::to_string(k));
    moved += four.pick(h) != five.pick(h);
  }
  EXPECT_NEAR(moved / 100000.0, 0.8, 0.01);
}

// ---- jump ----------------------------------------------------------------------------------------

TEST(JumpTest, MatchesThePapersDefinitionByLinearRecurrence) {
  // The paper's first (O(n)) formulation: ch(k, n) changes to n-1 with probability 1/n, driven
  // by the same LCG. jump must agree with the definition that buckets only grow monotonically:
  // for every key, ch(k, n+1) is either ch(k, n) or n.
  for (int k = 0; k < 2000; ++k) {
    const auto h = hash::xxh3_64("k" + std::to_string(k));
    std::uint32_t prev = jump_consistent_hash(h, 1);
    EXPECT_EQ(prev, 0u);
    for (std::uint32_t n = 2; n < 200; ++n) {
      const std::uint32_t cur = jump_consistent_hash(h, n);
      ASSERT_TRUE(cur == prev || cur == n - 1) << "key " << k << " n " << n;
      prev = cur;
    }
  }
}

TEST(JumpTest, KnownValues) {
  // Values of the reference algorithm (arXiv:1406.2294, Figure 1) for key 0..: with key 0 the
  // LCG starts at 1; published ports (e.g. Guava's tests of the original) agree on these.
  EXPECT_EQ(jump_consistent_hash(0, 1), 0u);
  EXPECT_EQ(jump_consistent_hash(0xFFFFFFFFFFFFFFFFull, 1), 0u);
  EXPECT_LT(jump_consistent_hash(12345, 10), 10u);
}

TEST(JumpTest, RefusesWeights) {
  EXPECT_THROW(JumpTable::build(std::vector<Node>{{"a", 2}, {"b", 1}}), Error);
}

TEST(JumpTest, TrailingDrainedNodeIsTrulyRemoved) {
  // Draining the last node equals building with one node fewer.
  auto ns = nodes(6);
  ns[5].weight = 0;
  const auto drained = JumpTable::build(ns);
  const auto five = JumpTable::build(nodes(5));
  for (int k = 0; k < 5000; ++k) {
    const auto h = hash::xxh3_64("k" + std::to_string(k));
    ASSERT_EQ(drained.pick(h), five.pick(h));
  }
}

// ---- memento -------------------------------------------------------------------------------------

TEST(MementoTest, RemovalOrderIsValidated) {
  auto ns = nodes(4);
  MementoOptions opt;
  opt.removal_order = {1};
  EXPECT_THROW(MementoTable::build(ns, opt), Error);  // node 1 has weight 1
  ns[1].weight = 0;
  opt.removal_order = {9};
  EXPECT_THROW(MementoTable::build(ns, opt), Error);
}

// ---- rendezvous ------------------------------------------------------------------------------------

TEST(RendezvousTest, VisitOrderIsDescendingScoreAndCoversAll) {
  const auto t = RendezvousTable::build(nodes(12));
  for (int k = 0; k < 300; ++k) {
    const auto h = hash::xxh3_64("k" + std::to_string(k));
    std::vector<NodeId> order;
    t.visit(h, [&](NodeId id) {
      order.push_back(id);
      return true;
    });
    ASSERT_EQ(order.size(), 12u);
    ASSERT_EQ(order[0], t.pick(h));
    // Removing the first choice makes the second the winner (the definition of HRW order).
    auto ns = nodes(12);
    ns[order[0]].weight = 0;
    ASSERT_EQ(RendezvousTable::build(ns).pick(h), order[1]);
  }
}

// ---- maglev ----------------------------------------------------------------------------------------

TEST(MaglevTest, TableSizeMustBePrime) {
  MaglevOptions opt;
  opt.table_size = 65536;
  EXPECT_THROW(MaglevTable::build(nodes(3), opt), Error);
  opt.table_size = 7;
  EXPECT_THROW(MaglevTable::build(nodes(8), opt), Error);  // fewer entries than nodes
  opt.table_size = 251;
  EXPECT_NO_THROW(MaglevTable::build(nodes(8), opt));
  EXPECT_TRUE(is_prime(65537));
  EXPECT_FALSE(is_prime(65535));
}

TEST(MaglevTest, EntriesAreSplitEvenlyAndByWeight) {
  MaglevOptions opt;
  opt.table_size = 65537;
  const auto t = MaglevTable::build(nodes(10), opt);
  std::vector<int> c(10, 0);
  for (NodeId id : t.entries()) ++c[id];
  for (int x : c) EXPECT_NEAR(x, 6553.7, 1.0);
  const auto w = MaglevTable::build(std::vector<Node>{{"a", 1}, {"b", 3}}, opt);
  std::vector<int> cw(2, 0);
  for (NodeId id : w.entries()) ++cw[id];
  EXPECT_NEAR(cw[1] / static_cast<double>(cw[0]), 3.0, 0.01);
}

// ---- multi-probe ---------------------------------------------------------------------------------

TEST(MultiProbeTest, MoreProbesBalanceBetter) {
  auto max_over_mean = [](std::uint32_t probes) {
    MultiProbeOptions opt;
    opt.probes = probes;
    const auto t = MultiProbeTable::build(nodes(50), opt);
    std::vector<int> c(50, 0);
    for (int k = 0; k < 100000; ++k) ++c[t.pick(hash::xxh3_64("k" + std::to_string(k)))];
    return *std::max_element(c.begin(), c.end()) / 2000.0;
  };
  EXPECT_GT(max_over_mean(1), max_over_mean(21));
  EXPECT_LT(max_over_mean(21), 1.3);
  MultiProbeOptions bad;
  bad.probes = 0;
  EXPECT_THROW(MultiProbeTable::build(nodes(2), bad), Error);
}

// ---- Redis Cluster slots ---------------------------------------------------------------------------

TEST(RedisSlotsTest, HashTagRulesAreRedisKeyHashSlot) {
  // Cases from the Redis Cluster specification ("Hash tags").
  EXPECT_EQ(redis_hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(redis_hash_tag("{user1000}.followers"), "user1000");
  EXPECT_EQ(redis_hash_tag("foo{}{bar}"), "foo{}{bar}");
  EXPECT_EQ(redis_hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(redis_hash_tag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(redis_hash_tag("no tag"), "no tag");
  EXPECT_EQ(redis_hash_tag("{unclosed"), "{unclosed");
  EXPECT_EQ(redis_hash_tag("}{x}"), "x");
  EXPECT_EQ(redis_key_slot("{user1000}.following"), redis_key_slot("{user1000}.followers"));
  // Values as CLUSTER KEYSLOT reports them.
  EXPECT_EQ(redis_key_slot("123456789"), 0x31C3 & 0x3FFF);
  EXPECT_EQ(redis_key_slot(""), 0);
}

TEST(RedisSlotsTest, FreshTableSplitsLikeRedisCliCreate) {
  // redis-cli --cluster create with 3 masters: 0-5460, 5461-10922, 10923-16383.
  const auto t = SlotTable::build(nodes(3));
  EXPECT_EQ(t.slots()[0], 0u);
  EXPECT_EQ(t.slots()[5460], 0u);
  EXPECT_EQ(t.slots()[5461], 1u);
  EXPECT_EQ(t.slots()[10922], 1u);
  EXPECT_EQ(t.slots()[10923], 2u);
  EXPECT_EQ(t.slots()[16383], 2u);
}

TEST(RedisSlotsTest, RebuildFromPreviousMovesOnlyWhatItMust) {
  auto ns = nodes(4);
  auto prev = std::make_shared<SlotTable>(SlotTable::build(ns));
  ns.push_back({"n4", 1});
  SlotTable::Options opt;
  opt.previous = prev;
  const auto grown = SlotTable::build(ns, opt);
  int moved = 0;
  std::vector<int> count(5, 0);
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
    ++count[grown.slots()[s]];
    if (grown.slots()[s] != prev->slots()[s]) {
      ++moved;
      EXPECT_EQ(grown.slots()[s], 4u) << "slot " << s << " moved between old nodes";
    }
  }
  EXPECT_EQ(moved, count[4]);
  for (int c : count) EXPECT_NEAR(c, 16384 / 5.0, 1.0);
}

TEST(RedisSlotsTest, AssignedTableIsTheClustersOwnMap) {
  // A live cluster's map (chash-proxy's cluster pools): taken as it is, unserved slots included.
  auto map = std::make_shared<std::array<NodeId, kRedisSlots>>();
  map->fill(kNoNode);
  for (std::uint32_t s = 0; s < 100; ++s) (*map)[s] = 2;
  for (std::uint32_t s = 100; s < 16000; ++s) (*map)[s] = s % 2;
  SlotTable::Options opt;
  opt.assignment = map;
  const auto t = SlotTable::build(nodes(3), opt);
  EXPECT_EQ(&t.slots(), map.get());                    // shared, not copied
  EXPECT_EQ(t.pick(redis_key_slot("123456789")), 1u);  // slot 12739
  EXPECT_EQ(t.pick(16100), kNoNode);
  int visited = 0;
  t.visit(16100, [&](NodeId) { return ++visited < 10; });
  EXPECT_EQ(visited, 0);  // an unserved slot has no next choices either
  TableOptions to;
  to.slots = opt;
  const auto r = Router::build(Algorithm::kSlots, nodes(3), to, KeyPolicy{KeyHash::kRedisSlot});
  EXPECT_EQ(r.route("{user1000}.following"), t.pick(redis_key_slot("user1000")));
  (*map)[7] = 3;
  EXPECT_THROW(SlotTable::build(nodes(3), opt), Error);  // an id beyond the node list
}

TEST(RedisSlotsTest, PickByRunsAgreesWithTheTable) {
  // Up to kMaxRanges runs of slots pick() counts over the runs' first slots; a more fragmented
  // map reads the table. Both must answer every slot as the table says, unserved runs included.
  const auto check = [](const SlotTable& t) {
    for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
      ASSERT_EQ(t.pick(s), t.slots()[s]) << "slot " << s;
      ASSERT_EQ(t.pick(s + 3 * kRedisSlots), t.slots()[s]);  // only the low 14 bits count
    }
  };
  const auto fresh = SlotTable::build(nodes(3));
  EXPECT_EQ(fresh.ranges(), 3u);
  check(fresh);
  EXPECT_EQ(SlotTable::build(nodes(40)).ranges(), 0u);  // 40 runs: the table
  check(SlotTable::build(nodes(40)));

  auto map = std::make_shared<std::array<NodeId, kRedisSlots>>();
  SlotTable::Options opt;
  opt.assignment = map;
  // A reshard's shape: a few moved blocks, an unserved gap, and the last slot on its own.
  map->fill(0);
  for (std::uint32_t s = 5000; s < 5100; ++s) (*map)[s] = 2;
  for (std::uint32_t s = 9000; s < 9010; ++s) (*map)[s] = kNoNode;
  for (std::uint32_t s = 12000; s < 16383; ++s) (*map)[s] = 1;
  (*map)[16383] = 2;
  const auto resharded = SlotTable::build(nodes(3), opt);
  EXPECT_EQ(resharded.ranges(), 7u);
  check(resharded);
  EXPECT_EQ(resharded.pick(9005), kNoNode);
  // Exactly kMaxRanges runs still count; one more reads the table.
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) (*map)[s] = (s / 1024) % 3;
  EXPECT_EQ(SlotTable::build(nodes(3), opt).ranges(), SlotTable::kMaxRanges);
  check(SlotTable::build(nodes(3), opt));
  (*map)[1] = 2;
  EXPECT_EQ(SlotTable::build(nodes(3), opt).ranges(), 0u);
  check(SlotTable::build(nodes(3), opt));
}

// ---- IP hash ------------------------------------------------------------------------------------------

TEST(IpHashTest, ParsesAddressesWithAndWithoutPorts) {
  EXPECT_EQ(parse_ip("192.0.2.7")->length, 4);
  EXPECT_EQ(parse_ip("192.0.2.7:5000")->bytes[3], 7);
  EXPECT_EQ(parse_ip("2001:db8::1")->length, 16);
  EXPECT_EQ(parse_ip("[2001:db8::1]:443")->bytes[15], 1);
  EXPECT_EQ(parse_ip("[::1]")->length, 16);
  for (const char* bad :
       {"", "1.2.3", "1.2.3.4.5", "300.1.1.1", "host", "[::1", "[::1]x",
        "1.2.3.4:", "1.2.3.4:99999", "1.2.3.4:12a", "::1::2", "1.2.3.4 ", "[1.2.3.4]:80x"}) {
    EXPECT_FALSE(parse_ip(bad).has_value()) << bad;
  }
  EXPECT_THROW(parse_ip_or_throw("nope"), Error);
  EXPECT_EQ(format_ip(*parse_ip("[2001:db8::1]:1")), "2001:db8::1");
}

TEST(IpHashTest, NginxHashesTheFirstThreeOctets) {
  const auto t = NginxIpHashTable::build(nodes(5));
  // Same /24 -> same node; the hash by hand for 10.1.2.x: 89 -> (89*113+10)%6271 = 3796,
  // (3796*113+1)%6271 = 2521, (2521*113+2)%6271 = 2680; 2680 % 5 = 0.
  for (int last = 0; last < 256; ++last) {
    EXPECT_EQ(t.pick(*parse_ip("10.1.2." + std::to_string(last))), 0u);
  }
}

TEST(IpHashTest, NginxRetriesContinueTheHash) {
  const auto t = NginxIpHashTable::build(nodes(5));
  DownSet down(5);
  down.set(0, true);
  // Second round over 10.1.2 continues from 2680: 1842, 1204, 4363; 4363 % 5 = 3.
  EXPECT_EQ(t.pick(*parse_ip("10.1.2.3"), down), 3u);
  DownSet all(5);
  for (NodeId i = 0; i < 5; ++i) all.set(i, true);
  EXPECT_EQ(t.pick(*parse_ip("10.1.2.3"), all), kNoNode);
}

TEST(IpHashTest, WholeAddressVariantSeparatesASlash24) {
  const auto t = JumpTable::build(nodes(8));
  std::set<NodeId> seen;
  for (int last = 0; last < 64; ++last) {
    seen.insert(t.pick(ip_key_hash(*parse_ip("10.1.2." + std::to_string(last)))));
  }
  EXPECT_GT(seen.size(), 4u);
}

}  // namespace
}  // namespace chash
