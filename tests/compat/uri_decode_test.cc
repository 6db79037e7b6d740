// SPDX-License-Identifier: Apache-2.0
// chash/internal/uri_decode.h: the keys of memcached's `lru_crawler metadump`.
#include "chash/internal/uri_decode.h"

#include <gtest/gtest.h>

#include <string>

namespace chash::internal {
namespace {

TEST(UriDecode, DecodesWhatMetadumpEncodes) {
  std::string out = "left over";
  ASSERT_TRUE(uri_decode("user%3A42%20a%2fb%2F%00end", out));
  EXPECT_EQ(out, std::string("user:42 a/b/\0end", 16));
  ASSERT_TRUE(uri_decode("plain-key_1", out));
  EXPECT_EQ(out, "plain-key_1");
  ASSERT_TRUE(uri_decode("", out));
  EXPECT_EQ(out, "");
  ASSERT_TRUE(uri_decode("%ff%FE", out));
  EXPECT_EQ(out, "\xff\xfe");
}

TEST(UriDecode, RefusesAPercentWithoutTwoHexDigits) {
  std::string out;
  EXPECT_FALSE(uri_decode("a%", out));
  EXPECT_FALSE(uri_decode("a%4", out));
  EXPECT_FALSE(uri_decode("a%4g", out));
  EXPECT_FALSE(uri_decode("%zz", out));
  EXPECT_TRUE(uri_decode("a%41", out));
  EXPECT_EQ(out, "aA");
}

}  // namespace
}  // namespace chash::internal
