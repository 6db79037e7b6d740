// SPDX-License-Identifier: Apache-2.0
// Building blocks shared by the compatibility presets (not installed).
#pragma once

#include <algorithm>
#include <cassert>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/placement.h"
#include "chash/preset.h"
#include "chash/ring.h"
#include "hash/md5_multi.h"

namespace chash::presets {

// ---- Batches ------------------------------------------------------------------------------------
// route_batch works a chunk of keys at a time: their positions into a stack buffer, then the
// lookups (the ring's pipelined pick_batch). Answers are route()'s, key for key
// (tests/router/route_batch_test.cc checks every preset).

inline constexpr std::size_t kBatchChunk = 64;

// Calls f(chunk, offset) for consecutive chunks of at most kBatchChunk keys.
template <class F>
void for_each_chunk(std::span<const std::string_view> keys, F&& f) {
  for (std::size_t i = 0; i < keys.size(); i += kBatchChunk) {
    f(keys.subspan(i, std::min(kBatchChunk, keys.size() - i)), i);
  }
}

// out[i] = cut(MD5(keys[i])) for a chunk (at most kBatchChunk keys), the digests computed side
// by side (multi-buffer MD5, src/hash/md5_multi.h): what makes the MD5 presets' batches fast.
template <class Cut>
void md5_positions(std::span<const std::string_view> keys, std::uint64_t* out, Cut&& cut) noexcept {
  assert(keys.size() <= kBatchChunk);
  hash::Md5Digest digests[kBatchChunk];
  hash::internal::md5_many(keys, std::span<hash::Md5Digest>(digests, keys.size()));
  for (std::size_t i = 0; i < keys.size(); ++i) out[i] = cut(digests[i]);
}

// The key position of libketama, libmemcached's and twemproxy's "md5" and the rings that copied
// them: the first four digest bytes, little-endian.
inline std::uint64_t ketama_cut(const hash::Md5Digest& d) noexcept {
  return hash::ketama_point(d, 0);
}

// A key function that computes a chunk of positions at once: out[i] = f(keys[i]) for
// keys.size() <= kBatchChunk.
template <class F>
concept BatchKeyFn = requires(const F& f, std::span<const std::string_view> keys,
                              std::uint64_t* out) {
  { f.batch(keys, out) }
  noexcept;
};

// out[i] = f(keys[i]) for a chunk, with f's own batch when it has one.
template <class KeyFn>
void key_positions(const KeyFn& f, std::span<const std::string_view> keys,
                   std::uint64_t* out) noexcept {
  if constexpr (BatchKeyFn<KeyFn>) {
    f.batch(keys, out);
  } else {
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = f(keys[i]);
  }
}

// A preset whose placement is a ring of peer-computed points and whose key position is
// KeyFn(key) — the shape of ketama, nginx consistent, uhashring, groupcache, Envoy ring_hash...
// KeyFn is a stateless callable (a lambda or function object) so route() inlines it; with a
// batch() member (BatchKeyFn) route_batch hashes a chunk of keys at once.
template <class Ring, class KeyFn>
class RingPreset final : public Preset {
 public:
  RingPreset(Ring ring, KeyFn key_fn) : ring_(std::move(ring)), key_fn_(std::move(key_fn)) {}

  NodeId route(std::string_view key) const noexcept override { return ring_.pick(key_fn_(key)); }
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    return pick_n(ring_, key_fn_(key), out);
  }
  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const override {
    for_each_chunk(keys, [&](std::span<const std::string_view> chunk, std::size_t at) {
      std::uint64_t positions[kBatchChunk];
      key_positions(key_fn_, chunk, positions);
      ring_.pick_batch(std::span<const std::uint64_t>(positions, chunk.size()),
                       out.subspan(at, chunk.size()));
    });
  }
  std::size_t node_count() const noexcept override { return ring_.node_count(); }
  const Ring& ring() const noexcept { return ring_; }
  const RingTable* ring32() const noexcept override {
    if constexpr (std::is_same_v<Ring, RingTable>) return &ring_;
    return nullptr;
  }
  const Ring64Table* ring64() const noexcept override {
    if constexpr (std::is_same_v<Ring, Ring64Table>) return &ring_;
    return nullptr;
  }

 private:
  Ring ring_;
  KeyFn key_fn_;
};

template <class Ring, class KeyFn>
std::unique_ptr<Preset> make_ring_preset(Ring ring, KeyFn key_fn) {
  return std::make_unique<RingPreset<Ring, KeyFn>>(std::move(ring), std::move(key_fn));
}

// Throws Error(kUnsupported) for an option the preset's peer does not have.
inline void reject_options(std::string_view preset, const PresetOptions& o, bool hash,
                           bool hash_tag, bool vnodes) {
  auto fail = [&](std::string_view what) {
    throw Error(ErrorCode::kUnsupported,
                "preset " + std::string(preset) + " has no " + std::string(what) + " setting");
  };
  if (!hash && o.hash) fail("--hash");
  if (!hash_tag && o.hash_tag) fail("--hash-tag");
  if (!vnodes && o.vnodes) fail("--vnodes");
}

}  // namespace chash::presets
