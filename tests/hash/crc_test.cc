// SPDX-License-Identifier: Apache-2.0
// CRC-16/XMODEM and CRC-32/IEEE against published check values (the CRC catalogue's "123456789"
// checks, Redis Cluster's documented key slots). Peer vectors: golden_vectors_test.cc.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

#include "chash/hash.h"

namespace chash::hash {
namespace {

// Redis crc16.c: "Output for "123456789" : 31C3".
TEST(Crc16Test, RedisCheckValue) { EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3); }

TEST(Crc16Test, EmptyIsInitialValueZero) { EXPECT_EQ(crc16_xmodem(""), 0x0000); }

// Redis Cluster slot = crc16(key) & 16383 (0x3FFF); the values CLUSTER KEYSLOT prints in the
// Redis documentation.
TEST(Crc16Test, RedisClusterKeySlots) {
  EXPECT_EQ(crc16_xmodem("somekey") & 0x3FFF, 11058);
  EXPECT_EQ(crc16_xmodem("foo") & 0x3FFF, 12182);
  EXPECT_EQ(crc16_xmodem("hash_tag") & 0x3FFF, 2515);  // {hash_tag}: the tag alone is hashed
}

// Bytes >= 0x80 are table indexes, not sign-extended: crc16("\xff") is table[0xff].
TEST(Crc16Test, HighByteUsesUnsignedIndex) { EXPECT_EQ(crc16_xmodem("\xff"), 0x1EF0); }

// The slicing-by-8 loop equals the plain bitwise definition (poly 0x1021, MSB first, init 0) on
// random bytes of every length 0..300 and at every alignment.
TEST(Crc16Test, MatchesBitwiseDefinitionOnRandomInputs) {
  const auto bitwise = [](std::string_view d) {
    unsigned crc = 0;
    for (const char ch : d) {
      crc ^= static_cast<unsigned>(static_cast<unsigned char>(ch)) << 8;
      for (int bit = 0; bit < 8; ++bit) {
        crc = ((crc & 0x8000u) != 0 ? (crc << 1) ^ 0x1021u : crc << 1) & 0xffffu;
      }
    }
    return static_cast<std::uint16_t>(crc);
  };
  std::mt19937 rng(16);
  std::string buf(320, '\0');
  for (int round = 0; round < 20; ++round) {
    for (char& c : buf) c = static_cast<char>(rng());
    for (std::size_t offset = 0; offset < 8; ++offset) {
      for (std::size_t len = 0; len + offset <= 300; ++len) {
        const std::string_view d(buf.data() + offset, len);
        ASSERT_EQ(crc16_xmodem(d), bitwise(d)) << "len " << len << " offset " << offset;
      }
    }
  }
}

// CRC catalogue, CRC-32/ISO-HDLC (zlib's crc32): check = 0xCBF43926.
TEST(Crc32Test, CatalogueCheckValue) { EXPECT_EQ(crc32("123456789"), 0xCBF43926u); }

TEST(Crc32Test, KnownValues) {
  EXPECT_EQ(crc32(""), 0x00000000u);
  EXPECT_EQ(crc32("The quick brown fox jumps over the lazy dog"), 0x414FA339u);
}

// A key longer than any table or block: the whole input is covered.
TEST(Crc32Test, LongInputDependsOnEveryByte) {
  std::string key(100000, 'x');
  const std::uint32_t before = crc32(key);
  key.back() = 'y';
  EXPECT_NE(crc32(key), before);
}

}  // namespace
}  // namespace chash::hash
