// SPDX-License-Identifier: Apache-2.0
// Envoy's ring_hash and maglev load balancers (source/extensions/load_balancing_policies/), with
// the route's hash_policy hashing the key: route(key) is the host Envoy picks for the request
// hash xxHash64(key, seed 0) — what a header, cookie or source-IP hash policy computes from the
// value (source/common/http/hash_policy.cc, one policy, one header value).
//
// A node is one endpoint of the cluster; its name is the string Envoy hashes for it: the
// address as Envoy prints it ("10.0.0.1:80", "[::1]:80"), or the hostname when
// use_hostname_for_hashing is set, or the endpoint's "envoy.lb" hash_key metadata. The weight is
// load_balancing_weight; weight 0 leaves the endpoint out (Envoy's weights start at 1).
// Locality-weighted balancing, priorities and bounded loads (hash_balance_factor) are not
// modelled. docs/compat/envoy.md has the details.
#include "envoy.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/maglev.h"
#include "chash/placement.h"
#include "chash/ring.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {

namespace {

// ---- Shared ------------------------------------------------------------------------------------

// The hash a one-value hash_policy gives a request: HashUtil::xxHash64(value), seed 0.
std::uint64_t request_hash(std::string_view key) noexcept { return hash::xxh64(key); }

// ThreadAwareLoadBalancerBase's normalizeHostWeights(), locality weighting off: each host's
// weight / the sum, in doubles, in host order; min starts at 1.0 and max at 0.0.
struct Normalized {
  std::vector<std::pair<NodeId, double>> hosts;
  double min = 1.0;
  double max = 0.0;
};

Normalized normalize(std::span<const Node> nodes) {
  std::uint64_t sum = 0;
  for (const Node& n : nodes) sum += n.weight;
  Normalized out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight == 0) continue;
    const double w = static_cast<double>(nodes[i].weight) * 1.0 / static_cast<double>(sum);
    out.hosts.emplace_back(static_cast<NodeId>(i), w);
    out.min = std::min(out.min, w);
    out.max = std::max(out.max, w);
  }
  return out;
}

// Common base so that the test entry points can reach chooseHost(hash, attempt).
class EnvoyPreset : public Preset {
 public:
  virtual NodeId choose_host(std::uint64_t hash, std::uint32_t attempt) const noexcept = 0;
  // The ring's points (position, host) in order, or the maglev table's entries (index, host).
  virtual std::size_t entry_count() const noexcept = 0;
  virtual std::pair<std::uint64_t, NodeId> entry(std::size_t i) const noexcept = 0;

  NodeId route(std::string_view key) const noexcept override {
    return choose_host(request_hash(key), 0);
  }
  // Next choices: the distinct hosts of Envoy's retry attempts 1, 2, ... (what a retry with the
  // previous_hosts predicate gets), then any host not reached, in table order.
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    if (out.empty()) return 0;
    const std::uint64_t h = request_hash(key);
    const std::size_t want = std::min(out.size(), hosts_);
    internal::SeenSet seen(node_count_);
    std::size_t k = 0;
    for (std::uint64_t attempt = 0; attempt < attempt_limit() && k < want; ++attempt) {
      const NodeId id = choose_host(h, static_cast<std::uint32_t>(attempt));
      if (seen.insert(id)) out[k++] = id;
    }
    for (std::size_t i = 0; i < entry_count() && k < want; ++i) {
      const NodeId id = entry(i).second;
      if (seen.insert(id)) out[k++] = id;
    }
    return k;
  }
  std::size_t node_count() const noexcept override { return node_count_; }

 protected:
  EnvoyPreset(std::size_t node_count, std::size_t hosts) : node_count_(node_count), hosts_(hosts) {}
  virtual std::uint64_t attempt_limit() const noexcept = 0;

 private:
  std::size_t node_count_;
  std::size_t hosts_;  // endpoints in the table (weight > 0)
};

// ---- ring_hash ---------------------------------------------------------------------------------

// MurmurHash::murmurHash2 (source/common/common/hash.cc): libstdc++'s 64-bit _Hash_bytes, seed
// STD_HASH_SEED 0xc70f6907 — RingHash.hash_function MURMUR_HASH_2. Check: "foo" ->
// 9631199822919835226 (test/common/common/hash_test.cc).
std::uint64_t murmur_hash_2(std::string_view key, std::uint64_t seed) noexcept {
  constexpr std::uint64_t mul = 0xc6a4a7935bd1e995ULL;
  auto shift_mix = [](std::uint64_t v) { return v ^ (v >> 47); };
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  const std::size_t len = key.size();
  const std::size_t aligned = len & ~std::size_t{7};
  std::uint64_t h = seed ^ (static_cast<std::uint64_t>(len) * mul);
  for (std::size_t i = 0; i < aligned; i += 8) {
    std::uint64_t v = 0;
    for (std::size_t b = 8; b-- > 0;) v = v << 8 | p[i + b];
    h ^= shift_mix(v * mul) * mul;
    h *= mul;
  }
  if ((len & 7) != 0) {
    std::uint64_t v = 0;
    for (std::size_t b = len; b-- > aligned;) v = v << 8 | p[b];
    h ^= v;
    h *= mul;
  }
  h = shift_mix(h) * mul;
  return shift_mix(h);
}

constexpr std::uint64_t kDefaultMinRingSize = 1024;  // RingHashLoadBalancer defaults
constexpr std::uint64_t kDefaultMaxRingSize = 1024 * 1024 * 8;

// RingHashLoadBalancer::Ring: scale = min(ceil(min_weight * min_ring_size) / min_weight,
// max_ring_size); each host in order adds scale * weight to a running target and gets points
// "<name>_<i>", i = 0, 1, ... while the running count is below it. Points sorted by hash;
// chooseHost is libketama's search — the first point >= the hash, else the first point — and
// retry attempt a takes the point a places further on.
class EnvoyRingHash final : public EnvoyPreset {
 public:
  EnvoyRingHash(Ring64Table ring, std::size_t node_count, std::size_t hosts)
      : EnvoyPreset(node_count, hosts), ring_(std::move(ring)) {}

  NodeId choose_host(std::uint64_t hash, std::uint32_t attempt) const noexcept override {
    std::size_t i = ring_.index_of(hash);
    if (attempt > 0) i = (i + attempt) % ring_.point_count();
    return ring_.owners()[i];
  }
  std::size_t entry_count() const noexcept override { return ring_.point_count(); }
  std::pair<std::uint64_t, NodeId> entry(std::size_t i) const noexcept override {
    return {ring_.positions()[i], ring_.owners()[i]};
  }
  const Ring64Table* ring64() const noexcept override { return &ring_; }

 private:
  std::uint64_t attempt_limit() const noexcept override { return ring_.point_count(); }
  Ring64Table ring_;
};

std::unique_ptr<Preset> build_ring_hash(std::span<const Node> nodes, std::uint64_t min_ring_size,
                                        std::uint64_t max_ring_size, bool murmur2) {
  // Settings first, as RingHashLoadBalancer's constructor checks them before any host exists.
  if (min_ring_size > max_ring_size) {
    throw Error(ErrorCode::kInvalidArgument,
                "ring hash: minimum_ring_size (" + std::to_string(min_ring_size) +
                    ") > maximum_ring_size (" + std::to_string(max_ring_size) + ")");
  }
  if (max_ring_size > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "ring hash: maximum_ring_size " +
                                               std::to_string(max_ring_size) + " is above " +
                                               std::to_string(kMaxRingPoints));
  }
  validate_nodes(nodes);
  const Normalized norm = normalize(nodes);
  const double scale = std::min(std::ceil(norm.min * static_cast<double>(min_ring_size)) / norm.min,
                                static_cast<double>(max_ring_size));

  std::vector<Ring64Table::Point> points;
  points.reserve(static_cast<std::size_t>(std::ceil(scale)));
  std::string point;
  double current = 0.0;
  double target = 0.0;
  for (const auto& [id, weight] : norm.hosts) {
    const std::string& name = nodes[id].name;
    target += scale * weight;
    for (std::uint64_t i = 0; current < target; ++i) {
      point.assign(name).append("_").append(std::to_string(i));
      points.push_back(Ring64Table::Point{
          murmur2 ? murmur_hash_2(point, 0xc70f6907ULL) : hash::xxh64(point), id});
      current += 1.0;
    }
  }
  // Envoy's std::sort leaves equal hashes in no particular order; 64-bit point collisions do not
  // occur in practice, and from_points keeps them in host order.
  const std::size_t hosts = norm.hosts.size();
  return std::make_unique<EnvoyRingHash>(Ring64Table::from_points(std::move(points), nodes.size()),
                                         nodes.size(), hosts);
}

// ---- maglev ------------------------------------------------------------------------------------

constexpr std::uint64_t kDefaultTableSize = 65537;  // MaglevTable::DefaultTableSize

// OriginalMaglevTable / CompactMaglevTable (same contents): hosts sorted by name; offset =
// xxHash64(name) % M, skip = xxHash64(name, seed 1) % (M - 1) + 1; rounds r = 1, 2, ...: a host
// takes a turn unless r * weight < its target, which then grows by max_weight (normalized
// doubles, as Envoy compares them); a turn fills the host's next free permutation slot.
// chooseHost: table[hash % M]; retry attempt a looks up hash ^ (~0 - a + 1). One host: Envoy's
// DegenerateMaglevTable, which always answers it.
class EnvoyMaglev final : public EnvoyPreset {
 public:
  EnvoyMaglev(std::vector<NodeId> table, std::size_t node_count, std::size_t hosts)
      : EnvoyPreset(node_count, hosts), table_(std::move(table)), mod_(table_.size()) {}

  NodeId choose_host(std::uint64_t hash, std::uint32_t attempt) const noexcept override {
    if (attempt > 0) hash ^= ~0ULL - attempt + 1;
    return table_[mod_(hash)];  // hash % M, by Barrett reduction (chash/internal/fastmod.h)
  }
  std::size_t entry_count() const noexcept override { return table_.size(); }
  std::pair<std::uint64_t, NodeId> entry(std::size_t i) const noexcept override {
    return {i, table_[i]};
  }

 private:
  std::uint64_t attempt_limit() const noexcept override { return 64; }
  std::vector<NodeId> table_;
  internal::FastMod64 mod_;
};

std::unique_ptr<Preset> build_maglev(std::span<const Node> nodes, std::uint64_t m) {
  // MaglevLoadBalancer's constructor checks the size before any host exists.
  if (m > kMaxMaglevTableSize || !is_prime(m)) {
    throw Error(ErrorCode::kInvalidArgument,
                "The table size of maglev must be prime number (got " + std::to_string(m) + ")");
  }
  validate_nodes(nodes);
  const Normalized norm = normalize(nodes);
  if (norm.hosts.size() == 1) {
    return std::make_unique<EnvoyMaglev>(std::vector<NodeId>{norm.hosts[0].first}, nodes.size(), 1);
  }
  if (norm.hosts.size() > m) {
    throw Error(ErrorCode::kInvalidArgument, "maglev: " + std::to_string(norm.hosts.size()) +
                                                 " hosts do not fit a table of " +
                                                 std::to_string(m));
  }
  struct Entry {
    NodeId id;
    std::uint64_t offset, skip;
    double weight;
    double target = 0.0;
    std::uint64_t current = 0;  // next permutation slot to try
  };
  std::vector<Entry> entries;
  for (const auto& [id, weight] : norm.hosts) {
    const std::string& name = nodes[id].name;
    const std::uint64_t offset = hash::xxh64(name) % m;
    entries.push_back(Entry{id, offset, hash::xxh64(name, 1) % (m - 1) + 1, weight, 0.0, offset});
  }
  std::sort(entries.begin(), entries.end(),
            [&](const Entry& a, const Entry& b) { return nodes[a.id].name < nodes[b.id].name; });

  std::vector<NodeId> table(static_cast<std::size_t>(m), kNoNode);
  std::uint64_t filled = 0;
  for (std::uint32_t iteration = 1; filled < m; ++iteration) {
    for (Entry& e : entries) {
      if (filled == m) break;
      if (iteration * e.weight < e.target) continue;
      e.target += norm.max;
      // The permutation (offset + skip * j) % M, walked one skip at a time.
      std::uint64_t c = e.current;
      while (table[c] != kNoNode) {
        c += e.skip;
        if (c >= m) c -= m;
      }
      table[c] = e.id;
      e.current = c + e.skip;
      if (e.current >= m) e.current -= m;
      ++filled;
    }
  }
  return std::make_unique<EnvoyMaglev>(std::move(table), nodes.size(), entries.size());
}

}  // namespace

std::unique_ptr<Preset> make_envoy_ring_hash_with(std::span<const Node> nodes,
                                                  std::uint64_t minimum_ring_size,
                                                  std::uint64_t maximum_ring_size,
                                                  bool murmur_hash_2) {
  return build_ring_hash(nodes, minimum_ring_size, maximum_ring_size, murmur_hash_2);
}

std::unique_ptr<Preset> make_envoy_maglev_with(std::span<const Node> nodes,
                                               std::uint64_t table_size) {
  return build_maglev(nodes, table_size);
}

NodeId envoy_choose_host(const Preset& preset, std::uint64_t hash, std::uint32_t attempt) noexcept {
  const auto* p = dynamic_cast<const EnvoyPreset*>(&preset);
  return p == nullptr ? kNoNode : p->choose_host(hash, attempt);
}

std::vector<std::pair<std::uint64_t, NodeId>> envoy_table(const Preset& preset) {
  std::vector<std::pair<std::uint64_t, NodeId>> t;
  if (const auto* p = dynamic_cast<const EnvoyPreset*>(&preset)) {
    for (std::size_t i = 0; i < p->entry_count(); ++i) t.push_back(p->entry(i));
  }
  return t;
}

std::uint64_t envoy_murmur_hash_2(std::string_view key) noexcept {
  return murmur_hash_2(key, 0xc70f6907ULL);
}

std::unique_ptr<Preset> make_envoy(std::string_view name, std::span<const Node> nodes,
                                   const PresetOptions& options) {
  if (name == "envoy-ring-hash") {
    reject_options(name, options, /*hash=*/true, /*hash_tag=*/false, /*vnodes=*/false);
    const std::string fn = options.hash.value_or("XX_HASH");
    if (fn != "XX_HASH" && fn != "MURMUR_HASH_2") {
      throw Error(ErrorCode::kUnsupported,
                  "preset envoy-ring-hash: --hash is RingHash.hash_function, XX_HASH (the "
                  "default) or MURMUR_HASH_2; got \"" +
                      fn.substr(0, 32) + "\"");
    }
    return build_ring_hash(nodes, kDefaultMinRingSize, kDefaultMaxRingSize, fn == "MURMUR_HASH_2");
  }
  if (name == "envoy-maglev") {
    reject_options(name, options, false, false, false);
    return build_maglev(nodes, kDefaultTableSize);
  }
  throw Error(ErrorCode::kInvalidArgument, "envoy presets: unknown preset " + std::string(name));
}

}  // namespace chash::presets
