// SPDX-License-Identifier: Apache-2.0
// Building blocks shared by the compatibility presets (not installed).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/placement.h"
#include "chash/preset.h"
#include "chash/ring.h"

namespace chash::presets {

// A preset whose placement is a ring of peer-computed points and whose key position is
// KeyFn(key) — the shape of ketama, nginx consistent, uhashring, groupcache, Envoy ring_hash...
// KeyFn is a stateless callable (a lambda or function object) so route() inlines it.
template <class Ring, class KeyFn>
class RingPreset final : public Preset {
 public:
  RingPreset(Ring ring, KeyFn key_fn) : ring_(std::move(ring)), key_fn_(std::move(key_fn)) {}

  NodeId route(std::string_view key) const noexcept override { return ring_.pick(key_fn_(key)); }
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    return pick_n(ring_, key_fn_(key), out);
  }
  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const override {
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = ring_.pick(key_fn_(keys[i]));
  }
  std::size_t node_count() const noexcept override { return ring_.node_count(); }
  const Ring& ring() const noexcept { return ring_; }

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
