// SPDX-License-Identifier: Apache-2.0
// Java Strings in the JDK's form (src/presets/java_strings.h): the library's String.getBytes(UTF_8)
// encoders against a plain reference, the guava preset's in-place key hashes by every kernel
// against guava_key_hash of the reference bytes, and route_java_strings on routers of every path
// against route() of those bytes. The C ABI over it: tests/c_api/java_strings_test.c.
#include "presets/java_strings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/router.h"
#include "presets/guava.h"
#include "presets/java_text.h"

namespace chash::presets {
namespace {

// String.getBytes(UTF_8) of UTF-16 units, one unit at a time: the reference.
std::string reference_utf8(const std::u16string& s) {
  std::string out;
  auto put = [&](unsigned b) { out.push_back(static_cast<char>(b)); };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned c = s[i];
    if (c < 0x80) {
      put(c);
    } else if (c < 0x800) {
      put(0xC0 | (c >> 6));
      put(0x80 | (c & 0x3F));
    } else if (c >= 0xD800 && c <= 0xDBFF && i + 1 < s.size() && s[i + 1] >= 0xDC00 &&
               s[i + 1] <= 0xDFFF) {
      const unsigned cp = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00u);
      put(0xF0 | (cp >> 18));
      put(0x80 | ((cp >> 12) & 0x3F));
      put(0x80 | ((cp >> 6) & 0x3F));
      put(0x80 | (cp & 0x3F));
      ++i;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      put('?');
    } else {
      put(0xE0 | (c >> 12));
      put(0x80 | ((c >> 6) & 0x3F));
      put(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// A random key of `len` units: 0 ASCII, 1 Latin-1, 2 BMP (Cyrillic-heavy), 3 with surrogates.
std::u16string random_key(std::mt19937_64& rng, std::size_t len, int kind) {
  std::u16string s(len, u'a');
  for (char16_t& c : s) {
    const std::uint64_t r = rng();
    switch (kind) {
      case 0:
        c = static_cast<char16_t>(r % 0x80);
        break;
      case 1:
        c = static_cast<char16_t>(r % 0x100);
        break;
      case 2:
        c = static_cast<char16_t>(r % 3 == 0 ? 0x400 + r % 0x100 : r % 0x3000);
        break;
      default:
        c = static_cast<char16_t>(r % 3 == 0 ? 0xD800 + r % 0x800 : r % 0x10000);
        break;
    }
  }
  return s;
}

std::string utf16_to_utf8(const std::u16string& s, bool vector) {
  std::string out(3 * s.size() + kJavaUtf8Slack, '\0');
  const auto* units = reinterpret_cast<const std::uint16_t*>(s.data());
  out.resize(java_utf16_to_utf8(units, s.size(), out.data(), vector));
  return out;
}

TEST(JavaStringsTest, Utf16EncoderEqualsTheReference) {
  std::mt19937_64 rng(5);
  for (int k = 0; k < 40000; ++k) {
    const std::u16string s = random_key(rng, rng() % 70, k % 4);
    const std::string want = reference_utf8(s);
    ASSERT_EQ(utf16_to_utf8(s, true), want) << k;
    ASSERT_EQ(utf16_to_utf8(s, false), want) << k;
  }
  // Eight ASCII units, a non-ASCII one among the next eight, then ASCII to the end: the ASCII
  // shortcut over the last eight units must not fire after the loop stopped at the é.
  const std::u16string mixed = u"abcdefgh\u00e9ijklmnopq";
  EXPECT_EQ(utf16_to_utf8(mixed, true), reference_utf8(mixed));
  // Surrogates: a pair, a lone high one at the end and before a letter, a lone low one.
  for (const std::u16string& s :
       {std::u16string(u"\U0001F600"), std::u16string(1, char16_t{0xD83D}),
        std::u16string{0xD83D, u'x'}, std::u16string{u'x', 0xDE00, u'y'},
        std::u16string(u"\u043a\u043b\u044e\u0447-1-\u00fc\u20ac\U0001F600")}) {
    EXPECT_EQ(utf16_to_utf8(s, true), reference_utf8(s));
  }
  EXPECT_EQ(utf16_to_utf8(u"\U0001F600", true), "\xF0\x9F\x98\x80");
  EXPECT_EQ(utf16_to_utf8(std::u16string{0xD83D, u'x'}, true), "?x");
}

TEST(JavaStringsTest, Latin1EncoderEqualsTheReference) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  std::u16string units;
  for (int c = 0; c < 256; ++c) units.push_back(static_cast<char16_t>(c));
  std::string out(512, '\0');
  out.resize(
      java_latin1_to_utf8(reinterpret_cast<const std::uint8_t*>(bytes.data()), 256, out.data()));
  EXPECT_EQ(out, reference_utf8(units));
}

// Keys packed as KeyPack.java packs them: Latin-1 when every unit fits a byte, else UTF-16 at an
// even offset; or (as_chars) every key as UTF-16 units, offsets counting units.
struct Packed {
  std::vector<char> data;
  std::vector<std::uint8_t> coders;
  std::vector<std::int32_t> offsets{0};
  bool as_chars = false;

  Packed(const std::vector<std::u16string>& keys, bool chars) : as_chars(chars) {
    for (const std::u16string& k : keys) {
      const bool latin1 =
          !chars && std::all_of(k.begin(), k.end(), [](char16_t c) { return c < 0x100; });
      if (latin1) {
        for (const char16_t c : k) data.push_back(static_cast<char>(c));
      } else {
        if (data.size() % 2 != 0) data.push_back('\0');
        const std::size_t at = data.size();
        data.resize(at + 2 * k.size());
        std::memcpy(data.data() + at, k.data(), 2 * k.size());
      }
      coders.push_back(latin1 ? kJavaLatin1 : kJavaUtf16);
      offsets.push_back(static_cast<std::int32_t>(chars ? data.size() / 2 : data.size()));
    }
  }

  JavaStrings view() const {
    return {data.data(), data.size(), as_chars ? nullptr : coders.data(), offsets.data(),
            coders.size()};
  }
};

// Short keys of every kind, and long ones around the guava path's limits (64 UTF-16 units
// encoded in place, 32 bytes for the lanes) and the piece size (1024 units, a pair across it).
std::vector<std::u16string> mixed_keys(std::mt19937_64& rng, std::size_t count) {
  std::vector<std::u16string> keys;
  for (std::size_t i = 0; i < count; ++i) {
    static const std::size_t kLong[] = {31, 32, 33, 63, 64, 65, 200, 1023, 1024, 1025, 3000};
    const std::size_t len = i % 16 == 5 ? kLong[(i / 16) % 11] : rng() % 24;
    keys.push_back(random_key(rng, len, static_cast<int>(i % 4)));
  }
  std::u16string pair_at_piece_end(1023, u'x');
  pair_at_piece_end += u"\U0001F600tail";
  keys.push_back(pair_at_piece_end);
  keys.push_back(u"");
  keys.push_back(u"user:42");
  return keys;
}

TEST(JavaStringsTest, GuavaKeyHashesOfEveryKernelEqualTheHashOfTheUtf8) {
  std::mt19937_64 rng(7);
  const std::vector<std::u16string> keys = mixed_keys(rng, 2000);
  for (const bool chars : {false, true}) {
    const Packed packed(keys, chars);
    for (const GuavaKernel kernel :
         {GuavaKernel::kScalar, GuavaKernel::kAvx2, GuavaKernel::kAvx512}) {
      std::uint64_t got[kBatchChunk];
      for (std::size_t from = 0; from < keys.size(); from += kBatchChunk) {
        const std::size_t n = std::min(kBatchChunk, keys.size() - from);
        guava_java_key_hashes(packed.view(), from, n, got, kernel);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], guava_key_hash(reference_utf8(keys[from + i])))
              << "key " << from + i << ", chars " << chars << ", kernel "
              << static_cast<int>(kernel);
        }
      }
    }
  }
}

TEST(JavaStringsTest, PiecesOfALongKeyJoinToItsUtf8) {
  std::u16string key(1023, u'a');
  key += u"\U0001F600";  // the pair's high unit is the piece's last unit
  key += std::u16string(2000, u'\u00e9');
  const std::vector<char16_t> lone_high_at_end{0xD83D};
  key.append(lone_high_at_end.begin(), lone_high_at_end.end());
  std::string joined;
  const JavaKey k{reinterpret_cast<const char*>(key.data()), 2 * key.size(), kJavaUtf16};
  java_utf8_pieces(k, [&](std::string_view piece) { joined += piece; });
  EXPECT_EQ(joined, reference_utf8(key));
  const std::string latin1(5000, '\xE9');
  std::string joined1;
  java_utf8_pieces(JavaKey{latin1.data(), latin1.size(), kJavaLatin1},
                   [&](std::string_view piece) { joined1 += piece; });
  EXPECT_EQ(joined1, reference_utf8(std::u16string(5000, u'\u00e9')));
}

TEST(JavaStringsTest, EveryRouterRoutesTheStringsAsTheirUtf8) {
  std::mt19937_64 rng(9);
  std::vector<std::u16string> keys = mixed_keys(rng, 1500);
  keys.push_back(std::u16string(9000, u'\u043a'));  // over the 16 KiB buffer: routed alone
  std::vector<Node> nodes;
  for (int i = 0; i < 50; ++i) nodes.push_back(Node{"node-" + std::to_string(i), 1});
  RoutingSpec guava, ketama, ring, jump;
  guava.preset = "guava";
  ketama.preset = "ketama";
  ring.algorithm = "ring";
  jump.algorithm = "jump";
  for (const RoutingSpec& spec : {guava, ketama, ring, jump}) {
    const Router router = Router::build(spec, nodes);
    for (const bool chars : {false, true}) {
      const Packed packed(keys, chars);
      std::vector<NodeId> out(keys.size(), kNoNode);
      route_java_strings(router, packed.view(), out.data());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        ASSERT_EQ(out[i], router.route(reference_utf8(keys[i])))
            << spec.preset << spec.algorithm << ", key " << i << ", chars " << chars;
      }
    }
  }
}

TEST(JavaStringsTest, BadEntriesAreRefusedByName) {
  const char data[] = "abcdefgh";
  const std::uint8_t coders[] = {kJavaLatin1, kJavaUtf16, 9};
  auto message = [&](std::vector<std::int32_t> offsets, const std::uint8_t* c) {
    const JavaStrings keys{data, 8, c, offsets.data(), offsets.size() - 1};
    try {
      for (std::size_t i = 0; i < keys.count; ++i) java_key(keys, i);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({0, 2, 4}, coders), "accepted");
  EXPECT_EQ(message({0, 2, 9}, coders), "key 1 (offsets 2..9): past the end of the 8-byte data");
  EXPECT_EQ(message({-2, 2}, coders),
            "key 0 (offsets -2..2): offsets must be non-negative and non-decreasing");
  EXPECT_EQ(message({0, 3, 2}, coders),
            "key 1 (offsets 3..2): offsets must be non-negative and non-decreasing");
  EXPECT_EQ(message({0, 1, 4}, coders), "accepted");  // key 1: bytes 2..4, after a pad byte
  EXPECT_EQ(message({0, 1, 5}, coders), "key 1 (offsets 1..5): UTF-16 text of an odd length");
  EXPECT_EQ(message({0, 3, 3}, coders), "key 1 (offsets 3..3): UTF-16 text of an odd length");
  EXPECT_EQ(message({0, 2, 4, 6}, coders),
            "key 2 (offsets 4..6): coder 9 is neither 0 (Latin-1) nor 1 (UTF-16)");
  EXPECT_EQ(message({0, 4}, nullptr), "accepted");  // 4 units, 8 bytes
  EXPECT_EQ(message({0, 5}, nullptr), "key 0 (offsets 0..5): past the end of the 8-byte data");
}

}  // namespace
}  // namespace chash::presets
