// SPDX-License-Identifier: Apache-2.0
// The balancers written by hand in the articles chash grew from (../shared/articles/ in the
// project's workspace; docs/COMPATIBILITY.md, "Articles"), reproduced key for key. Their vectors
// come from re-running each article's algorithm (tests/compat/articles/). Four are rings, each
// a named ring spec (chash/ring_spec.h); guava-iphash is a modulo.
//
//   guava-iphash        000: index = Math.abs(murmur3_128().hashString(ip, UTF_8).asInt() % n)
//   guava-treemap       000: TreeMap<Long>: put(hash(server)) then put(hash(server + "#VN" + i)),
//                            i < 150; hash = murmur3_128 asLong; tailMap(hash(key)) else firstKey
//   java-hashcode-ring  002: TreeMap<Integer>: Math.abs(server.hashCode()), then
//                            Math.abs((server + "#" + i).hashCode()), i < 3; tailMap, firstKey
//   python-md5-ring     003: ring[int(md5(f"{node}_v{i}").hexdigest(), 16) % 2**32] = node,
//                            i < 150; the first sorted key >= the key's hash, else the first
//   murmur64a-treemap   004: TreeMap<Long>: MurmurHash64A (seed 0x1234ABCD) of node + i,
//                            i < 500; the exact point or tailMap, else firstKey
//
// In every one a later put of an equal position replaces the earlier (collision=last). None has
// weights; chash gives a node of weight w w times the points (weight 0: no point), so equal
// weights route exactly as the article. --vnodes overrides the count; 0 keeps only the servers'
// own points where the article has them (000's ring, 002's first variant).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ring_spec.h"
#include "common.h"
#include "java_text.h"
#include "registry.h"

namespace chash {

std::optional<RingSpec> preset_ring_spec(std::string_view preset,
                                         std::optional<std::uint32_t> vnodes) {
  RingSpec s;
  if (preset == "guava-treemap") {
    s.points = "{name}#VN{i}";
    s.bare = RingSpec::Bare::kFirst;
    s.vnodes = 150;
    s.hash = RingPositionHash::kGuavaLong;
  } else if (preset == "java-hashcode-ring") {
    s.points = "{name}#{i}";
    s.bare = RingSpec::Bare::kFirst;
    s.vnodes = 3;
    s.hash = RingPositionHash::kJavaHashCode;
    s.java_abs = true;
  } else if (preset == "python-md5-ring") {
    s.points = "{name}_v{i}";
    s.vnodes = 150;
    s.hash = RingPositionHash::kMd5Int32;
  } else if (preset == "murmur64a-treemap") {
    s.points = "{name}{i}";
    s.vnodes = 500;
    s.hash = RingPositionHash::kMurmur64A;
    s.seed = 0x1234ABCD;
  } else {
    return std::nullopt;
  }
  s.signed_order = s.is_signed();  // explicit, so the printed spec says it
  if (vnodes) {
    if (*vnodes == 0 && s.bare == RingSpec::Bare::kNo) {
      throw Error(ErrorCode::kInvalidArgument,
                  "preset " + std::string(preset) +
                      ": --vnodes 0 leaves no point (the article's ring has only named points)");
    }
    s.vnodes = *vnodes;
  }
  validate_ring_spec(s);
  return s;
}

namespace presets {
namespace {

// Article 000's IP-hash balancer: the servers in list order, index Math.abs(asInt % n) — Java's
// % keeps the dividend's sign, so the remainder is in (-n, n) and abs() never meets MIN_VALUE.
// No weights and no second choice in the article; next choices (route_n) are the following
// servers in list order, as the index moves on.
class GuavaIpHash final : public Preset {
 public:
  explicit GuavaIpHash(std::uint32_t n) : n_(n) {}

  NodeId route(std::string_view key) const noexcept override {
    return static_cast<NodeId>(index_of(key));
  }
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    const std::size_t want = std::min<std::size_t>(out.size(), n_);
    std::uint32_t i = index_of(key);
    for (std::size_t k = 0; k < want; ++k) {
      out[k] = static_cast<NodeId>(i);
      if (++i == n_) i = 0;
    }
    return want;
  }
  std::size_t node_count() const noexcept override { return n_; }

 private:
  std::uint32_t index_of(std::string_view key) const noexcept {
    const auto h = static_cast<std::int32_t>(static_cast<std::uint32_t>(guava_key_hash(key)));
    const std::int32_t r = h % static_cast<std::int32_t>(n_);
    return static_cast<std::uint32_t>(r < 0 ? -r : r);
  }
  std::uint32_t n_;
};

std::unique_ptr<Preset> make_guava_iphash(std::span<const Node> nodes, const PresetOptions& o) {
  reject_options("guava-iphash", o, /*hash=*/false, /*hash_tag=*/false, /*vnodes=*/false);
  validate_nodes(nodes);
  for (const Node& n : nodes) {
    if (n.weight != 1) {
      throw Error(ErrorCode::kUnsupported,
                  "preset guava-iphash: the article's balancer has no weights (node \"" +
                      n.name.substr(0, 64) + "\" has weight " + std::to_string(n.weight) +
                      "); give every node weight 1");
    }
  }
  if (nodes.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw Error(ErrorCode::kLimitExceeded, "preset guava-iphash: too many nodes");
  }
  return std::make_unique<GuavaIpHash>(static_cast<std::uint32_t>(nodes.size()));
}

}  // namespace

std::unique_ptr<Preset> make_articles(std::string_view name, std::span<const Node> nodes,
                                      const PresetOptions& options) {
  if (name == "guava-iphash") return make_guava_iphash(nodes, options);
  reject_options(name, options, /*hash=*/false, /*hash_tag=*/true, /*vnodes=*/true);
  const std::optional<RingSpec> spec = preset_ring_spec(name, options.vnodes);
  if (!spec) {
    throw Error(ErrorCode::kInvalidArgument,
                "article presets: unknown preset " + std::string(name));
  }
  return make_ring_spec_preset(*spec, nodes, options.hash_tag);
}

}  // namespace presets
}  // namespace chash
