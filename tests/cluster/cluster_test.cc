// SPDX-License-Identifier: Apache-2.0
#include "chash/cluster.h"

#include <gtest/gtest.h>

#include "chash/bounded_load.h"
#include "chash/error.h"
#include "test_nodes.h"

namespace chash {
namespace {

std::vector<Node> nodes(int n) { return testing::numbered_nodes(n); }

TEST(ClusterTest, MutationsValidateAndLeaveTheClusterUnchangedOnError) {
  Cluster c(Algorithm::kRing, nodes(3));
  const auto before = c.snapshot();
  EXPECT_THROW(c.add({"n1", 1}), Error);
  EXPECT_THROW(c.remove("nope"), Error);
  EXPECT_THROW(c.mark_down("nope"), Error);
  EXPECT_THROW(c.set_weight("n0", kMaxWeight + 1), Error);
  EXPECT_THROW(c.add({std::string("\0removed#1", 10), 1}), Error);
  EXPECT_EQ(c.snapshot(), before);
}

TEST(ClusterTest, RemovingTheLastLiveNodeIsAnError) {
  Cluster c(Algorithm::kRing, nodes(1));
  EXPECT_THROW(c.remove("n0"), Error);
  EXPECT_THROW(c.set_weight("n0", 0), Error);
}

TEST(ClusterTest, AddReusesTheMostRecentlyRemovedPosition) {
  Cluster c(Algorithm::kMemento, nodes(5));
  c.remove("n1");
  c.remove("n3");
  EXPECT_EQ(c.add({"x", 1}), 3u);
  EXPECT_EQ(c.add({"y", 1}), 1u);
  EXPECT_EQ(c.add({"z", 1}), 5u);
  EXPECT_EQ(c.snapshot()->name(1), "y");
  EXPECT_EQ(c.snapshot()->find("n1"), kNoNode);
}

TEST(ClusterTest, ARemovedNameCanComeBack) {
  Cluster c(Algorithm::kRing, nodes(4));
  c.remove("n2");
  c.remove("n0");
  EXPECT_NO_THROW(c.add({"n2", 1}));
  EXPECT_NE(c.snapshot()->find("n2"), kNoNode);
}

TEST(ClusterTest, VersionsIncrease) {
  Cluster c(Algorithm::kJump, nodes(3));
  const auto v = c.snapshot()->version();
  c.mark_down("n1");
  EXPECT_GT(c.snapshot()->version(), v);
  EXPECT_TRUE(c.snapshot()->is_down(1));
}

TEST(ClusterTest, WeightZeroDrainsAndBack) {
  Cluster c(Algorithm::kRendezvous, nodes(4));
  c.set_weight("n2", 0);
  for (int k = 0; k < 5000; ++k)
    ASSERT_NE(c.snapshot()->pick(hash::xxh3_64(std::to_string(k))), 2u);
  c.set_weight("n2", 5);
  int on2 = 0;
  for (int k = 0; k < 8000; ++k) on2 += c.snapshot()->pick(hash::xxh3_64(std::to_string(k))) == 2u;
  EXPECT_NEAR(on2 / 8000.0, 5.0 / 8, 0.03);
}

// ---- bounded loads -----------------------------------------------------------------------------

TEST(BoundedLoadTest, FactorBelow100IsAnError) {
  const auto t = RingTable::build(nodes(3));
  const auto ns = nodes(3);
  EXPECT_THROW(BoundedLoad<RingTable>(t, ns, 99), Error);
}

TEST(BoundedLoadTest, NoNodeExceedsTheFactorTimesTheAverageUnderAHotKey) {
  // Every request carries the same hot key: without bounds one node takes everything; with a
  // factor of 125 the load spreads and no node goes above 1.25 x the average (+1).
  const auto ns = nodes(8);
  const auto t = RingTable::build(ns);
  BoundedLoad<RingTable> bounded(t, ns, 125);
  std::vector<std::uint64_t> load(8, 0);
  const std::uint64_t hot = hash::xxh3_64("hot-key");
  for (std::uint64_t total = 0; total < 8000; ++total) {
    const NodeId id = bounded.pick(hot, load, total);
    ASSERT_NE(id, kNoNode);
    ++load[id];
    const double avg = static_cast<double>(total + 1) / 8;
    ASSERT_LE(static_cast<double>(load[id]), 1.25 * avg + 1.0);
  }
  EXPECT_EQ(load[t.pick(hot)], *std::max_element(load.begin(), load.end()));
}

TEST(BoundedLoadTest, UnderLightLoadKeysStayOnTheirFirstChoice) {
  const auto ns = nodes(5);
  const auto t = MaglevTable::build(ns);
  BoundedLoad<MaglevTable> bounded(t, ns, 150);
  std::vector<std::uint64_t> load(5, 10);
  for (int k = 0; k < 1000; ++k) {
    const auto h = hash::xxh3_64(std::to_string(k));
    EXPECT_EQ(bounded.pick(h, load, 50), t.pick(h));
  }
}

TEST(BoundedLoadTest, WeightsScaleCapacityAndDownNodesAreSkipped) {
  const std::vector<Node> ns = {{"a", 1}, {"b", 3}, {"c", 1}};
  const auto t = RendezvousTable::build(ns);
  DownSet down(3);
  down.set(2, true);
  BoundedLoad<RendezvousTable> bounded(t, ns, 100, down);
  std::vector<std::uint64_t> load(3, 0);
  const std::uint64_t hot = hash::xxh3_64("hot");
  for (std::uint64_t total = 0; total < 400; ++total) {
    const NodeId id = bounded.pick(hot, load, total);
    ASSERT_NE(id, 2u);
    ++load[id];
  }
  EXPECT_EQ(load[2], 0u);
  EXPECT_NEAR(static_cast<double>(load[1]) / static_cast<double>(load[0]), 3.0, 0.1);
}

}  // namespace
}  // namespace chash
