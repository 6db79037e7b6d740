// SPDX-License-Identifier: Apache-2.0
// The memcached C clients: libmemcached 1.1.4 (Debian's libmemcached11, the "awesome" fork) as
// ketama, ketama-spy, libmemcached-consistent and libmemcached-modula — four shorthands for
// behaviour lists, to which PresetOptions::settings adds the user's own behaviours — and the
// original last.fm libketama as libketama. Each is pinned by tests/compat/vectors made by the
// real library (tests/compat/libmemcached/, tests/compat/libketama/); docs/compat/libmemcached.md
// has the details that decide every mapping. Citations are to libmemcached's
// src/libmemcached/hosts.cc (update_continuum), behavior.cc (memcached_behavior_set), hash.cc
// (dispatch_host), src/libhashkit/*.cc (github.com/awesomized/libmemcached, tags 1.1.4 and
// 1.0.18) and libketama's ketama.c.
#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/node.h"
#include "chash/ring.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {
namespace {

// ---- libhashkit's key hashes (MEMCACHED_BEHAVIOR_HASH) ------------------------------------------
// libhashkit reads key bytes through `const char*`, signed on x86-64, so one_at_a_time and the
// FNVs sign-extend bytes >= 0x80 (one_at_a_time.cc, fnv_32.cc, fnv_64.cc); its "fnv1a_64" is
// 32-bit arithmetic with the 64-bit offset and prime cut to 32 bits, and its "crc" keeps bits
// 16..30 of CRC-32 (crc32.cc). md5, murmur, murmur3 and jenkins match chash::hash as pinned in
// tests/hash/ against libhashkit itself.

enum class LmHash : std::uint8_t {
  kDefault,  // one_at_a_time
  kMd5,
  kCrc,
  kFnv1_64,
  kFnv1a_64,
  kFnv1_32,
  kFnv1a_32,
  kMurmur,
  kMurmur3,
  kJenkins,
};

// A key byte as libhashkit sees it: a signed char widened to 32 bits.
inline std::uint32_t signed_byte(char c) noexcept {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<signed char>(c)));
}

std::uint32_t lm_one_at_a_time(std::string_view key) noexcept {
  std::uint32_t value = 0;
  for (char c : key) {
    value += signed_byte(c);
    value += value << 10;
    value ^= value >> 6;
  }
  value += value << 3;
  value ^= value >> 11;
  value += value << 15;
  return value;
}

constexpr std::uint32_t kFnv32Init = 2166136261u;
constexpr std::uint32_t kFnv32Prime = 16777619u;
constexpr std::uint64_t kFnv64Init = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnv64Prime = 0x100000001b3ull;

std::uint32_t lm_fnv1_32(std::string_view key) noexcept {
  std::uint32_t h = kFnv32Init;
  for (char c : key) {
    h *= kFnv32Prime;
    h ^= signed_byte(c);
  }
  return h;
}

std::uint32_t lm_fnv1a_32(std::string_view key) noexcept {
  std::uint32_t h = kFnv32Init;
  for (char c : key) {
    h ^= signed_byte(c);
    h *= kFnv32Prime;
  }
  return h;
}

std::uint32_t lm_fnv1_64(std::string_view key) noexcept {
  std::uint64_t h = kFnv64Init;
  for (char c : key) {
    h *= kFnv64Prime;
    h ^= static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<signed char>(c)));
  }
  return static_cast<std::uint32_t>(h);
}

std::uint32_t lm_fnv1a_64(std::string_view key) noexcept {
  auto h = static_cast<std::uint32_t>(kFnv64Init);
  for (char c : key) {
    h ^= signed_byte(c);
    h *= static_cast<std::uint32_t>(kFnv64Prime);
  }
  return h;
}

std::uint32_t lm_hash(LmHash h, std::string_view key) noexcept {
  const auto len = static_cast<std::uint32_t>(key.size());
  switch (h) {
    case LmHash::kDefault:
      return lm_one_at_a_time(key);
    case LmHash::kMd5:
      return hash::ketama_point(hash::md5(key), 0);
    case LmHash::kCrc:
      return (hash::crc32(key) >> 16) & 0x7fffu;
    case LmHash::kFnv1_64:
      return lm_fnv1_64(key);
    case LmHash::kFnv1a_64:
      return lm_fnv1a_64(key);
    case LmHash::kFnv1_32:
      return lm_fnv1_32(key);
    case LmHash::kFnv1a_32:
      return lm_fnv1a_32(key);
    case LmHash::kMurmur:
      return hash::murmur2_32(key, 0xdeadbeefu * len);
    case LmHash::kMurmur3:
      return hash::murmur3_x86_32(key, 0xdeadbeefu * len);
    case LmHash::kJenkins:
      return hash::jenkins_lookup3(key, 13);
  }
  return 0;
}

struct HashName {
  std::string_view name;
  LmHash hash;
};

// The names of libmemcached's memcached_hash_t values, lower-cased (its config strings spell
// them upper-case: --HASH=MD5). "one_at_a_time" is what MEMCACHED_HASH_DEFAULT computes.
constexpr HashName kHashNames[] = {
    {"default", LmHash::kDefault}, {"one_at_a_time", LmHash::kDefault},
    {"md5", LmHash::kMd5},         {"crc", LmHash::kCrc},
    {"fnv1_64", LmHash::kFnv1_64}, {"fnv1a_64", LmHash::kFnv1a_64},
    {"fnv1_32", LmHash::kFnv1_32}, {"fnv1a_32", LmHash::kFnv1a_32},
    {"murmur", LmHash::kMurmur},   {"murmur3", LmHash::kMurmur3},
    {"jenkins", LmHash::kJenkins},
};

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

// `s` without a leading `prefix` (any case): libmemcached's constants are spelled
// MEMCACHED_HASH_MD5, MEMCACHED_DISTRIBUTION_CONSISTENT, MEMCACHED_BEHAVIOR_HASH; users write
// them with or without the prefix.
std::string_view without_prefix(std::string_view s, std::string_view prefix) noexcept {
  return s.size() > prefix.size() && iequals(s.substr(0, prefix.size()), prefix)
             ? s.substr(prefix.size())
             : s;
}

std::string quoted(std::string_view s) { return "\"" + std::string(s.substr(0, 64)) + "\""; }

// `what` names the setting in messages: "--hash", "hash", "ketama_hash".
LmHash parse_lm_hash(std::string_view preset, std::string_view what, std::string_view name) {
  const std::string_view bare = without_prefix(name, "MEMCACHED_HASH_");
  for (const HashName& h : kHashNames) {
    if (iequals(h.name, bare)) return h.hash;
  }
  if (iequals(bare, "hsieh")) {
    // Debian builds libhashkit without HAVE_HSIEH_HASH: MEMCACHED_BEHAVIOR_HASH and
    // MEMCACHED_BEHAVIOR_KETAMA_HASH refuse it (libhashkit/function.cc _set_function), so there
    // is no peer mapping to match.
    throw Error(ErrorCode::kUnsupported,
                "preset " + std::string(preset) + ": " + std::string(what) +
                    " hsieh is refused by libmemcached 1.1.4 as Debian builds it "
                    "(libhashkit without hsieh)");
  }
  std::string valid;
  for (const HashName& h : kHashNames) {
    if (!valid.empty()) valid += ", ";
    valid += h.name;
  }
  throw Error(ErrorCode::kParse, "preset " + std::string(preset) + ": unknown " +
                                     std::string(what) + " " + quoted(name) + " (valid: " + valid +
                                     "; any case, MEMCACHED_HASH_ prefix optional)");
}

// ---- Server names as libmemcached reads them ----------------------------------------------------

constexpr std::uint32_t kDefaultPort = 11211;  // MEMCACHED_DEFAULT_PORT
constexpr std::size_t kMaxHostBytes = 1024;    // hostnames shorter than MEMCACHED_NI_MAXHOST
// Debian's libmemcached is built with assertions on: update_continuum aborts the process when
// server count * MEMCACHED_POINTS_PER_SERVER exceeds MEMCACHED_CONTINUUM_SIZE (100 * 100).
// libmemcached 1.0.18 has the same assert_msg, but its release tarballs define NDEBUG
// (m4/ax_assert.m4), which compiles it out: setting version=1.0.18 lifts the limit.
constexpr std::size_t kMaxContinuumServers = 100;

struct Server {
  std::string_view host;
  std::uint32_t port = kDefaultPort;
};

// "host", "host:port", "[v6]:port" as memcached_servers_parse splits them (parse.cc): the port
// follows the first ':' (after a "[...]" if there is one) and the host keeps its brackets; no port
// means MEMCACHED_DEFAULT_PORT. A name starting with '/' is a unix socket, whose port is 0
// (memcached_server_add_unix_socket_with_weight, and memcached_server_list_append for parsed
// "/path" names). libmemcached quietly turns a missing or non-numeric port into 11211 and reads
// "host:port:weight"; chash refuses such names rather than guess what was meant.
Server parse_server(std::string_view preset, const Node& node) {
  const std::string_view name = node.name;
  auto fail = [&](std::string_view why) {
    throw Error(ErrorCode::kParse, "preset " + std::string(preset) + ": server \"" +
                                       std::string(name.substr(0, 128)) + "\" " + std::string(why));
  };
  if (name.find('\0') != std::string_view::npos) fail("contains a NUL byte");
  if (name.front() == '/') {
    if (name.size() > kMaxHostBytes) fail("is longer than libmemcached's 1024-byte limit");
    return Server{name, 0};
  }
  const std::size_t open = name.find('[');
  const std::size_t close = open == std::string_view::npos ? open : name.find(']', open + 1);
  const std::size_t colon =
      close != std::string_view::npos ? name.find(':', close + 1) : name.find(':');
  Server s;
  s.host = name.substr(0, colon);
  if (s.host.empty()) fail("has no host");
  if (s.host.size() > kMaxHostBytes) fail("has a host longer than libmemcached's 1024-byte limit");
  if (colon != std::string_view::npos) {
    const std::string_view port = name.substr(colon + 1);
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), s.port);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || s.port == 0 ||
        s.port > 65535) {
      fail("needs a port 1..65535 after the ':' (or no ':' for the default port 11211)");
    }
  }
  return s;
}

// ---- The continuum (hosts.cc update_continuum) --------------------------------------------------

constexpr std::uint32_t kPointsPerServer = 100;        // MEMCACHED_POINTS_PER_SERVER
constexpr std::uint32_t kPointsPerServerKetama = 160;  // MEMCACHED_POINTS_PER_SERVER_KETAMA

enum class Naming : std::uint8_t { kLibmemcached, kSpy };

// Appends the name of point-hash `index` of server `s`: "host-i" when the port is 11211, else
// "host:port-i"; spymemcached's format is "/host:port-i" whatever the port.
void point_name(Naming naming, const Server& s, std::uint32_t index, std::string& out) {
  out.clear();
  if (naming == Naming::kSpy) out += '/';
  out += s.host;
  if (naming == Naming::kSpy || s.port != kDefaultPort) {
    out += ':';
    out += std::to_string(s.port);
  }
  out += '-';
  out += std::to_string(index);
}

// Weighted ketama's points for one server, computed as libmemcached does, in float:
//   pct = (float)weight / (float)total_weight;
//   floor((float)(pct * 160 / 4 * (float)live_servers + 0.0000000001F)) * 4
// Every step rounds to float (x86-64 SSE); the volatile keeps a compiler from fusing the
// multiply and add into one FMA, which would round once instead of twice.
std::uint32_t weighted_points(std::uint32_t weight, std::uint64_t total, std::size_t servers) {
  const float pct = static_cast<float>(weight) / static_cast<float>(total);
  volatile float x = pct * static_cast<float>(kPointsPerServerKetama);
  x = x / 4.0f;
  x = x * static_cast<float>(servers);
  const float sum = x + 0.0000000001f;
  return static_cast<std::uint32_t>(std::floor(sum)) * 4;
}

struct ContinuumSpec {
  Naming naming = Naming::kLibmemcached;
  bool weighted = false;  // ptr->ketama.weighted_
  LmHash hash = LmHash::kDefault;
};

// Points are listed server by server; BasicRing::from_points keeps that order among equal
// positions, which is libmemcached's: 1.1.4's continuum_item_cmp sorts by value, then by server
// index. 1.0.18's compares values only and leaves ties to qsort, which glibc (through 2.36)
// runs as a stable merge sort on arrays this size: the same order, server by server. Otherwise
// 1.0.18's update_continuum computes the same points (read side by side at both tags).
RingTable build_continuum(const ContinuumSpec& spec, std::span<const Server> servers,
                          std::span<const Node> nodes) {
  std::uint64_t total = 0;
  for (const Node& n : nodes) total += n.weight;
  std::vector<RingTable::Point> points;
  points.reserve(servers.size() * kPointsPerServerKetama);
  std::string name;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (spec.weighted) {
      // Weighted: MD5 of each name gives four points, whatever MEMCACHED_BEHAVIOR_HASH is.
      const std::uint32_t digests = weighted_points(nodes[i].weight, total, servers.size()) / 4;
      for (std::uint32_t d = 0; d < digests; ++d) {
        point_name(spec.naming, servers[i], d, name);
        const hash::Md5Digest md5 = hash::md5(name);
        for (int h = 0; h < 4; ++h) points.push_back({hash::ketama_point(md5, h), id});
      }
    } else {
      // Unweighted: 100 names, each hashed once with the key hash (hashkit_digest(&ptr->hashkit)).
      for (std::uint32_t d = 0; d < kPointsPerServer; ++d) {
        point_name(spec.naming, servers[i], d, name);
        points.push_back({lm_hash(spec.hash, name), id});
      }
    }
  }
  // dispatch_host: the first point whose value is >= the key's hash, else the first point.
  return RingTable::from_points(std::move(points), servers.size(), RingSuccessor::kGreaterOrEqual);
}

// ---- Behaviours (behavior.cc memcached_behavior_set) -------------------------------------------
// The part of a memcached_st that decides placement, and how each behaviour changes it. The
// behaviours interact — KETAMA_WEIGHTED sets the distribution and the key hash, a distribution
// can clear the weighting — so a client is modelled as its behaviours applied one by one, in the
// order given, all before the servers are added (then server_add's own rule, see below).

enum class Distribution : std::uint8_t {  // memcached_server_distribution_t
  kModula,                                // memcached_create's default
  kConsistent,
  kConsistentKetama,
  kConsistentKetamaSpy,
  kConsistentWeighted,
};

struct DistributionName {
  std::string_view name;
  Distribution value;
};

constexpr DistributionName kDistributionNames[] = {
    {"modula", Distribution::kModula},
    {"consistent", Distribution::kConsistent},
    {"consistent_ketama", Distribution::kConsistentKetama},
    {"consistent_ketama_spy", Distribution::kConsistentKetamaSpy},
    {"consistent_weighted", Distribution::kConsistentWeighted},
};

// The libmemcached release followed (setting version=). 1.0.18 as released (NDEBUG) builds the
// same continuum as 1.1.4 for any number of servers; it differs in two other places: its
// MEMCACHED_HASH_MURMUR3 is MurmurHash2 (libhashkit/function.cc sets hashkit_murmur for both), and
// its memcached_servers_parse cannot read "[v6]:port".
enum class Version : std::uint8_t {
  k1_1_4,  // Debian's 1.1.4: more than 100 servers abort (see kMaxContinuumServers)
  k1_0_18,
};

struct Behaviours {
  Distribution distribution = Distribution::kModula;
  bool weighted = false;                  // ptr->ketama.weighted_
  LmHash hash = LmHash::kDefault;         // hashkit base_hash: keys, and unweighted points
  LmHash ketama_hash = LmHash::kDefault;  // hashkit distribution_hash: stored, never read
  Version version = Version::k1_1_4;

  // memcached_is_consistent_distribution: every distribution chash models but modula.
  bool consistent() const noexcept { return distribution != Distribution::kModula; }

  // memcached_behavior_set_distribution: CONSISTENT and CONSISTENT_KETAMA clear the weighting,
  // CONSISTENT_WEIGHTED sets it, MODULA and CONSISTENT_KETAMA_SPY keep it as it was.
  void set_distribution(Distribution d) noexcept {
    if (d == Distribution::kConsistent || d == Distribution::kConsistentKetama) weighted = false;
    if (d == Distribution::kConsistentWeighted) weighted = true;
    distribution = d;
  }
  // MEMCACHED_BEHAVIOR_KETAMA: on is CONSISTENT_KETAMA, off is MODULA.
  void set_ketama(bool on) noexcept {
    set_distribution(on ? Distribution::kConsistentKetama : Distribution::kModula);
  }
  // MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED: on sets both hashes to MD5 and CONSISTENT_WEIGHTED; off
  // is MEMCACHED_BEHAVIOR_KETAMA on (CONSISTENT_KETAMA, unweighted), whatever came before.
  void set_ketama_weighted(bool on) noexcept {
    if (on) {
      hash = LmHash::kMd5;
      ketama_hash = LmHash::kMd5;
      set_distribution(Distribution::kConsistentWeighted);
    } else {
      set_ketama(true);
    }
  }
};

constexpr std::string_view kSettingNames =
    "distribution, ketama, ketama_weighted, ketama_hash, hash, version";

bool parse_bool(std::string_view preset, std::string_view setting, std::string_view value) {
  for (std::string_view t : {"true", "on", "yes", "1"}) {
    if (iequals(value, t)) return true;
  }
  for (std::string_view f : {"false", "off", "no", "0"}) {
    if (iequals(value, f)) return false;
  }
  throw Error(ErrorCode::kParse,
              "preset " + std::string(preset) + ": " + std::string(setting) + "=" + quoted(value) +
                  " is not a boolean (valid: true, false, on, off, yes, no, 1, 0)");
}

Distribution parse_distribution(std::string_view preset, std::string_view value) {
  const std::string_view bare =
      without_prefix(without_prefix(value, "MEMCACHED_"), "DISTRIBUTION_");
  for (const DistributionName& d : kDistributionNames) {
    if (iequals(d.name, bare)) return d.value;
  }
  if (iequals(bare, "random") || iequals(bare, "virtual_bucket")) {
    // RANDOM picks random() % servers for every key (hash.cc dispatch_host); VIRTUAL_BUCKET
    // reads a bucket table given with memcached_bucket_set: neither is a function of the key.
    throw Error(ErrorCode::kUnsupported,
                "preset " + std::string(preset) + ": distribution " + std::string(bare) +
                    " does not map a key to one server chash can compute (RANDOM is random per "
                    "request, VIRTUAL_BUCKET needs libmemcached's bucket table)");
  }
  std::string valid;
  for (const DistributionName& d : kDistributionNames) {
    if (!valid.empty()) valid += ", ";
    for (char c : d.name) valid += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  }
  throw Error(ErrorCode::kParse, "preset " + std::string(preset) + ": unknown distribution " +
                                     quoted(value) + " (valid: " + valid +
                                     "; any case, MEMCACHED_DISTRIBUTION_ prefix optional)");
}

// One memcached_behavior_set call (or chash's own `version`), in libmemcached's spelling.
void apply_setting(std::string_view preset, std::string_view name, std::string_view value,
                   Behaviours& b) {
  const std::string_view setting = without_prefix(name, "MEMCACHED_BEHAVIOR_");
  if (iequals(setting, "distribution")) {
    b.set_distribution(parse_distribution(preset, value));
  } else if (iequals(setting, "ketama")) {
    b.set_ketama(parse_bool(preset, "ketama", value));
  } else if (iequals(setting, "ketama_weighted")) {
    b.set_ketama_weighted(parse_bool(preset, "ketama_weighted", value));
  } else if (iequals(setting, "ketama_hash")) {
    // Validated as libmemcached validates it (hsieh is refused), then never read: neither 1.1.4
    // nor 1.0.18 hashes anything with the distribution hash (update_continuum uses MD5 or the
    // key hash); the generator checks every vector with each KETAMA_HASH.
    b.ketama_hash = parse_lm_hash(preset, "ketama_hash", value);
  } else if (iequals(setting, "hash")) {
    b.hash = parse_lm_hash(preset, "hash", value);
  } else if (iequals(setting, "version")) {
    if (value == "1.1.4") {
      b.version = Version::k1_1_4;
    } else if (value == "1.0.18") {
      b.version = Version::k1_0_18;
    } else {
      throw Error(ErrorCode::kParse, "preset " + std::string(preset) +
                                         ": version=" + quoted(value) +
                                         " is not a libmemcached release chash follows "
                                         "(valid: 1.1.4, the default; 1.0.18)");
    }
  } else {
    throw Error(ErrorCode::kParse, "preset " + std::string(preset) + ": unknown setting " +
                                       quoted(name) + " (valid: " + std::string(kSettingNames) +
                                       "; libmemcached's behaviour names, any case, "
                                       "MEMCACHED_BEHAVIOR_ prefix optional)");
  }
}

// The behaviour list each preset name stands for, as libmemcached_peer.c applies it.
Behaviours preset_behaviours(std::string_view name) {
  Behaviours b;
  if (name == "ketama") {
    b.set_ketama_weighted(true);
  } else if (name == "ketama-spy") {
    b.set_ketama_weighted(true);
    b.set_distribution(Distribution::kConsistentKetamaSpy);
  } else if (name == "libmemcached-consistent") {
    b.set_distribution(Distribution::kConsistent);
  } else if (name != "libmemcached-modula") {
    throw Error(ErrorCode::kInvalidArgument, "no libmemcached preset named " + std::string(name));
  }
  return b;
}

// The client before its servers are added: the preset's own behaviours, then the settings in
// the order given, then --hash (MEMCACHED_BEHAVIOR_HASH).
Behaviours configure_client(std::string_view preset, const PresetOptions& options) {
  Behaviours b = preset_behaviours(preset);
  bool hash_setting = false;
  for (const auto& [key, value] : options.settings) {
    apply_setting(preset, key, value, b);
    hash_setting = hash_setting || iequals(without_prefix(key, "MEMCACHED_BEHAVIOR_"), "hash");
  }
  if (options.hash) {
    if (hash_setting) {
      throw Error(ErrorCode::kInvalidArgument,
                  "preset " + std::string(preset) +
                      ": the hash is given twice (--hash and the setting hash=); give it once");
    }
    b.hash = parse_lm_hash(preset, "--hash", *options.hash);
  }
  return b;
}

// What libmemcached 1.0.18 does differently outside the continuum (see Version).
void follow_1_0_18(std::string_view preset, std::span<const Node> nodes, Behaviours& b) {
  for (const Node& n : nodes) {
    // 1.0.18's memcached_servers_parse (parse.cc) splits a server string at its first ':', so
    // "[::1]:11211" becomes host "[": no mapping worth matching. 1.1.4 reads the brackets.
    if (n.name.front() == '[') {
      throw Error(ErrorCode::kUnsupported,
                  "preset " + std::string(preset) + ": server " + quoted(n.name) +
                      ": libmemcached 1.0.18 cannot read a bracketed IPv6 server string (its "
                      "memcached_servers_parse splits at the first ':'); version=1.0.18 "
                      "refuses it");
    }
  }
  // 1.0.18's _set_function (libhashkit/function.cc) puts MURMUR3 and MURMUR in one case:
  // hashkit_murmur, MurmurHash2 (its vectors with MURMUR3 are murmur's).
  if (b.hash == LmHash::kMurmur3) b.hash = LmHash::kMurmur;
}

// ---- The preset ---------------------------------------------------------------------------------

class LibmemcachedPreset final : public Preset {
 public:
  LibmemcachedPreset(std::optional<RingTable> ring, LmHash hash, std::size_t servers)
      : ring_(std::move(ring)), hash_(hash), servers_(static_cast<std::uint32_t>(servers)) {}

  NodeId route(std::string_view key) const noexcept override {
    // _generate_hash_wrapper: with one server the key is not even hashed.
    if (servers_ == 1) return 0;
    const std::uint32_t h = lm_hash(hash_, key);
    return ring_ ? ring_->pick(h) : h % servers_;  // MEMCACHED_DISTRIBUTION_MODULA: hash % count
  }

  // libmemcached's own replicas (MEMCACHED_BEHAVIOR_NUMBER_OF_REPLICAS): the owner, then the next
  // servers by index, wrapping (storage.cc memcached_send_binary writes them so, get.cc reads them
  // in that order) — not the next servers on the continuum.
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    if (out.empty()) return 0;
    const NodeId owner = route(key);
    const std::size_t n = std::min<std::size_t>(out.size(), servers_);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<NodeId>((owner + i) % servers_);
    return n;
  }

  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const override {
    if (servers_ == 1) {
      std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keys.size()), NodeId{0});
      return;
    }
    for_each_chunk(keys, [&](std::span<const std::string_view> chunk, std::size_t at) {
      std::uint64_t h[kBatchChunk];
      if (hash_ == LmHash::kMd5) {
        md5_positions(chunk, h, ketama_cut);
      } else {
        for (std::size_t i = 0; i < chunk.size(); ++i) h[i] = lm_hash(hash_, chunk[i]);
      }
      const std::span<NodeId> o = out.subspan(at, chunk.size());
      if (ring_) {
        ring_->pick_batch(std::span<const std::uint64_t>(h, chunk.size()), o);
      } else {
        for (std::size_t i = 0; i < chunk.size(); ++i) o[i] = static_cast<NodeId>(h[i] % servers_);
      }
    });
  }

  std::size_t node_count() const noexcept override { return servers_; }
  const RingTable* ring32() const noexcept override { return ring_ ? &*ring_ : nullptr; }

 private:
  std::optional<RingTable> ring_;  // empty for modula
  LmHash hash_;
  std::uint32_t servers_;
};

// ---- libketama (ketama.c) -----------------------------------------------------------------------

// read_server_line copies the address into char addr[22] (and mcs.ip[22]): 21 bytes and a NUL.
constexpr std::size_t kLibketamaMaxAddr = 21;
// The continuum lives in one 512 KiB shared memory segment (MC_SHMSIZE) of 28-byte points after a
// 36-byte header: 18,723 points. Past 117 servers (160 points each) ketama_create_continuum
// writes beyond the segment and the process crashes.
constexpr std::size_t kLibketamaMaxServers = 117;

// ketama_create_continuum: pct = (float)memory / (float)memtotal, then
//   floorf(pct * 40.0 * (float)numservers)
// multiplies in double (40.0 is a double), and floorf rounds that double to float first.
std::uint32_t libketama_digests(std::uint32_t memory, std::uint64_t total, std::size_t servers) {
  const float pct = static_cast<float>(memory) / static_cast<float>(total);
  const double x =
      static_cast<double>(pct) * 40.0 * static_cast<double>(static_cast<float>(servers));
  return static_cast<std::uint32_t>(std::floor(static_cast<float>(x)));
}

// ketama_hashi of the key as a C string: MD5 of the bytes before the first NUL, first four
// digest bytes little-endian.
struct LibketamaKey {
  static std::string_view c_string(std::string_view key) noexcept {
    return key.substr(0, key.find('\0'));
  }
  std::uint32_t operator()(std::string_view key) const noexcept {
    return hash::ketama_point(hash::md5(c_string(key)), 0);
  }
  void batch(std::span<const std::string_view> keys, std::uint64_t* out) const noexcept {
    assert(keys.size() <= kBatchChunk);
    std::string_view cut[kBatchChunk];
    for (std::size_t i = 0; i < keys.size(); ++i) cut[i] = c_string(keys[i]);
    md5_positions(std::span<const std::string_view>(cut, keys.size()), out, ketama_cut);
  }
};

// spymemcached's KETAMA_HASH of a key: MD5 of all its bytes (KeyUtil.getKeyBytes: the key's UTF-8),
// first four digest bytes little-endian — libketama's hash without the cut at a NUL.
struct SpymemcachedKey {
  std::uint32_t operator()(std::string_view key) const noexcept {
    return hash::ketama_point(hash::md5(key), 0);
  }
  void batch(std::span<const std::string_view> keys, std::uint64_t* out) const noexcept {
    md5_positions(keys, out, ketama_cut);
  }
};

void check_nodes(std::string_view preset, std::span<const Node> nodes, std::string_view zero_why) {
  validate_nodes(nodes);
  for (const Node& n : nodes) {
    if (n.weight == 0) {
      throw Error(ErrorCode::kInvalidArgument, "preset " + std::string(preset) + ": server \"" +
                                                   n.name.substr(0, 128) + "\" has weight 0; " +
                                                   std::string(zero_why));
    }
  }
}

}  // namespace

std::unique_ptr<Preset> make_libmemcached(std::string_view name, std::span<const Node> nodes,
                                          const PresetOptions& options) {
  reject_options(name, options, /*hash=*/true, /*hash_tag=*/false, /*vnodes=*/false);
  check_nodes(name, nodes,
              "libmemcached reads weight 0 as 1 (it cannot drain a server): remove the server or "
              "give it weight 1");
  std::vector<Server> servers;
  servers.reserve(nodes.size());
  for (const Node& n : nodes) servers.push_back(parse_server(name, n));

  Behaviours b = configure_client(name, options);
  if (b.version == Version::k1_0_18) follow_1_0_18(name, nodes, b);
  // server_add: adding a server of weight > 1 to a consistent client turns the weighting on
  // (hosts.cc), so the whole continuum becomes weighted MD5 points while keys keep their hash.
  if (b.consistent() &&
      std::any_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.weight > 1; })) {
    b.weighted = true;
  }

  ContinuumSpec spec;
  spec.weighted = b.weighted;
  spec.hash = b.hash;
  spec.naming =
      b.distribution == Distribution::kConsistentKetamaSpy ? Naming::kSpy : Naming::kLibmemcached;
  std::optional<RingTable> ring;
  if (b.consistent()) {
    if (servers.size() > kMaxContinuumServers && b.version != Version::k1_0_18) {
      throw Error(ErrorCode::kLimitExceeded,
                  "preset " + std::string(name) + ": " + std::to_string(servers.size()) +
                      " servers; libmemcached 1.1.4 (Debian) aborts on more than 100 in a "
                      "consistent distribution. The setting version=1.0.18 follows libmemcached "
                      "1.0.18 as released, which builds the same continuum for any number");
    }
    ring = build_continuum(spec, servers, nodes);
  }
  return std::make_unique<LibmemcachedPreset>(std::move(ring), spec.hash, servers.size());
}

std::unique_ptr<Preset> make_libketama(std::string_view name, std::span<const Node> nodes,
                                       const PresetOptions& options) {
  reject_options(name, options, /*hash=*/false, /*hash_tag=*/false, /*vnodes=*/false);
  check_nodes(name, nodes, "libketama refuses a server line with memory 0");
  if (nodes.size() > kLibketamaMaxServers) {
    throw Error(ErrorCode::kLimitExceeded,
                "preset libketama: " + std::to_string(nodes.size()) +
                    " servers; libketama's 512 KiB continuum segment holds at most 117");
  }
  std::uint64_t total = 0;
  for (const Node& n : nodes) {
    // The server file is "addr<TAB>memory" lines split by strtok on tab and space; '#' starts a
    // comment line.
    if (n.name.size() > kLibketamaMaxAddr || n.name.front() == '#' ||
        n.name.find_first_of(std::string_view(" \t\r\n\0", 5)) != std::string::npos) {
      throw Error(ErrorCode::kParse,
                  "preset libketama: server \"" + n.name.substr(0, 128) +
                      "\" must be at most 21 bytes, not start with '#', and have no whitespace");
    }
    total += n.weight;
  }
  std::vector<RingTable::Point> points;
  points.reserve(nodes.size() * 160);
  std::string point;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::uint32_t digests = libketama_digests(nodes[i].weight, total, nodes.size());
    for (std::uint32_t k = 0; k < digests; ++k) {
      point = nodes[i].name;  // sprintf(ss, "%s-%d", addr, k)
      point += '-';
      point += std::to_string(k);
      const hash::Md5Digest md5 = hash::md5(point);
      for (int h = 0; h < 4; ++h) {
        points.push_back({hash::ketama_point(md5, h), static_cast<NodeId>(i)});
      }
    }
  }
  // ketama_get_server's bisection returns the first point >= the key's hash, wrapping to the
  // first. Equal points keep file order: glibc's qsort (2.36) is a stable merge sort here.
  return make_ring_preset(
      RingTable::from_points(std::move(points), nodes.size(), RingSuccessor::kGreaterOrEqual),
      LibketamaKey{});
}

// ---- spymemcached (net.spy.memcached.KetamaNodeLocator) -------------------------------------------

// spymemcached 2.12's KetamaNodeLocator as KetamaConnectionFactory builds it: KETAMA_HASH, the
// SPYMEMCACHED key format, no weights map. setKetamaNodes gives every server numReps / 4 = 40 MD5s
// of "<address>-<k>", k < 40, four points from each (ketamaNodePositionsAtIteration: digest bytes
// 4h..4h+3, little-endian), where the address is String.valueOf(the InetSocketAddress) without
// its leading '/' ("10.0.0.1:11211", "host/10.0.0.1:11211"): that string is the node's name here.
// Unlike libketama (the same points from floorf(pct * 40 * n) digests, 39 at 61 servers) the count
// is always 40, there is no server limit, and the points go into a TreeMap<Long, MemcachedNode>
// server by server, so of two servers on one point the later keeps it. getPrimary takes the first
// point >= the key's hash, wrapping to the first.
std::unique_ptr<Preset> make_spymemcached(std::string_view name, std::span<const Node> nodes,
                                          const PresetOptions& options) {
  reject_options(name, options, /*hash=*/false, /*hash_tag=*/false, /*vnodes=*/false);
  validate_nodes(nodes);
  for (const Node& n : nodes) {
    if (n.weight != 1) {
      throw Error(ErrorCode::kUnsupported,
                  "preset spymemcached: server \"" + n.name.substr(0, 128) + "\" has weight " +
                      std::to_string(n.weight) +
                      "; KetamaNodeLocator without a weights map gives every server 160 points: "
                      "give every server weight 1");
    }
  }
  constexpr std::uint32_t kDigests = 40;  // DefaultKetamaNodeLocatorConfiguration: 160 / 4
  std::vector<RingTable::Point> points;
  points.reserve(nodes.size() * kDigests * 4);
  std::string point;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::uint32_t k = 0; k < kDigests; ++k) {
      point = nodes[i].name;  // KetamaNodeKeyFormatter: address + "-" + repetition
      point += '-';
      point += std::to_string(k);
      const hash::Md5Digest md5 = hash::md5(point);
      for (int h = 0; h < 4; ++h) {
        points.push_back({hash::ketama_point(md5, h), static_cast<NodeId>(i)});
      }
    }
  }
  // TreeMap.put replaces: of equal positions the last written (the later server) stays alone.
  std::stable_sort(points.begin(), points.end(),
                   [](const RingTable::Point& a, const RingTable::Point& b) {
                     return a.position < b.position;
                   });
  std::vector<RingTable::Point> kept;
  kept.reserve(points.size());
  for (const RingTable::Point& p : points) {
    if (!kept.empty() && kept.back().position == p.position) {
      kept.back() = p;
    } else {
      kept.push_back(p);
    }
  }
  return make_ring_preset(
      RingTable::from_points(std::move(kept), nodes.size(), RingSuccessor::kGreaterOrEqual),
      SpymemcachedKey{});
}

}  // namespace chash::presets

