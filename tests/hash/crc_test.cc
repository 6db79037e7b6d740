// SPDX-License-Identifier: Apache-2.0
// CRC-16/XMODEM and CRC-32/IEEE against published check values (the CRC catalogue's "123456789"
// checks, Redis Cluster's documented key slots), and CRC-32's own tables against zlib.
// Peer vectors: golden_vectors_test.cc.
#include <gtest/gtest.h>
#include <zlib.h>

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

// Short inputs are ours (slicing-by-16, src/hash/crc.cc), long ones zlib's: ours must be zlib's
// CRC exactly, on random bytes of every length 0..300 (the one-step keys up to 16 bytes, heads of
// 1..16 bytes then 16-byte steps) at every alignment within 16 bytes, and around the length where
// zlib takes over.
TEST(Crc32Test, MatchesZlibOnRandomInputs) {
  const auto zlib = [](std::string_view d) {
    return static_cast<std::uint32_t>(
        ::crc32_z(0L, reinterpret_cast<const Bytef*>(d.data()), d.size()));
  };
  std::mt19937 rng(32);
  std::string buf(1200, '\0');
  for (int round = 0; round < 20; ++round) {
    for (char& c : buf) c = static_cast<char>(rng());
    for (std::size_t offset = 0; offset < 16; ++offset) {
      for (std::size_t len = 0; len <= 300; ++len) {
        const std::string_view d(buf.data() + offset, len);
        ASSERT_EQ(crc32(d), zlib(d)) << "len " << len << " offset " << offset;
      }
    }
    for (std::size_t len = 480; len <= 1100; len += round % 2 == 0 ? 1 : 7) {
      const std::string_view d(buf.data() + round % 16, len);
      ASSERT_EQ(crc32(d), zlib(d)) << "len " << len;
    }
  }
  // Every single byte value, and the all-zero and all-ones inputs the tables start from.
  for (unsigned b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    ASSERT_EQ(crc32(one), zlib(one)) << "byte " << b;
  }
  for (std::size_t len = 0; len <= 40; ++len) {
    const std::string zeros(len, '\0'), ones(len, '\xff');
    ASSERT_EQ(crc32(zeros), zlib(zeros)) << "len " << len;
    ASSERT_EQ(crc32(ones), zlib(ones)) << "len " << len;
  }
}

// groupcache's keys through chash: Go's crc32.ChecksumIEEE gives these (and zlib agrees).
TEST(Crc32Test, GroupcacheStyleKeys) {
  EXPECT_EQ(crc32("a"), 0xE8B7BE43u);
  EXPECT_EQ(crc32("user:12345"), static_cast<std::uint32_t>(::crc32_z(
                                     0L, reinterpret_cast<const Bytef*>("user:12345"), 10)));
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
