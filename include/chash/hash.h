// SPDX-License-Identifier: Apache-2.0
// chash — key hash functions, separate from placement.
//
// Placement tables take a hash that is already computed (as Envoy's chooseHost(hash) does), so
// any algorithm can be combined with any key hash. This header offers the functions the
// algorithms and the compatibility presets need, each pinned by tests to published check values
// or to a real peer's output (tests/hash/).
//
// Example:
//   uint64_t h = chash::hash::xxh3_64("user:42");            // the default key hash
//   uint64_t h2 = chash::hash_key(chash::KeyHash::kMd5, "k"); // by runtime choice
//
// All functions are noexcept, allocation-free and take arbitrary bytes (embedded NULs, invalid
// UTF-8).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace chash {
namespace hash {

// ---- xxHash (libxxhash) ---------------------------------------------------------------------
std::uint64_t xxh3_64(std::string_view data, std::uint64_t seed = 0) noexcept;
std::uint64_t xxh64(std::string_view data, std::uint64_t seed = 0) noexcept;

// ---- MurmurHash3 (Appleby; x86_32 and x64_128 as in SMHasher and Guava) ----------------------
// Seeds are used as SMHasher does (x64_128 zero-extends its 32-bit seed). Guava's int seed is
// sign-extended by murmur3_128, so Guava agrees for seeds below 2^31 only.
std::uint32_t murmur3_x86_32(std::string_view data, std::uint32_t seed = 0) noexcept;

// 128-bit result as Guava's HashCode sees it: h1 then h2, each little-endian in asBytes().
struct Hash128 {
  std::uint64_t h1 = 0;
  std::uint64_t h2 = 0;
  // Guava HashCode.asInt(): the first four bytes, little-endian == low 32 bits of h1.
  std::int32_t as_int() const noexcept { return static_cast<std::int32_t>(h1); }
  // Guava HashCode.asLong(): the first eight bytes, little-endian == h1.
  std::int64_t as_long() const noexcept { return static_cast<std::int64_t>(h1); }
  // Guava HashCode.padToLong(): asLong() when the code has >= 64 bits (always here).
  std::int64_t pad_to_long() const noexcept { return as_long(); }
  std::array<std::uint8_t, 16> bytes() const noexcept;
};
Hash128 murmur3_x64_128(std::string_view data, std::uint32_t seed = 0) noexcept;

// ---- MurmurHash2 family ----------------------------------------------------------------------
// MurmurHash64A (Appleby), as used by Jedis sharding (seed 0x1234ABCD there).
std::uint64_t murmur64a(std::string_view data, std::uint64_t seed) noexcept;
// MurmurHash2 32-bit (Appleby). twemproxy/libmemcached "murmur" use seed 0xdeadbeef * length.
std::uint32_t murmur2_32(std::string_view data, std::uint32_t seed) noexcept;

// ---- MD5 (OpenSSL) and the ketama cuts --------------------------------------------------------
using Md5Digest = std::array<std::uint8_t, 16>;
// OpenSSL's MD5() on a stack context (no allocation).
Md5Digest md5(std::string_view data) noexcept;
// The i-th (0..3) 32-bit ring point of a digest as libketama/libmemcached cut it: bytes
// 4i..4i+3 read little-endian: d[4i+3]<<24 | d[4i+2]<<16 | d[4i+1]<<8 | d[4i].
constexpr std::uint32_t ketama_point(const Md5Digest& d, int i) noexcept {
  return static_cast<std::uint32_t>(d[4 * i + 3]) << 24 |
         static_cast<std::uint32_t>(d[4 * i + 2]) << 16 |
         static_cast<std::uint32_t>(d[4 * i + 1]) << 8 | static_cast<std::uint32_t>(d[4 * i]);
}

// ---- CRCs --------------------------------------------------------------------------------------
// CRC-32/IEEE (zlib's crc32): "123456789" -> 0xCBF43926. (libmemcached/twemproxy "crc32" is
// not this but (crc32 >> 16) & 0x7fff.)
std::uint32_t crc32(std::string_view data) noexcept;
// CRC-16/XMODEM as in Redis crc16.c (poly 0x1021, init 0): "123456789" -> 0x31C3.
std::uint16_t crc16_xmodem(std::string_view data) noexcept;
// Redis Cluster's key slot (cluster.c keyHashSlot): CRC-16/XMODEM of the key's {hash tag}, or of
// the whole key, modulo 16384. "123456789" -> 0x31C3 & 0x3FFF = 12739; "{user1000}.following"
// and "{user1000}.followers" share a slot.
std::uint16_t redis_slot(std::string_view key) noexcept;

// ---- FNV (Fowler/Noll/Vo), Jenkins, Hsieh ------------------------------------------------------
// FNV and one-at-a-time are the published algorithms over unsigned bytes. libmemcached and
// twemproxy sign-extend bytes >= 0x80 (they read `const char*` on x86), and their "fnv1a_64" is
// 32-bit arithmetic with truncated constants; they agree with these on 7-bit keys only.
std::uint32_t fnv1_32(std::string_view data) noexcept;
std::uint32_t fnv1a_32(std::string_view data) noexcept;
std::uint64_t fnv1_64(std::string_view data) noexcept;
std::uint64_t fnv1a_64(std::string_view data) noexcept;
// Bob Jenkins' one-at-a-time hash.
std::uint32_t one_at_a_time(std::string_view data) noexcept;
// Bob Jenkins' lookup3 hashlittle() with the given initval (libmemcached/twemproxy "jenkins"
// use initval 13).
std::uint32_t jenkins_lookup3(std::string_view data, std::uint32_t initval) noexcept;
// Paul Hsieh's SuperFastHash as in libmemcached/twemproxy "hsieh" on x86-64 (0 for empty input;
// the third byte of a 3-byte tail is read sign-extended, a 1-byte tail unsigned, as they do).
std::uint32_t hsieh(std::string_view data) noexcept;

// ---- Java ----------------------------------------------------------------------------------------
// java.lang.String.hashCode() of the string Java decodes from these UTF-8 bytes
// (new String(bytes, UTF_8); checked against OpenJDK 17 and 25): each malformed unit becomes
// one U+FFFD, with units delimited as the JDK's decoder does (mostly Unicode's maximal subparts,
// but an encoded surrogate ED A0..BF xx is one unit, and a truncated sequence at the end is one
// unit); code points above U+FFFF count as two UTF-16 units.
std::int32_t java_string_hashcode(std::string_view utf8) noexcept;

// ---- Mixing ----------------------------------------------------------------------------------
// A 64-bit finalizer (murmur3 fmix64): a bijection used to derive independent hashes from one
// key hash (rehash on failover, probes, per-node rendezvous scores).
constexpr std::uint64_t mix64(std::uint64_t k) noexcept {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

}  // namespace hash

// twemproxy's hash_tag (nutcracker req_forward): the bytes between the first `open` and the next
// `close` after it, if there are any; otherwise the whole key. With '{' and '}' this is exactly
// Redis Cluster's rule too (redis_hash_tag): "foo{}{bar}" hashes whole, "{a}{b}" hashes "a".
constexpr std::string_view hash_tag(std::string_view key, char open, char close) noexcept {
  const std::size_t a = key.find(open);
  if (a == std::string_view::npos) return key;
  const std::size_t b = key.find(close, a + 1);
  if (b == std::string_view::npos || b == a + 1) return key;
  return key.substr(a + 1, b - a - 1);
}

// ---- Runtime choice of key hash ------------------------------------------------------------------
// Each function widened to 64 bits as documented per entry; 32-bit functions are zero-extended.
enum class KeyHash : std::uint8_t {
  kXxh3,         // "xxh3": xxh3_64, seed 0 (the default)
  kXxh64,        // "xxh64": xxh64, seed 0
  kMurmur3_32,   // "murmur3_32": murmur3_x86_32, seed 0
  kMurmur3_128,  // "murmur3_128": murmur3_x64_128 seed 0, asLong()
  kMurmur64A,    // "murmur64a": MurmurHash64A, seed 0x1234ABCD (Jedis)
  kMurmur2,      // "murmur2": MurmurHash2 32-bit, seed 0xdeadbeef * len (libmemcached)
  kMd5,          // "md5": ketama_point(md5, 0) (libmemcached/twemproxy "md5")
  kCrc32,        // "crc32": CRC-32/IEEE (full 32 bits, not libmemcached's 15-bit cut)
  kCrc16,        // "crc16": CRC-16/XMODEM
  kFnv1_32,      // "fnv1_32"  (the published FNV; see the note on fnv1_32 above)
  kFnv1a_32,     // "fnv1a_32"
  kFnv1_64,      // "fnv1_64": full 64 bits
  kFnv1a_64,     // "fnv1a_64": full 64 bits
  kOneAtATime,   // "one_at_a_time": unsigned bytes
  kJenkins,      // "jenkins": lookup3 hashlittle, initval 13
  kHsieh,        // "hsieh"
  kJava,         // "java": String.hashCode() as an unsigned 32-bit value
  kRedisSlot,    // "redis_slot": Redis Cluster's slot (0..16383), {hash tag} rules included —
                 // the key hash of the "slots" algorithm and of anything that must agree
                 // with a Redis Cluster
};

inline constexpr KeyHash kAllKeyHashes[] = {
    KeyHash::kXxh3,      KeyHash::kXxh64,      KeyHash::kMurmur3_32, KeyHash::kMurmur3_128,
    KeyHash::kMurmur64A, KeyHash::kMurmur2,    KeyHash::kMd5,        KeyHash::kCrc32,
    KeyHash::kCrc16,     KeyHash::kFnv1_32,    KeyHash::kFnv1a_32,   KeyHash::kFnv1_64,
    KeyHash::kFnv1a_64,  KeyHash::kOneAtATime, KeyHash::kJenkins,    KeyHash::kHsieh,
    KeyHash::kJava,      KeyHash::kRedisSlot};

std::uint64_t hash_key(KeyHash h, std::string_view key) noexcept;
std::string_view key_hash_name(KeyHash h) noexcept;
// Parses a name as printed by key_hash_name; throws Error(kParse) listing the valid names.
KeyHash parse_key_hash(std::string_view name);

}  // namespace chash
