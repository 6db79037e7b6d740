// SPDX-License-Identifier: Apache-2.0
// Java strings from bytes, for the presets of Java peers (jvm.cc, articles.cc; not installed).
//
// A Java service handed a key's bytes decodes them first (new String(bytes, UTF_8)), so each
// malformed sequence becomes U+FFFD and is hashed, after String.getBytes(UTF_8), as EF BF BD.
// These reproduce that without building strings on the lookup path.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "chash/hash.h"
#include "hash/murmur3_x64.h"

namespace chash::presets {

// The JDK's UTF-8 decoder (OpenJDK 17 String.decodeUTF8_UTF16), reduced to what re-encoding
// needs: calls valid(run) for well-formed bytes and bad() once per malformed unit, cut as the
// JDK cuts them (see src/hash/java.cc, pinned exhaustively against the JDK, for the rules).
template <class Valid, class Bad>
inline void java_utf8_units(std::string_view s, Valid&& valid, Bad&& bad) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  auto cont = [](unsigned b) { return (b & 0xC0u) == 0x80u; };
  auto ok2_of_3 = [&](unsigned b1, unsigned b2) {
    return b1 == 0xE0 ? (b2 >= 0xA0 && b2 <= 0xBF) : cont(b2);
  };
  auto ok2_of_4 = [&](unsigned b1, unsigned b2) {
    if (b1 > 0xF4) return false;
    if (b1 == 0xF0) return b2 >= 0x90 && b2 <= 0xBF;
    if (b1 == 0xF4) return b2 >= 0x80 && b2 <= 0x8F;
    return cont(b2);
  };
  std::size_t run = 0;  // start of the pending well-formed run
  std::size_t i = 0;
  auto malformed = [&](std::size_t len) {
    if (i > run) valid(s.substr(run, i - run));
    bad();
    i += len;
    run = i;
  };
  while (i < n) {
    const unsigned b1 = p[i];
    const std::size_t left = n - i - 1;
    if (b1 < 0x80) {
      i += 1;
    } else if (b1 >= 0xC2 && b1 <= 0xDF) {
      if (left >= 1 && cont(p[i + 1])) {
        i += 2;
      } else {
        malformed(1);
      }
    } else if (b1 >= 0xE0 && b1 <= 0xEF) {
      if (left >= 2) {
        if (!ok2_of_3(b1, p[i + 1])) {
          malformed(1);
        } else if (!cont(p[i + 2])) {
          malformed(2);
        } else if (b1 == 0xED && p[i + 1] >= 0xA0) {
          malformed(3);  // A UTF-16 surrogate: one unit of three bytes.
        } else {
          i += 3;
        }
      } else if (left == 1 && !ok2_of_3(b1, p[i + 1])) {
        malformed(1);
      } else {
        malformed(n - i);  // Cut short by the end of input.
      }
    } else if (b1 >= 0xF0 && b1 <= 0xF7) {
      if (left >= 3) {
        if (!ok2_of_4(b1, p[i + 1])) {
          malformed(1);
        } else if (!cont(p[i + 2])) {
          malformed(2);
        } else if (!cont(p[i + 3])) {
          malformed(3);
        } else {
          i += 4;
        }
      } else if (left == 0 || !ok2_of_4(b1, p[i + 1])) {
        malformed(1);
      } else if (left == 2 && !cont(p[i + 2])) {
        malformed(2);
      } else {
        malformed(n - i);
      }
    } else {
      malformed(1);  // 80..BF, C0, C1, F8..FF never start a sequence.
    }
  }
  if (n > run) valid(s.substr(run));
}

// MurmurHash3 x64_128 (seed 0) fed in pieces, for keys whose re-encoded bytes differ from the
// input; equal to hash::murmur3_x64_128 on the concatenation. Returns h1 (HashCode.padToLong()).
class Murmur3x64Stream {
 public:
  void update(std::string_view data) noexcept {
    for (const char c : data) {
      buf_[fill_++] = static_cast<unsigned char>(c);
      if (fill_ == 16) {
        block(load(0), load(8));
        fill_ = 0;
      }
    }
    len_ += data.size();
  }

  std::uint64_t finish() noexcept {
    std::uint64_t k1 = 0;
    std::uint64_t k2 = 0;
    for (std::size_t i = fill_; i-- > 8;) k2 = k2 << 8 | buf_[i];
    for (std::size_t i = std::min<std::size_t>(fill_, 8); i-- > 0;) k1 = k1 << 8 | buf_[i];
    if (fill_ > 8) h2_ ^= std::rotl(k2 * kC2, 33) * kC1;
    if (fill_ > 0) h1_ ^= std::rotl(k1 * kC1, 31) * kC2;
    h1_ ^= len_;
    h2_ ^= len_;
    h1_ += h2_;
    h2_ += h1_;
    h1_ = hash::mix64(h1_);
    h2_ = hash::mix64(h2_);
    h1_ += h2_;
    return h1_;
  }

 private:
  static constexpr std::uint64_t kC1 = 0x87c37b91114253d5ULL;
  static constexpr std::uint64_t kC2 = 0x4cf5ad432745937fULL;

  std::uint64_t load(std::size_t at) const noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 8; i-- > 0;) v = v << 8 | buf_[at + i];
    return v;
  }
  void block(std::uint64_t k1, std::uint64_t k2) noexcept {
    h1_ ^= std::rotl(k1 * kC1, 31) * kC2;
    h1_ = std::rotl(h1_, 27) + h2_;
    h1_ = h1_ * 5 + 0x52dce729;
    h2_ ^= std::rotl(k2 * kC2, 33) * kC1;
    h2_ = std::rotl(h2_, 31) + h1_;
    h2_ = h2_ * 5 + 0x38495ab5;
  }

  std::array<unsigned char, 16> buf_{};
  std::size_t fill_ = 0;
  std::uint64_t len_ = 0;
  std::uint64_t h1_ = 0;
  std::uint64_t h2_ = 0;
};

// True when every byte is below 0x80 (ASCII: well-formed for any decoder), 8 bytes at a time.
inline bool is_ascii(std::string_view s) noexcept {
  std::size_t i = 0;
  std::uint64_t high = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    high |= w;
  }
  for (; i < s.size(); ++i) high |= static_cast<unsigned char>(s[i]);
  return (high & 0x8080808080808080ULL) == 0;
}

// True when `key` is well-formed UTF-8 (Unicode's Table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF), which is exactly when the JDK's decoder finds nothing malformed: the
// same answer as java_utf8_clean below (tests/presets/jvm_test.cc compares them on every string
// of up to three bytes), in one pass without callbacks — a quarter of the time on the bindings
// bench's non-ASCII keys, which a batch of Guava keys spent most of its non-ASCII time on.
inline bool utf8_well_formed(std::string_view key) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  const std::size_t n = key.size();
  auto cont = [&](std::size_t i) { return (p[i] & 0xC0u) == 0x80u; };
  std::size_t i = 0;
  while (i < n) {
    const unsigned b = p[i];
    if (b < 0x80) {
      ++i;
    } else if (b < 0xC2) {
      return false;  // a continuation byte, or C0/C1 (overlong)
    } else if (b < 0xE0) {
      if (i + 1 >= n || !cont(i + 1)) return false;
      i += 2;
    } else if (b < 0xF0) {
      if (i + 2 >= n) return false;
      const unsigned lo = b == 0xE0 ? 0xA0 : 0x80;  // E0 80..9F: overlong
      const unsigned hi = b == 0xED ? 0x9F : 0xBF;  // ED A0..BF: a surrogate
      if (p[i + 1] < lo || p[i + 1] > hi || !cont(i + 2)) return false;
      i += 3;
    } else if (b < 0xF5) {
      if (i + 3 >= n) return false;
      const unsigned lo = b == 0xF0 ? 0x90 : 0x80;  // F0 80..8F: overlong
      const unsigned hi = b == 0xF4 ? 0x8F : 0xBF;  // F4 90..: above U+10FFFF
      if (p[i + 1] < lo || p[i + 1] > hi || !cont(i + 2) || !cont(i + 3)) return false;
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

// murmur3_128().hashString(new String(key, UTF_8), UTF_8).padToLong(), without building strings.
inline std::uint64_t guava_key_hash(std::string_view key) noexcept {
  // Most keys are ASCII: one pass over 8-byte words instead of the decoder's byte-wise branches.
  // The inline murmur: in a batch's loop the core overlaps consecutive keys' hashes.
  if (is_ascii(key) || utf8_well_formed(key)) {
    return hash::internal::murmur3_x64_128_inline(key, 0).h1;
  }
  Murmur3x64Stream m;
  java_utf8_units(
      key, [&](std::string_view run) { m.update(run); }, [&] { m.update("\xEF\xBF\xBD"); });
  return m.finish();
}

// True when `key` is well-formed UTF-8 as the JDK's decoder sees it (it re-encodes unchanged).
inline bool java_utf8_clean(std::string_view key) noexcept {
  bool malformed = false;
  java_utf8_units(
      key, [](std::string_view) {}, [&] { malformed = true; });
  return !malformed;
}

// new String(key, UTF_8).getBytes(UTF_8) into `out` (malformed sequences -> EF BF BD).
inline void java_utf8_reencode(std::string_view key, std::string& out) {
  out.clear();
  java_utf8_units(
      key, [&](std::string_view run) { out.append(run); }, [&] { out.append("\xEF\xBF\xBD"); });
}

}  // namespace chash::presets
