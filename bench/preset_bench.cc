// SPDX-License-Identifier: Apache-2.0
// Compatibility presets: route() of a 16-byte key (the peer's own key hash + lookup), chained.
//   BM_Preset/<preset>/nodes:N
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>

#include "bench_kernels.h"
#include "chash/preset.h"

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

const bool registered = [] {
  for (const PresetInfo& info : preset_list()) {
    if (info.keys_are_addresses) continue;  // nginx-ip-hash: keys are addresses
    for (const std::size_t n : {10, 100, 1000}) {
      const std::string preset(info.name);
      benchmark::RegisterBenchmark(("BM_Preset/" + preset + "/nodes:" + std::to_string(n)).c_str(),
                                   [preset, n](benchmark::State& s) { BM_Preset(s, preset, n); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace chash::bench
