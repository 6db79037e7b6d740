// SPDX-License-Identifier: Apache-2.0
#include "chash/router.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "chash/batch.h"
#include "chash/error.h"
#include "chash/ring_spec.h"
#include "hash/md5_multi.h"

namespace chash {

void check_hash_tag(std::string_view tag) {
  if (tag.size() != 2 || tag[0] == '\0' || tag[1] == '\0') {
    throw Error(ErrorCode::kInvalidArgument,
                "hash tag takes exactly two characters, as twemproxy's hash_tag (e.g. \"{}\"), "
                "got \"" +
                    std::string(tag.substr(0, 16)) + "\"");
  }
}

namespace {

std::uint64_t sum_weights(std::span<const Node> nodes) noexcept {
  std::uint64_t total = 0;
  for (const Node& n : nodes) total += n.weight;
  return total;
}

std::string bounded_suffix(std::uint32_t factor) {
  return factor == 0 ? std::string() : ", bounded loads " + std::to_string(factor) + "%";
}

}  // namespace

TableOptions Router::table_options(const RoutingSpec& spec, Algorithm algo) {
  TableOptions opt;
  auto refuse = [&](const char* option) {
    throw Error(ErrorCode::kUnsupported, std::string(option) + " does not apply to algorithm " +
                                             std::string(algorithm_name(algo)));
  };
  const bool ring = algo == Algorithm::kRing || algo == Algorithm::kRing64;
  if (spec.vnodes) {
    if (!ring) refuse("vnodes");
    opt.ring.vnodes = *spec.vnodes;
  }
  if (spec.point_format) {
    if (!ring) refuse("point format");
    opt.ring.point_format = *spec.point_format;
  }
  if (spec.table_size) {
    if (algo != Algorithm::kMaglev) refuse("table size");
    opt.maglev.table_size = *spec.table_size;
  }
  if (spec.probes) {
    if (algo != Algorithm::kMultiProbe) refuse("probes");
    opt.multiprobe.probes = *spec.probes;
  }
  return opt;
}

Router Router::build(Algorithm algorithm, std::span<const Node> nodes, const TableOptions& options,
                     KeyPolicy key_policy, std::uint32_t balance_factor) {
  if (balance_factor != 0) LoadBound::check_factor(balance_factor);
  Router r;
  r.table_ = std::make_shared<const AnyTable>(build_table(algorithm, nodes, options));
  r.nodes_.assign(nodes.begin(), nodes.end());
  r.key_policy_ = key_policy;
  r.balance_factor_ = balance_factor;
  r.total_weight_ = sum_weights(nodes);
  r.description_ =
      std::string(algorithm_name(algorithm)) + " (" + std::string(key_hash_name(key_policy.hash));
  if (key_policy.tag_open != 0) {
    r.description_ += ", hash tag " + std::string{key_policy.tag_open, key_policy.tag_close};
  }
  if (algorithm == Algorithm::kRing || algorithm == Algorithm::kRing64) {
    r.description_ += ", " + std::to_string(options.ring.vnodes) + " vnodes";
  }
  r.description_ += bounded_suffix(balance_factor) + ")";
  return r;
}

Router Router::build(const RoutingSpec& spec, std::span<const Node> nodes) {
  if (spec.hash_tag) check_hash_tag(*spec.hash_tag);
  if (spec.balance_factor != 0) LoadBound::check_factor(spec.balance_factor);
  if (!spec.preset.empty() + !spec.algorithm.empty() + spec.ring.has_value() > 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "choose one of a preset, an algorithm and a ring spec (got " +
                    std::string(spec.preset.empty() ? "" : "preset " + spec.preset + " ") +
                    (spec.algorithm.empty() ? "" : "algorithm " + spec.algorithm + " ") +
                    (spec.ring ? "a ring spec" : "") + ")");
  }
  if (spec.ring) {
    if (spec.hash || spec.table_size || spec.probes || spec.point_format ||
        !spec.preset_settings.empty()) {
      throw Error(ErrorCode::kUnsupported,
                  "a ring spec names its own hash and point names: --hash, --point-format, "
                  "--table-size, --probes and preset settings do not apply to --ring");
    }
    RingSpec ring = parse_ring_spec(*spec.ring);
    if (spec.vnodes) {
      ring.vnodes = *spec.vnodes;
      validate_ring_spec(ring);
    }
    Router r;
    r.preset_ = make_ring_spec_preset(ring, nodes, spec.hash_tag);
    r.nodes_.assign(nodes.begin(), nodes.end());
    r.balance_factor_ = spec.balance_factor;
    r.total_weight_ = sum_weights(nodes);
    r.description_ = "ring spec " + to_string(ring);
    if (spec.balance_factor != 0) r.description_ += bounded_suffix(spec.balance_factor);
    return r;
  }
  if (!spec.preset.empty()) {
    if (spec.table_size || spec.probes || spec.point_format) {
      throw Error(
          ErrorCode::kUnsupported,
          "table size, probes and point format apply to algorithms, not to preset " + spec.preset);
    }
    PresetOptions o;
    o.hash = spec.hash;
    o.hash_tag = spec.hash_tag;
    o.vnodes = spec.vnodes;
    o.settings = spec.preset_settings;
    Router r;
    r.preset_ = make_preset(spec.preset, nodes, o);
    r.nodes_.assign(nodes.begin(), nodes.end());
    r.balance_factor_ = spec.balance_factor;
    r.total_weight_ = sum_weights(nodes);
    r.description_ = "preset " + spec.preset;
    if (spec.balance_factor != 0) {
      r.description_ += " (" + bounded_suffix(spec.balance_factor).substr(2) + ")";
    }
    return r;
  }
  if (spec.algorithm.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "a routing needs a preset, an algorithm or a ring spec");
  }
  if (!spec.preset_settings.empty()) {
    throw Error(ErrorCode::kUnsupported, "preset settings (\"" + spec.preset_settings[0].first +
                                             "\") apply to presets, not to algorithm " +
                                             spec.algorithm);
  }
  const Algorithm algo = parse_algorithm(spec.algorithm);
  KeyPolicy policy;
  if (spec.hash) {
    policy.hash = parse_key_hash(*spec.hash);
  } else if (algo == Algorithm::kSlots) {
    policy.hash = KeyHash::kRedisSlot;  // Redis Cluster: CRC16 of the key or its {tag}
  }
  if (spec.hash_tag) {
    policy.tag_open = (*spec.hash_tag)[0];
    policy.tag_close = (*spec.hash_tag)[1];
  }
  return build(algo, nodes, table_options(spec, algo), policy, spec.balance_factor);
}

NodeId Router::route_bounded(std::string_view key, std::span<const std::uint64_t> loads,
                             const DownSet& down) const noexcept {
  std::uint64_t total_load = 0;
  std::uint64_t up_weight = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (down.contains(static_cast<NodeId>(i))) continue;
    up_weight += nodes_[i].weight;
    if (i < loads.size()) total_load += loads[i];
  }
  return route_bounded(
      key, [&down](NodeId id) { return !down.contains(id); },
      [&loads](NodeId id) { return id < loads.size() ? loads[id] : std::uint64_t{0}; }, total_load,
      up_weight);
}

void Router::route_batch(std::span<const std::string_view> keys,
                         std::span<NodeId> out) const noexcept {
  assert(out.size() >= keys.size());
  if (preset_) {
    preset_->route_batch(keys, out.first(keys.size()));
    return;
  }
  std::uint64_t hashes[internal::kRouteChunk];
  for (std::size_t i = 0; i < keys.size(); i += internal::kRouteChunk) {
    const std::size_t n = std::min(internal::kRouteChunk, keys.size() - i);
    if (key_policy_.hash == KeyHash::kMd5) {
      // MD5 side by side (multi-buffer): the same ketama_point(md5, 0) as hash_key(kMd5).
      std::string_view hashed[internal::kRouteChunk];
      hash::Md5Digest digests[internal::kRouteChunk];
      for (std::size_t j = 0; j < n; ++j) {
        hashed[j] = key_policy_.tag_open != 0
                        ? hash_tag(keys[i + j], key_policy_.tag_open, key_policy_.tag_close)
                        : keys[i + j];
      }
      hash::internal::md5_many(std::span<const std::string_view>(hashed, n),
                               std::span<hash::Md5Digest>(digests, n));
      for (std::size_t j = 0; j < n; ++j) hashes[j] = hash::ketama_point(digests[j], 0);
    } else {
      for (std::size_t j = 0; j < n; ++j) hashes[j] = key_policy_(keys[i + j]);
    }
    pick_batch(*table_, std::span<const std::uint64_t>(hashes, n), out.subspan(i, n));
  }
}

NodeId Router::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return static_cast<NodeId>(i);
  }
  return kNoNode;
}

}  // namespace chash
