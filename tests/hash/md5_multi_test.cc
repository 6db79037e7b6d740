// SPDX-License-Identifier: Apache-2.0
// Multi-buffer MD5 (src/hash/md5_multi.h) against OpenSSL's MD5() (hash::md5), for every
// implementation this CPU runs: RFC 1321's suite, every length 0..300 (one, two, five blocks;
// the 55/56 and 119/120 padding edges), batches of 1..33 messages of mixed lengths, and
// messages cut from the end of their buffers (ASan would see a read past them).
#include "hash/md5_multi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace chash::hash::internal {
namespace {

std::vector<Md5Isa> supported() {
  std::vector<Md5Isa> v;
  for (const Md5Isa isa : {Md5Isa::kScalar, Md5Isa::kSse2, Md5Isa::kAvx2}) {
    if (md5_isa_supported(isa)) v.push_back(isa);
  }
  return v;
}

class Md5MultiTest : public ::testing::TestWithParam<Md5Isa> {
 protected:
  // Checks md5_many(isa) against md5() one at a time.
  void expect_same(const std::vector<std::string_view>& msgs) {
    std::vector<Md5Digest> got(msgs.size());
    md5_many(GetParam(), msgs, got);
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      ASSERT_EQ(got[i], md5(msgs[i]))
          << "message " << i << " of " << msgs.size() << ", " << msgs[i].size() << " bytes";
    }
  }
};

TEST_P(Md5MultiTest, Rfc1321Suite) {
  const std::vector<std::string_view> suite = {
      "",
      "a",
      "abc",
      "message digest",
      "abcdefghijklmnopqrstuvwxyz",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
      "12345678901234567890123456789012345678901234567890123456789012345678901234567890"};
  expect_same(suite);
  std::vector<Md5Digest> d(suite.size());
  md5_many(GetParam(), suite, d);
  EXPECT_EQ(d[0][0], 0xd4);  // d41d8cd98f00b204e9800998ecf8427e
  EXPECT_EQ(d[0][15], 0x7e);
  EXPECT_EQ(d[6][0], 0x57);  // 57edf4a22be3c955ac49da2e2107b67a
  EXPECT_EQ(d[6][15], 0x7a);
}

TEST_P(Md5MultiTest, EveryLengthUpTo300) {
  std::mt19937_64 rng(1);
  std::string bytes(300, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  std::vector<std::string_view> msgs;
  for (std::size_t len = 0; len <= 300; ++len)
    msgs.push_back(std::string_view(bytes).substr(0, len));
  expect_same(msgs);
  // Each length alone, and as a full lane set of that length.
  for (std::size_t len = 0; len <= 300; ++len) {
    expect_same({msgs[len]});
    expect_same(std::vector<std::string_view>(16, msgs[len]));
  }
}

TEST_P(Md5MultiTest, MixedLengthBatchesOfEverySize) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 20; ++round) {
    for (std::size_t count = 1; count <= 33; ++count) {
      std::vector<std::string> owned(count);
      for (auto& s : owned) {
        // Mostly short keys, sometimes long ones, so lanes finish at different steps.
        const std::size_t len = rng() % 4 == 0 ? rng() % 301 : rng() % 40;
        s.resize(len);
        for (char& c : s) c = static_cast<char>(rng());
      }
      expect_same(std::vector<std::string_view>(owned.begin(), owned.end()));
    }
  }
}

TEST_P(Md5MultiTest, LargeBatchAcrossChunks) {
  std::mt19937_64 rng(3);
  std::vector<std::string> owned(1000);
  for (auto& s : owned) {
    s.resize(rng() % 80);
    for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  }
  expect_same(std::vector<std::string_view>(owned.begin(), owned.end()));
}

// Each message ends exactly where its heap block ends: a read past it is an ASan error.
TEST_P(Md5MultiTest, ReadsNothingPastAMessage) {
  std::vector<std::unique_ptr<char[]>> blocks;
  std::vector<std::string_view> msgs;
  for (std::size_t len = 0; len <= 130; ++len) {
    blocks.push_back(std::make_unique<char[]>(len));
    for (std::size_t i = 0; i < len; ++i) blocks.back()[i] = static_cast<char>(i * 7);
    msgs.push_back(std::string_view(blocks.back().get(), len));
  }
  expect_same(msgs);
}

TEST_P(Md5MultiTest, EmptyBatchWritesNothing) {
  std::vector<Md5Digest> out(1, Md5Digest{});
  md5_many(GetParam(), std::span<const std::string_view>(), out);
  EXPECT_EQ(out[0], Md5Digest{});
}

INSTANTIATE_TEST_SUITE_P(EverySupportedIsa, Md5MultiTest, ::testing::ValuesIn(supported()),
                         [](const auto& p) { return std::string(md5_isa_name(p.param)); });

TEST(Md5MultiDispatch, BestIsSupportedAndLanesExistOnX86) {
  EXPECT_TRUE(md5_isa_supported(md5_best_isa()));
  EXPECT_TRUE(md5_isa_supported(Md5Isa::kScalar));
#if defined(__x86_64__)
  EXPECT_TRUE(md5_isa_supported(Md5Isa::kSse2));
  EXPECT_NE(md5_best_isa(), Md5Isa::kScalar);
#endif
  const std::string_view one[1] = {"abc"};
  Md5Digest d[1];
  md5_many(one, d);
  EXPECT_EQ(d[0], md5("abc"));
}

}  // namespace
}  // namespace chash::hash::internal
