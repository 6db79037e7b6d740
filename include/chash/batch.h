// SPDX-License-Identifier: Apache-2.0
// chash — batch lookup: many keys per call, so the memory latency of one key's lookup overlaps
// the others'.
//
// One lookup on a large table is a chain of dependent cache misses (ring: index entry, points,
// owner). A batch prefetches each stage's memory ahead of the key being looked up (the ring:
// software-pipelined, the index entry 16 keys ahead and the points and owners 8 keys ahead;
// maglev: per group of 16 keys), so the misses of many keys overlap instead of one key's chain at
// a time. Small tables (in L1/L2) gain little; a 10,000-node ring (11 MiB) gains most.
// Results are exactly those of pick() one key at a time (tests/placement/batch_test.cc).
//
// Example:
//   std::vector<std::uint64_t> hashes = ...;            // key hashes, e.g. hash::xxh3_64(key)
//   std::vector<chash::NodeId> owners(hashes.size());
//   chash::pick_batch(table, hashes, owners);           // any table, or an AnyTable
//
//   std::vector<std::string_view> keys = ...;
//   chash::route_batch(table, chash::KeyHash::kXxh3, keys, owners);   // hash + pick
//
// All functions are noexcept and allocation-free; out.size() must be >= the number of keys.
// An AnyTable is visited once per call, not once per key.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>

#include "chash/hash.h"
#include "chash/internal/xxh3.h"
#include "chash/placement.h"
#include "chash/table.h"

namespace chash {

namespace internal {

// clang-format 14 breaks compound requirements apart.
// clang-format off
template <class T>
concept HasPickBatch = requires(const T& t, std::span<const std::uint64_t> h, std::span<NodeId> o) {
  { t.pick_batch(h, o) } noexcept;
};
// clang-format on

// Keys hashed per chunk by route_batch (a stack buffer of this many hashes).
inline constexpr std::size_t kRouteChunk = 64;

}  // namespace internal

// out[i] = table.pick(hashes[i]) for every i. Tables with a batch lookup of their own
// (T::pick_batch: rings stage their prefetches, maglev prefetches per group) use it; the others
// (arithmetic: jump, memento, modulo; compute-bound: rendezvous, multiprobe) loop, which already
// lets the CPU overlap the keys.
template <PlacementTable T>
void pick_batch(const T& table, std::span<const std::uint64_t> hashes,
                std::span<NodeId> out) noexcept {
  assert(out.size() >= hashes.size());
  if constexpr (internal::HasPickBatch<T>) {
    table.pick_batch(hashes, out);
  } else {
    for (std::size_t i = 0; i < hashes.size(); ++i) out[i] = table.pick(hashes[i]);
  }
}

inline void pick_batch(const AnyTable& table, std::span<const std::uint64_t> hashes,
                       std::span<NodeId> out) noexcept {
  std::visit([&](const auto& t) noexcept { pick_batch(t, hashes, out); }, table);
}

// out[i] = table.pick(hash_key(key_hash, keys[i])): hashes a chunk of keys into a stack
// buffer, then looks the chunk up with pick_batch.
template <PlacementTable Table>
void route_batch(const Table& table, KeyHash key_hash, std::span<const std::string_view> keys,
                 std::span<NodeId> out) noexcept {
  assert(out.size() >= keys.size());
  std::uint64_t hashes[internal::kRouteChunk];
  for (std::size_t i = 0; i < keys.size(); i += internal::kRouteChunk) {
    const std::size_t n = std::min(internal::kRouteChunk, keys.size() - i);
    if (key_hash == KeyHash::kXxh3) {
      for (std::size_t j = 0; j < n; ++j) hashes[j] = internal::xxh3_64_inline(keys[i + j]);
    } else {
      for (std::size_t j = 0; j < n; ++j) hashes[j] = hash_key(key_hash, keys[i + j]);
    }
    pick_batch(table, std::span<const std::uint64_t>(hashes, n), out.subspan(i, n));
  }
}

inline void route_batch(const AnyTable& table, KeyHash key_hash,
                        std::span<const std::string_view> keys, std::span<NodeId> out) noexcept {
  std::visit([&](const auto& t) noexcept { route_batch(t, key_hash, keys, out); }, table);
}

}  // namespace chash
