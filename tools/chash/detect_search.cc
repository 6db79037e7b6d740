// SPDX-License-Identifier: Apache-2.0
#include "detect_search.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "build_ahead.h"
#include "chash/batch.h"
#include "chash/error.h"
#include "chash/preset.h"
#include "detect_scorer.h"

namespace chash::cli {

std::vector<std::string> route_args(const RoutingSpec& spec) {
  std::vector<std::string> a;
  if (!spec.preset.empty()) {
    a = {"--preset", spec.preset};
  } else if (spec.ring) {
    a = {"--ring", *spec.ring};
  } else {
    a = {"--algo", spec.algorithm};
  }
  if (spec.hash) a.insert(a.end(), {"--hash", *spec.hash});
  if (spec.hash_tag) a.insert(a.end(), {"--hash-tag", *spec.hash_tag});
  if (spec.vnodes) a.insert(a.end(), {"--vnodes", std::to_string(*spec.vnodes)});
  if (spec.table_size) a.insert(a.end(), {"--table-size", std::to_string(*spec.table_size)});
  if (spec.probes) a.insert(a.end(), {"--probes", std::to_string(*spec.probes)});
  if (spec.point_format) a.insert(a.end(), {"--point-format", *spec.point_format});
  for (const auto& [k, v] : spec.preset_settings)
    a.insert(a.end(), {"--preset-option", k + "=" + v});
  return a;
}

namespace {

// ---- What is searched ------------------------------------------------------------------------------

// Points per node tried for presets that have them, rings and ring specs: the counts people
// write (1..10 for small hand-written rings, powers of two, round numbers, ketama's 160, Jedis'
// 160, groupcache's 50, uhashring's 160, the articles' 3, 150 and 500).
constexpr std::uint32_t kVnodes[] = {1,  2,  3,  4,   5,   6,   7,   8,   9,   10,  16,  20,  32,
                                     40, 50, 64, 100, 128, 150, 160, 200, 256, 300, 500, 1000};

// Ring point names: "{name}#VN{i}" (chash's default), the forms hand-written rings use.
constexpr std::string_view kPointFormats[] = {"{name}#VN{i}", "{name}-vn{i}", "{name}_v{i}",
                                              "{name}{i}",    "{name}-{i}",   "{name}#{i}",
                                              "{name}:{i}"};
constexpr std::uint32_t kRingDefaultVnodes = 160;  // RingOptions::vnodes

// Hash settings in each peer's own spelling, tried on every preset (each takes its own and
// refuses the others): twemproxy's hash: names, libmemcached's MEMCACHED_HASH_* (lower case),
// Jedis' Hashing, Envoy's RingHash.hash_function, and chash's key hashes. Spellings of one
// hash for one preset (libmemcached's default and one_at_a_time) route alike and are kept once.
constexpr std::string_view kHashSpellings[] = {
    // twemproxy (nc_hashkit.h order)
    "one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1a_64", "fnv1_32",
    "fnv1a_32", "hsieh", "murmur", "jenkins",
    // libmemcached, beyond twemproxy's names
    "default", "crc", "murmur3",
    // Jedis, Envoy
    "MURMUR_HASH", "MD5", "XX_HASH", "MURMUR_HASH_2",
    // chash's key hashes, beyond the above
    "xxh3", "xxh64", "murmur3_32", "murmur3_128", "murmur64a", "murmur2", "java", "redis_slot"};

// libmemcached behaviours that change the mapping, beyond the presets' own.
constexpr std::pair<std::string_view, std::string_view> kPresetSettings[] = {
    {"distribution", "CONSISTENT_KETAMA_SPY"},
    {"ketama_weighted", "true"},
    {"ketama_weighted", "false"},
    {"version", "1.0.18"},
};

// Tiers of simplicity (the high bits of a rank): defaults before options, presets before
// native algorithms.
enum Tier : std::uint64_t {
  kPresetDefault = 0,
  kPresetOption = 1,
  kNativeDefault = 2,
  kNativeHash = 3,
  kNativeOption = 4,
  kRingSpec = 5,
};
std::uint64_t rank(Tier tier, std::uint64_t seq) { return (std::uint64_t{tier} << 40) | seq; }

// Routes through a Router (presets; anything the fast path does not cover).
auto router_route(const Router& r, std::span<const std::string_view> keys) {
  return [&r, keys](std::size_t off, std::size_t n, NodeId* out) {
    r.route_batch(keys.subspan(off, n), std::span<NodeId>(out, n));
  };
}

// ---- Presets and their options -------------------------------------------------------------------

class PresetSearch {
 public:
  PresetSearch(Scorer& s, std::span<const Node> nodes, std::uint64_t& seq)
      : s_(s), nodes_(nodes), seq_(seq) {
    const auto keys = s.keys();
    // The probe: a sample of the observed keys, and keys of no particular shape, so that two
    // options count as one only when they route alike in general, not just on few observations.
    const auto sample = keys.first(std::min<std::size_t>(keys.size(), 512));
    probe_.assign(sample.begin(), sample.end());
    for (int i = 0; i < 256; ++i) synthetic_.push_back("detect-probe:" + std::to_string(i));
    probe_.insert(probe_.end(), synthetic_.begin(), synthetic_.end());
    const bool braces = std::any_of(keys.begin(), keys.end(), [](std::string_view k) {
      const auto open = k.find('{');
      return open != std::string_view::npos && k.find('}', open + 1) != std::string_view::npos;
    });
    if (braces) tags_.push_back("{}");
  }

  void run(std::vector<std::string>& inapplicable) {
    for (const PresetInfo& info : preset_list()) {
      RoutingSpec base;
      base.preset = std::string(info.name);
      seen_.clear();
      try {
        const Router r = Router::build(base, nodes_);
        seen_.insert(fingerprint(r));
        s_.score({base, rank(kPresetDefault, seq_++)}, router_route(r, s_.keys()));
      } catch (const Error& e) {
        inapplicable.push_back(base.preset + ": " + e.what());
        continue;
      }
      options(base);
    }
  }

 private:
  enum class Tried : std::uint8_t { kRefused, kSame, kNew };

  // Each option alone, then every combination of the options that routed differently alone.
  void options(const RoutingSpec& base) {
    std::vector<std::optional<std::string>> hashes = {std::nullopt};
    std::vector<std::optional<std::uint32_t>> vnodes = {std::nullopt};
    std::vector<std::optional<std::pair<std::string, std::string>>> settings = {std::nullopt};
    std::vector<std::optional<std::string>> tags = {std::nullopt};
    for (const auto h : kHashSpellings) {
      RoutingSpec s = base;
      s.hash = std::string(h);
      if (attempt(s) == Tried::kNew) hashes.push_back(s.hash);
    }
    for (const std::uint32_t v : kVnodes) {
      RoutingSpec s = base;
      s.vnodes = v;
      if (attempt(s) == Tried::kNew) vnodes.push_back(v);
    }
    {
      RoutingSpec s = base;
      s.vnodes = 0;  // "no virtual nodes", where a preset has that variant
      if (attempt(s) == Tried::kNew) vnodes.push_back(0);
    }
    for (const auto& [k, v] : kPresetSettings) {
      RoutingSpec s = base;
      s.preset_settings = {{std::string(k), std::string(v)}};
      if (attempt(s) == Tried::kNew) settings.push_back(s.preset_settings[0]);
    }
    for (const auto& t : tags_) {
      RoutingSpec s = base;
      s.hash_tag = t;
      if (attempt(s) == Tried::kNew) tags.push_back(t);
    }
    for (const auto& h : hashes) {
      for (const auto& v : vnodes) {
        for (const auto& st : settings) {
          for (const auto& t : tags) {
            if (int{h.has_value()} + v.has_value() + st.has_value() + t.has_value() < 2) continue;
            RoutingSpec s = base;
            s.hash = h;
            s.vnodes = v;
            if (st) s.preset_settings = {*st};
            s.hash_tag = t;
            attempt(s);
          }
        }
      }
    }
  }

  // Builds `spec`; scores it unless it routes the probe keys as an option tried before.
  Tried attempt(const RoutingSpec& spec) {
    std::optional<Router> r;
    try {
      r.emplace(Router::build(spec, nodes_));
    } catch (const Error&) {
      return Tried::kRefused;
    }
    if (!seen_.insert(fingerprint(*r)).second) return Tried::kSame;
    s_.score({spec, rank(kPresetOption, seq_++)}, router_route(*r, s_.keys()));
    return Tried::kNew;
  }

  std::vector<NodeId> fingerprint(const Router& r) const {
    std::vector<NodeId> f(probe_.size());
    r.route_batch(probe_, f);
    return f;
  }

  Scorer& s_;
  std::span<const Node> nodes_;
  std::uint64_t& seq_;
  std::vector<std::string> synthetic_;
  std::vector<std::string_view> probe_;
  std::vector<std::string> tags_;
  std::set<std::vector<NodeId>> seen_;
};

// ---- Native algorithms ------------------------------------------------------------------------------

// Each key hash of every observation, computed once (lazily, as far as the scoring reads).
class HashCache {
 public:
  explicit HashCache(std::span<const std::string_view> keys) : keys_(keys) {}
  const std::uint64_t* upto(KeyHash h, std::size_t n) {
    auto& v = cache_[static_cast<std::size_t>(h)];
    for (std::size_t i = v.size(); i < n; ++i) v.push_back(hash_key(h, keys_[i]));
    return v.data();
  }

 private:
  // Indexed by the KeyHash's value: they run 0 .. kRedisSlot, as kAllKeyHashes lists them.
  static_assert(static_cast<std::size_t>(KeyHash::kRedisSlot) + 1 == std::size(kAllKeyHashes));
  std::span<const std::string_view> keys_;
  std::vector<std::uint64_t> cache_[std::size(kAllKeyHashes)];
};

void search_natives(Scorer& s, HashCache& cache, std::span<const Node> nodes, std::uint64_t& seq) {
  // Every table to build: each algorithm with its defaults; rings with every vnode count and
  // point format.
  std::vector<RoutingSpec> specs;
  for (const Algorithm algo : kAllAlgorithms) {
    RoutingSpec spec;
    spec.algorithm = std::string(algorithm_name(algo));
    specs.push_back(spec);
    if (algo != Algorithm::kRing && algo != Algorithm::kRing64) continue;
    for (const std::uint32_t v : kVnodes) {
      for (const auto f : kPointFormats) {
        RoutingSpec o = spec;
        if (v != kRingDefaultVnodes) o.vnodes = v;
        if (f != kPointFormats[0]) o.point_format = std::string(f);
        if (o.vnodes || o.point_format) specs.push_back(std::move(o));
      }
    }
  }
  BuildAhead builds(std::move(specs), nodes);
  for (std::size_t i = 0; i < builds.size(); ++i) {
    const std::optional<Router> r = builds.take(i);
    if (!r) continue;
    const RoutingSpec& spec = builds.spec(i);
    const bool defaults = !spec.vnodes && !spec.point_format;
    const KeyHash default_hash = spec.algorithm == "slots" ? KeyHash::kRedisSlot : KeyHash::kXxh3;
    const AnyTable& table = *r->table();
    // One table, every key hash: the keys' hashes are computed once for all tables.
    for (const KeyHash h : kAllKeyHashes) {
      RoutingSpec c = spec;
      if (h != default_hash) c.hash = std::string(key_hash_name(h));
      const Tier tier = !defaults           ? kNativeOption
                        : h == default_hash ? kNativeDefault
                                            : kNativeHash;
      s.score({c, rank(tier, seq++)}, [&](std::size_t off, std::size_t n, NodeId* out) {
        const std::uint64_t* hashes = cache.upto(h, off + n);
        pick_batch(table, std::span<const std::uint64_t>(hashes + off, n),
                   std::span<NodeId>(out, n));
      });
    }
  }
}

// ---- Ring specs ----------------------------------------------------------------------------------

// How hand-written rings turn a string into a position (ring_spec.h's hash=, with the options
// that go with each): Java String.hashCode with and without Math.abs, Guava murmur3_128 asLong
// and asInt, MurmurHash64A with Jedis' seed, Python's MD5 % 2**32; then chash's key hashes.
constexpr std::string_view kRingHashes[] = {
    "java-hashcode; abs=yes",     "java-hashcode", "guava-long", "guava-int",
    "murmur64a; seed=0x1234abcd", "md5-int32"};

// A ring of P points cuts the circle into at most P arcs, each owned by one node. Walking the
// observations in the order of their positions, the owner therefore changes at most P times
// around the circle, and each observation the ring gets wrong adds at most 2 changes. So when
// the observed owners change more than P + 2k times in the order a hash gives, no ring that
// positions keys with that hash and has at most P points gets fewer than k observations wrong
// — whatever its point names, collisions or successor rule — and such rings need not be built.
std::uint64_t circular_changes(std::span<const std::uint64_t> positions,
                               std::span<const NodeId> owners) {
  std::vector<std::pair<std::uint64_t, NodeId>> v(positions.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = {positions[i], owners[i]};
  std::sort(v.begin(), v.end());
  std::uint64_t changes = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    changes += v[i].second != v[(i + 1) % v.size()].second;
  }
  return changes;
}

// The positions ring_spec.h gives keys for `hash` (a spec's hash= and abs= values), when they
// can be computed here from public functions: chash's key hashes (hash_key, 32-bit ones
// zero-extended, unsigned), java-hashcode (hash::java_string_hashcode, with Java's Math.abs for
// abs=yes: MIN_VALUE stays) and md5-int32 (the digest's last four bytes, big-endian). Signed
// order is a rotation of the circle, which leaves circular changes alone. nullopt for the rest
// (Guava and MurmurHash64A see malformed UTF-8 as Java decodes it).
std::optional<std::vector<std::uint64_t>> key_positions(std::string_view hash, HashCache& cache,
                                                        std::span<const std::string_view> keys) {
  if (hash.starts_with("java-hashcode")) {
    const bool abs = hash.ends_with("abs=yes");
    std::vector<std::uint64_t> v(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::int64_t x = hash::java_string_hashcode(keys[i]);
      if (abs && x < 0 && x != std::numeric_limits<std::int32_t>::min()) x = -x;
      v[i] = static_cast<std::uint32_t>(x);
    }
    return v;
  }
  if (hash == "md5-int32") {
    std::vector<std::uint64_t> v(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const hash::Md5Digest d = hash::md5(keys[i]);
      v[i] = std::uint64_t{d[12]} << 24 | std::uint64_t{d[13]} << 16 | std::uint64_t{d[14]} << 8 |
             d[15];
    }
    return v;
  }
  for (const KeyHash h : kAllKeyHashes) {
    if (key_hash_name(h) == hash) {
      const std::uint64_t* p = cache.upto(h, keys.size());
      return std::vector<std::uint64_t>(p, p + keys.size());
    }
  }
  return std::nullopt;
}

// Ring specs of every family: each point format and vnode count, with and without the bare node
// name as a point (bare=first; vnodes=0: only that point), each hash; order by the hash's
// default, successor ge, collision last (what TreeMap.put/tailMap and a Python dict with bisect
// do). Returns how many were ruled out by key order without being built.
std::uint64_t search_ring_specs(Scorer& s, HashCache& cache, std::span<const Node> nodes,
                                std::uint64_t& seq) {
  std::vector<std::string> hashes(std::begin(kRingHashes), std::end(kRingHashes));
  for (const KeyHash h : kAllKeyHashes) {
    if (h != KeyHash::kRedisSlot) hashes.emplace_back(key_hash_name(h));
  }
  std::uint64_t weight = 0, drawn = 0;  // points per vnode; nodes with a (bare) point
  for (const Node& n : nodes) {
    weight += n.weight;
    drawn += n.weight > 0;
  }
  std::vector<RoutingSpec> specs;
  std::uint64_t ruled_out = 0;
  auto add = [&specs](std::string text) {
    RoutingSpec spec;
    spec.ring = std::move(text);
    specs.push_back(std::move(spec));
  };
  for (const auto& hash : hashes) {
    std::optional<std::uint64_t> changes;
    if (const auto pos = key_positions(hash, cache, s.keys())) {
      changes = circular_changes(*pos, s.owners());
    }
    // Whether a ring of this hash with v vnodes per unit of weight (and bare points) could
    // matter.
    auto possible = [&](std::uint64_t v) {
      return !changes || *changes <= weight * v + drawn + 2 * s.slack();
    };
    for (const bool bare : {false, true}) {
      for (const auto f : kPointFormats) {
        for (const std::uint32_t v : kVnodes) {
          if (!possible(v)) {
            ++ruled_out;
            continue;
          }
          add("points=" + std::string(f) + "; vnodes=" + std::to_string(v) +
              (bare ? "; bare=first" : "") + "; hash=" + hash);
        }
      }
    }
    if (possible(0)) {
      add("vnodes=0; bare=first; hash=" + hash);
    } else {
      ++ruled_out;
    }
  }
  BuildAhead builds(std::move(specs), nodes);
  for (std::size_t i = 0; i < builds.size(); ++i) {
    const std::optional<Router> r = builds.take(i);
    if (r) s.score({builds.spec(i), rank(kRingSpec, seq++)}, router_route(*r, s.keys()));
  }
  return ruled_out;
}

}  // namespace

DetectResult detect(std::span<const Node> nodes, const ObservedPlacement& observed,
                    const DetectOptions& options) {
  if (observed.keys.empty()) throw Error(ErrorCode::kInvalidArgument, "no observations");
  if (!(options.threshold > 0 && options.threshold <= 1)) {
    throw Error(ErrorCode::kInvalidArgument, "the threshold must be in (0, 1]");
  }
  Scorer scorer(nodes, observed, options);
  DetectResult result;
  std::uint64_t seq = 0;
  PresetSearch(scorer, nodes, seq).run(result.inapplicable);
  HashCache cache(scorer.keys());
  search_natives(scorer, cache, nodes, seq);
  result.ruled_out = search_ring_specs(scorer, cache, nodes, seq);
  result.best = scorer.finish();
  result.candidates = scorer.scored() + result.ruled_out;
  if (!result.best.empty()) {
    std::tie(result.tied_with_best, result.tied_exact) = scorer.count_at(result.best[0].matches);
  }
  return result;
}

}  // namespace chash::cli
