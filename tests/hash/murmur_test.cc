// SPDX-License-Identifier: Apache-2.0
// MurmurHash2/3 against SMHasher's published verification values (aappleby/smhasher main.cpp)
// and Hash128's Guava-style views. Peer vectors (Guava, Appleby's reference, libmurmurhash,
// libhashkit): golden_vectors_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chash/hash.h"

namespace chash::hash {
namespace {

// SMHasher's VerificationTest: hash the keys {}, {0}, {0,1}, ..., {0..254} with seed 256 - len,
// concatenate the outputs (each in its little-endian byte order), hash that buffer with seed 0,
// and read the first four output bytes as a little-endian integer.
using HashToBytes = std::function<std::vector<std::uint8_t>(std::string_view, std::uint32_t)>;

std::uint32_t smhasher_verification(const HashToBytes& hash) {
  std::string key;
  std::string outputs;
  for (int len = 0; len < 256; ++len) {
    for (const std::uint8_t b : hash(key, static_cast<std::uint32_t>(256 - len))) {
      outputs.push_back(static_cast<char>(b));
    }
    key.push_back(static_cast<char>(len));
  }
  const std::vector<std::uint8_t> final_bytes = hash(outputs, 0);
  return static_cast<std::uint32_t>(final_bytes[0]) |
         static_cast<std::uint32_t>(final_bytes[1]) << 8 |
         static_cast<std::uint32_t>(final_bytes[2]) << 16 |
         static_cast<std::uint32_t>(final_bytes[3]) << 24;
}

std::vector<std::uint8_t> le_bytes(std::uint64_t v, int n) {
  std::vector<std::uint8_t> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  return out;
}

TEST(MurmurTest, SmhasherVerificationMurmur3A) {
  EXPECT_EQ(smhasher_verification([](std::string_view k, std::uint32_t seed) {
              return le_bytes(murmur3_x86_32(k, seed), 4);
            }),
            0xB0F57EE3u);
}

TEST(MurmurTest, SmhasherVerificationMurmur3F) {
  EXPECT_EQ(smhasher_verification([](std::string_view k, std::uint32_t seed) {
              const auto b = murmur3_x64_128(k, seed).bytes();
              return std::vector<std::uint8_t>(b.begin(), b.end());
            }),
            0x6384BA69u);
}

// The x64_128 tail is read with overlapping word loads (src/hash/murmur3_x64.h): the same value
// wherever the key lies, and (under ASan, with each key in an allocation of its exact size) no
// byte outside it is read.
TEST(MurmurTest, X64_128TheSameAtEveryAlignmentReadingOnlyTheKey) {
  for (std::size_t len = 0; len <= 80; ++len) {
    std::string ref(len, '\0');
    for (std::size_t i = 0; i < len; ++i) ref[i] = static_cast<char>(i * 37 + len * 11 + 1);
    const Hash128 want = murmur3_x64_128(ref, 7);
    for (std::size_t offset = 0; offset < 8; ++offset) {
      std::unique_ptr<char[]> exact(new char[offset + len + (offset + len == 0 ? 1 : 0)]);
      std::copy(ref.begin(), ref.end(), exact.get() + offset);
      const Hash128 got = murmur3_x64_128(std::string_view(exact.get() + offset, len), 7);
      EXPECT_EQ(got.h1, want.h1) << "len " << len << " offset " << offset;
      EXPECT_EQ(got.h2, want.h2) << "len " << len << " offset " << offset;
    }
  }
}

TEST(MurmurTest, SmhasherVerificationMurmur2) {
  EXPECT_EQ(smhasher_verification([](std::string_view k, std::uint32_t seed) {
              return le_bytes(murmur2_32(k, seed), 4);
            }),
            0x27864C1Eu);
}

// SMHasher calls MurmurHash64A "Murmur2B"; its 32-bit seed is widened to 64 bits.
TEST(MurmurTest, SmhasherVerificationMurmur64A) {
  EXPECT_EQ(smhasher_verification([](std::string_view k, std::uint32_t seed) {
              return le_bytes(murmur64a(k, seed), 8);
            }),
            0x1F0D3804u);
}

// Widely published MurmurHash3_x86_32 vectors (seed 0x9747b28c and edge seeds).
TEST(MurmurTest, X86_32KnownValues) {
  EXPECT_EQ(murmur3_x86_32("", 0), 0u);
  EXPECT_EQ(murmur3_x86_32("", 1), 0x514E28B7u);
  EXPECT_EQ(murmur3_x86_32("", 0xffffffffu), 0x81F16F39u);
  EXPECT_EQ(murmur3_x86_32(std::string(4, '\0'), 0), 0x2362F9DEu);
  EXPECT_EQ(murmur3_x86_32("aaaa", 0x9747b28c), 0x5A97808Au);
  EXPECT_EQ(murmur3_x86_32("Hello, world!", 0x9747b28c), 0x24884CBAu);
  EXPECT_EQ(murmur3_x86_32("The quick brown fox jumps over the lazy dog", 0x9747b28c), 0x2FA826CDu);
}

// Guava's HashCode views of a 128-bit code: asBytes() is h1 then h2, little-endian; asInt()
// and asLong() read its first 4 and 8 bytes; padToLong() == asLong() for 128 bits.
TEST(MurmurTest, Hash128ViewsMatchGuavaLayout) {
  const Hash128 h{0x0123456789abcdefull, 0xfedcba9876543210ull};
  const std::array<std::uint8_t, 16> want = {0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
                                             0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe};
  EXPECT_EQ(h.bytes(), want);
  EXPECT_EQ(h.as_int(), static_cast<std::int32_t>(0x89abcdef));
  EXPECT_EQ(h.as_long(), 0x0123456789abcdefll);
  EXPECT_EQ(h.pad_to_long(), h.as_long());
}

// The key hash for "murmur2" is libmemcached's: the seed is 0xdeadbeef times the length.
TEST(MurmurTest, KeyHashMurmur2SeedsByLength) {
  const std::string key = "user:42";
  EXPECT_EQ(hash_key(KeyHash::kMurmur2, key),
            murmur2_32(key, 0xdeadbeefu * static_cast<std::uint32_t>(key.size())));
}

}  // namespace
}  // namespace chash::hash
