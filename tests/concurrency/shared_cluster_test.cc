// SPDX-License-Identifier: Apache-2.0
// Lookups stay lock-free and correct while another thread changes membership. Run under TSan in
// `make test`.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "chash/cluster.h"
#include "test_nodes.h"

namespace chash {
namespace {

std::vector<Node> nodes(int n) { return testing::numbered_nodes(n); }

class SharedClusterConcurrency : public ::testing::TestWithParam<Algorithm> {};

TEST_P(SharedClusterConcurrency, ReadersSeeConsistentSnapshotsWhileAWriterChangesMembership) {
  SharedCluster router(Cluster(GetParam(), nodes(8)));
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> lookups{0};
  std::atomic<int> bad{0};
  std::atomic<int> started{0};

  auto reader = [&] {
    SharedCluster::Reader r(router);
    std::uint64_t n = 0;
    started.fetch_add(1);
    do {
      const Snapshot& s = r.current();
      for (int k = 0; k < 64; ++k) {
        const std::uint64_t h = hash::mix64(n++);
        const NodeId id = s.pick(h);
        // Every answer comes from one snapshot: a live node that is up in that snapshot.
        if (id == kNoNode || id >= s.nodes().size() || s.is_removed(id) || s.is_down(id) ||
            s.nodes()[id].weight == 0) {
          bad.fetch_add(1);
        }
      }
    } while (!stop.load(std::memory_order_relaxed));
    lookups.fetch_add(n);
  };
  std::thread t1(reader), t2(reader);
  while (started.load() < 2) std::this_thread::yield();

  for (int round = 0; round < 60; ++round) {
    router.mark_down("n3");
    router.add({"extra" + std::to_string(round), 1});
    router.mark_up("n3");
    router.remove("extra" + std::to_string(round));
    const Algorithm a = GetParam();
    if (a != Algorithm::kJump && a != Algorithm::kMemento && a != Algorithm::kJumpBack &&
        a != Algorithm::kMementoJumpBack) {
      router.set_weight("n5", static_cast<std::uint32_t>(1 + round % 3));
    }
  }
  stop = true;
  t1.join();
  t2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_GE(router.version(), 240u);
}

TEST(SharedClusterConcurrencyTest, ReaderSeesNewVersionAfterWrite) {
  SharedCluster router(Cluster(Algorithm::kRing, nodes(3)));
  SharedCluster::Reader r(router);
  const auto v = r.current().version();
  router.mark_down("n1");
  EXPECT_GT(r.current().version(), v);
  EXPECT_TRUE(r.current().is_down(1));
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, SharedClusterConcurrency,
                         ::testing::Values(Algorithm::kRing, Algorithm::kJump, Algorithm::kMemento,
                                           Algorithm::kMaglev, Algorithm::kRendezvous,
                                           Algorithm::kSlots, Algorithm::kJumpBack,
                                           Algorithm::kMementoJumpBack),
                         [](const auto& p) {
                           std::string name(algorithm_name(p.param));  // [A-Za-z0-9_] only
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace chash
