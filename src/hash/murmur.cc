// SPDX-License-Identifier: Apache-2.0
// MurmurHash2 and MurmurHash3 (Austin Appleby, public domain; reference code and verification
// values in SMHasher: github.com/aappleby/smhasher, MurmurHash2.cpp / MurmurHash3.cpp).
//
// Written here rather than linked: no Debian package ships a C/C++ library that exports all of
// MurmurHash3_x86_32, MurmurHash3_x64_128, MurmurHash64A and MurmurHash2 under a stable ABI
// (libmurmurhash has MurmurHash3 only; spaCy's python3-murmurhash bundles them privately), and
// the functions are a few dozen lines each. Blocks are read little-endian (bytes assembled, or a
// word swapped on big-endian hosts), so the results equal the reference on x86 (where it reads
// words in place) on every host.
//
// Pinned in tests/hash/ to SMHasher's verification values (Murmur3A 0xB0F57EE3, Murmur3F
// 0x6384BA69, Murmur2 0x27864C1E, Murmur2B 0x1F0D3804) and to peers' outputs: Guava's
// murmur3_32_fixed / murmur3_128, libmurmurhash, Appleby's MurmurHash2.cpp as bundled in
// python3-murmurhash, and libhashkit's "murmur".
#include <bit>
#include <cstddef>
#include <cstdint>

#include "chash/hash.h"
#include "murmur3_x64.h"

namespace chash::hash {
namespace {

inline std::uint32_t load32le(const unsigned char* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

inline std::uint64_t load64le(const unsigned char* p) noexcept {
  const std::uint64_t lo = load32le(p);
  const std::uint64_t hi = load32le(p + 4);
  return lo | hi << 32;
}

inline const unsigned char* bytes_of(std::string_view s) noexcept {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// Little-endian value of the last n (< word size) bytes, as the reference's fall-through
// `switch (len & 3)` tails assemble them.
inline std::uint64_t tail_le(const unsigned char* p, std::size_t n) noexcept {
  std::uint64_t k = 0;
  for (std::size_t i = n; i > 0; --i) k = (k << 8) | p[i - 1];
  return k;
}

// MurmurHash3 finalizers.
inline std::uint32_t fmix32(std::uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace

// ---- MurmurHash3 x86_32 -----------------------------------------------------------------------

std::uint32_t murmur3_x86_32(std::string_view data, std::uint32_t seed) noexcept {
  constexpr std::uint32_t c1 = 0xcc9e2d51u;
  constexpr std::uint32_t c2 = 0x1b873593u;
  const unsigned char* p = bytes_of(data);
  const std::size_t len = data.size();
  const std::size_t nblocks = len / 4;

  std::uint32_t h1 = seed;
  for (std::size_t i = 0; i < nblocks; ++i) {
    std::uint32_t k1 = load32le(p + 4 * i);
    k1 *= c1;
    k1 = std::rotl(k1, 15);
    k1 *= c2;
    h1 ^= k1;
    h1 = std::rotl(h1, 13);
    h1 = h1 * 5 + 0xe6546b64u;
  }

  if (const std::size_t rest = len & 3; rest != 0) {
    auto k1 = static_cast<std::uint32_t>(tail_le(p + 4 * nblocks, rest));
    k1 *= c1;
    k1 = std::rotl(k1, 15);
    k1 *= c2;
    h1 ^= k1;
  }

  // The reference takes `int len`; Guava an int length. Both fold in the low 32 bits.
  h1 ^= static_cast<std::uint32_t>(len);
  return fmix32(h1);
}

// ---- MurmurHash3 x64_128 ----------------------------------------------------------------------

Hash128 murmur3_x64_128(std::string_view data, std::uint32_t seed) noexcept {
  return internal::murmur3_x64_128_inline(data, seed);  // murmur3_x64.h: shared with batches
}

std::array<std::uint8_t, 16> Hash128::bytes() const noexcept {
  std::array<std::uint8_t, 16> out{};
  for (int i = 0; i < 8; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(h1 >> (8 * i));
    out[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(h2 >> (8 * i));
  }
  return out;
}

// ---- MurmurHash2 family -----------------------------------------------------------------------

std::uint64_t murmur64a(std::string_view data, std::uint64_t seed) noexcept {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ull;
  constexpr int r = 47;
  const unsigned char* p = bytes_of(data);
  const std::size_t len = data.size();
  const std::size_t nblocks = len / 8;

  std::uint64_t h = seed ^ (static_cast<std::uint64_t>(len) * m);
  for (std::size_t i = 0; i < nblocks; ++i) {
    std::uint64_t k = load64le(p + 8 * i);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (const std::size_t rest = len & 7; rest != 0) {
    h ^= tail_le(p + 8 * nblocks, rest);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

std::uint32_t murmur2_32(std::string_view data, std::uint32_t seed) noexcept {
  constexpr std::uint32_t m = 0x5bd1e995u;
  constexpr int r = 24;
  const unsigned char* p = bytes_of(data);
  const std::size_t len = data.size();
  const std::size_t nblocks = len / 4;

  std::uint32_t h = seed ^ static_cast<std::uint32_t>(len);
  for (std::size_t i = 0; i < nblocks; ++i) {
    std::uint32_t k = load32le(p + 4 * i);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  if (const std::size_t rest = len & 3; rest != 0) {
    h ^= static_cast<std::uint32_t>(tail_le(p + 4 * nblocks, rest));
    h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

}  // namespace chash::hash
