// SPDX-License-Identifier: Apache-2.0
// Entry points of the Envoy presets for tests/presets/envoy_test.cc, which replays the
// expectations of Envoy's own unit tests (non-default ring and table sizes, hashes given
// directly). Not part of the installed API.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/preset.h"

namespace chash::presets {

std::unique_ptr<Preset> make_envoy_ring_hash_with(std::span<const Node> nodes,
                                                  std::uint64_t minimum_ring_size,
                                                  std::uint64_t maximum_ring_size,
                                                  bool murmur_hash_2);
std::unique_ptr<Preset> make_envoy_maglev_with(std::span<const Node> nodes,
                                               std::uint64_t table_size);
NodeId envoy_choose_host(const Preset& preset, std::uint64_t hash, std::uint32_t attempt) noexcept;
std::vector<std::pair<std::uint64_t, NodeId>> envoy_table(const Preset& preset);
std::uint64_t envoy_murmur_hash_2(std::string_view key) noexcept;

}  // namespace chash::presets
