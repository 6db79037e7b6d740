// SPDX-License-Identifier: Apache-2.0
// Runtime choice of key hash: names, parsing, and that each choice dispatches to the documented
// function with the documented seed and widening.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "chash/error.h"
#include "chash/hash.h"

namespace chash {
namespace {

TEST(KeyHashTest, EveryNameRoundTrips) {
  std::set<std::string_view> names;
  for (const KeyHash h : kAllKeyHashes) {
    const std::string_view name = key_hash_name(h);
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(parse_key_hash(name), h) << name;
  }
  EXPECT_EQ(names.size(), 18u);
}

TEST(KeyHashTest, NamesAreTheDocumentedOnes) {
  EXPECT_EQ(key_hash_name(KeyHash::kXxh3), "xxh3");
  EXPECT_EQ(key_hash_name(KeyHash::kMurmur3_128), "murmur3_128");
  EXPECT_EQ(key_hash_name(KeyHash::kMurmur64A), "murmur64a");
  EXPECT_EQ(key_hash_name(KeyHash::kOneAtATime), "one_at_a_time");
  EXPECT_EQ(key_hash_name(KeyHash::kJava), "java");
}

TEST(KeyHashTest, UnknownNameIsParseErrorListingValidNames) {
  try {
    parse_key_hash("sha1");
    FAIL() << "parse_key_hash(\"sha1\") did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    const std::string message = e.what();
    EXPECT_NE(message.find("\"sha1\""), std::string::npos) << message;
    for (const KeyHash h : kAllKeyHashes) {
      EXPECT_NE(message.find(std::string(key_hash_name(h))), std::string::npos) << message;
    }
  }
}

TEST(KeyHashTest, ParsingIsExact) {
  EXPECT_THROW(parse_key_hash(""), Error);
  EXPECT_THROW(parse_key_hash("XXH3"), Error);
  EXPECT_THROW(parse_key_hash("xxh3 "), Error);
}

// Each choice is the documented function; 32-bit results are zero-extended.
TEST(KeyHashTest, DispatchMatchesTheFunctions) {
  using namespace chash::hash;
  for (const std::string& key : {std::string(), std::string("user:42"),
                                 std::string("\xff\xfe\x80", 3), std::string(1000, 'z')}) {
    SCOPED_TRACE("key of " + std::to_string(key.size()) + " bytes");
    const auto len = static_cast<std::uint32_t>(key.size());
    EXPECT_EQ(hash_key(KeyHash::kXxh3, key), xxh3_64(key, 0));
    EXPECT_EQ(hash_key(KeyHash::kXxh64, key), xxh64(key, 0));
    EXPECT_EQ(hash_key(KeyHash::kMurmur3_32, key), murmur3_x86_32(key, 0));
    EXPECT_EQ(hash_key(KeyHash::kMurmur3_128, key), murmur3_x64_128(key, 0).h1);
    EXPECT_EQ(hash_key(KeyHash::kMurmur64A, key), murmur64a(key, 0x1234ABCD));
    EXPECT_EQ(hash_key(KeyHash::kMurmur2, key), murmur2_32(key, 0xdeadbeefu * len));
    EXPECT_EQ(hash_key(KeyHash::kMd5, key), ketama_point(md5(key), 0));
    EXPECT_EQ(hash_key(KeyHash::kCrc32, key), crc32(key));
    EXPECT_EQ(hash_key(KeyHash::kCrc16, key), crc16_xmodem(key));
    EXPECT_EQ(hash_key(KeyHash::kFnv1_32, key), fnv1_32(key));
    EXPECT_EQ(hash_key(KeyHash::kFnv1a_32, key), fnv1a_32(key));
    EXPECT_EQ(hash_key(KeyHash::kFnv1_64, key), fnv1_64(key));
    EXPECT_EQ(hash_key(KeyHash::kFnv1a_64, key), fnv1a_64(key));
    EXPECT_EQ(hash_key(KeyHash::kOneAtATime, key), one_at_a_time(key));
    EXPECT_EQ(hash_key(KeyHash::kJenkins, key), jenkins_lookup3(key, 13));
    EXPECT_EQ(hash_key(KeyHash::kHsieh, key), hsieh(key));
    EXPECT_EQ(hash_key(KeyHash::kJava, key), static_cast<std::uint32_t>(java_string_hashcode(key)));
    EXPECT_EQ(hash_key(KeyHash::kRedisSlot, key), crc16_xmodem(key) & 0x3FFFu);
  }
}

// Redis Cluster's slot as a key hash: CRC-16 of the {tag} (Redis cluster spec check values).
TEST(KeyHashTest, RedisSlotFollowsRedisHashTags) {
  EXPECT_EQ(parse_key_hash("redis_slot"), KeyHash::kRedisSlot);
  EXPECT_EQ(hash_key(KeyHash::kRedisSlot, "123456789"), 0x31C3u & 0x3FFFu);
  EXPECT_EQ(hash_key(KeyHash::kRedisSlot, "{user1000}.following"),
            hash_key(KeyHash::kRedisSlot, "{user1000}.followers"));
  EXPECT_EQ(hash_key(KeyHash::kRedisSlot, "foo{bar}"), hash_key(KeyHash::kRedisSlot, "bar"));
  // "{}" holds nothing: the whole key is hashed.
  EXPECT_EQ(hash_key(KeyHash::kRedisSlot, "foo{}{bar}"),
            hash::crc16_xmodem("foo{}{bar}") & 0x3FFFu);
  for (int i = 0; i < 256; ++i) {
    EXPECT_LT(hash_key(KeyHash::kRedisSlot, "key-" + std::to_string(i)), 16384u);
  }
}

TEST(KeyHashTest, ThirtyTwoBitHashesAreZeroExtended) {
  for (const KeyHash h :
       {KeyHash::kMurmur3_32, KeyHash::kMurmur2, KeyHash::kMd5, KeyHash::kCrc32, KeyHash::kCrc16,
        KeyHash::kFnv1_32, KeyHash::kFnv1a_32, KeyHash::kOneAtATime, KeyHash::kJenkins,
        KeyHash::kHsieh, KeyHash::kJava}) {
    for (int i = 0; i < 64; ++i) {
      EXPECT_LT(hash_key(h, "key-" + std::to_string(i)), 1ull << 32) << key_hash_name(h);
    }
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_LT(hash_key(KeyHash::kCrc16, "key-" + std::to_string(i)), 1ull << 16);
  }
}

// Jedis shards with MurmurHash64A, seed 0x1234ABCD; check the seed reaches the function.
TEST(KeyHashTest, Murmur64AUsesJedisSeed) {
  EXPECT_NE(hash_key(KeyHash::kMurmur64A, "k"), hash::murmur64a("k", 0));
}

}  // namespace
}  // namespace chash
