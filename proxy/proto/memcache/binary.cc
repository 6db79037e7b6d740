// SPDX-License-Identifier: Apache-2.0
#include "proto/memcache/binary.h"

namespace chash::proxy::memcache::binary {

bool is_quiet(std::uint8_t o) noexcept {
  switch (o) {
    case op::kGetQ:
    case op::kGetKQ:
    case op::kSetQ:
    case op::kAddQ:
    case op::kReplaceQ:
    case op::kDeleteQ:
    case op::kIncrementQ:
    case op::kDecrementQ:
    case op::kQuitQ:
    case op::kFlushQ:
    case op::kAppendQ:
    case op::kPrependQ:
    case op::kGatQ:
    case op::kGatKQ:
      return true;
    default:
      return false;
  }
}

std::uint8_t loud(std::uint8_t o) noexcept {
  switch (o) {
    case op::kGetQ:
      return op::kGet;
    case op::kGetKQ:
      return op::kGetK;
    case op::kGatQ:
      return op::kGat;
    case op::kGatKQ:
      return op::kGatK;
    case op::kSetQ:
    case op::kAddQ:
    case op::kReplaceQ:
    case op::kDeleteQ:
    case op::kIncrementQ:
    case op::kDecrementQ:
    case op::kQuitQ:
    case op::kFlushQ:
      return static_cast<std::uint8_t>(o - 0x10);  // 0x11..0x18 are 0x01..0x08 quiet
    case op::kAppendQ:
    case op::kPrependQ:
      return static_cast<std::uint8_t>(o - 0x0b);  // 0x19, 0x1a are 0x0e, 0x0f quiet
    default:
      return o;
  }
}

void put_be32(char* p, std::uint32_t v) noexcept {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

void append_be32(std::string& out, std::uint32_t v) {
  char b[4];
  put_be32(b, v);
  out.append(b, 4);
}

void append_be64(std::string& out, std::uint64_t v) {
  append_be32(out, static_cast<std::uint32_t>(v >> 32));
  append_be32(out, static_cast<std::uint32_t>(v));
}

void encode_header(char* p, std::uint8_t opcode, std::uint16_t status, std::uint32_t opaque,
                   std::uint64_t cas, std::size_t extlen, std::size_t keylen,
                   std::size_t body_len) noexcept {
  p[0] = static_cast<char>(kResponseMagic);
  p[1] = static_cast<char>(opcode);
  p[2] = static_cast<char>(keylen >> 8);
  p[3] = static_cast<char>(keylen);
  p[4] = static_cast<char>(extlen);
  p[5] = 0;  // datatype: raw bytes
  p[6] = static_cast<char>(status >> 8);
  p[7] = static_cast<char>(status);
  put_be32(p + 8, static_cast<std::uint32_t>(body_len));
  put_be32(p + 12, opaque);
  put_be32(p + 16, static_cast<std::uint32_t>(cas >> 32));
  put_be32(p + 20, static_cast<std::uint32_t>(cas));
}

void append_header(std::string& out, std::uint8_t opcode, std::uint16_t status,
                   std::uint32_t opaque, std::uint64_t cas, std::size_t extlen, std::size_t keylen,
                   std::size_t body_len) {
  char h[kHeaderSize];
  encode_header(h, opcode, status, opaque, cas, extlen, keylen, body_len);
  out.append(h, kHeaderSize);
}

void append_response(std::string& out, std::uint8_t opcode, std::uint16_t status,
                     std::uint32_t opaque, std::uint64_t cas, std::string_view extras,
                     std::string_view key, std::string_view value) {
  out.reserve(out.size() + kHeaderSize + extras.size() + key.size() + value.size());
  append_header(out, opcode, status, opaque, cas, extras.size(), key.size(),
                extras.size() + key.size() + value.size());
  out += extras;
  out += key;
  out += value;
}

ParseResult RequestParser::fail(std::uint16_t st, std::string_view message) {
  error_.clear();
  if (st != 0) append_response(error_, opcode_, st, opaque_, 0, {}, {}, message);
  return ParseResult::kError;
}

ParseResult RequestParser::parse(std::string_view buf) {
  if (!header_) {
    if (buf.size() < start_ + kHeaderSize) {
      // A wrong magic is known from the first byte: no need to wait for the header.
      if (buf.size() > start_ && static_cast<unsigned char>(buf[start_]) != kRequestMagic)
        return fail(0, {});
      return ParseResult::kNeedMore;
    }
    const char* h = buf.data() + start_;
    if (static_cast<unsigned char>(h[0]) != kRequestMagic) return fail(0, {});
    opcode_ = static_cast<std::uint8_t>(h[1]);
    keylen_ = be16(h + 2);
    extlen_ = static_cast<std::uint8_t>(h[4]);
    bodylen_ = be32(h + 8);
    opaque_ = be32(h + 12);
    cas_ = be64(h + 16);
    // Checked before a byte of the body is buffered: a bad length never makes us wait for it.
    if (std::size_t{extlen_} + keylen_ > bodylen_ || h[5] != 0) {
      return fail(status::kInvalidArguments, "Invalid arguments");
    }
    if (bodylen_ > limits_.max_value_bytes + kBodySlack) {
      return fail(status::kTooLarge, "Too large.");
    }
    body_ = start_ + kHeaderSize;
    header_ = true;
  }
  if (buf.size() < body_ + bodylen_) return ParseResult::kNeedMore;
  return ParseResult::kDone;
}

void RequestParser::next() noexcept {
  start_ = body_ + bodylen_;
  body_ = 0;
  header_ = false;
  opcode_ = extlen_ = 0;
  keylen_ = 0;
  bodylen_ = 0;
  opaque_ = 0;
  cas_ = 0;
}

void RequestParser::consume(std::size_t n) noexcept {
  start_ -= n;
  if (header_) body_ -= n;
}

}  // namespace chash::proxy::memcache::binary
