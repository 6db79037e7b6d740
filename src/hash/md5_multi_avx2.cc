// SPDX-License-Identifier: Apache-2.0
// Multi-buffer MD5, the AVX2 lanes (2 x 8). This file alone is compiled with -mavx2
// (CMakeLists.txt); md5_multi.cc calls it only when the CPU has AVX2. It includes nothing but
// intrinsics and md5_lanes.h, whose code has internal linkage: see md5_lanes.h for why.
#if defined(__x86_64__)
#include <immintrin.h>

#include "md5_lanes.h"

namespace chash::hash::internal {
namespace {

struct Avx2 {
  using V = __m256i;
  static constexpr std::size_t kLanes = 8;
  [[gnu::always_inline]] static V load(const std::uint32_t* p) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  }
  [[gnu::always_inline]] static void store(std::uint32_t* p, V v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
  }
  [[gnu::always_inline]] static V set1(std::uint32_t x) {
    return _mm256_set1_epi32(static_cast<int>(x));
  }
  [[gnu::always_inline]] static V load_splat(const std::uint32_t* p) { return load(p); }
  [[gnu::always_inline]] static V add(V a, V b) { return _mm256_add_epi32(a, b); }
  [[gnu::always_inline]] static V and_(V a, V b) { return _mm256_and_si256(a, b); }
  [[gnu::always_inline]] static V or_(V a, V b) { return _mm256_or_si256(a, b); }
  [[gnu::always_inline]] static V xor_(V a, V b) { return _mm256_xor_si256(a, b); }
  // 128 bytes, 64-byte aligned.
  [[gnu::always_inline]] static void clear128(unsigned char* p) {
    for (int i = 0; i < 4; ++i)
      _mm256_store_si256(reinterpret_cast<__m256i*>(p) + i, _mm256_setzero_si256());
  }
  // x[k * stride + i] = word k of blocks[i], i < 8: two 8 x 8 transposes of 32-bit words.
  [[gnu::always_inline]] static void transpose(std::uint32_t* x, std::size_t stride,
                                               const unsigned char* const* blocks) {
    for (int h = 0; h < 2; ++h) {
      V r[8];
      for (int i = 0; i < 8; ++i) {
        r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[i]) + h);
      }
      V t[8], u[8];
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);      // words 0 1 | 4 5 of lanes i, i+1
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);  // words 2 3 | 6 7
      }
      for (int g = 0; g < 8; g += 4) {
        u[g] = _mm256_unpacklo_epi64(t[g], t[g + 2]);          // word 0 | 4 of lanes g..g+3
        u[g + 1] = _mm256_unpackhi_epi64(t[g], t[g + 2]);      // 1 | 5
        u[g + 2] = _mm256_unpacklo_epi64(t[g + 1], t[g + 3]);  // 2 | 6
        u[g + 3] = _mm256_unpackhi_epi64(t[g + 1], t[g + 3]);  // 3 | 7
      }
      std::uint32_t* row = x + 8 * h * stride;
      for (int k = 0; k < 4; ++k) {
        store(row + k * stride, _mm256_permute2x128_si256(u[k], u[k + 4], 0x20));
        store(row + (k + 4) * stride, _mm256_permute2x128_si256(u[k], u[k + 4], 0x31));
      }
    }
  }
  template <int S>
  [[gnu::always_inline]] static V rotl(V a) {
    return _mm256_or_si256(_mm256_slli_epi32(a, S), _mm256_srli_epi32(a, 32 - S));
  }
};

}  // namespace

void md5_lanes_avx2(const Md5Message* msgs, std::size_t n, unsigned char* out) noexcept {
  md5_lanes<Md5Pair<Avx2>>(msgs, n, out);
}

}  // namespace chash::hash::internal
#endif
