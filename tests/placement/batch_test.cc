// SPDX-License-Identifier: Apache-2.0
// Batch lookup (chash/batch.h) gives exactly what pick() gives one key at a time: every
// algorithm, through the concrete table and through AnyTable, batch sizes around the group size,
// rings from points with both successor rules, and hash + pick over string keys.
#include "chash/batch.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace chash {
namespace {

std::vector<Node> make_nodes(int n) {
  std::vector<Node> v;
  for (int i = 0; i < n; ++i) v.push_back({"node-" + std::to_string(i), 1});
  return v;
}

std::vector<std::uint64_t> random_hashes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> h(n);
  for (auto& x : h) x = rng();
  return h;
}

// One lookup the plain way: the concrete table's pick(), or chash::pick for an AnyTable (by ADL).
template <PlacementTable T>
NodeId pick(const T& t, std::uint64_t h) {
  return t.pick(h);
}

template <class Table>
void expect_batch_matches_pick(const Table& table, const std::vector<std::uint64_t>& hashes) {
  // Sizes below, at and around the group sizes, and the whole set.
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                              std::size_t{17}, std::size_t{33}, hashes.size()}) {
    const std::span<const std::uint64_t> in(hashes.data(), n);
    std::vector<NodeId> out(n + 1, kNoNode - 1);
    pick_batch(table, in, std::span<NodeId>(out.data(), n));
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], pick(table, in[i])) << i;
    EXPECT_EQ(out[n], kNoNode - 1);  // nothing written past the batch
  }
}

TEST(BatchTest, EveryAlgorithmMatchesPickOneAtATime) {
  const auto hashes = random_hashes(10007, 1);
  for (const int n : {1, 3, 100, 2000}) {
    const auto nodes = make_nodes(n);
    for (const Algorithm a : kAllAlgorithms) {
      if (a == Algorithm::kRendezvous && n > 100) continue;  // O(n) per key: slow, same code path
      SCOPED_TRACE(std::string(algorithm_name(a)) + " nodes " + std::to_string(n));
      const AnyTable table = build_table(a, nodes);
      expect_batch_matches_pick(table, hashes);
      std::visit([&](const auto& t) { expect_batch_matches_pick(t, hashes); }, table);
    }
  }
}

TEST(BatchTest, RingsFromPointsMatchWithBothSuccessorRules) {
  std::mt19937_64 rng(3);
  std::vector<RingTable::Point> pts;
  for (NodeId i = 0; i < 3000; ++i)
    pts.push_back({static_cast<std::uint32_t>(rng() % 5000), i % 9});
  for (NodeId i = 0; i < 50; ++i) pts.push_back({0xFFFFFFFFu, i % 9});  // ties at the top
  auto hashes = random_hashes(4000, 4);
  for (std::uint64_t x = 0; x < 6000; ++x) hashes.push_back(x);  // every clustered position
  hashes.push_back(0xFFFFFFFFull);
  hashes.push_back(0xFFFFFFFEull);
  for (const RingSuccessor s : {RingSuccessor::kGreaterOrEqual, RingSuccessor::kGreater}) {
    expect_batch_matches_pick(RingTable::from_points(pts, 9, s), hashes);
  }
  std::vector<Ring64Table::Point> pts64;
  for (NodeId i = 0; i < 2000; ++i) pts64.push_back({rng(), i % 5});
  expect_batch_matches_pick(Ring64Table::from_points(pts64, 5, RingSuccessor::kGreater),
                            random_hashes(5000, 5));
}

TEST(BatchTest, LargeRingMatches) {
  const auto table = RingTable::build(make_nodes(3000));  // 480,000 points, 2^16 buckets
  expect_batch_matches_pick(table, random_hashes(100000, 6));
}

TEST(BatchTest, RouteBatchHashesThenPicks) {
  std::vector<std::string> storage;
  for (int i = 0; i < 1000; ++i) storage.push_back("user:" + std::to_string(i * 7919));
  const std::vector<std::string_view> keys(storage.begin(), storage.end());
  const auto nodes = make_nodes(50);
  for (const KeyHash h : {KeyHash::kXxh3, KeyHash::kMd5, KeyHash::kMurmur3_32}) {
    for (const Algorithm a : {Algorithm::kRing, Algorithm::kMaglev, Algorithm::kJump}) {
      const AnyTable table = build_table(a, nodes);
      std::vector<NodeId> out(keys.size());
      route_batch(table, h, keys, out);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        ASSERT_EQ(out[i], chash::pick(table, hash_key(h, keys[i]))) << keys[i];
      }
      std::vector<NodeId> out2(keys.size());
      std::visit([&](const auto& t) { route_batch(t, h, keys, out2); }, table);
      EXPECT_EQ(out, out2);
    }
  }
}

}  // namespace
}  // namespace chash
