// SPDX-License-Identifier: Apache-2.0
// chash — JumpBackHash (Ertl 2024, "JumpBackHash: Say Goodbye to the Modulo Operation to
// Distribute Keys Uniformly to Buckets", arXiv:2403.18682).
//
// Jump's model in O(1) expected time: the same guarantees as jump (each of N buckets gets 1/N of
// the keys; N -> N+1 moves exactly the keys that land on the new last bucket), integer arithmetic
// only, one 64-bit random value for most keys instead of jump's ln N steps with a double division
// each. Chosen over FlipHash (Masson & Lee 2024, arXiv:2402.17549), which hashes the key again
// with a new seed per step, and BinomialHash (Coluzzi et al. 2024, arXiv:2406.19836): it is
// jump's own model on the 64-bit key hash the router already has, with a standard generator, and
// hash4j's production implementation fixes its random stream (SplitMix64 seeded with the hash).
// Promise: this mapping is fixed (tests/placement/jumpback_test.cc pins it); it is not jump's, so
// switching from jump moves keys. Tables as jump: unweighted (0 or 1), only the last node truly
// leaves, a drained node elsewhere keeps its bucket and only its keys are rehashed; next choices:
// rehash, then a linear scan. For removals anywhere: memento-jumpback (chash/memento.h).
#pragma once

#include <bit>
#include <cstdint>

#include "chash/internal/numbered_table.h"
#include "chash/node.h"

namespace chash {

namespace internal {

// SplitMix64 (Steele, Lea & Flood 2014; the constants of Vigna's splitmix64.c): the state walks
// by the golden gamma, each output is the state through this finalizer.
inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ULL;
constexpr std::uint64_t splitmix64_output(std::uint64_t state) noexcept {
  state = (state ^ (state >> 30)) * 0xBF58476D1CE4E5B9ULL;
  state = (state ^ (state >> 27)) * 0x94D049BB133111EBULL;
  return state ^ (state >> 31);
}

// The largest active bucket of range [2^k, 2^(k+1)) given that the range has one: uniform over the
// range, so k random bits. They come from the half of the first random value r that the parity of
// `ranges` (the range bits at and below this one) selects: the two ranges a lookup can reach are
// adjacent set bits, so they read different halves, and each half is independent of the range
// bits, which are the halves' xor (the paper's and hash4j's choice of bits).
constexpr std::uint32_t jumpback_largest_in_range(std::uint64_t r, std::uint32_t ranges,
                                                  std::uint32_t low) noexcept {
  const std::uint32_t half = static_cast<std::uint32_t>(r >> ((std::popcount(ranges) & 1) * 32));
  return low + (half & (low - 1));
}

// The overshoot: the top range's largest active bucket is >= num_buckets. The next active bucket
// below it is uniform over the smaller values; counting every value < low as "none left in this
// range", the first one below num_buckets is uniform over [0, num_buckets), drawn by rejection from
// 2^(k+1) values, two 32-bit halves per random value. "None left" means the next range down, which
// lies wholly below num_buckets: its largest active bucket (or 0) is the answer. The first value
// decides 3/4 of these keys or more; they are resolved with selects rather than branches (a
// mispredicted branch costs more than the work). Each half goes on with probability < 1/2, so the
// draw limit (32 values) is reached with probability < 2^-64; stopping there as "none left" keeps
// the answer monotone in num_buckets and the worst case bounded.
[[gnu::noinline]] constexpr std::uint32_t jumpback_below_top(std::uint64_t state, std::uint64_t r,
                                                             std::uint32_t ranges,
                                                             std::uint32_t low,
                                                             std::uint32_t num_buckets) noexcept {
  const std::uint32_t rest = ranges ^ low;
  const std::uint32_t lower =
      rest == 0 ? 0 : jumpback_largest_in_range(r, rest, 0x80000000u >> std::countl_zero(rest));
  const std::uint32_t range_mask = 2 * low - 1;
  state += kSplitMix64Gamma;
  std::uint64_t r1 = splitmix64_output(state);
  const std::uint32_t b0 = static_cast<std::uint32_t>(r1) & range_mask;
  const std::uint32_t b1 = static_cast<std::uint32_t>(r1 >> 32) & range_mask;
  const std::uint32_t c0 = b0 < low ? lower : b0;
  const std::uint32_t c1 = b1 < low ? lower : b1;
  if (b0 < num_buckets) return c0;
  if (b1 < num_buckets) return c1;
  for (int draw = 1; draw < 32; ++draw) {
    state += kSplitMix64Gamma;
    r1 = splitmix64_output(state);
    const std::uint32_t d0 = static_cast<std::uint32_t>(r1) & range_mask;
    if (d0 < low) break;
    if (d0 < num_buckets) return d0;
    const std::uint32_t d1 = static_cast<std::uint32_t>(r1 >> 32) & range_mask;
    if (d1 < low) break;
    if (d1 < num_buckets) return d1;
  }
  return lower;
}

}  // namespace internal

// The bucket in [0, num_buckets) of a 64-bit key hash; num_buckets >= 1. Jump's model: each
// bucket j > 0 is active for a key with probability 1/(j+1), and the key goes to the largest
// active bucket below num_buckets. JumpBackHash draws the active buckets from the top down, a
// power-of-two range at a time: range [2^k, 2^(k+1)) has an active bucket with probability prod
// j/(j+1) = 1/2 (one random bit), and its largest one is uniform over the range (k random bits);
// only the range holding num_buckets - 1 can overshoot (jumpback_below_top). Random values:
// SplitMix64 seeded with the key hash, as hash4j's jumpBackHash(splitMix64_V1()). Check values: key
// 0 -> 0, 0, 0, 3, 4, 4, 4, 7 for 1..8 buckets; key 1 with 1,000 buckets -> 492.
constexpr std::uint32_t jumpback_hash(std::uint64_t key, std::uint32_t num_buckets) noexcept {
  const std::uint64_t state = key + internal::kSplitMix64Gamma;
  const std::uint64_t r = internal::splitmix64_output(state);
  // Bit k: range [2^k, 2^(k+1)) holds an active bucket. Only the bit_width(num_buckets - 1) ranges
  // below num_buckets count (none for one bucket).
  const std::uint64_t below = (std::uint64_t{1} << std::bit_width(num_buckets - 1)) - 1;
  const auto ranges = static_cast<std::uint32_t>((r ^ (r >> 32)) & below);
  if (ranges == 0) return 0;                                          // no active bucket above 0
  const std::uint32_t low = 0x80000000u >> std::countl_zero(ranges);  // bit_floor, no zero test
  const std::uint32_t b = internal::jumpback_largest_in_range(r, ranges, low);
  if (b < num_buckets) return b;
  return internal::jumpback_below_top(state, r, ranges, low, num_buckets);
}

namespace internal {
struct JumpBackBuckets {
  static constexpr const char* kName = "jumpback";
  static constexpr std::uint32_t bucket(std::uint64_t hash, std::uint32_t n) noexcept {
    return jumpback_hash(hash, n);
  }
};
}  // namespace internal

// The table is jump's (chash/internal/numbered_table.h) over jumpback_hash. No batch form: most
// keys take one random value and a few selects, so keys already overlap in the core's window.
using JumpBackTable = internal::NumberedBucketTable<internal::JumpBackBuckets>;
extern template class internal::NumberedBucketTable<internal::JumpBackBuckets>;

}  // namespace chash
