// SPDX-License-Identifier: Apache-2.0
#include "chash/analysis.h"

#include <gtest/gtest.h>

#include <numeric>

#include "chash/hash.h"
#include "test_nodes.h"

namespace chash {
namespace {

std::vector<Node> nodes(int n) { return testing::numbered_nodes(n); }

TEST(LoadStatsTest, KnownCounts) {
  const std::vector<std::uint64_t> counts = {10, 20, 30, 40};
  const auto s = load_stats(counts, nodes(4));
  EXPECT_EQ(s.keys, 100u);
  EXPECT_DOUBLE_EQ(s.mean, 25.0);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 1.6);
  EXPECT_DOUBLE_EQ(s.min_over_mean, 0.4);
  EXPECT_NEAR(s.stddev, std::sqrt((0.36 + 0.04 + 0.04 + 0.36) / 4), 1e-12);
  EXPECT_NEAR(s.cv, s.stddev, 1e-12);  // mean load ratio is 1
}

TEST(LoadStatsTest, WeightsDefineTheFairShareAndDrainedNodesAreLeftOut) {
  const std::vector<Node> ns = {{"a", 1}, {"b", 3}, {"c", 0}};
  const std::vector<std::uint64_t> counts = {25, 75, 0};
  const auto s = load_stats(counts, ns);
  EXPECT_DOUBLE_EQ(s.fair_share[1], 0.75);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 1.0);
  EXPECT_DOUBLE_EQ(s.stddev, 0.0);
  EXPECT_DOUBLE_EQ(s.mean, 50.0);
}

TEST(MoveCounterTest, CountsByNameAcrossDifferentNodeLists) {
  const std::vector<Node> before = {{"a", 1}, {"b", 1}, {"c", 1}};
  const std::vector<Node> after = {{"c", 1}, {"a", 1}, {"d", 1}};  // reordered, b -> d
  MoveCounter m(before, after);
  m.add(0, 1);  // a -> a (different ids, same name): not moved
  m.add(1, 2);  // b -> d
  m.add(2, 0);  // c -> c
  m.add(1, 0);  // b -> c
  EXPECT_EQ(m.keys(), 4u);
  EXPECT_EQ(m.moved(), 2u);
  const auto mx = m.matrix();
  EXPECT_EQ(mx.at({"b", "d"}), 1u);
  EXPECT_EQ(mx.at({"b", "c"}), 1u);
  EXPECT_EQ(mx.size(), 2u);
}

TEST(OptimalMovedTest, AddingOneNodeToNIsOneOverNPlusOne) {
  EXPECT_NEAR(optimal_moved_fraction(nodes(4), nodes(5)), 0.2, 1e-12);
  EXPECT_NEAR(optimal_moved_fraction(nodes(10), nodes(9)), 0.1, 1e-12);
  EXPECT_NEAR(optimal_moved_fraction(nodes(3), nodes(3)), 0.0, 1e-12);
  // Reweighting b from 1 to 3 of {a, b}: shares 1/2,1/2 -> 1/4,3/4: a quarter moves.
  EXPECT_NEAR(optimal_moved_fraction(std::vector<Node>{{"a", 1}, {"b", 1}},
                                     std::vector<Node>{{"a", 1}, {"b", 3}}),
              0.25, 1e-12);
}

TEST(OwnedFractionsTest, SumToOneAndMatchKeyShares) {
  for (Algorithm a :
       {Algorithm::kRing, Algorithm::kRing64, Algorithm::kMaglev, Algorithm::kSlots}) {
    const auto t = build_table(a, nodes(6));
    const auto f = owned_fractions(t);
    ASSERT_TRUE(f.has_value()) << algorithm_name(a);
    EXPECT_NEAR(std::accumulate(f->begin(), f->end(), 0.0), 1.0, 1e-9);
    if (a == Algorithm::kSlots) continue;  // keys hash to slots through CRC16, not these hashes
    LoadCounter load(6);
    for (int k = 0; k < 200000; ++k) load.add(pick(t, hash::xxh3_64("k" + std::to_string(k))));
    const auto s = load_stats(load.counts(), nodes(6));
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR(s.share[i], (*f)[i], 0.006) << algorithm_name(a) << " node " << i;
  }
  EXPECT_FALSE(owned_fractions(build_table(Algorithm::kJump, nodes(3))).has_value());
}

TEST(MovedRangesTest, RangesCoverExactlyTheKeysThatMove) {
  RingOptions opt;
  opt.vnodes = 20;
  const auto before_nodes = nodes(4), after_nodes = nodes(5);
  const auto before = RingTable::build(before_nodes, opt);
  const auto after = RingTable::build(after_nodes, opt);
  const auto ranges = moved_ranges(before, before_nodes, after, after_nodes);
  ASSERT_FALSE(ranges.empty());
  double total = 0;
  for (const auto& r : ranges) {
    EXPECT_EQ(r.to, "n4") << "adding n4 moves ranges only to n4";
    total += r.fraction;
  }
  EXPECT_NEAR(total, (*owned_fractions(AnyTable(after)))[4], 1e-9);
  // Every key whose owner changed lies in a listed range, and no other key does.
  for (int k = 0; k < 50000; ++k) {
    const std::uint32_t pos = static_cast<std::uint32_t>(hash::xxh3_64("k" + std::to_string(k)));
    const bool moved = before.pick(pos) != after.pick(pos);
    bool listed = false;
    for (const auto& r : ranges) {
      listed = listed || (r.first <= r.last ? pos >= r.first && pos <= r.last
                                            : pos >= r.first || pos <= r.last);
    }
    ASSERT_EQ(moved, listed) << pos;
  }
}

}  // namespace
}  // namespace chash
