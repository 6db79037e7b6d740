// SPDX-License-Identifier: Apache-2.0
// java_string_hashcode: the decoding rules spelled out case by case. Each expectation lists the
// UTF-16 units the JDK decodes (checked against the JDK itself in java_string_hashcode.tsv and by
// tests/compat/hash/java_exhaustive_check.sh); the hash is Java's s[0]*31^(n-1) + ... + s[n-1].
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "chash/hash.h"

namespace chash::hash {
namespace {

constexpr std::uint32_t R = 0xFFFD;  // U+FFFD REPLACEMENT CHARACTER

std::int32_t hash_of_units(std::initializer_list<std::uint32_t> units) {
  std::uint32_t h = 0;
  for (const std::uint32_t u : units) h = 31 * h + u;
  return static_cast<std::int32_t>(h);
}

TEST(JavaHashTest, KnownStringHashCodes) {
  EXPECT_EQ(java_string_hashcode(""), 0);
  EXPECT_EQ(java_string_hashcode("hello"), 99162322);  // "hello".hashCode()
  EXPECT_EQ(java_string_hashcode("abc"), 96354);
}

TEST(JavaHashTest, ValidUtf8OfEveryWidth) {
  EXPECT_EQ(java_string_hashcode("\xc3\xa9"), hash_of_units({0xE9}));        // é
  EXPECT_EQ(java_string_hashcode("\xe4\xb8\xad"), hash_of_units({0x4E2D}));  // 中
  EXPECT_EQ(java_string_hashcode("\xef\xbf\xbd"), hash_of_units({0xFFFD}));  // U+FFFD itself
  // U+1F600 is a surrogate pair in UTF-16: D83D DE00.
  EXPECT_EQ(java_string_hashcode("\xf0\x9f\x98\x80"), hash_of_units({0xD83D, 0xDE00}));
  EXPECT_EQ(java_string_hashcode("\xf4\x8f\xbf\xbf"), hash_of_units({0xDBFF, 0xDFFF}));  // U+10FFFF
}

TEST(JavaHashTest, InvalidLeadBytesAreOneReplacementEach) {
  EXPECT_EQ(java_string_hashcode("\x80"), hash_of_units({R}));
  EXPECT_EQ(java_string_hashcode("\xff\xfe"), hash_of_units({R, R}));
  EXPECT_EQ(java_string_hashcode("\xc0\xaf"), hash_of_units({R, R}));  // overlong '/'
  EXPECT_EQ(java_string_hashcode("\xf8\x88\x80\x80\x80"), hash_of_units({R, R, R, R, R}));
}

TEST(JavaHashTest, BadContinuationEndsTheUnitBeforeIt) {
  EXPECT_EQ(java_string_hashcode("\xc3\x28"), hash_of_units({R, '('}));
  EXPECT_EQ(java_string_hashcode("\xe2\x28\xa1"), hash_of_units({R, '(', R}));
  EXPECT_EQ(java_string_hashcode("\xe2\x82\x28"), hash_of_units({R, '('}));
  EXPECT_EQ(java_string_hashcode("\xf0\x9f\x41\x41"), hash_of_units({R, 'A', 'A'}));
  EXPECT_EQ(java_string_hashcode("\xf0\x9f\x98\x41"), hash_of_units({R, 'A'}));
}

TEST(JavaHashTest, OverlongAndOutOfRangeSecondBytes) {
  EXPECT_EQ(java_string_hashcode("\xe0\x80\xaf"), hash_of_units({R, R, R}));
  EXPECT_EQ(java_string_hashcode("\xf0\x80\x80\xaf"), hash_of_units({R, R, R, R}));
  EXPECT_EQ(java_string_hashcode("\xf4\x90\x80\x80"), hash_of_units({R, R, R, R}));
  EXPECT_EQ(java_string_hashcode("\xf5\x80\x80\x80"), hash_of_units({R, R, R, R}));
}

// Where Java parts from Unicode's "maximal subpart" practice: an encoded surrogate is one unit.
TEST(JavaHashTest, EncodedSurrogateIsOneReplacement) {
  EXPECT_EQ(java_string_hashcode("\xed\xa0\x80"), hash_of_units({R}));
  EXPECT_EQ(java_string_hashcode("\xed\xa0\xbd\xed\xb8\x80"), hash_of_units({R, R}));  // CESU-8
  EXPECT_EQ(java_string_hashcode("\xed\xa0\x41"), hash_of_units({R, 'A'}));
}

TEST(JavaHashTest, TruncatedSequenceAtEndIsOneReplacement) {
  EXPECT_EQ(java_string_hashcode("\xf0\x9f\x98"), hash_of_units({R}));
  EXPECT_EQ(java_string_hashcode("abc\xf0\x9f"), hash_of_units({'a', 'b', 'c', R}));
  EXPECT_EQ(java_string_hashcode("\xe4\xb8"), hash_of_units({R}));
  EXPECT_EQ(java_string_hashcode("\xf0"), hash_of_units({R}));
  // ... unless the second byte already cannot continue it.
  EXPECT_EQ(java_string_hashcode("\xe0\x80"), hash_of_units({R, R}));
  EXPECT_EQ(java_string_hashcode("\xf0\x80"), hash_of_units({R, R}));
  EXPECT_EQ(java_string_hashcode("\xf0\x90\x41"), hash_of_units({R, 'A'}));
}

TEST(JavaHashTest, NulBytesAreCharacters) {
  EXPECT_EQ(java_string_hashcode(std::string("a\0b", 3)), hash_of_units({'a', 0, 'b'}));
}

// The "java" key hash is the int read as unsigned 32 bits, zero-extended.
TEST(JavaHashTest, KeyHashIsUnsignedHashCode) {
  const std::string key = "\xf0\x9f\x98\x80 emoji";
  EXPECT_EQ(hash_key(KeyHash::kJava, key), static_cast<std::uint32_t>(java_string_hashcode(key)));
  EXPECT_LT(hash_key(KeyHash::kJava, key), 1ull << 32);
}

}  // namespace
}  // namespace chash::hash
