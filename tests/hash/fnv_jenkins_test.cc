// SPDX-License-Identifier: Apache-2.0
// FNV, one-at-a-time, lookup3 and hsieh against published check values. The full FNV test suite
// and the peers (libhashkit; twemproxy's and libmemcached's hsieh source) are in
// golden_vectors_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chash/hash.h"

namespace chash::hash {
namespace {

// test_fnv.c (the FNV reference test suite), first entries.
TEST(FnvTest, ReferenceSuiteCheckValues) {
  EXPECT_EQ(fnv1_32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1_32("a"), 0x050c5d7eu);
  EXPECT_EQ(fnv1_32("foobar"), 0x31f0b262u);
  EXPECT_EQ(fnv1a_32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a_32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a_32("foobar"), 0xbf9cf968u);
  EXPECT_EQ(fnv1_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1_64("a"), 0xaf63bd4c8601b7beull);
  EXPECT_EQ(fnv1_64("foobar"), 0x340d8765a4dda9c2ull);
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

// test_fnv.c, "\xff\x00\x00\x01": bytes are unsigned octets (libmemcached/twemproxy differ here).
TEST(FnvTest, HighBytesAreUnsigned) {
  const std::string key("\xff\x00\x00\x01", 4);
  EXPECT_EQ(fnv1_32(key), 0xb78320a1u);
  EXPECT_EQ(fnv1a_32(key), 0xc48fb86du);
  EXPECT_EQ(fnv1_64(key), 0xd6b2b17bf4b71261ull);
  EXPECT_EQ(fnv1a_64(key), 0x6961196491cc682dull);
}

// Bob Jenkins' one-at-a-time: the examples commonly published with it (libhashkit agrees).
TEST(JenkinsTest, OneAtATimePublishedValues) {
  EXPECT_EQ(one_at_a_time(""), 0u);
  EXPECT_EQ(one_at_a_time("a"), 0xca2e9442u);
  EXPECT_EQ(one_at_a_time("The quick brown fox jumps over the lazy dog"), 0x519e91f5u);
}

// lookup3.c driver5(): the known vectors Bob Jenkins prints.
TEST(JenkinsTest, Lookup3Driver5Vectors) {
  EXPECT_EQ(jenkins_lookup3("", 0), 0xdeadbeefu);
  EXPECT_EQ(jenkins_lookup3("", 0xdeadbeef), 0xbd5b7ddeu);
  EXPECT_EQ(jenkins_lookup3("Four score and seven years ago", 0), 0x17770551u);
  EXPECT_EQ(jenkins_lookup3("Four score and seven years ago", 1), 0xcd628161u);
}

// SMHasher "lookup3": hashlittle(key, len, seed), verification value 0x3D83917A (see
// murmur_test.cc for the procedure).
TEST(JenkinsTest, SmhasherVerification) {
  std::string key;
  std::string outputs;
  for (int len = 0; len < 256; ++len) {
    const std::uint32_t h = jenkins_lookup3(key, static_cast<std::uint32_t>(256 - len));
    for (int i = 0; i < 4; ++i) outputs.push_back(static_cast<char>(h >> (8 * i)));
    key.push_back(static_cast<char>(len));
  }
  EXPECT_EQ(jenkins_lookup3(outputs, 0), 0x3D83917Au);
}

// Every tail length 0..12 after 0, 1 and 2 full blocks reaches final() with the right words:
// changing any single byte changes the hash.
TEST(JenkinsTest, EveryByteOfEveryTailLengthCounts) {
  for (std::size_t len = 1; len <= 36; ++len) {
    const std::string key(len, 'k');
    const std::uint32_t base = jenkins_lookup3(key, 13);
    for (std::size_t i = 0; i < len; ++i) {
      std::string changed = key;
      changed[i] = 'K';
      EXPECT_NE(jenkins_lookup3(changed, 13), base) << "len " << len << " byte " << i;
    }
  }
}

TEST(HsiehTest, EmptyInputIsZero) { EXPECT_EQ(hsieh(""), 0u); }

// Changing the last byte changes the hash at every tail length, including the 3-byte tail whose
// last byte the peers read through a signed char (hsieh.tsv pins the values).
TEST(HsiehTest, EveryTailLengthCounts) {
  for (std::size_t len = 1; len <= 12; ++len) {
    const std::string key(len, '\x80');
    std::string changed = key;
    changed.back() = '\x81';
    EXPECT_NE(hsieh(key), hsieh(changed)) << "len " << len;
  }
}

}  // namespace
}  // namespace chash::hash
