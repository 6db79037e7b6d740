// SPDX-License-Identifier: Apache-2.0
// Ring specs come from untrusted text (`chash route --ring`, chash-proxy's `ring:` pool key):
// parse_ring_spec either returns a spec or throws chash::Error, never anything else; a parsed
// spec prints to a canonical text that parses back to the same spec and prints the same; a
// ring built from it (a few nodes, weights 0..3) answers every lookup with one of its nodes, and
// its next choices are distinct.
#include <cstdlib>
#include <string>
#include <vector>

#include "chash/chash.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t shape = data[0];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  chash::RingSpec spec;
  try {
    spec = chash::parse_ring_spec(text);
  } catch (const chash::Error&) {
    return 0;
  }
  const std::string canonical = chash::to_string(spec);
  chash::RingSpec back;
  try {
    back = chash::parse_ring_spec(canonical);
  } catch (const chash::Error&) {
    std::abort();  // the canonical form must parse
  }
  spec.signed_order = spec.is_signed();
  if (!(back == spec) || chash::to_string(back) != canonical) std::abort();

  // Keep the ring small: the fuzzer is after parsing and lookup, not point counts.
  spec.vnodes = spec.vnodes % 50;
  if (spec.vnodes == 0 && spec.bare == chash::RingSpec::Bare::kNo) spec.vnodes = 1;
  if (spec.vnodes > 1 && spec.points.find("{i}") == std::string::npos) spec.vnodes = 1;
  std::vector<chash::Node> nodes;
  const std::size_t n = shape % 6 + 1;
  for (std::size_t i = 0; i < n; ++i) {
    nodes.push_back({"node-" + std::to_string(i), static_cast<std::uint32_t>((shape >> i) % 4)});
  }
  nodes[0].weight = 1;
  std::unique_ptr<chash::Preset> ring;
  try {
    ring = chash::make_ring_spec_preset(
        spec, nodes, shape & 0x80 ? std::optional<std::string>("{}") : std::nullopt);
  } catch (const chash::Error&) {
    return 0;  // e.g. a format without {name}
  }
  std::vector<chash::NodeId> out(n);
  for (const std::string_view key : {std::string_view(text), std::string_view("k"),
                                     std::string_view(), std::string_view("node-0")}) {
    const chash::NodeId id = ring->route(key);
    if (id >= n || nodes[id].weight == 0) std::abort();
    const std::size_t m = ring->route_n(key, out);
    if (m == 0 || out[0] != id) std::abort();
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = i + 1; j < m; ++j) {
        if (out[i] == out[j]) std::abort();
      }
    }
  }
  return 0;
}
