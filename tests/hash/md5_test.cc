// SPDX-License-Identifier: Apache-2.0
// MD5 against RFC 1321's test suite (appendix A.5), and the ketama cuts of a digest. Peers
// (hashlib, libhashkit's "md5" == ketama point 0): golden_vectors_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "chash/hash.h"

namespace chash::hash {
namespace {

std::string hex(const Md5Digest& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : d) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

TEST(Md5Test, Rfc1321TestSuite) {
  EXPECT_EQ(hex(md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(hex(md5("a")), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(hex(md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(hex(md5("message digest")), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(hex(md5("abcdefghijklmnopqrstuvwxyz")), "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(hex(md5("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")),
            "d174ab98d277d9f5a5611c2c9f419d9f");
  EXPECT_EQ(hex(md5("1234567890123456789012345678901234567890"
                    "1234567890123456789012345678901234567890")),
            "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(Md5Test, EmbeddedNulBytesAreHashed) {
  EXPECT_NE(md5(std::string("a\0b", 3)), md5("ab"));
  EXPECT_NE(md5(std::string(1, '\0')), md5(""));
}

// libketama/libmemcached cut point i from digest bytes 4i..4i+3, little-endian.
TEST(Md5Test, KetamaPointsAreLittleEndianQuarters) {
  constexpr Md5Digest d = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                           0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0xff};
  static_assert(ketama_point(d, 0) == 0x03020100u);  // usable in constant expressions
  EXPECT_EQ(ketama_point(d, 1), 0x07060504u);
  EXPECT_EQ(ketama_point(d, 2), 0x0b0a0908u);
  EXPECT_EQ(ketama_point(d, 3), 0xff0e0d0cu);
}

// md5("") = d41d8cd9 8f00b204 e9800998 ecf8427e: the "md5" key hash is its first cut.
TEST(Md5Test, KeyHashIsKetamaPointZero) {
  EXPECT_EQ(ketama_point(md5(""), 0), 0xd98c1dd4u);
  EXPECT_EQ(ketama_point(md5(""), 3), 0x7e42f8ecu);
  EXPECT_EQ(hash_key(KeyHash::kMd5, ""), 0xd98c1dd4u);
}

}  // namespace
}  // namespace chash::hash
