// SPDX-License-Identifier: Apache-2.0
// Java Strings in the JDK's own form, routed as their UTF-8 (java_strings.h). Like
// jvm_avx512.cc, this file is compiled for baseline x86-64 and only the AVX-512 block below
// carries the target attribute.
#include "presets/java_strings.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "chash/error.h"
#include "chash/router.h"
#include "cpu.h"
#include "presets/guava.h"
#include "presets/java_text.h"
#include "presets/utf16_avx512.h"

namespace chash::presets {

namespace {

#if defined(__x86_64__)
// Up to 16 units (no surrogate) to out, which has kJavaUtf8Slack bytes to spare past them: the
// bytes written, or -1 at a surrogate.
CHASH_AVX512_VBMI2 long utf16_block_avx512(const std::uint16_t* s, std::size_t n,
                                           char* out) noexcept {
  __m512i utf8;
  const long w = utf16_to_utf8_x16(s, n, utf8);
  if (w >= 0) _mm512_storeu_si512(out, utf8);
  return w;
}
#endif

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

std::size_t java_to_utf8(const JavaKey& key, char* out) noexcept {
  if (key.coder == kJavaUtf16) {
    return java_utf16_to_utf8(
        reinterpret_cast<const std::uint16_t*>(static_cast<const void*>(key.text)), key.len / 2,
        out);
  }
  return java_latin1_to_utf8(reinterpret_cast<const std::uint8_t*>(key.text), key.len, out);
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
      if (!java_utf8_view(java_key(keys, i), utf8, kBuffer, used, views[i - base])) break;
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
