// SPDX-License-Identifier: Apache-2.0
// Multi-buffer MD5: run-time choice of lanes (md5_multi.h), and the SSE2 lanes (baseline x86-64).
#include "md5_multi.h"

#include <algorithm>
#include <cassert>

#include "cpu.h"

#if defined(__x86_64__)
#include <emmintrin.h>

#include "md5_lanes.h"
#define CHASH_MD5_LANES 1
#endif

namespace chash::hash::internal {

#if defined(CHASH_MD5_LANES)
// md5_multi_avx2.cc, compiled with -mavx2: call only when the CPU has AVX2.
void md5_lanes_avx2(const Md5Message* msgs, std::size_t n, unsigned char* out) noexcept;

namespace {

struct Sse2 {
  using V = __m128i;
  static constexpr std::size_t kLanes = 4;
  [[gnu::always_inline]] static V load(const std::uint32_t* p) {
    return _mm_load_si128(reinterpret_cast<const __m128i*>(p));
  }
  [[gnu::always_inline]] static void store(std::uint32_t* p, V v) {
    _mm_store_si128(reinterpret_cast<__m128i*>(p), v);
  }
  [[gnu::always_inline]] static V set1(std::uint32_t x) {
    return _mm_set1_epi32(static_cast<int>(x));
  }
  [[gnu::always_inline]] static V load_splat(const std::uint32_t* p) { return load(p); }
  [[gnu::always_inline]] static V add(V a, V b) { return _mm_add_epi32(a, b); }
  [[gnu::always_inline]] static V and_(V a, V b) { return _mm_and_si128(a, b); }
  [[gnu::always_inline]] static V or_(V a, V b) { return _mm_or_si128(a, b); }
  [[gnu::always_inline]] static V xor_(V a, V b) { return _mm_xor_si128(a, b); }
  // 128 bytes, 64-byte aligned.
  [[gnu::always_inline]] static void clear128(unsigned char* p) {
    for (int i = 0; i < 8; ++i)
      _mm_store_si128(reinterpret_cast<__m128i*>(p) + i, _mm_setzero_si128());
  }
  // x[k * stride + i] = word k of blocks[i], i < 4: 4 x 4 transposes of 32-bit words.
  [[gnu::always_inline]] static void transpose(std::uint32_t* x, std::size_t stride,
                                               const unsigned char* const* blocks) {
    for (int q = 0; q < 4; ++q) {
      const V r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[0]) + q);
      const V r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[1]) + q);
      const V r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[2]) + q);
      const V r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[3]) + q);
      const V t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
      const V t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
      std::uint32_t* row = x + 4 * q * stride;
      store(row, _mm_unpacklo_epi64(t0, t2));
      store(row + stride, _mm_unpackhi_epi64(t0, t2));
      store(row + 2 * stride, _mm_unpacklo_epi64(t1, t3));
      store(row + 3 * stride, _mm_unpackhi_epi64(t1, t3));
    }
  }
  template <int S>
  [[gnu::always_inline]] static V rotl(V a) {
    return _mm_or_si128(_mm_slli_epi32(a, S), _mm_srli_epi32(a, 32 - S));
  }
};

}  // namespace
#endif

bool md5_isa_supported(Md5Isa isa) noexcept {
  switch (isa) {
    case Md5Isa::kScalar:
      return true;
#if defined(CHASH_MD5_LANES)
    case Md5Isa::kSse2:
      return true;
    case Md5Isa::kAvx2:
      return chash::internal::cpu_has_avx2();
#else
    case Md5Isa::kSse2:
    case Md5Isa::kAvx2:
      return false;
#endif
  }
  return false;
}

Md5Isa md5_best_isa() noexcept {
  static const Md5Isa best = md5_isa_supported(Md5Isa::kAvx2)   ? Md5Isa::kAvx2
                             : md5_isa_supported(Md5Isa::kSse2) ? Md5Isa::kSse2
                                                                : Md5Isa::kScalar;
  return best;
}

std::string_view md5_isa_name(Md5Isa isa) noexcept {
  switch (isa) {
    case Md5Isa::kScalar:
      return "scalar";
    case Md5Isa::kSse2:
      return "sse2";
    case Md5Isa::kAvx2:
      return "avx2";
  }
  return "unknown";
}

void md5_many(std::span<const std::string_view> msgs, std::span<Md5Digest> out) noexcept {
  md5_many(md5_best_isa(), msgs, out);
}

void md5_many(Md5Isa isa, std::span<const std::string_view> msgs,
              std::span<Md5Digest> out) noexcept {
  assert(out.size() >= msgs.size());
  assert(md5_isa_supported(isa));
#if defined(CHASH_MD5_LANES)
  // Fewer messages than half a lane set: the idle lanes would cost more than they save.
  if (isa != Md5Isa::kScalar && msgs.size() >= 4) {
    static_assert(sizeof(Md5Digest) == 16);
    // The lanes take plain (pointer, size) pairs (md5_lanes.h says why), a chunk at a time.
    constexpr std::size_t kChunk = 128;
    Md5Message m[kChunk];
    for (std::size_t i = 0; i < msgs.size(); i += kChunk) {
      const std::size_t n = std::min(kChunk, msgs.size() - i);
      for (std::size_t k = 0; k < n; ++k) {
        m[k] = {reinterpret_cast<const unsigned char*>(msgs[i + k].data()), msgs[i + k].size()};
      }
      auto* digests = reinterpret_cast<unsigned char*>(out.data() + i);
      if (isa == Md5Isa::kAvx2) {
        md5_lanes_avx2(m, n, digests);
      } else {
        md5_lanes<Md5Pair<Sse2>>(m, n, digests);
      }
    }
    return;
  }
#endif
  (void)isa;
  for (std::size_t i = 0; i < msgs.size(); ++i) out[i] = md5(msgs[i]);
}

}  // namespace chash::hash::internal
