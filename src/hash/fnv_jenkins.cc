// SPDX-License-Identifier: Apache-2.0
// Byte-oriented classic hashes: FNV-1/FNV-1a (Fowler, Noll, Vo), Bob Jenkins' one-at-a-time and
// lookup3 hashlittle(), Paul Hsieh's SuperFastHash.
//
// Bytes are unsigned everywhere except in one documented spot of hsieh(). libmemcached and
// twemproxy read keys through `const char*`, which is signed on x86, so their fnv1_32, fnv1a_32,
// fnv1_64 and one_at_a_time differ from the published algorithms for bytes >= 0x80 (and their
// "fnv1a_64" is 32-bit arithmetic with truncated constants, not FNV-1a 64). Ours follow the
// published algorithms; tests/hash/ shows where the peers agree and where they do not.
#include <bit>
#include <cstddef>
#include <cstdint>

#include "chash/hash.h"

namespace chash::hash {
namespace {

inline const unsigned char* bytes_of(std::string_view s) noexcept {
  return reinterpret_cast<const unsigned char*>(s.data());
}

inline std::uint32_t load16le(const unsigned char* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8;
}

}  // namespace

// ---- FNV --------------------------------------------------------------------------------------
// Offset bases and primes from the FNV reference (isthe.com/chongo/tech/comp/fnv). Check values:
// FNV-1a 32 "a" -> e40c292c, "foobar" -> bf9cf968; FNV-1a 64 "foobar" -> 85944171f73967e8.

namespace {
constexpr std::uint32_t kFnv32Offset = 0x811c9dc5u;
constexpr std::uint32_t kFnv32Prime = 0x01000193u;
constexpr std::uint64_t kFnv64Offset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnv64Prime = 0x00000100000001b3ull;
}  // namespace

std::uint32_t fnv1_32(std::string_view data) noexcept {
  std::uint32_t h = kFnv32Offset;
  for (const unsigned char* p = bytes_of(data); p != bytes_of(data) + data.size(); ++p) {
    h *= kFnv32Prime;
    h ^= *p;
  }
  return h;
}

std::uint32_t fnv1a_32(std::string_view data) noexcept {
  std::uint32_t h = kFnv32Offset;
  for (const unsigned char* p = bytes_of(data); p != bytes_of(data) + data.size(); ++p) {
    h ^= *p;
    h *= kFnv32Prime;
  }
  return h;
}

std::uint64_t fnv1_64(std::string_view data) noexcept {
  std::uint64_t h = kFnv64Offset;
  for (const unsigned char* p = bytes_of(data); p != bytes_of(data) + data.size(); ++p) {
    h *= kFnv64Prime;
    h ^= *p;
  }
  return h;
}

std::uint64_t fnv1a_64(std::string_view data) noexcept {
  std::uint64_t h = kFnv64Offset;
  for (const unsigned char* p = bytes_of(data); p != bytes_of(data) + data.size(); ++p) {
    h ^= *p;
    h *= kFnv64Prime;
  }
  return h;
}

// ---- One-at-a-time ----------------------------------------------------------------------------
// Bob Jenkins, "A hash function for hash table lookup" (burtleburtle.net/bob/hash/doobs.html).

std::uint32_t one_at_a_time(std::string_view data) noexcept {
  std::uint32_t h = 0;
  for (const unsigned char* p = bytes_of(data); p != bytes_of(data) + data.size(); ++p) {
    h += *p;
    h += h << 10;
    h ^= h >> 6;
  }
  h += h << 3;
  h ^= h >> 11;
  h += h << 15;
  return h;
}

// ---- lookup3 hashlittle() ---------------------------------------------------------------------
// Bob Jenkins, lookup3.c (2006, public domain). Its self-test (driver5) prints
// hashlittle("", 0) = deadbeef and hashlittle("Four score and seven years ago", 1) = cd628161.
// Words are assembled little-endian from bytes, which is what hashlittle computes on any host.

namespace {

inline void lookup3_mix(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) noexcept {
  // clang-format off
  a -= c;  a ^= std::rotl(c, 4);   c += b;
  b -= a;  b ^= std::rotl(a, 6);   a += c;
  c -= b;  c ^= std::rotl(b, 8);   b += a;
  a -= c;  a ^= std::rotl(c, 16);  c += b;
  b -= a;  b ^= std::rotl(a, 19);  a += c;
  c -= b;  c ^= std::rotl(b, 4);   b += a;
  // clang-format on
}

inline void lookup3_final(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) noexcept {
  // clang-format off
  c ^= b;  c -= std::rotl(b, 14);
  a ^= c;  a -= std::rotl(c, 11);
  b ^= a;  b -= std::rotl(a, 25);
  c ^= b;  c -= std::rotl(b, 16);
  a ^= c;  a -= std::rotl(c, 4);
  b ^= a;  b -= std::rotl(a, 14);
  c ^= b;  c -= std::rotl(b, 24);
  // clang-format on
}

// Little-endian word from up to four bytes (missing high bytes are zero, like hashlittle's
// masked tail reads).
inline std::uint32_t word_le(const unsigned char* p, std::size_t n) noexcept {
  std::uint32_t w = 0;
  for (std::size_t i = n; i > 0; --i) w = (w << 8) | p[i - 1];
  return w;
}

}  // namespace

std::uint32_t jenkins_lookup3(std::string_view data, std::uint32_t initval) noexcept {
  const unsigned char* k = bytes_of(data);
  std::size_t length = data.size();
  std::uint32_t a = 0xdeadbeefu + static_cast<std::uint32_t>(length) + initval;
  std::uint32_t b = a;
  std::uint32_t c = a;

  // All but the last block: the last (1..12 bytes) goes through final(), never through mix().
  while (length > 12) {
    a += word_le(k, 4);
    b += word_le(k + 4, 4);
    c += word_le(k + 8, 4);
    lookup3_mix(a, b, c);
    length -= 12;
    k += 12;
  }
  // Zero-length strings require no mixing.
  if (length == 0) return c;

  a += word_le(k, length < 4 ? length : 4);
  if (length > 4) b += word_le(k + 4, length < 8 ? length - 4 : 4);
  if (length > 8) c += word_le(k + 8, length - 8);
  lookup3_final(a, b, c);
  return c;
}

// ---- SuperFastHash ----------------------------------------------------------------------------
// Paul Hsieh (azillionmonkeys.com/qed/hash.html), exactly as libmemcached's hsieh.cc and
// twemproxy's nc_hsieh.c compute it on x86-64: 0 for empty input; in the 3-byte tail the third
// byte is read through a signed char (sign-extended before the shift), while the 1-byte tail is
// cast to unsigned char. (Hsieh's original reads both signed, so SMHasher's "superfast"
// verification value differs once a 1-byte tail is >= 0x80; builds where char is unsigned, e.g.
// ARM, differ in the 3-byte tail.)

std::uint32_t hsieh(std::string_view data) noexcept {
  if (data.empty()) return 0;
  const unsigned char* p = bytes_of(data);
  const std::size_t rem = data.size() & 3;
  std::uint32_t hash = 0;

  for (std::size_t blocks = data.size() >> 2; blocks > 0; --blocks) {
    hash += load16le(p);
    const std::uint32_t tmp = (load16le(p + 2) << 11) ^ hash;
    hash = (hash << 16) ^ tmp;
    p += 4;
    hash += hash >> 11;
  }

  switch (rem) {
    case 3: {
      hash += load16le(p);
      hash ^= hash << 16;
      // Signed-char read of the peers: 0x80..0xff become 0xffffff80..0xffffffff.
      const auto third =
          static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int8_t>(p[2])));
      hash ^= third << 18;
      hash += hash >> 11;
      break;
    }
    case 2:
      hash += load16le(p);
      hash ^= hash << 11;
      hash += hash >> 17;
      break;
    case 1:
      hash += p[0];
      hash ^= hash << 10;
      hash += hash >> 1;
      break;
    default:
      break;
  }

  // Force "avalanching" of the final 127 bits.
  hash ^= hash << 3;
  hash += hash >> 5;
  hash ^= hash << 4;
  hash += hash >> 17;
  hash ^= hash << 25;
  hash += hash >> 6;
  return hash;
}

}  // namespace chash::hash
