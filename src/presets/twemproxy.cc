// SPDX-License-Identifier: Apache-2.0
// twemproxy (nutcracker) 0.5.0: `twemproxy` is a pool with `distribution: ketama`,
// `twemproxy-modula` one with `distribution: modula`; both take every `hash:` nutcracker offers
// (PresetOptions::hash, default fnv1a_64) and its two-character `hash_tag`.
//
// A node is a server line of nutcracker.yml as the user writes it, less the weight: the name
// when the line has one ("127.0.0.1:6379:1 redis-a" -> "redis-a"), else the address
// ("127.0.0.1:6379", "/var/run/redis.sock"). Verified on every key against the Debian package
// nutcracker 0.5.0+dfsg-2 routing Redis traffic (tests/compat/twemproxy/,
// docs/compat/twemproxy.md).
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ring.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {
namespace {

// ---- Key hashes (src/hashkit/nc_*.c) ------------------------------------------------------------
// nutcracker reads keys through `const char*`, and char is signed on x86-64, so several of its
// hashes see bytes 0x80..0xff as 0xffffff80..0xffffffff. Those, and its crc16 (never masked to 16
// bits), crc32 (15 bits, libmemcached's) and "fnv1*_64" (32-bit results) are computed here as
// nutcracker computes them; the others are the library's own functions.

enum class TwHash : std::uint8_t {
  kOneAtATime,
  kMd5,
  kCrc16,
  kCrc32,
  kCrc32a,
  kFnv1_64,
  kFnv1a_64,
  kFnv1_32,
  kFnv1a_32,
  kHsieh,
  kMurmur,
  kJenkins,
};

// nutcracker's HASH_CODEC order and spelling (nc_hashkit.h); conf_set_hash compares exactly.
constexpr std::pair<std::string_view, TwHash> kHashNames[] = {
    {"one_at_a_time", TwHash::kOneAtATime},
    {"md5", TwHash::kMd5},
    {"crc16", TwHash::kCrc16},
    {"crc32", TwHash::kCrc32},
    {"crc32a", TwHash::kCrc32a},
    {"fnv1_64", TwHash::kFnv1_64},
    {"fnv1a_64", TwHash::kFnv1a_64},
    {"fnv1_32", TwHash::kFnv1_32},
    {"fnv1a_32", TwHash::kFnv1a_32},
    {"hsieh", TwHash::kHsieh},
    {"murmur", TwHash::kMurmur},
    {"jenkins", TwHash::kJenkins},
};

TwHash parse_hash(std::string_view preset, const std::optional<std::string>& name) {
  if (!name) return TwHash::kFnv1a_64;  // CONF_DEFAULT_HASH
  std::string valid;
  for (const auto& [spelling, h] : kHashNames) {
    if (spelling == *name) return h;
    if (!valid.empty()) valid += ", ";
    valid += spelling;
  }
  throw Error(ErrorCode::kParse, "preset " + std::string(preset) + ": unknown hash \"" +
                                     name->substr(0, 64) + "\" (nutcracker has: " + valid + ")");
}

// A key byte as nutcracker sees it through a signed char.
constexpr std::uint32_t signed_byte(char c) noexcept {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<signed char>(c)));
}

// CRC-16/XMODEM table (poly 0x1021); nc_crc16.c's crc16tab holds the same values.
constexpr std::array<std::uint16_t, 256> kCrc16Table = [] {
  std::array<std::uint16_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i << 8;
    for (int bit = 0; bit < 8; ++bit) c = (c & 0x8000u) != 0 ? (c << 1) ^ 0x1021u : c << 1;
    t[i] = static_cast<std::uint16_t>(c);
  }
  return t;
}();

// hash_crc16: the register is a uint32_t that is shifted left and never masked, so the low 16
// bits are CRC-16/XMODEM and the high 16 bits carry earlier bytes' shifted-out state.
std::uint32_t crc16_unmasked(std::string_view key) noexcept {
  std::uint32_t crc = 0;
  for (const char c : key) {
    crc = (crc << 8) ^ kCrc16Table[((crc >> 8) ^ signed_byte(c)) & 0xffu];
  }
  return crc;
}

// hash_one_at_a_time with signed bytes.
std::uint32_t one_at_a_time_signed(std::string_view key) noexcept {
  std::uint32_t v = 0;
  for (const char c : key) {
    v += signed_byte(c);
    v += v << 10;
    v ^= v >> 6;
  }
  v += v << 3;
  v ^= v >> 11;
  v += v << 15;
  return v;
}

// FNV with signed bytes. hash_fnv1_64 runs in 64 bits but returns the low 32, which depend only
// on the low 32 bits of the offset basis and prime; hash_fnv1a_64 is 32-bit arithmetic with those
// truncated constants. Both are therefore this 32-bit loop.
constexpr std::uint32_t kFnv64OffsetLow = 0x84222325u;  // 0xcbf29ce484222325
constexpr std::uint32_t kFnv64PrimeLow = 0x000001b3u;   // 0x100000001b3
constexpr std::uint32_t kFnv32Offset = 2166136261u;
constexpr std::uint32_t kFnv32Prime = 16777619u;

template <bool kXorFirst>
std::uint32_t fnv_signed(std::string_view key, std::uint32_t h, std::uint32_t prime) noexcept {
  for (const char c : key) {
    if constexpr (kXorFirst) {
      h ^= signed_byte(c);
      h *= prime;
    } else {
      h *= prime;
      h ^= signed_byte(c);
    }
  }
  return h;
}

std::uint32_t twemproxy_hash(TwHash h, std::string_view key) noexcept {
  switch (h) {
    case TwHash::kOneAtATime:
      return one_at_a_time_signed(key);
    case TwHash::kMd5:  // hash_md5 == ketama_hash(key, len, 0)
      return hash::ketama_point(hash::md5(key), 0);
    case TwHash::kCrc16:
      return crc16_unmasked(key);
    case TwHash::kCrc32:  // hash_crc32: ((~crc) >> 16) & 0x7fff, as libmemcached
      return (hash::crc32(key) >> 16) & 0x7fffu;
    case TwHash::kCrc32a:
      return hash::crc32(key);
    case TwHash::kFnv1_64:
      return fnv_signed<false>(key, kFnv64OffsetLow, kFnv64PrimeLow);
    case TwHash::kFnv1a_64:
      return fnv_signed<true>(key, kFnv64OffsetLow, kFnv64PrimeLow);
    case TwHash::kFnv1_32:
      return fnv_signed<false>(key, kFnv32Offset, kFnv32Prime);
    case TwHash::kFnv1a_32:
      return fnv_signed<true>(key, kFnv32Offset, kFnv32Prime);
    case TwHash::kHsieh:  // same signed/unsigned tail reads as nc_hsieh.c
      return hash::hsieh(key);
    case TwHash::kMurmur:  // seed 0xdeadbeef * length (nc_murmur.c)
      return hash::murmur2_32(key, 0xdeadbeefu * static_cast<std::uint32_t>(key.size()));
    case TwHash::kJenkins:  // lookup3 hashlittle, JENKINS_INITVAL 13
      return hash::jenkins_lookup3(key, 13);
  }
  return 0;
}

// server_pool_idx + server_pool_hash (nc_server.c): the hash_tag span when there is a non-empty
// one; a pool of one server skips hashing; an empty key hashes to 0.
struct KeyHasher {
  TwHash hash = TwHash::kFnv1a_64;
  bool single_server = false;
  bool tagged = false;
  char tag_open = 0;
  char tag_close = 0;

  std::uint32_t operator()(std::string_view key) const noexcept {
    if (single_server) return 0;
    if (tagged) key = hash_tag(key, tag_open, tag_close);
    if (key.empty()) return 0;
    return twemproxy_hash(hash, key);
  }

  // A chunk at once: MD5 side by side (multi-buffer), the other hashes key by key.
  void batch(std::span<const std::string_view> keys, std::uint64_t* out) const noexcept {
    if (hash != TwHash::kMd5 || single_server) {
      for (std::size_t i = 0; i < keys.size(); ++i) out[i] = (*this)(keys[i]);
      return;
    }
    assert(keys.size() <= kBatchChunk);
    std::string_view hashed[kBatchChunk];
    for (std::size_t i = 0; i < keys.size(); ++i) {
      hashed[i] = tagged ? hash_tag(keys[i], tag_open, tag_close) : keys[i];
    }
    md5_positions(std::span<const std::string_view>(hashed, keys.size()), out, ketama_cut);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (hashed[i].empty()) out[i] = 0;
    }
  }
};

KeyHasher make_key_hasher(std::string_view preset, std::size_t nodes, const PresetOptions& o) {
  KeyHasher k;
  k.hash = parse_hash(preset, o.hash);
  k.single_server = nodes == 1;
  if (o.hash_tag) {
    // conf_set_hashtag: "is not a valid hash tag string with two characters".
    if (o.hash_tag->size() != 2) {
      throw Error(ErrorCode::kInvalidArgument, "preset " + std::string(preset) +
                                                   ": hash_tag must be two characters, got \"" +
                                                   o.hash_tag->substr(0, 64) + "\"");
    }
    k.tagged = true;
    k.tag_open = (*o.hash_tag)[0];
    k.tag_close = (*o.hash_tag)[1];
  }
  return k;
}

// ---- Servers: the hashed name and nutcracker's order (nc_conf.c) -------------------------------

constexpr std::uint32_t kDefaultKetamaPort = 11211;  // CONF_DEFAULT_KETAMA_PORT

// The string conf_add_server gives a server for hashing and ordering. A named line keeps its
// name; an unnamed "host:port" line keeps "host:port", except that port 11211 is dropped
// ("host", for libmemcached compatibility); an unnamed unix socket "/path:weight" becomes
// "/path:" (the name runs one byte past the address, over the ':' before the weight).
std::string server_name(std::string_view preset, std::string_view node) {
  if (!node.empty() && node.front() == '/') {
    // A ':' inside a socket path leaves an extra field: nutcracker refuses the line.
    if (node.find(':') != std::string_view::npos) {
      throw Error(ErrorCode::kParse, "preset " + std::string(preset) + ": unix socket \"" +
                                         std::string(node.substr(0, 256)) +
                                         "\" contains ':' (nutcracker refuses it)");
    }
    return std::string(node) + ':';
  }
  const std::size_t colon = node.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < node.size()) {
    // nc_atoi: decimal digits only.
    std::uint64_t port = 0;
    bool digits = true;
    for (const char c : node.substr(colon + 1)) {
      if (c < '0' || c > '9') {
        digits = false;
        break;
      }
      port = std::min<std::uint64_t>(port * 10 + static_cast<std::uint64_t>(c - '0'), 1u << 20);
    }
    if (digits && port == kDefaultKetamaPort) return std::string(node.substr(0, colon));
  }
  return std::string(node);
}

struct Server {
  std::string name;  // as hashed
  std::uint32_t weight = 0;
  NodeId node = 0;  // position in the caller's list
};

// The servers in nutcracker's own order. conf_validate_server sorts the pool's servers with
// string_compare (shorter name first, then bytewise) to find duplicates, and the pool keeps that
// order: it numbers the modula slots and orders equal ketama points.
std::vector<Server> nutcracker_servers(std::string_view preset, std::span<const Node> nodes) {
  // nutcracker's weights are ratios (ketama shares) or slot counts kept as cumulative sums
  // (modula, below): any positive int, as its conf.c takes — Debian's example config has 100000.
  validate_nodes(nodes, kNutcrackerMaxWeight);
  std::vector<Server> servers;
  servers.reserve(nodes.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight == 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "preset " + std::string(preset) + ": server \"" + nodes[i].name.substr(0, 256) +
                      "\" has weight 0 (nutcracker refuses a zero weight)");
    }
    total += nodes[i].weight;
    servers.push_back(
        {server_name(preset, nodes[i].name), nodes[i].weight, static_cast<NodeId>(i)});
  }
  // total_weight is a uint32_t in nutcracker; past it the continuum overflows its allocation.
  if (total > std::numeric_limits<std::uint32_t>::max()) {
    throw Error(ErrorCode::kLimitExceeded, "preset " + std::string(preset) + ": total weight " +
                                               std::to_string(total) +
                                               " does not fit nutcracker's 32-bit total");
  }
  std::sort(servers.begin(), servers.end(), [](const Server& a, const Server& b) {
    if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
    return a.name < b.name;
  });
  for (std::size_t i = 1; i < servers.size(); ++i) {
    if (servers[i].name == servers[i - 1].name) {
      const auto& a = nodes[servers[i - 1].node].name;
      const auto& b = nodes[servers[i].node].name;
      throw Error(ErrorCode::kDuplicateNode,
                  "preset " + std::string(preset) + ": servers \"" + a.substr(0, 256) +
                      "\" and \"" + b.substr(0, 256) + "\" both hash as \"" +
                      servers[i].name.substr(0, 256) + "\" (nutcracker refuses duplicate names)");
    }
  }
  return servers;
}

// ---- distribution: ketama (src/hashkit/nc_ketama.c ketama_update / ketama_dispatch) -----------

constexpr std::uint32_t kKetamaPointsPerServer = 160;  // KETAMA_POINTS_PER_SERVER
constexpr std::size_t kKetamaMaxHostLen = 273;         // KETAMA_MAX_HOSTLEN, with the NUL

// Points of one server, in float exactly as ketama_update writes it:
//   floorf((float)(pct * 160 / 4 * (float)n + 0.0000000001)) * 4, pct = (float)w / (float)total.
// The float products round (weights 1:1:1 give 13.333334f * 3), and the 1e-10 nudge is added in
// double and lost again when cast back to float, so a product just below an integer floors down.
std::uint32_t ketama_points(std::uint32_t weight, std::uint32_t total, std::size_t n) noexcept {
  const float pct = static_cast<float>(weight) / static_cast<float>(total);
  float scaled = pct * static_cast<float>(kKetamaPointsPerServer);
  scaled = scaled / 4.0f;
  scaled = scaled * static_cast<float>(n);
  const auto nudged = static_cast<float>(static_cast<double>(scaled) + 0.0000000001);
  return static_cast<std::uint32_t>(std::floor(nudged) * 4.0f);
}

std::unique_ptr<Preset> make_ketama(std::string_view preset, std::span<const Node> nodes,
                                    const KeyHasher& key_hasher) {
  const std::vector<Server> servers = nutcracker_servers(preset, nodes);
  std::uint32_t total = 0;
  for (const Server& s : servers) total += s.weight;

  // Points in the order ketama_update appends them; glibc's qsort (a stable merge sort for
  // these 8-byte entries) keeps that order among equal values, as from_points does, and
  // ketama_dispatch takes the first point >= the key hash, wrapping to the first.
  std::vector<RingTable::Point> points;
  std::string host;
  for (const Server& s : servers) {
    const std::uint32_t count = ketama_points(s.weight, total, servers.size());
    for (std::uint32_t i = 0; i < count / 4; ++i) {
      // snprintf("%.*s-%u") into host[273]: at most 272 bytes are hashed.
      host = s.name;
      host += '-';
      host += std::to_string(i);
      if (host.size() > kKetamaMaxHostLen - 1) host.resize(kKetamaMaxHostLen - 1);
      const hash::Md5Digest d = hash::md5(host);
      for (int x = 0; x < 4; ++x) points.push_back({hash::ketama_point(d, x), s.node});
    }
  }
  if (points.empty()) {
    throw Error(ErrorCode::kEmptyNodeSet,
                "preset " + std::string(preset) + ": no server gets a ketama point");
  }
  return make_ring_preset(
      RingTable::from_points(std::move(points), nodes.size(), RingSuccessor::kGreaterOrEqual),
      key_hasher);
}

// ---- distribution: modula (src/hashkit/nc_modula.c modula_update / modula_dispatch) -----------
// modula_update lays `weight` consecutive slots per server in nutcracker's order and
// modula_dispatch takes slot hash % slots. The slots are kept here as cumulative weights, so a
// large weight costs no memory. Replicas: the next servers in nutcracker's order, wrapping (the
// next slots' owners).
class ModulaPreset final : public Preset {
 public:
  ModulaPreset(std::vector<Server> servers, KeyHasher key_hasher) : key_hasher_(key_hasher) {
    ends_.reserve(servers.size());
    owners_.reserve(servers.size());
    std::uint32_t end = 0;
    for (const Server& s : servers) {
      end += s.weight;
      ends_.push_back(end);
      owners_.push_back(s.node);
    }
    slots_ = end;
  }

  NodeId route(std::string_view key) const noexcept override {
    return owners_[index_of(key_hasher_(key))];
  }

  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const override {
    for_each_chunk(keys, [&](std::span<const std::string_view> chunk, std::size_t at) {
      std::uint64_t h[kBatchChunk];
      key_hasher_.batch(chunk, h);
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        out[at + i] = owners_[index_of(static_cast<std::uint32_t>(h[i]))];
      }
    });
  }

  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    const std::size_t n = std::min(out.size(), owners_.size());
    std::size_t i = index_of(key_hasher_(key));
    for (std::size_t k = 0; k < n; ++k) {
      out[k] = owners_[i];
      if (++i == owners_.size()) i = 0;
    }
    return n;
  }

  std::size_t node_count() const noexcept override { return owners_.size(); }

 private:
  // Position in nutcracker's order of the server owning slot hash % slots.
  std::size_t index_of(std::uint32_t key_hash) const noexcept {
    const std::uint32_t slot = key_hash % slots_;
    return static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), slot) -
                                    ends_.begin());
  }

  KeyHasher key_hasher_;
  std::vector<std::uint32_t> ends_;  // cumulative weight through each server
  std::vector<NodeId> owners_;       // nutcracker's order -> caller's NodeId
  std::uint32_t slots_ = 0;          // total weight
};

}  // namespace

std::unique_ptr<Preset> make_twemproxy(std::string_view name, std::span<const Node> nodes,
                                       const PresetOptions& options) {
  // KETAMA_POINTS_PER_SERVER is a constant: nutcracker has no points setting.
  reject_options(name, options, /*hash=*/true, /*hash_tag=*/true, /*vnodes=*/false);
  const KeyHasher key_hasher = make_key_hasher(name, nodes.size(), options);
  if (name == "twemproxy") return make_ketama(name, nodes, key_hasher);
  if (name == "twemproxy-modula") {
    return std::make_unique<ModulaPreset>(nutcracker_servers(name, nodes), key_hasher);
  }
  throw Error(ErrorCode::kUnsupported,
              "preset " + std::string(name) + " is not a twemproxy preset");
}

}  // namespace chash::presets
