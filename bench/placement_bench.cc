// Pick latency per algorithm as a dependent chain (each result feeds the next key, so lookups
// cannot overlap), with the max/mean load beside the time. The performance issue extends this.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "chash/chash.h"

namespace chash {
namespace {

std::vector<Node> nodes(std::int64_t n) {
  std::vector<Node> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back({"node-" + std::to_string(i), 1});
  return v;
}

template <class Table>
void BM_Pick(benchmark::State& state) {
  const auto n = state.range(0);
  const auto table = Table::build(nodes(n));
  std::uint64_t h = 0x9E3779B97F4A7C15ULL;
  std::vector<std::uint64_t> count(static_cast<std::size_t>(n), 0);
  for (auto _ : state) {
    const NodeId id = table.pick(h);
    h = hash::mix64(h + id);  // chain: the next key depends on this result
    ++count[id];
  }
  std::uint64_t mx = 0, total = 0;
  for (auto c : count) {
    mx = std::max(mx, c);
    total += c;
  }
  state.counters["max_over_mean"] =
      static_cast<double>(mx) * static_cast<double>(n) / static_cast<double>(std::max<std::uint64_t>(total, 1));
}

void BM_HashOnly_Xxh3_16B(benchmark::State& state) {
  char key[17] = "user:00000000000";
  std::uint64_t h = 0;
  for (auto _ : state) {
    key[15] = static_cast<char>('0' + (h & 7));
    h = hash::xxh3_64(std::string_view(key, 16));
    benchmark::DoNotOptimize(h);
  }
}

BENCHMARK(BM_HashOnly_Xxh3_16B);
BENCHMARK_TEMPLATE(BM_Pick, ModuloTable)->Arg(10)->Arg(1000);
BENCHMARK_TEMPLATE(BM_Pick, RingTable)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_Pick, JumpTable)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK_TEMPLATE(BM_Pick, MementoTable)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK_TEMPLATE(BM_Pick, RendezvousTable)->Arg(10)->Arg(100);
BENCHMARK_TEMPLATE(BM_Pick, MaglevTable)->Arg(10)->Arg(1000);
BENCHMARK_TEMPLATE(BM_Pick, MultiProbeTable)->Arg(10)->Arg(1000);
BENCHMARK_TEMPLATE(BM_Pick, SlotTable)->Arg(3)->Arg(100);

}  // namespace
}  // namespace chash

BENCHMARK_MAIN();
