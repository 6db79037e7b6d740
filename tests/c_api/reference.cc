// SPDX-License-Identifier: Apache-2.0
// The C++ API's answers for the C tests (reference.h): chash::Router built directly from a
// RoutingSpec, linked from libchash.a — not through libchash_c.so — so a C ABI answer equal to
// these is the C++ router's, not the C layer agreeing with itself.
#include "reference.h"

#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash_c.h"  // compiles as C++ too: the extern "C" block
#include "chash/router.h"

namespace {

chash::RoutingSpec routing_spec(const ref_spec& s) {
  chash::RoutingSpec spec;
  if (s.preset) spec.preset = s.preset;
  if (s.algorithm) spec.algorithm = s.algorithm;
  if (s.ring) spec.ring = s.ring;
  if (s.hash) spec.hash = s.hash;
  if (s.hash_tag) spec.hash_tag = s.hash_tag;
  if (s.has_vnodes) spec.vnodes = s.vnodes;
  if (s.table_size) spec.table_size = s.table_size;
  if (s.probes) spec.probes = s.probes;
  for (std::size_t i = 0; i < s.num_settings; ++i) {
    spec.preset_settings.emplace_back(s.setting_names[i], s.setting_values[i]);
  }
  return spec;
}

chash::Router build(const ref_spec* spec, const char* const* names, const uint32_t* weights,
                    std::size_t num_nodes) {
  std::vector<chash::Node> nodes;
  for (std::size_t i = 0; i < num_nodes; ++i) {
    nodes.push_back(chash::Node{names[i], weights ? weights[i] : 1u});
  }
  return chash::Router::build(routing_spec(*spec), nodes);
}

}  // namespace

extern "C" int ref_route(const ref_spec* spec, const char* const* names, const uint32_t* weights,
                         size_t num_nodes, const char* const* keys, const size_t* key_lengths,
                         size_t num_keys, uint32_t* out) {
  try {
    const chash::Router r = build(spec, names, weights, num_nodes);
    for (std::size_t i = 0; i < num_keys; ++i) {
      out[i] = r.route(std::string_view(key_lengths[i] ? keys[i] : "", key_lengths[i]));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ref_route: %s\n", e.what());
    return -1;
  }
}

extern "C" int ref_route_n(const ref_spec* spec, const char* const* names, const uint32_t* weights,
                           size_t num_nodes, const char* key, size_t key_len, uint32_t* out,
                           size_t max, size_t* count) {
  try {
    const chash::Router r = build(spec, names, weights, num_nodes);
    *count = r.route_n(std::string_view(key_len ? key : "", key_len), std::span(out, max));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ref_route_n: %s\n", e.what());
    return -1;
  }
}
