// SPDX-License-Identifier: Apache-2.0
#include "chash/ring.h"

#include <gtest/gtest.h>

#include "chash/error.h"
#include "chash/hash.h"

namespace chash {
namespace {

TEST(RingTest, PointsPerNodeScaleWithWeight) {
  RingOptions opt;
  opt.vnodes = 10;
  const auto r = RingTable::build(std::vector<Node>{{"a", 1}, {"b", 3}, {"c", 0}}, opt);
  EXPECT_EQ(r.point_count(), 40u);
  std::size_t b_points = 0;
  for (NodeId o : r.owners()) b_points += o == 1;
  EXPECT_EQ(b_points, 30u);
}

TEST(RingTest, PointsAreTheHashOfTheFormattedPointName) {
  RingOptions opt;
  opt.vnodes = 3;
  opt.point_format = "{name}-vn{i}";
  opt.point_hash = KeyHash::kMd5;
  const auto r = RingTable::build(std::vector<Node>{{"10.0.0.1:6379", 1}}, opt);
  std::vector<std::uint32_t> expected;
  for (const char* p : {"10.0.0.1:6379-vn0", "10.0.0.1:6379-vn1", "10.0.0.1:6379-vn2"}) {
    expected.push_back(hash::ketama_point(hash::md5(p), 0));
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(std::vector<std::uint32_t>(r.positions().begin(), r.positions().end()), expected);
}

TEST(RingTest, FormatPlaceholders) {
  std::string out;
  internal::format_point_name("{name}#VN{i}", "node", 17, out);
  EXPECT_EQ(out, "node#VN17");
  internal::format_point_name("{i}_{name}_{x}", "n", 0, out);
  EXPECT_EQ(out, "0_n_{x}");
  internal::format_point_name("{name}{i}", "n", 123456789012ULL, out);
  EXPECT_EQ(out, "n123456789012");
}

TEST(RingTest, ClockwiseSuccessorWithWrapAround) {
  using P = RingTable::Point;
  const auto r = RingTable::from_points({{100, 0}, {200, 1}, {300, 2}}, 3);
  EXPECT_EQ(r.pick(50), 0u);
  EXPECT_EQ(r.pick(100), 0u);  // >=: a key on a point belongs to it
  EXPECT_EQ(r.pick(101), 1u);
  EXPECT_EQ(r.pick(300), 2u);
  EXPECT_EQ(r.pick(301), 0u);  // past the last point: wrap to the first
  EXPECT_EQ(r.pick(0xFFFFFFFFu), 0u);
  const auto strict =
      RingTable::from_points({P{100, 0}, P{200, 1}, P{300, 2}}, 3, RingSuccessor::kGreater);
  EXPECT_EQ(strict.pick(100), 1u);
  EXPECT_EQ(strict.pick(300), 0u);
}

TEST(RingTest, PositionIsTheLow32BitsOfTheHash) {
  const auto r = RingTable::from_points({{100, 0}, {200, 1}}, 2);
  EXPECT_EQ(r.pick((std::uint64_t{7} << 32) | 150), 1u);
}

TEST(RingTest, FromPointsKeepsCallerOrderOnTies) {
  const auto r = RingTable::from_points({{100, 2}, {100, 0}, {100, 1}}, 3);
  EXPECT_EQ(r.pick(100), 2u);
}

TEST(RingTest, EqualPointsGoToTheSmallerNameWhateverTheListOrder) {
  // A point format without the name makes every node's points collide.
  RingOptions opt;
  opt.vnodes = 4;
  opt.point_format = "{i}";
  const auto r1 = RingTable::build(std::vector<Node>{{"beta", 1}, {"alpha", 1}}, opt);
  const auto r2 = RingTable::build(std::vector<Node>{{"alpha", 1}, {"beta", 1}}, opt);
  for (std::uint64_t h : {1ull, 12345ull, 0xDEADBEEFull}) {
    EXPECT_EQ(r1.pick(h), 1u);  // "alpha" is position 1 in r1
    EXPECT_EQ(r2.pick(h), 0u);
  }
}

TEST(RingTest, VisitWalksClockwiseSkippingRepeats) {
  const auto r = RingTable::from_points({{10, 0}, {20, 0}, {30, 1}, {40, 0}, {50, 2}}, 3);
  std::vector<NodeId> order;
  r.visit(15, [&](NodeId id) {
    order.push_back(id);
    return true;
  });
  EXPECT_EQ(order, (std::vector<NodeId>{0, 1, 2}));
  order.clear();
  r.visit(45, [&](NodeId id) {
    order.push_back(id);
    return true;
  });
  EXPECT_EQ(order, (std::vector<NodeId>{2, 0, 1}));
}

TEST(RingTest, BadOptionsAreErrors) {
  RingOptions opt;
  opt.vnodes = 0;
  EXPECT_THROW(RingTable::build(std::vector<Node>{{"a", 1}}, opt), Error);
  opt.vnodes = 65537;
  EXPECT_THROW(RingTable::build(std::vector<Node>{{"a", 1}}, opt), Error);
  opt.vnodes = 160;
  opt.point_format = "{name}";
  EXPECT_THROW(RingTable::build(std::vector<Node>{{"a", 1}}, opt), Error);
  opt.point_format = "{name}{i}";
  opt.vnodes = 65536;
  try {
    RingTable::build(std::vector<Node>{{"a", 65536}}, opt);  // 2^32 points
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded);
  }
  EXPECT_THROW(RingTable::from_points({}, 1), Error);
  EXPECT_THROW(RingTable::from_points({{1, 5}}, 2), Error);
}

TEST(RingTest, FewVirtualNodesAreSkewedManyAreNot) {
  // The articles' point: one point per node is badly skewed; 160 points are near even.
  auto max_over_mean = [](std::uint32_t vnodes) {
    RingOptions opt;
    opt.vnodes = vnodes;
    std::vector<Node> ns;
    for (int i = 0; i < 10; ++i) ns.push_back({"10.0.0." + std::to_string(i), 1});
    const auto r = RingTable::build(ns, opt);
    std::vector<int> c(10, 0);
    for (int k = 0; k < 100000; ++k) ++c[r.pick(hash::xxh3_64("k" + std::to_string(k)))];
    return *std::max_element(c.begin(), c.end()) / 10000.0;
  };
  EXPECT_GT(max_over_mean(1), 1.5);
  EXPECT_LT(max_over_mean(160), 1.2);
}

}  // namespace
}  // namespace chash
