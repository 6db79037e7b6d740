// SPDX-License-Identifier: Apache-2.0
// Guava's consistentHash lanes in AVX2 (jvm.cc has the loop and the SSE2 lanes; it calls this only
// when the CPU has AVX2). This file alone is compiled with -mavx2 (CMakeLists.txt), so it
// includes nothing but intrinsics and defines no inline function with external linkage: such a
// function, compiled here, could be the copy the linker keeps for baseline callers.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

namespace chash::presets {

// out[i] = guava_consistent_hash(inputs[i], buckets) for i < 32: eight registers of four lanes in
// lockstep. One step's chain (add, divide, round, blend) is ~30 cycles, so many registers must be
// in flight to keep the divider busy; 8 measured ~6% faster than 4 (some spilling included) in
// spite of the longer wait for the slowest of 32 lanes. Same steps as the SSE2 lanes in jvm.cc.
void guava_lanes32_avx2(const std::uint64_t* inputs, std::uint32_t buckets,
                        std::uint32_t* out) noexcept {
  constexpr int kRegs = 8;
  constexpr std::uint64_t kMul = 2862933555777941757ULL;
  const __m256i mul_lo = _mm256_set1_epi64x(static_cast<long long>(kMul & 0xffffffffu));
  const __m256i mul_hi = _mm256_set1_epi64x(static_cast<long long>(kMul >> 32));
  const __m256i one64 = _mm256_set1_epi64x(1);
  const __m128i one32 = _mm_set1_epi32(1);
  const __m256i even_dwords = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m256d limit = _mm256_set1_pd(static_cast<double>(buckets));
  const __m256d zero = _mm256_setzero_pd();
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d two_to_minus_31 = _mm256_set1_pd(1.0 / 2147483648.0);  // exact: a power of two
  __m256i state[kRegs];
  __m256d candidate[kRegs];
  __m256d live[kRegs];  // all ones while the lane's loop runs
  for (int r = 0; r < kRegs; ++r) {
    state[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(inputs + 4 * r));
    candidate[r] = zero;
    live[r] = _mm256_castsi256_pd(_mm256_set1_epi32(-1));
  }
  for (;;) {
    __m256d any = zero;
    for (int r = 0; r < kRegs; ++r) {
      // state = kMul * state + 1 (mod 2^64): lo*lo + ((hi*lo + lo*hi) << 32) + 1.
      const __m256i s = state[r];
      const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(s, 32), mul_lo),
                                             _mm256_mul_epu32(s, mul_hi));
      const __m256i next_state = _mm256_add_epi64(
          _mm256_add_epi64(_mm256_mul_epu32(s, mul_lo), _mm256_slli_epi64(cross, 32)), one64);
      state[r] = next_state;
      // ((int) (state >>> 33) + 1) / 2^31: the int addition wraps 2^31 to -2^31.
      const __m128i top = _mm_add_epi32(_mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                                            _mm256_srli_epi64(next_state, 33), even_dwords)),
                                        one32);
      const __m256d next_double = _mm256_mul_pd(_mm256_cvtepi32_pd(top), two_to_minus_31);
      const __m256d next = _mm256_div_pd(_mm256_add_pd(candidate[r], one), next_double);
      const __m256d in = _mm256_and_pd(_mm256_cmp_pd(next, zero, _CMP_GE_OQ),
                                       _mm256_cmp_pd(next, limit, _CMP_LT_OQ));
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
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * r), _mm256_cvttpd_epi32(candidate[r]));
  }
}

}  // namespace chash::presets
#endif
