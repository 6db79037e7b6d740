// SPDX-License-Identifier: Apache-2.0
// xxHash against the sanity vectors xxHash publishes with xxhsum (cli/xsum_sanity_check.c):
// a pseudorandom buffer of fixed content, hashed at lengths that hit every code path, with
// seed 0 and a non-zero seed. Peers (xxhsum CLI, python3-xxhash): golden_vectors_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "chash/hash.h"

namespace chash::hash {
namespace {

constexpr std::uint64_t kPrime32 = 2654435761u;
constexpr std::uint64_t kPrime64 = 11400714785074694797ull;

// XSUM_fillTestBuffer: byte i is the top byte of PRIME32 * PRIME64^i (mod 2^64).
std::string sanity_buffer() {
  std::string buf(4096, '\0');
  std::uint64_t gen = kPrime32;
  for (char& c : buf) {
    c = static_cast<char>(gen >> 56);
    gen *= kPrime64;
  }
  return buf;
}

std::string_view prefix(const std::string& buf, std::size_t len) {
  return std::string_view(buf).substr(0, len);
}

TEST(XxhTest, Xxh64SanityVectors) {
  const std::string buf = sanity_buffer();
  EXPECT_EQ(xxh64(prefix(buf, 0), 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(xxh64(prefix(buf, 0), kPrime32), 0xAC75FDA2929B17EFull);
  EXPECT_EQ(xxh64(prefix(buf, 1), 0), 0xE934A84ADB052768ull);
  EXPECT_EQ(xxh64(prefix(buf, 1), kPrime32), 0x5014607643A9B4C3ull);
  EXPECT_EQ(xxh64(prefix(buf, 4), 0), 0x9136A0DCA57457EEull);
  EXPECT_EQ(xxh64(prefix(buf, 14), 0), 0x8282DCC4994E35C8ull);
  EXPECT_EQ(xxh64(prefix(buf, 14), kPrime32), 0xC3BD6BF63DEB6DF0ull);
  EXPECT_EQ(xxh64(prefix(buf, 222), 0), 0xB641AE8CB691C174ull);
  EXPECT_EQ(xxh64(prefix(buf, 222), kPrime32), 0x20CB8AB7AE10C14Aull);
}

TEST(XxhTest, Xxh3SanityVectors) {
  const std::string buf = sanity_buffer();
  struct Case {
    std::size_t len;
    std::uint64_t seed;
    std::uint64_t want;
  };
  const Case cases[] = {
      {0, 0, 0x2D06800538D394C2ull},    {0, kPrime64, 0xA8A6B918B2F0364Aull},
      {1, 0, 0xC44BDFF4074EECDBull},    {1, kPrime64, 0x032BE332DD766EF8ull},
      {6, 0, 0x27B56A84CD2D7325ull},    {6, kPrime64, 0x84589C116AB59AB9ull},
      {12, 0, 0xA713DAF0DFBB77E7ull},   {12, kPrime64, 0xE7303E1B2336DE0Eull},
      {24, 0, 0xA3FE70BF9D3510EBull},   {24, kPrime64, 0x850E80FC35BDD690ull},
      {48, 0, 0x397DA259ECBA1F11ull},   {48, kPrime64, 0xADC2CBAA44ACC616ull},
      {80, 0, 0xBCDEFBBB2C47C90Aull},   {80, kPrime64, 0xC6DD0CB699532E73ull},
      {195, 0, 0xCD94217EE362EC3Aull},  {195, kPrime64, 0xBA68003D370CB3D9ull},
      {403, 0, 0xCDEB804D65C6DEA4ull},  {403, kPrime64, 0x6259F6ECFD6443FDull},
      {512, 0, 0x617E49599013CB6Bull},  {512, kPrime64, 0x3CE457DE14C27708ull},
      {2048, 0, 0xDD59E2C3A5F038E0ull}, {2048, kPrime64, 0x66F81670669ABABCull},
      {2240, 0, 0x6E73A90539CF2948ull}, {2240, kPrime64, 0x757BA8487D1B5247ull},
      {2367, 0, 0xCB37AEB9E5D361EDull}, {2367, kPrime64, 0xD2DB3415B942B42Aull},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(xxh3_64(prefix(buf, c.len), c.seed), c.want) << "len " << c.len << " seed " << c.seed;
  }
}

TEST(XxhTest, DefaultSeedIsZero) {
  EXPECT_EQ(xxh3_64("user:42"), xxh3_64("user:42", 0));
  EXPECT_EQ(xxh64("user:42"), xxh64("user:42", 0));
  EXPECT_EQ(hash_key(KeyHash::kXxh3, "user:42"), xxh3_64("user:42"));
  EXPECT_EQ(hash_key(KeyHash::kXxh64, "user:42"), xxh64("user:42"));
}

}  // namespace
}  // namespace chash::hash
