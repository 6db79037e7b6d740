// SPDX-License-Identifier: Apache-2.0
// A small tour of libchash: what adding, removing and failing a node does to a cache cluster.
// (The full report is `chash demo`, from the command-line tool.)
#include <cstdio>
#include <string>
#include <vector>

#include "chash/chash.h"

namespace {

constexpr std::size_t kKeys = 200000;

std::vector<std::uint64_t> make_keys() {
  std::vector<std::uint64_t> keys;
  keys.reserve(kKeys);
  for (std::size_t i = 0; i < kKeys; ++i)
    keys.push_back(chash::hash::xxh3_64("user:" + std::to_string(i)));
  return keys;
}

std::vector<chash::Node> nodes_named(int n) {
  std::vector<chash::Node> nodes;
  for (int i = 0; i < n; ++i) nodes.push_back({"cache-" + std::to_string(i), 1});
  return nodes;
}

double moved_fraction(const chash::AnyTable& a, const chash::AnyTable& b,
                      const std::vector<std::uint64_t>& keys) {
  std::size_t moved = 0;
  for (auto h : keys) moved += chash::pick(a, h) != chash::pick(b, h) ? 1 : 0;
  return static_cast<double>(moved) / static_cast<double>(keys.size());
}

double max_over_mean(const chash::AnyTable& t, std::size_t n,
                     const std::vector<std::uint64_t>& keys) {
  std::vector<std::size_t> count(n, 0);
  for (auto h : keys) ++count[chash::pick(t, h)];
  std::size_t mx = 0;
  for (auto c : count) mx = std::max(mx, c);
  return static_cast<double>(mx) / (static_cast<double>(keys.size()) / static_cast<double>(n));
}

}  // namespace

int main() {
  const auto keys = make_keys();
  std::printf("chash demo: %zu synthetic keys (\"user:0\" ...), key hash xxh3\n\n", kKeys);

  std::printf("1. Growing a cache cluster from 4 to 5 nodes — keys that change owner:\n");
  std::printf("   %-12s %10s %14s\n", "algorithm", "moved", "max/mean (5)");
  for (chash::Algorithm a :
       {chash::Algorithm::kModulo, chash::Algorithm::kRing, chash::Algorithm::kJump,
        chash::Algorithm::kMemento, chash::Algorithm::kRendezvous, chash::Algorithm::kMaglev,
        chash::Algorithm::kMultiProbe}) {
    const auto four = chash::build_table(a, nodes_named(4));
    const auto five = chash::build_table(a, nodes_named(5));
    std::printf("   %-12s %9.1f%% %14.3f\n", std::string(chash::algorithm_name(a)).c_str(),
                100 * moved_fraction(four, five, keys), max_over_mean(five, 5, keys));
  }
  std::printf("   (optimum: 1/5 = 20.0%%)\n\n");

  std::printf("2. Virtual nodes vs imbalance (ring, 10 nodes):\n");
  for (std::uint32_t v : {1u, 10u, 50u, 160u, 500u}) {
    chash::TableOptions opt;
    opt.ring.vnodes = v;
    const auto t = chash::build_table(chash::Algorithm::kRing, nodes_named(10), opt);
    std::printf("   vnodes %4u: max/mean %.3f\n", v, max_over_mean(t, 10, keys));
  }

  std::printf("\n3. A node fails (ring, 5 nodes, cache-2 down):\n");
  chash::SharedCluster router(chash::Cluster(chash::Algorithm::kRing, nodes_named(5)));
  const auto before = router.snapshot();
  router.mark_down("cache-2");
  const auto after = router.snapshot();
  std::size_t moved = 0, moved_not_from_down = 0;
  for (auto h : keys) {
    const auto a = before->pick(h), b = after->pick(h);
    if (a != b) {
      ++moved;
      if (before->name(a) != "cache-2") ++moved_not_from_down;
    }
  }
  std::printf("   moved %.1f%% of keys; keys moved that were not on cache-2: %zu\n",
              100.0 * static_cast<double>(moved) / kKeys, moved_not_from_down);
  return 0;
}
