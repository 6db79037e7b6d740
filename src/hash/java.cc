// SPDX-License-Identifier: Apache-2.0
// java.lang.String.hashCode() of `new String(utf8, StandardCharsets.UTF_8)`, without building
// the string: the bytes are decoded on the fly into UTF-16 code units u[0..n) and hashed as
// s = u[0]*31^(n-1) + ... + u[n-1] (mod 2^32), read as a signed int.
//
// Malformed input follows the JDK's UTF-8 decoder (String.decodeUTF8_UTF16 / sun.nio.cs.UTF_8;
// OpenJDK 17 and 25 agree), which emits one U+FFFD per malformed unit as it delimits them —
// mostly Unicode's "maximal subpart", but not always:
//   - A lead byte that cannot start a sequence (80..BF, C0, C1, F8..FF) is one unit of 1 byte.
//   - A lead with a bad second byte is a 1-byte unit (for E0 the second byte must be A0..BF,
//     for F0 90..BF, for F4 80..8F, otherwise 80..BF). F5..F7 are always 1-byte units.
//   - A bad third byte makes a 2-byte unit; a bad fourth byte a 3-byte unit.
//   - ED A0..BF xx (a UTF-16 surrogate, U+D800..U+DFFF) is ONE unit of 3 bytes, where Unicode's
//     recommendation would give three. This is where Java differs from maximal subparts.
//   - A sequence cut short by the end of input is one unit covering what is left of it.
// Pinned in tests/hash/ to the JDK's own output (tests/compat/hash/JavaVectors.java) over every
// one- to three-byte sequence of the interesting byte classes and over random byte strings.
#include <cstddef>
#include <cstdint>

#include "chash/hash.h"

namespace chash::hash {
namespace {

constexpr std::uint32_t kReplacement = 0xfffd;

inline bool is_continuation(std::uint32_t b) noexcept { return (b & 0xc0) == 0x80; }

// Second byte allowed after a three-byte lead (excludes overlongs after E0; surrogates after ED
// are caught later, as the JDK does).
inline bool ok_second_of_3(std::uint32_t b1, std::uint32_t b2) noexcept {
  if (b1 == 0xe0) return b2 >= 0xa0 && b2 <= 0xbf;
  return is_continuation(b2);
}

// Second byte allowed after a four-byte lead (excludes overlongs after F0 and > U+10FFFF after
// F4; F5..F7 allow none).
inline bool ok_second_of_4(std::uint32_t b1, std::uint32_t b2) noexcept {
  if (b1 > 0xf4) return false;
  if (b1 == 0xf0) return b2 >= 0x90 && b2 <= 0xbf;
  if (b1 == 0xf4) return b2 >= 0x80 && b2 <= 0x8f;
  return is_continuation(b2);
}

// Java's String hash state: h = 31*h + unit, wrapping mod 2^32.
struct JavaHash {
  std::uint32_t h = 0;
  void unit(std::uint32_t u) noexcept { h = 31 * h + u; }
  void code_point(std::uint32_t cp) noexcept {
    if (cp < 0x10000) {
      unit(cp);
    } else {  // Surrogate pair.
      cp -= 0x10000;
      unit(0xd800 + (cp >> 10));
      unit(0xdc00 + (cp & 0x3ff));
    }
  }
};

}  // namespace

std::int32_t java_string_hashcode(std::string_view utf8) noexcept {
  const auto* s = reinterpret_cast<const unsigned char*>(utf8.data());
  const std::size_t n = utf8.size();
  JavaHash jh;
  std::size_t i = 0;

  while (i < n) {
    const std::uint32_t b1 = s[i];
    const std::size_t left = n - i - 1;  // Bytes after the lead.

    if (b1 < 0x80) {
      jh.unit(b1);
      i += 1;
    } else if (b1 >= 0xc2 && b1 <= 0xdf) {
      // Two-byte lead: needs one continuation byte.
      if (left >= 1 && is_continuation(s[i + 1])) {
        jh.unit((b1 & 0x1f) << 6 | (s[i + 1] & 0x3fu));
        i += 2;
      } else {
        jh.unit(kReplacement);
        i += 1;
      }
    } else if (b1 >= 0xe0 && b1 <= 0xef) {
      if (left >= 2) {
        const std::uint32_t b2 = s[i + 1];
        const std::uint32_t b3 = s[i + 2];
        if (!ok_second_of_3(b1, b2)) {
          jh.unit(kReplacement);
          i += 1;
        } else if (!is_continuation(b3)) {
          jh.unit(kReplacement);
          i += 2;
        } else {
          const std::uint32_t c = (b1 & 0x0f) << 12 | (b2 & 0x3f) << 6 | (b3 & 0x3f);
          // A surrogate code point (ED A0..BF xx): one replacement for all three bytes.
          jh.unit(c >= 0xd800 && c <= 0xdfff ? kReplacement : c);
          i += 3;
        }
      } else if (left == 1 && !ok_second_of_3(b1, s[i + 1])) {
        // Cut short, and the second byte cannot continue it: the lead alone is malformed.
        jh.unit(kReplacement);
        i += 1;
      } else {
        // Cut short by the end of input: one replacement for the rest.
        jh.unit(kReplacement);
        i = n;
      }
    } else if (b1 >= 0xf0 && b1 <= 0xf7) {
      if (left >= 3) {
        const std::uint32_t b2 = s[i + 1];
        const std::uint32_t b3 = s[i + 2];
        const std::uint32_t b4 = s[i + 3];
        if (!ok_second_of_4(b1, b2)) {
          jh.unit(kReplacement);
          i += 1;
        } else if (!is_continuation(b3)) {
          jh.unit(kReplacement);
          i += 2;
        } else if (!is_continuation(b4)) {
          jh.unit(kReplacement);
          i += 3;
        } else {
          jh.code_point((b1 & 0x07) << 18 | (b2 & 0x3f) << 12 | (b3 & 0x3f) << 6 | (b4 & 0x3f));
          i += 4;
        }
      } else if (left == 0 || !ok_second_of_4(b1, s[i + 1])) {
        // Cut short with no usable second byte (or F5..F7, which are never a prefix).
        jh.unit(kReplacement);
        i += 1;
      } else if (left == 2 && !is_continuation(s[i + 2])) {
        // Lead and second byte form the unit; the third byte starts over.
        jh.unit(kReplacement);
        i += 2;
      } else {
        // Cut short by the end of input: one replacement for the rest.
        jh.unit(kReplacement);
        i = n;
      }
    } else {
      // 80..BF (stray continuation), C0, C1 (always overlong), F8..FF: never a lead.
      jh.unit(kReplacement);
      i += 1;
    }
  }
  return static_cast<std::int32_t>(jh.h);
}

}  // namespace chash::hash
