// SPDX-License-Identifier: Apache-2.0
// Guava's consistentHash steps in AVX2 (jvm.cc has the loop, the SSE2 lanes and the driver that
// calls this only when the CPU has AVX2). This file alone is compiled with -mavx2
// (CMakeLists.txt), so it includes nothing but intrinsics and defines no inline function with
// external linkage: such a function, compiled here, could be the copy the linker keeps for
// baseline callers.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace chash::presets {
namespace {

// Up to `steps` steps of the loop on kRegs registers of four lanes (state, candidate), in place;
// live[i] = 1 while lane i's loop has not ended. One step's chain (add, divide, round, blend) is
// ~30 cycles, so several registers must be in flight to keep the divider busy: 8 measured ~6%
// faster than 4 (some spilling included).
template <int kRegs>
void steps_of(std::uint64_t* state_io, double* candidate_io, std::uint32_t* live_out,
              std::uint32_t buckets, int steps) noexcept {
  constexpr std::uint64_t kMul = 2862933555777941757ULL;
  const __m256i mul_lo = _mm256_set1_epi64x(static_cast<long long>(kMul & 0xffffffffu));
  const __m256i mul_hi = _mm256_set1_epi64x(static_cast<long long>(kMul >> 32));
  const __m256i one64 = _mm256_set1_epi64x(1);
  const __m256i low31 = _mm256_set1_epi64x(0x7fffffff);
  // 2^21 as a double has a unit in the last place of 2^-31: OR-ing a 31-bit integer x into its
  // mantissa gives 2^21 + x * 2^-31 exactly, and subtracting 2^21 leaves x / 2^31.
  const __m256d two_to_21 = _mm256_set1_pd(2097152.0);
  const __m256d limit = _mm256_set1_pd(static_cast<double>(buckets));
  const __m256d zero = _mm256_setzero_pd();
  const __m256d one = _mm256_set1_pd(1.0);
  __m256i state[kRegs];
  __m256d candidate[kRegs];
  __m256d live[kRegs];  // all ones while the lane's loop runs
  for (int r = 0; r < kRegs; ++r) {
    state[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(state_io + 4 * r));
    candidate[r] = _mm256_loadu_pd(candidate_io + 4 * r);
    live[r] = _mm256_castsi256_pd(_mm256_set1_epi32(-1));
  }
  for (int step = 0; step < steps; ++step) {
    __m256d any = zero;
    for (int r = 0; r < kRegs; ++r) {
      // state = kMul * state + 1 (mod 2^64): lo*lo + ((hi*lo + lo*hi) << 32) + 1.
      const __m256i s = state[r];
      const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(s, 32), mul_lo),
                                             _mm256_mul_epu32(s, mul_hi));
      const __m256i next_state = _mm256_add_epi64(
          _mm256_add_epi64(_mm256_mul_epu32(s, mul_lo), _mm256_slli_epi64(cross, 32)), one64);
      state[r] = next_state;  // an ended lane's state is not used again
      // nextDouble() = ((int) (state >>> 33) + 1) / 2^31, where the int addition wraps 2^31 to
      // -2^31 (-1.0, so next < 0 and the loop ends). Here the sum is taken mod 2^31 instead: the
      // wrap gives 0.0, next = +inf, and the loop ends all the same, with one compare (next <
      // buckets) instead of two.
      const __m256i top = _mm256_and_si256(
          _mm256_add_epi64(_mm256_srli_epi64(next_state, 33), one64), low31);
      const __m256d next_double = _mm256_sub_pd(
          _mm256_or_pd(_mm256_castsi256_pd(top), two_to_21), two_to_21);
      const __m256d next = _mm256_div_pd(_mm256_add_pd(candidate[r], one), next_double);
      const __m256d in = _mm256_cmp_pd(next, limit, _CMP_LT_OQ);
      // (int) next, for lanes where it is in [0, buckets): one rounding toward zero (vroundpd)
      // is shorter on the loop's chain than converting to int32 and back.
      const __m256d taken = _mm256_round_pd(next, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      live[r] = _mm256_and_pd(live[r], in);
      candidate[r] = _mm256_blendv_pd(candidate[r], taken, live[r]);
      any = _mm256_or_pd(any, live[r]);
    }
    if (_mm256_movemask_pd(any) == 0) break;
  }
  for (int r = 0; r < kRegs; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(state_io + 4 * r), state[r]);
    _mm256_storeu_pd(candidate_io + 4 * r, candidate[r]);
    const int mask = _mm256_movemask_pd(live[r]);
    for (int j = 0; j < 4; ++j) live_out[4 * r + j] = static_cast<std::uint32_t>(mask >> j) & 1u;
  }
}

}  // namespace

// jvm.cc's guava_steps_avx2: `lanes` (a multiple of 4) lanes, 32 at a time, then 4 at a time.
void guava_steps_avx2(std::uint64_t* state, double* candidate, std::uint32_t* live,
                      std::size_t lanes, std::uint32_t buckets, int steps) noexcept {
  std::size_t i = 0;
  for (; i + 32 <= lanes; i += 32) steps_of<8>(state + i, candidate + i, live + i, buckets, steps);
  for (; i + 16 <= lanes; i += 16) steps_of<4>(state + i, candidate + i, live + i, buckets, steps);
  for (; i < lanes; i += 4) steps_of<1>(state + i, candidate + i, live + i, buckets, steps);
}

namespace {

// x * c mod 2^64 in four 64-bit lanes: AVX2 multiplies 32 x 32 -> 64 only, so
// lo(x)*lo(c) + ((hi(x)*lo(c) + lo(x)*hi(c)) << 32).
inline __m256i mul64(__m256i x, std::uint64_t c) noexcept {
  const __m256i c_lo = _mm256_set1_epi64x(static_cast<long long>(c & 0xffffffffu));
  const __m256i c_hi = _mm256_set1_epi64x(static_cast<long long>(c >> 32));
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), c_lo),
                                         _mm256_mul_epu32(x, c_hi));
  return _mm256_add_epi64(_mm256_mul_epu32(x, c_lo), _mm256_slli_epi64(cross, 32));
}

template <int kBits>
inline __m256i rotl64(__m256i x) noexcept {
  return _mm256_or_si256(_mm256_slli_epi64(x, kBits), _mm256_srli_epi64(x, 64 - kBits));
}

inline __m256i fmix64(__m256i k) noexcept {  // MurmurHash3's fmix64
  k = _mm256_xor_si256(k, _mm256_srli_epi64(k, 33));
  k = mul64(k, 0xff51afd7ed558ccdull);
  k = _mm256_xor_si256(k, _mm256_srli_epi64(k, 33));
  k = mul64(k, 0xc4ceb9fe1a85ec53ull);
  return _mm256_xor_si256(k, _mm256_srli_epi64(k, 33));
}

}  // namespace

// jvm.cc's murmur3_short_h1_avx2: MurmurHash3 x64_128 (seed 0), h1, of keys shorter than 16
// bytes, four at a time. Such a key has no block, only the tail: k1 its bytes 0..7 and k2 its
// bytes 8..14, little-endian, zero where the key ends, and a zero word mixes to zero, so the
// reference's `if (rest > 8)` / `if (rest > 0)` need no lanes of their own.
void murmur3_short_h1_avx2(const std::uint64_t* k1_in, const std::uint64_t* k2_in,
                           const std::uint64_t* len_in, std::uint64_t* out,
                           std::size_t n) noexcept {
  constexpr std::uint64_t c1 = 0x87c37b91114253d5ull;
  constexpr std::uint64_t c2 = 0x4cf5ad432745937full;
  for (std::size_t i = 0; i < n; i += 4) {
    const __m256i len = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(len_in + i));
    __m256i k1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k1_in + i));
    __m256i k2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k2_in + i));
    k1 = mul64(rotl64<31>(mul64(k1, c1)), c2);
    k2 = mul64(rotl64<33>(mul64(k2, c2)), c1);
    __m256i h1 = _mm256_xor_si256(k1, len);
    __m256i h2 = _mm256_xor_si256(k2, len);
    h1 = _mm256_add_epi64(h1, h2);
    h2 = _mm256_add_epi64(h2, h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_add_epi64(h1, h2));
  }
}

}  // namespace chash::presets
#endif
