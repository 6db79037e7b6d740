// SPDX-License-Identifier: Apache-2.0
// memcached's binary protocol: the request parser (resumable, bounded) and the response encoder
// (proto/memcache/binary.h).
#include <gtest/gtest.h>

#include <string>

#include "proto/memcache/binary.h"

namespace chash::proxy::memcache::binary {
namespace {

// A request packet as a client writes it.
std::string packet(std::uint8_t opcode, std::string_view key, std::string_view extras = {},
                   std::string_view value = {}, std::uint32_t opaque = 0, std::uint64_t cas = 0) {
  std::string p;
  p += static_cast<char>(kRequestMagic);
  p += static_cast<char>(opcode);
  p += static_cast<char>(key.size() >> 8);
  p += static_cast<char>(key.size());
  p += static_cast<char>(extras.size());
  p += '\0';
  p += std::string(2, '\0');
  append_be32(p, static_cast<std::uint32_t>(extras.size() + key.size() + value.size()));
  append_be32(p, opaque);
  append_be64(p, cas);
  p += extras;
  p += key;
  p += value;
  return p;
}

TEST(MemcacheBinaryParser, GetPacketFromTheHeaderComment) {
  const std::string buf(
      "\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x07"
      "\x00\x00\x00\x00\x00\x00\x00\x00k",
      25);
  RequestParser p;
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(p.opcode(), op::kGet);
  EXPECT_EQ(p.key(buf), "k");
  EXPECT_EQ(p.opaque(), 7u);
  EXPECT_EQ(p.extras(buf), "");
  EXPECT_EQ(p.value(buf), "");
  EXPECT_EQ(p.end(), 25u);
}

TEST(MemcacheBinaryParser, SetSplitAtEveryByteGivesTheSameFields) {
  const std::string extras("\x00\x00\x00\x2a\x00\x00\x0e\x10", 8);  // flags 42, exptime 3600
  const std::string value("a\r\nb\0c", 6);
  const std::string whole = packet(op::kSetQ, "key", extras, value, 0xdeadbeef, 0x0102030405060708);
  RequestParser p;
  std::string buf;
  for (std::size_t i = 0; i + 1 < whole.size(); ++i) {
    buf += whole[i];
    ASSERT_EQ(p.parse(buf), ParseResult::kNeedMore) << "at byte " << i;
  }
  buf += whole.back();
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(p.opcode(), op::kSetQ);
  EXPECT_EQ(p.key(buf), "key");
  EXPECT_EQ(p.extras(buf), extras);
  EXPECT_EQ(p.value(buf), value);
  EXPECT_EQ(p.opaque(), 0xdeadbeefu);
  EXPECT_EQ(p.cas(), 0x0102030405060708u);
  EXPECT_EQ(be32(p.extras(buf).data()), 42u);
}

TEST(MemcacheBinaryParser, PipelinedPacketsWithConsume) {
  std::string buf = packet(op::kGetKQ, "a", {}, {}, 1) + packet(op::kGetKQ, "bb", {}, {}, 2) +
                    packet(op::kNoop, "", {}, {}, 3);
  RequestParser p;
  std::vector<std::pair<std::string, std::uint32_t>> seen;
  for (;;) {
    const ParseResult r = p.parse(buf);
    if (r != ParseResult::kDone) break;
    seen.emplace_back(std::string(p.key(buf)), p.opaque());
    p.next();
    const std::size_t n = p.start();
    buf.erase(0, n);
    p.consume(n);
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(std::string("a"), 1u));
  EXPECT_EQ(seen[1], std::make_pair(std::string("bb"), 2u));
  EXPECT_EQ(seen[2], std::make_pair(std::string(""), 3u));
  EXPECT_TRUE(buf.empty());
}

TEST(MemcacheBinaryParser, BadMagicClosesWithoutAReplyFromTheFirstByte) {
  RequestParser p;
  EXPECT_EQ(p.parse(std::string("\x81", 1)), ParseResult::kError);
  EXPECT_EQ(p.error(), "");
  RequestParser q;  // a text line sent on a binary connection
  EXPECT_EQ(q.parse(packet(op::kNoop, "") + "get k\r\n"), ParseResult::kDone);
  q.next();
  EXPECT_EQ(q.parse(packet(op::kNoop, "") + "get k\r\n"), ParseResult::kError);
}

TEST(MemcacheBinaryParser, LengthsThatDoNotAddUpAreInvalidArguments) {
  std::string bad = packet(op::kGet, "key");
  bad[11] = 2;  // bodylen 2 < keylen 3
  RequestParser p;
  ASSERT_EQ(p.parse(bad), ParseResult::kError);
  const std::string e(p.error());
  ASSERT_GE(e.size(), kHeaderSize);
  EXPECT_EQ(static_cast<unsigned char>(e[0]), kResponseMagic);
  EXPECT_EQ(be16(e.data() + 6), status::kInvalidArguments);
}

TEST(MemcacheBinaryParser, BodyOverTheLimitIsRefusedBeforeItIsBuffered) {
  RequestLimits limits;
  limits.max_value_bytes = 1000;
  std::string head = packet(op::kSet, "k", std::string(8, '\0'), std::string(2000, 'v'), 9);
  head.resize(kHeaderSize);  // only the header has arrived
  RequestParser p(limits);
  ASSERT_EQ(p.parse(head), ParseResult::kError);
  const std::string e(p.error());
  EXPECT_EQ(be16(e.data() + 6), status::kTooLarge);
  EXPECT_EQ(be32(e.data() + 12), 9u);  // the client's opaque
  // At the limit (value + slack) it is read.
  RequestParser q(limits);
  const std::string ok = packet(op::kSet, "k", std::string(8, '\0'), std::string(1000, 'v'));
  EXPECT_EQ(q.parse(ok), ParseResult::kDone);
}

TEST(MemcacheBinaryParser, NonRawDatatypeIsInvalid) {
  std::string p8 = packet(op::kGet, "k");
  p8[5] = 1;
  RequestParser p;
  ASSERT_EQ(p.parse(p8), ParseResult::kError);
  EXPECT_EQ(be16(p.error().data() + 6), status::kInvalidArguments);
}

TEST(MemcacheBinaryEncoder, ResponseLayoutIsBigEndian) {
  std::string out;
  append_response(out, op::kGetK, status::kSuccess, 0x01020304, 0x1122334455667788,
                  std::string("\x00\x00\x00\x05", 4), "key", "value");
  ASSERT_EQ(out.size(), kHeaderSize + 4 + 3 + 5);
  EXPECT_EQ(static_cast<unsigned char>(out[0]), 0x81);
  EXPECT_EQ(static_cast<unsigned char>(out[1]), op::kGetK);
  EXPECT_EQ(be16(out.data() + 2), 3u);  // key length
  EXPECT_EQ(out[4], 4);                 // extras length
  EXPECT_EQ(out[5], 0);                 // datatype
  EXPECT_EQ(be16(out.data() + 6), status::kSuccess);
  EXPECT_EQ(be32(out.data() + 8), 12u);  // body
  EXPECT_EQ(be32(out.data() + 12), 0x01020304u);
  EXPECT_EQ(be64(out.data() + 16), 0x1122334455667788u);
  EXPECT_EQ(out.substr(24), std::string("\x00\x00\x00\x05keyvalue", 12));
}

TEST(MemcacheBinaryEncoder, QuietOpcodesAndTheirLoudForms) {
  const std::pair<std::uint8_t, std::uint8_t> pairs[] = {{op::kGetQ, op::kGet},
                                                         {op::kGetKQ, op::kGetK},
                                                         {op::kSetQ, op::kSet},
                                                         {op::kAddQ, op::kAdd},
                                                         {op::kReplaceQ, op::kReplace},
                                                         {op::kDeleteQ, op::kDelete},
                                                         {op::kIncrementQ, op::kIncrement},
                                                         {op::kDecrementQ, op::kDecrement},
                                                         {op::kQuitQ, op::kQuit},
                                                         {op::kFlushQ, op::kFlush},
                                                         {op::kAppendQ, op::kAppend},
                                                         {op::kPrependQ, op::kPrepend},
                                                         {op::kGatQ, op::kGat},
                                                         {op::kGatKQ, op::kGatK}};
  for (const auto& [quiet, plain] : pairs) {
    EXPECT_TRUE(is_quiet(quiet)) << int(quiet);
    EXPECT_FALSE(is_quiet(plain)) << int(plain);
    EXPECT_EQ(loud(quiet), plain) << int(quiet);
    EXPECT_EQ(loud(plain), plain) << int(plain);
  }
  EXPECT_FALSE(is_quiet(op::kNoop));
  EXPECT_FALSE(is_quiet(op::kTouch));
}

}  // namespace
}  // namespace chash::proxy::memcache::binary
