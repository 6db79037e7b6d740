// SPDX-License-Identifier: Apache-2.0
// Java Strings in the JDK's own form, routed as their UTF-8 (java_strings.h). Like
// jvm_avx512.cc, this file is compiled for baseline x86-64 and only the AVX-512 block below
// carries the target attribute.
#include "presets/java_strings.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "chash/error.h"
#include "chash/router.h"
#include "cpu.h"
#include "presets/guava.h"

namespace chash::presets {

namespace {

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), a self-initialised variable
// that -Wmaybe-uninitialized reports in every caller (a known false positive of the header).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// Up to 16 UTF-16 units that hold no surrogate, encoded in one go (after simdutf's scheme: each
// unit's 1-3 bytes built in a 32-bit lane, the bytes kept compressed together by vpcompressb).
// The per-unit loop spent ~25 ns on each of the bindings bench's Cyrillic keys. Returns the bytes
// written to out (which has kJavaUtf8Slack bytes to spare past them), or -1 when a unit is a
// surrogate (the caller encodes those keys unit by unit).
[[gnu::target("avx512f,avx512bw,avx512vl,avx512vbmi2,bmi2")]] long utf16_block_avx512(
    const std::uint16_t* s, std::size_t n, char* out) noexcept {
  const __mmask16 valid = static_cast<__mmask16>(_bzhi_u32(0xFFFFu, static_cast<unsigned>(n)));
  const __m512i c = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, s));
  const __m512i top5 = _mm512_and_si512(c, _mm512_set1_epi32(0xF800));
  if (_mm512_cmpeq_epi32_mask(top5, _mm512_set1_epi32(0xD800)) != 0) return -1;
  const __mmask16 two = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80));
  if (two == 0) {  // ASCII: the units narrowed to bytes
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(c));
    return static_cast<long>(n);
  }
  const __mmask16 three = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x800));
  const __m512i low6 = _mm512_set1_epi32(0x3F);
  const __m512i cont = _mm512_set1_epi32(0x80);
  // byte 0: the unit, or the 2- or 3-byte lead; byte 1: the next 6 bits; byte 2: the last 6
  __m512i lead = _mm512_mask_or_epi32(c, two, _mm512_srli_epi32(c, 6), _mm512_set1_epi32(0xC0));
  lead = _mm512_mask_or_epi32(lead, three, _mm512_srli_epi32(c, 12), _mm512_set1_epi32(0xE0));
  const __m512i mid_bits = _mm512_mask_srli_epi32(c, three, c, 6);
  const __m512i mid = _mm512_or_si512(_mm512_and_si512(mid_bits, low6), cont);
  const __m512i last = _mm512_or_si512(_mm512_and_si512(c, low6), cont);
  // In a 2-byte unit `mid` is the last byte and `last` is not written; in a 3-byte unit both.
  const __m512i word = _mm512_or_si512(
      lead, _mm512_or_si512(_mm512_slli_epi32(mid, 8), _mm512_slli_epi32(last, 16)));
  // Bytes kept: byte 0 of each valid unit, byte 1 of 2- and 3-byte units, byte 2 of 3-byte.
  __m512i keep = _mm512_maskz_mov_epi32(valid, _mm512_set1_epi32(0x80));
  keep = _mm512_mask_or_epi32(keep, two, keep, _mm512_set1_epi32(0x8000));
  keep = _mm512_mask_or_epi32(keep, three, keep, _mm512_set1_epi32(0x800000));
  const __mmask64 bytes = _mm512_movepi8_mask(keep);
  _mm512_storeu_si512(out, _mm512_maskz_compress_epi8(bytes, word));
  return static_cast<long>(__builtin_popcountll(bytes));
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // __x86_64__

// One key of a chunk routed through route_batch: its UTF-8 where it lies (ASCII Latin-1) or
// encoded into `buf` (used bytes so far in `used`); false when the encoding does not fit.
bool utf8_view(const JavaKey& key, char* buf, std::size_t cap, std::size_t& used,
               std::string_view& view) noexcept {
  if (key.coder == kJavaLatin1) {
    const std::string_view text(key.text, key.len);
    if (std::all_of(text.begin(), text.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
      view = text;
      return true;
    }
  }
  const std::size_t need =
      key.coder == kJavaUtf16 ? 3 * (key.len / 2) + kJavaUtf8Slack : 2 * key.len;
  if (need > cap - used) return false;
  const std::size_t n =
      key.coder == kJavaUtf16
          ? java_utf16_to_utf8(
                reinterpret_cast<const std::uint16_t*>(static_cast<const void*>(key.text)),
                key.len / 2, buf + used)
          : java_latin1_to_utf8(reinterpret_cast<const std::uint8_t*>(key.text), key.len,
                                buf + used);
  view = std::string_view(buf + used, n);
  used += n;
  return true;
}

}  // namespace

void refuse_java_key(const JavaStrings& keys, std::size_t i) {
  const std::uint8_t coder = keys.coders == nullptr ? kJavaUtf16 : keys.coders[i];
  const std::size_t scale = keys.coders == nullptr ? 2 : 1;
  const std::int32_t start = keys.offsets[i];
  const std::int32_t to = keys.offsets[i + 1];
  std::string why = "UTF-16 text of an odd length";
  if (start < 0 || to < start) {
    why = "offsets must be non-negative and non-decreasing";
  } else if (static_cast<std::size_t>(to) > keys.data_len / scale) {
    why = "past the end of the " + std::to_string(keys.data_len) + "-byte data";
  } else if (coder != kJavaLatin1 && coder != kJavaUtf16) {
    why = "coder " + std::to_string(coder) + " is neither 0 (Latin-1) nor 1 (UTF-16)";
  }
  throw Error(ErrorCode::kInvalidArgument, "key " + std::to_string(i) + " (offsets " +
                                               std::to_string(start) + ".." + std::to_string(to) +
                                               "): " + why);
}

std::size_t java_utf16_to_utf8(const std::uint16_t* s, std::size_t n, char* out,
                               bool vector) noexcept {
  std::size_t o = 0;
  std::size_t i = 0;
  // ASCII, the common key, eight units at a time (and the last eight, overlapping): the unit by
  // unit loop below alone cost ~4 ns of a 10-char key (Java's Guava batch of String keys).
  auto ascii8 = [&](std::size_t at) {
    std::uint64_t lo, hi;
    std::memcpy(&lo, s + at, 8);
    std::memcpy(&hi, s + at + 4, 8);
    return ((lo | hi) & 0xFF80FF80FF80FF80ULL) == 0;
  };
  auto narrow8 = [&](std::size_t at, char* to) {
    for (std::size_t k = 0; k < 8; ++k) to[k] = static_cast<char>(s[at + k]);
  };
  if (vector) {
    for (; i + 8 <= n && ascii8(i); i += 8, o += 8) narrow8(i, out + o);
    // All ASCII so far and fewer than eight units left: the last eight, overlapping. (Not when
    // the loop stopped at a non-ASCII unit: the last eight being ASCII then says nothing of it.)
    if (i < n && i + 8 > n && n >= 8 && o == i && ascii8(n - 8)) {
      narrow8(n - 8, out + n - 8);
      return n;
    }
#if defined(__x86_64__)
    if (internal::cpu_has_avx512_vbmi2()) {  // not ASCII: 16 units at a time until a surrogate
      for (; i < n; i += 16) {
        const long w = utf16_block_avx512(s + i, std::min<std::size_t>(n - i, 16), out + o);
        if (w < 0) break;  // a surrogate: this block and the rest unit by unit
        o += static_cast<std::size_t>(w);
      }
      if (i >= n) return o;
    }
#endif
  }
  for (; i < n; ++i) {
    const unsigned c = s[i];
    if (c < 0x80) {
      out[o++] = static_cast<char>(c);
    } else if (c < 0x800) {
      out[o++] = static_cast<char>(0xC0 | (c >> 6));
      out[o++] = static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0xD800 || c > 0xDFFF) {
      out[o++] = static_cast<char>(0xE0 | (c >> 12));
      out[o++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out[o++] = static_cast<char>(0x80 | (c & 0x3F));
    } else if (c <= 0xDBFF && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] <= 0xDFFF) {
      const unsigned cp = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00u);
      out[o++] = static_cast<char>(0xF0 | (cp >> 18));
      out[o++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out[o++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out[o++] = static_cast<char>(0x80 | (cp & 0x3F));
      ++i;
    } else {
      out[o++] = '?';
    }
  }
  return o;
}

std::size_t java_latin1_to_utf8(const std::uint8_t* s, std::size_t n, char* out) noexcept {
  std::size_t o = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned c = s[i];
    if (c < 0x80) {
      out[o++] = static_cast<char>(c);
    } else {
      out[o++] = static_cast<char>(0xC0 | (c >> 6));
      out[o++] = static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return o;
}

void route_java_strings(const Router& router, const JavaStrings& keys, NodeId* out) {
  if (keys.count == 0) return;
  if ((reinterpret_cast<std::uintptr_t>(keys.data) & 1) != 0) {  // UTF-16 is read as uint16_t
    throw Error(ErrorCode::kInvalidArgument, "data must be aligned to 2 bytes (UTF-16 units)");
  }
  if (router.preset() != nullptr && guava_route_java_strings(*router.preset(), keys, out)) return;
  // Every other router: a chunk of keys as UTF-8 views at a time, the encoded ones in a stack
  // buffer; a key too long for it is routed alone from memory of its own.
  constexpr std::size_t kChunk = 256;
  constexpr std::size_t kBuffer = 16384;
  char utf8[kBuffer];
  std::string_view views[kChunk];
  std::size_t i = 0;
  while (i < keys.count) {
    const std::size_t base = i;
    std::size_t used = 0;
    for (; i < keys.count && i - base < kChunk; ++i) {
      if (!utf8_view(java_key(keys, i), utf8, kBuffer, used, views[i - base])) break;
    }
    if (i > base) {
      router.route_batch(std::span<const std::string_view>(views, i - base),
                         std::span<NodeId>(out + base, i - base));
      continue;
    }
    std::string big;  // key i alone fills more than the buffer
    java_utf8_pieces(java_key(keys, i), [&](std::string_view piece) { big += piece; });
    out[i] = router.route(big);
    ++i;
  }
}

}  // namespace chash::presets
