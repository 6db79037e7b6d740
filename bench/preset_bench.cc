// SPDX-License-Identifier: Apache-2.0
// Compatibility presets: route() of a 16-byte key (the peer's own key hash + lookup), chained;
// route_batch() over 1,024 keys a call (throughput); and the MD5 under the ketama family.
//   BM_Preset/<preset>/nodes:N          route(), chained (latency)
//   BM_PresetBatch/<preset>/nodes:N     route_batch(), ns per key (independent keys)
//   BM_Md5/<isa>/key_bytes:16           multi-buffer MD5, ns per key; scalar = OpenSSL one by one
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "chash/preset.h"
#include "hash/md5_multi.h"

namespace chash::bench {
namespace {

void BM_Preset(benchmark::State& s, const std::string& preset, std::size_t n) {
  static const KeySet ks(kKeyCount, 16);
  std::unique_ptr<Preset> p;
  try {
    p = make_preset(preset, make_nodes(n));
  } catch (const std::exception& e) {
    s.SkipWithError(e.what());
    return;
  }
  const std::size_t mask = ks.size() - 1;
  std::size_t idx = 0;
  std::uint64_t step = 0;
  for (auto _ : s) idx = chain_next(++step, p->route(ks[idx]), mask);
  keep(idx);
}

constexpr std::size_t kBatch = 1024;

void BM_PresetBatch(benchmark::State& s, const std::string& preset, std::size_t n) {
  static const KeySet ks(kKeyCount, 16);
  std::unique_ptr<Preset> p;
  try {
    p = make_preset(preset, make_nodes(n));
  } catch (const std::exception& e) {
    s.SkipWithError(e.what());
    return;
  }
  std::vector<std::string_view> views(ks.size());
  for (std::size_t i = 0; i < ks.size(); ++i) views[i] = ks[i];
  std::vector<NodeId> out(kBatch);
  std::size_t at = 0;
  std::uint64_t sum = 0;
  for (auto _ : s) {
    p->route_batch(std::span<const std::string_view>(views).subspan(at, kBatch), out);
    sum += out[0];
    at = (at + kBatch) % views.size();
  }
  keep(sum);
  s.SetItemsProcessed(static_cast<std::int64_t>(s.iterations() * kBatch));
  s.counters["ns_per_key"] =
      benchmark::Counter(static_cast<double>(s.iterations() * kBatch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Md5(benchmark::State& s, hash::internal::Md5Isa isa) {
  if (!hash::internal::md5_isa_supported(isa)) {
    s.SkipWithError("not supported on this CPU");
    return;
  }
  static const KeySet ks(kKeyCount, 16);
  std::vector<std::string_view> views(ks.size());
  for (std::size_t i = 0; i < ks.size(); ++i) views[i] = ks[i];
  std::vector<hash::Md5Digest> out(kBatch);
  std::size_t at = 0;
  for (auto _ : s) {
    hash::internal::md5_many(isa, std::span<const std::string_view>(views).subspan(at, kBatch),
                             out);
    at = (at + kBatch) % views.size();
  }
  keep(out[0][0]);
  s.SetItemsProcessed(static_cast<std::int64_t>(s.iterations() * kBatch));
  s.counters["ns_per_key"] =
      benchmark::Counter(static_cast<double>(s.iterations() * kBatch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

const bool registered = [] {
  for (const PresetInfo& info : preset_list()) {
    if (info.keys_are_addresses) continue;  // nginx-ip-hash: keys are addresses
    for (const std::size_t n : {10, 100, 1000}) {
      const std::string preset(info.name);
      benchmark::RegisterBenchmark(("BM_Preset/" + preset + "/nodes:" + std::to_string(n)).c_str(),
                                   [preset, n](benchmark::State& s) { BM_Preset(s, preset, n); });
      benchmark::RegisterBenchmark(
          ("BM_PresetBatch/" + preset + "/nodes:" + std::to_string(n)).c_str(),
          [preset, n](benchmark::State& s) { BM_PresetBatch(s, preset, n); });
    }
  }
  using hash::internal::Md5Isa;
  for (const Md5Isa isa : {Md5Isa::kScalar, Md5Isa::kSse2, Md5Isa::kAvx2}) {
    benchmark::RegisterBenchmark(
        ("BM_Md5/" + std::string(hash::internal::md5_isa_name(isa)) + "/key_bytes:16").c_str(),
        [isa](benchmark::State& s) { BM_Md5(s, isa); });
  }
  return true;
}();

}  // namespace
}  // namespace chash::bench
