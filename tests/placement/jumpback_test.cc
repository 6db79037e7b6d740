// SPDX-License-Identifier: Apache-2.0
// JumpBackHash (chash/jumpback.h) beyond the shared property suite: the bucket function is jump's
// model — uniform over every bucket count, keys only ever move to the new last bucket — checked
// exhaustively and statistically; its values pinned; its tables; memento over it; and memento over
// jump unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "test_nodes.h"

namespace chash {
namespace {

std::vector<Node> nodes(int n) { return testing::numbered_nodes(n); }

// Independent 64-bit key hashes (a SplitMix64 stream of its own, not the one inside jumpback).
std::vector<std::uint64_t> hashes(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint64_t> v(n);
  for (auto& h : v) h = hash::mix64(seed += 0x2545F4914F6CDD1DULL);
  return v;
}

// (chi-square - df) / sqrt(2 df): about N(0, 1) for a uniform distribution.
double chi_square_z(const std::vector<std::uint64_t>& counts, std::uint64_t total) {
  const double expected = static_cast<double>(total) / static_cast<double>(counts.size());
  double chi = 0;
  for (const std::uint64_t c : counts) {
    const double d = static_cast<double>(c) - expected;
    chi += d * d / expected;
  }
  const double df = static_cast<double>(counts.size() - 1);
  return (chi - df) / std::sqrt(2 * df);
}

// ---- The bucket function ------------------------------------------------------------------------

TEST(JumpBackHashTest, KnownValues) {
  // Pinned from this implementation after the checks below (no published vectors: hash4j's tests
  // publish a checksum over komihash, not values). The header's check values:
  static_assert(jumpback_hash(0, 1) == 0 && jumpback_hash(0, 4) == 3 && jumpback_hash(0, 8) == 7);
  static_assert(jumpback_hash(1, 1000) == 492);
  const std::uint32_t key0[] = {0, 0, 0, 3, 4, 4, 4, 7};
  for (std::uint32_t n = 1; n <= 8; ++n) EXPECT_EQ(jumpback_hash(0, n), key0[n - 1]) << n;
  // Bucket counts 1, 2, 10, 100, 1000, 10^6, 2^31 - 1, 2^32 - 1.
  const std::uint32_t counts[8] = {1, 2, 10, 100, 1000, 1000000, 0x7FFFFFFFu, 0xFFFFFFFFu};
  const std::pair<std::uint64_t, std::vector<std::uint32_t>> cases[] = {
      {1, {0, 1, 5, 33, 492, 667116, 285879788, 285879788}},
      {2, {0, 0, 0, 30, 990, 538078, 211244750, 2539140574}},
      {12345, {0, 0, 8, 96, 600, 33368, 164696480, 2719056472}},
      {0xFFFFFFFFFFFFFFFFull, {0, 1, 7, 73, 288, 863264, 1533357088, 3839455607}},
      {0x8000000000000000ull, {0, 1, 1, 98, 674, 390107, 1209974946, 1209974946}},
  };
  for (const auto& [key, want] : cases) {
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(jumpback_hash(key, counts[i]), want[i]) << key << " " << counts[i];
    }
  }
  // Through the key hash, as a router computes it.
  EXPECT_EQ(jumpback_hash(hash::xxh3_64("user:42"), 10), 2u);
  EXPECT_EQ(jumpback_hash(hash::xxh3_64("user:42"), 1000), 89u);
  EXPECT_EQ(jumpback_hash(hash::xxh3_64("123456789"), 1000), 954u);
}

TEST(JumpBackHashTest, KeysOnlyMoveToTheNewLastBucketExhaustively) {
  // Every bucket count from 1 to 600 for 20,000 keys: n -> n+1 keeps a key's bucket or moves it
  // to bucket n, and the result is always below the count.
  for (const std::uint64_t h : hashes(20000, 1)) {
    std::uint32_t prev = jumpback_hash(h, 1);
    ASSERT_EQ(prev, 0u);
    for (std::uint32_t n = 2; n <= 600; ++n) {
      const std::uint32_t cur = jumpback_hash(h, n);
      ASSERT_TRUE(cur == prev || cur == n - 1) << h << " n " << n << ": " << prev << " -> " << cur;
      prev = cur;
    }
  }
}

TEST(JumpBackHashTest, MonotoneAtLargeCountsAndAroundPowersOfTwo) {
  // hash4j's large-count check, for each count: a key on bucket b stays on b with b + 1 buckets
  // and moves below b with b buckets; and counts around every power of two.
  std::vector<std::uint32_t> counts = {0xFFFFFFFFu, 0xFFFFFFFEu, 0x7FFFFFFFu, 0x60000000u,
                                       0x48111111u, 0x3D111111u, 1000000u,    999999u};
  for (int k = 1; k < 32; ++k) {
    const std::uint32_t p = std::uint32_t{1} << k;
    counts.insert(counts.end(), {p - 1, p, p + 1});
  }
  for (const std::uint32_t n : counts) {
    for (const std::uint64_t h : hashes(2000, n)) {
      const std::uint32_t b = jumpback_hash(h, n);
      ASSERT_LT(b, n);
      ASSERT_EQ(jumpback_hash(h, b + 1), b) << h << " n " << n;
      if (b > 0) {
        ASSERT_LT(jumpback_hash(h, b), b) << h << " n " << n;
      }
      if (n < 0xFFFFFFFFu) {
        const std::uint32_t next = jumpback_hash(h, n + 1);
        ASSERT_TRUE(next == b || next == n) << h << " n " << n;
      }
    }
  }
}

TEST(JumpBackHashTest, UniformForEveryCountUpTo300AndSampledTo1000) {
  // Chi-square per count, about 400 keys per bucket; deterministic keys, so a pass is a pass.
  // Each z is about N(0, 1); |z| > 6 would be a 1-in-10^9 event for a uniform placement, and
  // their mean over all counts must stay near 0 (a small bias everywhere would shift it).
  double z_sum = 0;
  int tests = 0;
  std::vector<std::uint32_t> counts;
  for (std::uint32_t n = 2; n <= 300; ++n) counts.push_back(n);
  for (std::uint32_t n = 301; n <= 1000; n += 37) counts.push_back(n);
  for (const std::uint32_t n : {511u, 512u, 513u, 1000u, 1023u, 1024u, 1025u}) counts.push_back(n);
  for (const std::uint32_t n : counts) {
    const std::uint64_t total = 400ull * n;
    std::vector<std::uint64_t> c(n, 0);
    for (const std::uint64_t h : hashes(total, n * 7919ull)) ++c[jumpback_hash(h, n)];
    const double z = chi_square_z(c, total);
    EXPECT_LT(std::abs(z), 6.0) << "buckets " << n;
    z_sum += z;
    ++tests;
  }
  EXPECT_LT(std::abs(z_sum / tests), 6.0 / std::sqrt(static_cast<double>(tests)));
}

TEST(JumpBackHashTest, UniformAtLargeCounts) {
  // 10^6 buckets and 2^31 - 1: halves and the lowest buckets get their share.
  for (const std::uint32_t n : {1000000u, 0x7FFFFFFFu, 0xC0000001u}) {
    const std::size_t keys = 400000;
    std::size_t lower = 0, even = 0;
    for (const std::uint64_t h : hashes(keys, n)) {
      const std::uint32_t b = jumpback_hash(h, n);
      lower += b < n / 2;
      even += b % 2 == 0;
    }
    // Binomial(400000, 1/2): sd = 316; 6 sd = 1,900.
    EXPECT_NEAR(static_cast<double>(lower), keys / 2.0, 1900) << n;
    EXPECT_NEAR(static_cast<double>(even), keys / 2.0, 1900) << n;
  }
}

TEST(JumpBackHashTest, MovesTheSameShareAsJump) {
  // n -> n+1 moves 1/(n+1) of the keys for both; over 200,000 keys the counts agree within noise.
  const auto hs = hashes(200000, 99);
  for (const std::uint32_t n : {9u, 10u, 63u, 64u, 100u, 1000u}) {
    std::size_t moved_back = 0, moved_jump = 0;
    for (const std::uint64_t h : hs) {
      moved_back += jumpback_hash(h, n) != jumpback_hash(h, n + 1);
      moved_jump += jump_consistent_hash(h, n) != jump_consistent_hash(h, n + 1);
    }
    const double expected = static_cast<double>(hs.size()) / (n + 1);
    const double sd = std::sqrt(expected);
    EXPECT_NEAR(static_cast<double>(moved_back), expected, 6 * sd) << n;
    EXPECT_NEAR(static_cast<double>(moved_jump), expected, 6 * sd) << n;
  }
}

// ---- The table -----------------------------------------------------------------------------------

TEST(JumpBackTest, TableIsTheFunctionOverTheNodeCount) {
  const auto t = JumpBackTable::build(nodes(37));
  for (const std::uint64_t h : hashes(5000, 3)) ASSERT_EQ(t.pick(h), jumpback_hash(h, 37));
}

TEST(JumpBackTest, RefusesWeights) {
  try {
    JumpBackTable::build(std::vector<Node>{{"a", 2}, {"b", 1}});
    FAIL() << "weights accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("jumpback is unweighted"), std::string::npos) << e.what();
  }
}

TEST(JumpBackTest, TrailingDrainedNodeIsTrulyRemoved) {
  auto ns = nodes(6);
  ns[5].weight = 0;
  const auto drained = JumpBackTable::build(ns);
  const auto five = JumpBackTable::build(nodes(5));
  for (const std::uint64_t h : hashes(5000, 4)) ASSERT_EQ(drained.pick(h), five.pick(h));
}

TEST(JumpBackTest, DrainedMiddleNodeMovesOnlyItsKeys) {
  auto ns = nodes(12);
  const auto before = JumpBackTable::build(ns);
  ns[4].weight = 0;
  const auto after = JumpBackTable::build(ns);
  std::set<NodeId> receivers;
  for (const std::uint64_t h : hashes(20000, 5)) {
    const NodeId a = before.pick(h), b = after.pick(h);
    ASSERT_NE(b, 4u);
    if (a != 4) {
      ASSERT_EQ(a, b);
    } else {
      receivers.insert(b);
    }
  }
  EXPECT_EQ(receivers.size(), 11u) << "a drained node's keys spread over every other node";
}

TEST(JumpBackTest, ThroughTheRuntimeChoice) {
  EXPECT_EQ(parse_algorithm("jumpback"), Algorithm::kJumpBack);
  EXPECT_EQ(parse_algorithm("memento-jumpback"), Algorithm::kMementoJumpBack);
  const AnyTable t = build_table(Algorithm::kJumpBack, nodes(9));
  EXPECT_EQ(algorithm_of(t), Algorithm::kJumpBack);
  EXPECT_EQ(algorithm_of(build_table(Algorithm::kMementoJumpBack, nodes(9))),
            Algorithm::kMementoJumpBack);
  for (const std::uint64_t h : hashes(1000, 6)) ASSERT_EQ(pick(t, h), jumpback_hash(h, 9));
}

// ---- memento over JumpBackHash, and over jump unchanged (the shared properties: memento_test.cc)

TEST(MementoJumpBackTest, ErrorsNameTheAlgorithm) {
  auto ns = nodes(4);
  MementoOptions opt;
  opt.removal_order = {1};
  try {
    MementoJumpBackTable::build(ns, opt);
    FAIL() << "a live node accepted in removal_order";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memento-jumpback removal_order lists node"),
              std::string::npos)
        << e.what();
  }
}

TEST(MementoJumpBackTest, MementoOverJumpKeepsItsMapping) {
  // Checksums of MementoTable over 100,000 keys, printed by the code before memento took an inner
  // function (commit 4dd1719): "memento" still maps every key where it did.
  std::vector<Node> ns = nodes(100);
  auto checksum = [](const auto& t) {
    std::uint64_t s = 0;
    for (int k = 0; k < 100000; ++k) {
      s = s * 1000003 + t.pick(hash::xxh3_64("key-" + std::to_string(k)));
    }
    return s;
  };
  EXPECT_EQ(checksum(MementoTable::build(ns)), 0x1b81352b1979400full);
  MementoOptions opt;
  for (const NodeId v : {7u, 2u, 99u, 11u, 0u, 50u}) {
    ns[v].weight = 0;
    opt.removal_order.push_back(v);
  }
  EXPECT_EQ(checksum(MementoTable::build(ns, opt)), 0x4af6a77fc7354585ull);
  EXPECT_NE(checksum(MementoJumpBackTable::build(ns, opt)), 0x4af6a77fc7354585ull);
}

}  // namespace
}  // namespace chash
