// SPDX-License-Identifier: Apache-2.0
// MurmurHash3 x64_128 (Austin Appleby, SMHasher's MurmurHash3.cpp) as an inline function, for
// hash::murmur3_x64_128 (murmur.cc) and for batches that hash many keys in one loop (the guava
// preset, src/presets/java_text.h), where inlining lets the core overlap several keys' multiply
// chains. Not installed.
//
// The tail (len % 16 bytes) is read with a few overlapping word loads instead of the reference's
// byte-by-byte fall-through switch: on the bindings bench's keys (10-20 bytes) that halved the
// hash, 8.4 -> 4.3 ns per key in a loop (the byte loop's variable trip count was the cost).
// tests/hash/ pins the result to the reference on every length and alignment.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "chash/hash.h"

namespace chash::hash::internal {

inline std::uint64_t murmur3_load64(const unsigned char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline std::uint32_t murmur3_load32(const unsigned char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

// The little-endian value of p[0..n), n <= 7, reading only those bytes: two overlapping 4-byte
// loads for n >= 4 (the overlap holds equal bytes, so OR joins them), else first/middle/last.
inline std::uint64_t murmur3_short(const unsigned char* p, std::size_t n) noexcept {
  if (n >= 4) {
    return std::uint64_t{murmur3_load32(p)} |
           std::uint64_t{murmur3_load32(p + n - 4)} << (8 * (n - 4));
  }
  if (n == 0) return 0;
  return std::uint64_t{p[0]} | std::uint64_t{p[n / 2]} << (8 * (n / 2)) |
         std::uint64_t{p[n - 1]} << (8 * (n - 1));
}

// Always inlined: GCC -O2 kept it out of line in the guava batch loop, where the call was ~40% of
// the time (perf) and no two keys' hashes overlapped.
[[gnu::always_inline]] inline Hash128 murmur3_x64_128_inline(std::string_view data,
                                                             std::uint32_t seed) noexcept {
  constexpr std::uint64_t c1 = 0x87c37b91114253d5ull;
  constexpr std::uint64_t c2 = 0x4cf5ad432745937full;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t len = data.size();
  const std::size_t nblocks = len / 16;
  // SMHasher zero-extends the 32-bit seed. (Guava sign-extends its int seed, so the two agree
  // for seeds below 2^31 only.)
  std::uint64_t h1 = seed;
  std::uint64_t h2 = seed;
  for (std::size_t i = 0; i < nblocks; ++i) {
    std::uint64_t k1 = murmur3_load64(p + 16 * i);
    std::uint64_t k2 = murmur3_load64(p + 16 * i + 8);
    k1 *= c1;
    k1 = std::rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = std::rotl(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729u;
    k2 *= c2;
    k2 = std::rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = std::rotl(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5u;
  }
  // The tail: bytes 0..7 feed k1, bytes 8..14 feed k2. A tail of r < 8 bytes after at least 8
  // earlier bytes is the top of the 8-byte word ending at the key's end.
  const unsigned char* tail = p + 16 * nblocks;
  const std::size_t rest = len & 15;
  std::uint64_t k1 = 0;
  std::uint64_t k2 = 0;
  if (rest >= 8) {
    k1 = murmur3_load64(tail);
    if (rest > 8) k2 = murmur3_load64(p + len - 8) >> (8 * (16 - rest));
  } else if (rest > 0) {
    k1 = len >= 8 ? murmur3_load64(p + len - 8) >> (8 * (8 - rest)) : murmur3_short(tail, rest);
  }
  if (rest > 8) {
    k2 *= c2;
    k2 = std::rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
  }
  if (rest > 0) {
    k1 *= c1;
    k1 = std::rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
  }
  h1 ^= static_cast<std::uint64_t>(len);
  h2 ^= static_cast<std::uint64_t>(len);
  h1 += h2;
  h2 += h1;
  h1 = mix64(h1);  // mix64 is MurmurHash3's fmix64.
  h2 = mix64(h2);
  h1 += h2;
  h2 += h1;
  return Hash128{h1, h2};
}

}  // namespace chash::hash::internal
