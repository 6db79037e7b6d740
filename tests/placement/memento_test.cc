// SPDX-License-Identifier: Apache-2.0
// MementoHash (src/placement/memento.cc) over each of its inner hashes, jump and JumpBackHash:
// the properties the paper (Coluzzi et al., "MementoHash", 2023) claims, checked for both.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "test_nodes.h"

namespace chash {
namespace {

struct OverJump {
  using Table = MementoTable;
  static std::uint32_t inner(std::uint64_t h, std::uint32_t n) {
    return jump_consistent_hash(h, n);
  }
};
struct OverJumpBack {
  using Table = MementoJumpBackTable;
  static std::uint32_t inner(std::uint64_t h, std::uint32_t n) { return jumpback_hash(h, n); }
};

template <class T>
class MementoTest : public ::testing::Test {};
using Inners = ::testing::Types<OverJump, OverJumpBack>;
TYPED_TEST_SUITE(MementoTest, Inners);

std::vector<std::uint64_t> key_hashes(int n) {
  std::vector<std::uint64_t> out;
  for (int k = 0; k < n; ++k) out.push_back(hash::xxh3_64("k" + std::to_string(k)));
  return out;
}

TYPED_TEST(MementoTest, WithoutRemovalsItIsTheInnerHash) {
  const auto m = TypeParam::Table::build(testing::numbered_nodes(37));
  for (const std::uint64_t h : key_hashes(5000)) ASSERT_EQ(m.pick(h), TypeParam::inner(h, 37));
}

TYPED_TEST(MementoTest, SuccessiveRemovalsMoveOnlyTheRemovedNodesKeys) {
  // Remove 5 nodes one by one in arbitrary order; each step moves only that node's keys, and
  // the removed node's keys spread over all the others.
  std::vector<Node> ns = testing::numbered_nodes(20);
  std::vector<NodeId> order;
  auto table = TypeParam::Table::build(ns);
  const auto hs = key_hashes(20000);
  for (const NodeId victim : {7u, 2u, 19u, 11u, 0u}) {
    ns[victim].weight = 0;
    order.push_back(victim);
    MementoOptions opt;
    opt.removal_order = order;
    const auto next = TypeParam::Table::build(ns, opt);
    std::set<NodeId> receivers;
    for (const std::uint64_t h : hs) {
      const NodeId a = table.pick(h), b = next.pick(h);
      ASSERT_NE(b, victim);
      ASSERT_EQ(ns[b].weight, 1u) << "key mapped to a removed bucket";
      if (a != victim) {
        ASSERT_EQ(a, b);
      } else {
        receivers.insert(b);
      }
    }
    EXPECT_GE(receivers.size(), 10u) << "a removed node's keys should spread";
    table = next;
  }
}

}  // namespace
}  // namespace chash
