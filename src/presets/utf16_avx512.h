// SPDX-License-Identifier: Apache-2.0
// Sixteen UTF-16 units to UTF-8 in one go with AVX-512 VBMI2, for the library's Java String
// encoder (java_strings.cc) and the guava preset's lanes, which encode a UTF-16 key straight into
// its row (jvm_avx512.cc). Not installed; call only where internal::cpu_has_avx512_vbmi2().
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), a self-initialised variable
// that -Wmaybe-uninitialized reports in every caller (a known false positive of the header).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define CHASH_AVX512_VBMI2 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi2,bmi2")))

namespace chash::presets {

// String.getBytes(UTF_8) of n <= 16 UTF-16 units that hold no surrogate, into the low bytes of
// `utf8` (zero above them): returns how many bytes, or -1 when a unit is a surrogate (the caller
// encodes those keys unit by unit). After simdutf's scheme: each unit's 1-3 bytes built in a
// 32-bit lane, then kept together by vpcompressb. The per-unit loop spent ~25 ns on each of the
// bindings bench's Cyrillic keys.
[[gnu::always_inline]] CHASH_AVX512_VBMI2 inline long utf16_to_utf8_x16(const std::uint16_t* s,
                                                                        std::size_t n,
                                                                        __m512i& utf8) noexcept {
  const __mmask16 valid = static_cast<__mmask16>(_bzhi_u32(0xFFFFu, static_cast<unsigned>(n)));
  const __m512i c = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, s));
  const __m512i top5 = _mm512_and_si512(c, _mm512_set1_epi32(0xF800));
  if (_mm512_cmpeq_epi32_mask(top5, _mm512_set1_epi32(0xD800)) != 0) return -1;
  const __mmask16 two = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80));
  const __mmask16 three = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x800));
  const __m512i low6 = _mm512_set1_epi32(0x3F);
  const __m512i cont = _mm512_set1_epi32(0x80);
  // byte 0: the unit, or the 2- or 3-byte lead; byte 1: the next 6 bits; byte 2: the last 6
  __m512i lead = _mm512_mask_or_epi32(c, two, _mm512_srli_epi32(c, 6), _mm512_set1_epi32(0xC0));
  lead = _mm512_mask_or_epi32(lead, three, _mm512_srli_epi32(c, 12), _mm512_set1_epi32(0xE0));
  const __m512i mid_bits = _mm512_mask_srli_epi32(c, three, c, 6);
  const __m512i mid = _mm512_or_si512(_mm512_and_si512(mid_bits, low6), cont);
  const __m512i last = _mm512_or_si512(_mm512_and_si512(c, low6), cont);
  // In a 2-byte unit `mid` is the last byte and `last` is not kept; in a 3-byte unit both.
  const __m512i word = _mm512_or_si512(
      lead, _mm512_or_si512(_mm512_slli_epi32(mid, 8), _mm512_slli_epi32(last, 16)));
  // Bytes kept: byte 0 of each valid unit, byte 1 of 2- and 3-byte units, byte 2 of 3-byte.
  __m512i keep = _mm512_maskz_mov_epi32(valid, _mm512_set1_epi32(0x80));
  keep = _mm512_mask_or_epi32(keep, two, keep, _mm512_set1_epi32(0x8000));
  keep = _mm512_mask_or_epi32(keep, three, keep, _mm512_set1_epi32(0x800000));
  const __mmask64 bytes = _mm512_movepi8_mask(keep);
  utf8 = _mm512_maskz_compress_epi8(bytes, word);
  return static_cast<long>(__builtin_popcountll(bytes));
}

}  // namespace chash::presets

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // __x86_64__
