// SPDX-License-Identifier: Apache-2.0
// A routing spec from untrusted config (chash-proxy pool keys, CLI flags): preset or algorithm
// names, key hash, hash tag, options, preset settings and a balance factor, each either builds a
// chash::Router or throws chash::Error; a built router answers every lookup — plain, failover,
// replicas, bounded — with a node of its list (or kNoNode where documented).
#include <cstdlib>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "fuzz_reader.h"

namespace {

using chash::fuzz::Reader;

// Mostly real names, so the fuzzer gets past name checks; sometimes raw bytes.
std::string name_from(Reader& r, std::span<const std::string_view> names) {
  const std::uint8_t b = r.byte();
  if (b < 200 && !names.empty()) return std::string(names[b % names.size()]);
  return r.str(16);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  std::vector<std::string_view> presets, algorithms, hashes;
  for (const auto& info : chash::preset_list()) presets.push_back(info.name);
  for (const auto a : chash::kAllAlgorithms) algorithms.push_back(chash::algorithm_name(a));
  for (const auto h : chash::kAllKeyHashes) hashes.push_back(chash::key_hash_name(h));

  chash::RoutingSpec spec;
  const std::uint8_t flags = r.byte();
  if (flags & 1) spec.preset = name_from(r, presets);
  if (flags & 2 || spec.preset.empty()) spec.algorithm = name_from(r, algorithms);
  if (flags & 4) spec.hash = name_from(r, hashes);
  if (flags & 8) spec.hash_tag = r.str(3);
  if (flags & 16) spec.vnodes = r.byte() % 20;
  if (flags & 32) spec.balance_factor = static_cast<std::uint32_t>(r.byte()) * 3;
  if (flags & 64) spec.table_size = 251 + r.byte() % 4;
  if (flags & 128) {
    for (int i = r.byte() % 3; i > 0; --i) spec.preset_settings.emplace_back(r.str(24), r.str(24));
  }
  const std::size_t count = 1 + r.byte() % 24;
  std::vector<chash::Node> nodes;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = r.byte() & 1 ? r.str(24) : "10.0.0." + std::to_string(i) + ":11211";
    nodes.push_back({std::move(name), 1u + r.byte() % 3});
  }
  const std::string key = r.str(40);
  try {
    const chash::Router router = chash::Router::build(spec, nodes);
    auto valid = [&](chash::NodeId id) { return id == chash::kNoNode || id < nodes.size(); };
    chash::DownSet down(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i)
      down.set(static_cast<chash::NodeId>(i), r.byte() & 1);
    std::vector<std::uint64_t> loads(nodes.size());
    for (auto& l : loads) l = r.byte();
    chash::NodeId out[4];
    const std::size_t got = router.route_n(key, out);
    for (std::size_t i = 0; i < got; ++i) {
      if (!valid(out[i]) || out[i] == chash::kNoNode) std::abort();
    }
    const chash::NodeId up = router.route(key, down);
    if (!valid(router.route(key)) || !valid(up) || (up != chash::kNoNode && down.contains(up))) {
      std::abort();
    }
    const chash::NodeId bounded = router.route_bounded(key, loads, down);
    if (!valid(bounded) || (bounded != chash::kNoNode && down.contains(bounded))) std::abort();
  } catch (const chash::Error&) {
  }
  return 0;
}
