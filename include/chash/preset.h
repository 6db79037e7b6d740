// SPDX-License-Identifier: Apache-2.0
// chash — compatibility presets: route keys exactly as a system people already run does.
//
// A preset is built from a node list written as in the peer's own config ("10.0.0.1:11211",
// "redis-a", ...) with weights, and maps a key to the node the peer would choose — byte for
// byte, including the peer's quirks (points computed in float, default ports dropped from the
// point names, >= vs > on the ring, ties, digest cuts). Each preset is verified against vectors
// the real peer produced (tests/compat/, docs/COMPATIBILITY.md).
//
// Example:
//   auto p = chash::make_preset("ketama", {{"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 1}}, {});
//   chash::NodeId id = p->route("user:42");        // as libmemcached would pick
//
// route() is noexcept and allocation-free; the per-key virtual call is the price of choosing a
// preset at run time (a hash like MD5 costs far more); route_batch() makes one call per batch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/node.h"

namespace chash {

struct PresetOptions {
  std::optional<std::string> hash;      // the peer's own hash setting, spelled as the peer does
  std::optional<std::string> hash_tag;  // two characters, as twemproxy's hash_tag ("{}")
  std::optional<std::uint32_t> vnodes;  // points / replicas per node, where the peer has them
  // The peer's own settings, name and value in the peer's spelling, applied in this order (the
  // order can matter, as it does in the peer). The libmemcached presets take libmemcached's
  // behaviours: {"distribution", "CONSISTENT_KETAMA_SPY"}, {"ketama_weighted", "true"},
  // {"hash", "FNV1A_32"}, ... (docs/compat/libmemcached.md). Every other preset takes none, and
  // an unknown name or value is an Error that lists the valid ones.
  std::vector<std::pair<std::string, std::string>> settings;
};

template <class Pos>
class BasicRing;  // chash/ring.h: RingTable, Ring64Table

class Preset {
 public:
  virtual ~Preset() = default;

  // The node the peer picks for `key`; kNoNode when the key cannot be routed (nginx-ip-hash
  // given something that is not an address).
  virtual NodeId route(std::string_view key) const noexcept = 0;

  // Up to out.size() distinct nodes in the peer's preference order: the owner first, then the
  // next distinct nodes clockwise on the peer's ring (or the peer's own next choice). Returns
  // how many were written (all nodes when out is larger).
  virtual std::size_t route_n(std::string_view key, std::span<NodeId> out) const = 0;

  // route() for many keys, the same answers; out.size() must equal keys.size(). The presets
  // override it to overlap independent keys (multi-buffer MD5 for the ketama family and the MD5
  // rings, Guava's loop in SIMD lanes, the rings' pipelined pick_batch); this default loops.
  virtual void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const {
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = route(keys[i]);
  }

  virtual std::size_t node_count() const noexcept = 0;

  // The peer's ring when its placement is one (ketama, libmemcached's continuum, nginx's
  // consistent hash, Envoy's ring_hash ...), to draw it (chash/svg.h); null for the others.
  virtual const BasicRing<std::uint32_t>* ring32() const noexcept { return nullptr; }
  virtual const BasicRing<std::uint64_t>* ring64() const noexcept { return nullptr; }
};

struct PresetInfo {
  std::string_view name;            // as `chash route --preset` takes it
  std::string_view peer;            // one line: which peer and version it matches
  bool keys_are_addresses = false;  // nginx-ip-hash: keys are client IP addresses
};

// Every preset, in a stable order.
std::span<const PresetInfo> preset_list() noexcept;

// Builds preset `name` for `nodes` (order and names as in the peer's config). Throws Error for
// an unknown preset (listing the valid ones), an option the peer does not have, or a node list
// the peer would refuse.
std::unique_ptr<Preset> make_preset(std::string_view name, std::span<const Node> nodes,
                                    const PresetOptions& options = {});

}  // namespace chash
