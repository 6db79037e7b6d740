// SPDX-License-Identifier: Apache-2.0
// Node lists and options from untrusted config: every algorithm and preset either builds or
// throws chash::Error; a built table only ever answers with a drawable node.
#include <cstdlib>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "chash/preset.h"
#include "fuzz_reader.h"

namespace {

using chash::fuzz::Reader;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  const std::uint8_t choice = r.byte();
  const std::size_t count = r.byte() % 12;
  std::vector<chash::Node> nodes;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = r.str(24);
    const std::uint32_t weight = r.byte() % 5;
    nodes.push_back({std::move(name), weight});
  }
  const std::string key = r.str(40);
  try {
    const auto presets = chash::preset_list();
    if (choice < 128) {
      const auto algo = chash::kAllAlgorithms[choice % std::size(chash::kAllAlgorithms)];
      chash::TableOptions opt;
      opt.ring.vnodes = 1 + r.byte() % 8;
      opt.maglev.table_size = 251;
      opt.multiprobe.probes = 1 + r.byte() % 30;
      const auto t = chash::build_table(algo, nodes, opt);
      const auto h = chash::hash::xxh3_64(key);
      const chash::NodeId id = chash::pick(t, h);
      if (id >= nodes.size() || nodes[id].weight == 0) std::abort();
      std::vector<chash::NodeId> out(4);
      const std::size_t got = chash::pick_n(t, h, out);
      for (std::size_t i = 0; i < got; ++i) {
        if (out[i] >= nodes.size() || nodes[out[i]].weight == 0) std::abort();
      }
    } else {
      const auto& info = presets[choice % presets.size()];
      chash::PresetOptions o;
      if (r.byte() & 1) o.hash = r.str(12);
      const auto p = chash::make_preset(info.name, nodes, o);
      const chash::NodeId id = p->route(key);
      if (id != chash::kNoNode && id >= nodes.size()) std::abort();
      std::vector<chash::NodeId> out(3);
      const std::size_t got = p->route_n(key, out);
      for (std::size_t i = 0; i < got; ++i) {
        if (out[i] >= nodes.size()) std::abort();
      }
    }
  } catch (const chash::Error&) {
  }
  return 0;
}
