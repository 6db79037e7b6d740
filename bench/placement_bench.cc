// SPDX-License-Identifier: Apache-2.0
// Google Benchmark suites: every hash function and every placement algorithm.
//
//   BM_HashOnly/<hash>/key_bytes:K        the key hash alone, chained (the floor of a lookup)
//   BM_Lookup/<algo>/nodes:N              xxh3 of a 16-byte key + pick, chained (latency)
//   BM_Lookup/ring/nodes:100/key_bytes:K  the same for 8..64-byte keys
//   BM_Pick/<algo>/nodes:N                pick of a precomputed hash, chained
//   BM_PickPlain/ring*/nodes:N            the ring's plain binary search (the index's reference)
//   BM_Throughput/<algo>/nodes:N/threads  hash + pick, independent lookups; 1 and 2 threads
//   BM_PickOne/<algo>/nodes:N             pick, independent, one call per key
//   BM_PickBatch/<algo>/nodes:N           pick_batch, 1,024 keys per call
//   BM_PickN/<algo>/nodes:N/n:3           three replicas (pick_n), chained
//   BM_Build/<algo>/nodes:N               build time; bytes per node (and per point for rings)
//
// Counters beside the time, from the analysis code the CLI uses (chash/analysis.h):
// max_over_mean (load of the busiest node / mean, 100,000 keys) and moved_pct (keys that change
// node when node N+1 joins) with moved_over_optimal (moved / (1/(N+1))).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "chash/analysis.h"
#include "chash/batch.h"
#include "chash/chash.h"

namespace chash::bench {
namespace {

// ---- Shared fixtures (built once, read by every benchmark and thread) ------------------------------

const KeySet& keys(std::size_t key_bytes = 16) {
  static std::mutex mu;
  static std::map<std::size_t, std::unique_ptr<KeySet>> cache;
  std::lock_guard lock(mu);
  auto& k = cache[key_bytes];
  if (!k) k = std::make_unique<KeySet>(kKeyCount, key_bytes);
  return *k;
}

const std::vector<std::uint64_t>& key_hashes() {
  static const std::vector<std::uint64_t> h = [] {
    std::vector<std::uint64_t> v(kKeyCount);
    for (std::size_t i = 0; i < kKeyCount; ++i) v[i] = hash::xxh3_64(keys()[i]);
    return v;
  }();
  return h;
}

const AnyTable& table(Algorithm a, std::size_t n) {
  static std::mutex mu;
  static std::map<std::pair<Algorithm, std::size_t>, std::unique_ptr<AnyTable>> cache;
  std::lock_guard lock(mu);
  auto& t = cache[{a, n}];
  if (!t) t = std::make_unique<AnyTable>(build_table(a, make_nodes(n)));
  return *t;
}

// Slot tables route a CRC16 slot (0..16383); every other table a 64-bit key hash.
std::uint64_t key_hash(Algorithm a, std::string_view key) noexcept {
  return a == Algorithm::kSlots ? redis_key_slot(key) : hash::xxh3_64(key);
}

struct Quality {
  double max_over_mean = 0, moved_pct = 0, moved_over_optimal = 0;
};

// Balance and movement on the same keys, as `chash analyze` / `chash migrate` measure them.
Quality quality(Algorithm a, std::size_t n) {
  static std::mutex mu;
  static std::map<std::pair<Algorithm, std::size_t>, Quality> cache;
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find({a, n}); it != cache.end()) return it->second;
  }
  // Rendezvous is O(n) per key: fewer keys at large n keep setup short.
  const std::size_t count =
      a == Algorithm::kRendezvous ? std::clamp<std::size_t>(20'000'000 / n, 2000, 100000) : 100000;
  const KeySet ks(count, 16);
  const auto before_nodes = make_nodes(n);
  const auto after_nodes = make_nodes(n + 1);
  const AnyTable before = build_table(a, before_nodes);
  const AnyTable after = build_table(a, after_nodes);
  LoadCounter load(n);
  // MoveCounter keeps a names x names matrix (it reports who moved where): fine up to a few
  // thousand nodes. Beyond, count directly — make_nodes(n + 1) extends make_nodes(n), so equal
  // ids are equal names and the count is the one MoveCounter would give.
  const bool by_matrix = n <= 2000;
  std::optional<MoveCounter> moves;
  if (by_matrix) moves.emplace(before_nodes, after_nodes);
  std::uint64_t moved = 0;
  std::visit(
      [&](const auto& b, const auto& c) {
        if constexpr (std::is_same_v<decltype(b), decltype(c)>) {
          for (std::size_t i = 0; i < count; ++i) {
            const std::uint64_t h = key_hash(a, ks[i]);
            const NodeId x = b.pick(h);
            const NodeId y = c.pick(h);
            load.add(x);
            if (by_matrix) moves->add(x, y);
            moved += x != y ? 1 : 0;
          }
        }
      },
      before, after);
  Quality q;
  q.max_over_mean = load_stats(load.counts(), before_nodes).max_over_mean;
  const double moved_fraction =
      by_matrix ? moves->moved_fraction() : static_cast<double>(moved) / static_cast<double>(count);
  q.moved_pct = 100.0 * moved_fraction;
  q.moved_over_optimal = moved_fraction / optimal_moved_fraction(before_nodes, after_nodes);
  std::lock_guard lock(mu);
  cache[{a, n}] = q;
  return q;
}

void add_quality(benchmark::State& s, Algorithm a, std::size_t n) {
  const Quality q = quality(a, n);
  s.counters["max_over_mean"] = q.max_over_mean;
  s.counters["moved_pct"] = q.moved_pct;
  s.counters["moved_over_optimal"] = q.moved_over_optimal;
}

// ---- Benchmarks ----------------------------------------------------------------------------------

void BM_HashOnly(benchmark::State& s, KeyHash h, std::size_t key_bytes) {
  const KeySet& ks = keys(key_bytes);
  const std::size_t mask = ks.size() - 1;
  std::size_t idx = 0;
  std::uint64_t step = 0;
  if (h == KeyHash::kXxh3) {  // the call a lookup makes (hash::xxh3_64), not the runtime switch
    for (auto _ : s) idx = chain_next(++step, hash::xxh3_64(ks[idx]), mask);
  } else {
    for (auto _ : s) idx = chain_next(++step, hash_key(h, ks[idx]), mask);
  }
  keep(idx);
}

void BM_Lookup(benchmark::State& s, Algorithm a, std::size_t n, std::size_t key_bytes) {
  const KeySet& ks = keys(key_bytes);
  const std::size_t mask = ks.size() - 1;
  std::visit(
      [&](const auto& t) {
        std::size_t idx = 0;
        std::uint64_t step = 0;
        for (auto _ : s) idx = chain_next(++step, t.pick(key_hash(a, ks[idx])), mask);
        keep(idx);
      },
      table(a, n));
  add_quality(s, a, n);
}

void BM_Pick(benchmark::State& s, Algorithm a, std::size_t n) {
  const auto& hs = key_hashes();
  const std::size_t mask = hs.size() - 1;
  std::visit(
      [&](const auto& t) {
        std::size_t idx = 0;
        std::uint64_t step = 0;
        for (auto _ : s) idx = chain_next(++step, t.pick(hs[idx]), mask);
        keep(idx);
      },
      table(a, n));
}

template <class Ring>
void BM_PickPlain(benchmark::State& s, std::size_t n) {
  const auto& hs = key_hashes();
  const std::size_t mask = hs.size() - 1;
  const Ring& t = std::get<Ring>(
      table(std::is_same_v<Ring, RingTable> ? Algorithm::kRing : Algorithm::kRing64, n));
  std::size_t idx = 0;
  std::uint64_t step = 0;
  for (auto _ : s) idx = chain_next(++step, t.owners()[t.plain_index_of(hs[idx])], mask);
  keep(idx);
}

void BM_Throughput(benchmark::State& s, Algorithm a, std::size_t n) {
  const KeySet& ks = keys();
  const std::size_t mask = ks.size() - 1;
  std::visit(
      [&](const auto& t) {
        std::size_t i = static_cast<std::size_t>(s.thread_index()) * 7919;
        std::uint64_t sum = 0;
        for (auto _ : s) sum += t.pick(key_hash(a, ks[i++ & mask]));
        keep(sum);
      },
      table(a, n));
  s.SetItemsProcessed(static_cast<std::int64_t>(s.iterations()));
}

constexpr std::size_t kBatch = 1024;

// Picks kBatch consecutive key hashes per iteration, either one call per key or one
// pick_batch() call: the same keys, output and bookkeeping, so the two differ only there.
template <bool kUseBatch>
void pick_blocks(benchmark::State& s, Algorithm a, std::size_t n) {
  const auto& hs = key_hashes();
  std::vector<NodeId> out(kBatch);
  std::size_t at = 0;
  std::visit(
      [&](const auto& t) {
        for (auto _ : s) {
          if constexpr (kUseBatch) {
            pick_batch(t, std::span<const std::uint64_t>(hs.data() + at, kBatch), out);
          } else {
            for (std::size_t i = 0; i < kBatch; ++i) out[i] = t.pick(hs[at + i]);
          }
          benchmark::DoNotOptimize(out.data());
          benchmark::ClobberMemory();
          at = (at + kBatch) & (hs.size() - 1);
        }
      },
      table(a, n));
  s.SetItemsProcessed(static_cast<std::int64_t>(s.iterations() * kBatch));
}

void BM_PickOne(benchmark::State& s, Algorithm a, std::size_t n) { pick_blocks<false>(s, a, n); }
void BM_PickBatch(benchmark::State& s, Algorithm a, std::size_t n) { pick_blocks<true>(s, a, n); }

void BM_PickN(benchmark::State& s, Algorithm a, std::size_t n) {
  const auto& hs = key_hashes();
  const std::size_t mask = hs.size() - 1;
  NodeId out[3];
  std::visit(
      [&](const auto& t) {
        std::size_t idx = 0;
        std::uint64_t step = 0;
        for (auto _ : s) {
          pick_n(t, hs[idx], out);
          idx = chain_next(++step, out[2], mask);
        }
        keep(idx);
      },
      table(a, n));
}

void BM_Build(benchmark::State& s, Algorithm a, std::size_t n) {
  const auto nodes = make_nodes(n);
  std::size_t bytes = 0, points = 0;
  for (auto _ : s) {
    const auto m0 = mallinfo2();
    AnyTable t = build_table(a, nodes);
    const auto m1 = mallinfo2();
    bytes = (m1.uordblks + m1.hblkhd) - (m0.uordblks + m0.hblkhd);
    if (const auto* r = std::get_if<RingTable>(&t)) points = r->point_count();
    if (const auto* r = std::get_if<Ring64Table>(&t)) points = r->point_count();
    benchmark::DoNotOptimize(t);
  }
  std::size_t names = 0;
  for (const Node& x : nodes) names += x.name.size();
  s.counters["bytes_per_node"] = static_cast<double>(bytes) / static_cast<double>(n);
  if (points) {
    s.counters["bytes_per_point"] = static_cast<double>(bytes) / static_cast<double>(points);
    s.counters["points"] = static_cast<double>(points);
  }
  s.counters["name_bytes_per_node"] = static_cast<double>(names) / static_cast<double>(n);
}

// ---- Registration ---------------------------------------------------------------------------------

std::vector<std::size_t> node_counts(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
    case Algorithm::kRing64:
    case Algorithm::kRendezvous:
    case Algorithm::kSlots:
      return {10, 100, 1000, 10000};
    case Algorithm::kMaglev:  // M = 65,537 must exceed the node count
      return {10, 100, 1000, 10000};
    case Algorithm::kJump:  // the jump class, also at kMaxNodes' order of magnitude
    case Algorithm::kJumpBack:
      return {10, 100, 1000, 10000, 100000, 1000000};
    default:
      return {10, 100, 1000, 10000, 100000};
  }
}

std::string name(const char* bm, Algorithm a, std::size_t n) {
  return std::string(bm) + "/" + std::string(algorithm_name(a)) + "/nodes:" + std::to_string(n);
}

void register_all() {
  for (const KeyHash h : kAllKeyHashes) {
    for (const std::size_t k : {8, 16, 32, 64}) {
      benchmark::RegisterBenchmark(
          ("BM_HashOnly/" + std::string(key_hash_name(h)) + "/key_bytes:" + std::to_string(k))
              .c_str(),
          [h, k](benchmark::State& s) { BM_HashOnly(s, h, k); });
    }
  }
  for (const std::size_t k : {8, 16, 32, 64}) {
    benchmark::RegisterBenchmark(
        ("BM_Lookup/ring/nodes:100/key_bytes:" + std::to_string(k)).c_str(),
        [k](benchmark::State& s) { BM_Lookup(s, Algorithm::kRing, 100, k); });
  }
  for (const Algorithm a : kAllAlgorithms) {
    for (const std::size_t n : node_counts(a)) {
      benchmark::RegisterBenchmark(name("BM_Lookup", a, n).c_str(),
                                   [a, n](benchmark::State& s) { BM_Lookup(s, a, n, 16); });
      benchmark::RegisterBenchmark(name("BM_Pick", a, n).c_str(),
                                   [a, n](benchmark::State& s) { BM_Pick(s, a, n); });
      if (a == Algorithm::kRing) {
        benchmark::RegisterBenchmark(name("BM_PickPlain", a, n).c_str(),
                                     [n](benchmark::State& s) { BM_PickPlain<RingTable>(s, n); });
      }
      if (a == Algorithm::kRing64) {
        benchmark::RegisterBenchmark(name("BM_PickPlain", a, n).c_str(),
                                     [n](benchmark::State& s) { BM_PickPlain<Ring64Table>(s, n); });
      }
      benchmark::RegisterBenchmark(name("BM_Throughput", a, n).c_str(),
                                   [a, n](benchmark::State& s) { BM_Throughput(s, a, n); })
          ->Threads(1)
          ->Threads(2)
          ->UseRealTime();
      benchmark::RegisterBenchmark(name("BM_PickOne", a, n).c_str(),
                                   [a, n](benchmark::State& s) { BM_PickOne(s, a, n); });
      benchmark::RegisterBenchmark(name("BM_PickBatch", a, n).c_str(),
                                   [a, n](benchmark::State& s) { BM_PickBatch(s, a, n); });
      if (n >= 3) {
        benchmark::RegisterBenchmark((name("BM_PickN", a, n) + "/n:3").c_str(),
                                     [a, n](benchmark::State& s) { BM_PickN(s, a, n); });
      }
      benchmark::RegisterBenchmark(name("BM_Build", a, n).c_str(), [a, n](benchmark::State& s) {
        BM_Build(s, a, n);
      })->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace chash::bench

int main(int argc, char** argv) {
  chash::bench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
