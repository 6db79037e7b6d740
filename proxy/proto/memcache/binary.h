// SPDX-License-Identifier: Apache-2.0
// chash-proxy — memcached's binary protocol: request parser and response encoder.
//
// A packet is a 24-byte header (all numbers big-endian), then `extlen` bytes of extras, `keylen`
// bytes of key and the value: the rest of `bodylen` (memcached's protocol_binary.h, "Binary
// Protocol Revamped"):
//   request   magic 0x80 | opcode | keylen:2 | extlen | datatype | vbucket:2 | bodylen:4 |
//             opaque:4 | cas:8
//   response  magic 0x81 | opcode | keylen:2 | extlen | datatype | status:2  | bodylen:4 |
//             opaque:4 | cas:8
// The parser is resumable like the text one (a packet may arrive split at any byte) and copies
// nothing: extras, key and value are spans of the connection's buffer. It checks the header
// before buffering a body, as memcached does, and fails (kError: answer error(), then close):
//   a magic other than 0x80                       -> closed without a reply (memcached too)
//   extlen + keylen > bodylen, datatype != 0      -> status 0x0004 Invalid arguments
//   bodylen over limits.max_value_bytes + 512     -> status 0x0003 Too large (never buffered)
// Opcodes are not judged here: the session answers an unknown one with 0x0081.
//
// Example (a GET of "k", opaque 7):
//   80 00 00 01  00 00 00 00  00 00 00 01  00 00 00 07  00 00 00 00 00 00 00 00  6b
//   -> kDone, opcode() == 0x00, key(buf) == "k", opaque() == 7.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/memcache/protocol.h"

namespace chash::proxy::memcache::binary {

inline constexpr std::size_t kHeaderSize = 24;
inline constexpr std::uint8_t kRequestMagic = 0x80;
inline constexpr std::uint8_t kResponseMagic = 0x81;
// Room in a body for extras (at most 20: incr/decr) and a key (at most 250) beside a value of
// max_value_bytes; a body over max_value_bytes + kBodySlack is refused before it is read.
inline constexpr std::size_t kBodySlack = 512;

namespace op {
inline constexpr std::uint8_t kGet = 0x00, kSet = 0x01, kAdd = 0x02, kReplace = 0x03,
                              kDelete = 0x04, kIncrement = 0x05, kDecrement = 0x06, kQuit = 0x07,
                              kFlush = 0x08, kGetQ = 0x09, kNoop = 0x0a, kVersion = 0x0b,
                              kGetK = 0x0c, kGetKQ = 0x0d, kAppend = 0x0e, kPrepend = 0x0f,
                              kStat = 0x10, kSetQ = 0x11, kAddQ = 0x12, kReplaceQ = 0x13,
                              kDeleteQ = 0x14, kIncrementQ = 0x15, kDecrementQ = 0x16,
                              kQuitQ = 0x17, kFlushQ = 0x18, kAppendQ = 0x19, kPrependQ = 0x1a,
                              kVerbosity = 0x1b, kTouch = 0x1c, kGat = 0x1d, kGatQ = 0x1e,
                              kSaslListMechs = 0x20, kSaslAuth = 0x21, kSaslStep = 0x22,
                              kGatK = 0x23, kGatKQ = 0x24;
}  // namespace op

namespace status {
inline constexpr std::uint16_t kSuccess = 0x0000, kKeyNotFound = 0x0001, kKeyExists = 0x0002,
                               kTooLarge = 0x0003, kInvalidArguments = 0x0004, kNotStored = 0x0005,
                               kNonNumeric = 0x0006, kAuthError = 0x0020, kUnknownCommand = 0x0081,
                               kOutOfMemory = 0x0082, kNotSupported = 0x0083,
                               kInternalError = 0x0084;
}  // namespace status

// The quiet form of an opcode (getq, setq, ...) answers nothing on its nominal outcome.
bool is_quiet(std::uint8_t opcode) noexcept;
// The same opcode without its quiet bit: kGetQ -> kGet, kSetQ -> kSet, ... (others unchanged).
std::uint8_t loud(std::uint8_t opcode) noexcept;

// Big-endian reads of header fields.
inline std::uint16_t be16(const char* p) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::uint16_t>((u[0] << 8) | u[1]);
}
inline std::uint32_t be32(const char* p) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         u[3];
}
inline std::uint64_t be64(const char* p) noexcept {
  return (std::uint64_t{be32(p)} << 32) | be32(p + 4);
}

class RequestParser {
 public:
  explicit RequestParser(RequestLimits limits = {}) : limits_(limits) {}

  // Parses the packet that starts at start() (same contract as memcache::RequestParser).
  ParseResult parse(std::string_view buf);

  // After kDone:
  std::uint8_t opcode() const noexcept { return opcode_; }
  std::uint32_t opaque() const noexcept { return opaque_; }
  std::uint64_t cas() const noexcept { return cas_; }
  std::string_view extras(std::string_view buf) const noexcept {
    return buf.substr(body_, extlen_);
  }
  std::string_view key(std::string_view buf) const noexcept {
    return buf.substr(body_ + extlen_, keylen_);
  }
  std::string_view value(std::string_view buf) const noexcept {
    return buf.substr(body_ + extlen_ + keylen_, bodylen_ - extlen_ - keylen_);
  }
  std::size_t start() const noexcept { return start_; }
  std::size_t end() const noexcept { return body_ + bodylen_; }
  // After kError: the response to send before closing ("" = close silently).
  std::string_view error() const noexcept { return error_; }

  void next() noexcept;
  void consume(std::size_t n) noexcept;

 private:
  ParseResult fail(std::uint16_t status, std::string_view message);

  RequestLimits limits_;
  std::size_t start_ = 0;
  std::size_t body_ = 0;  // 0 until the header is read
  bool header_ = false;
  std::uint8_t opcode_ = 0;
  std::uint8_t extlen_ = 0;
  std::uint16_t keylen_ = 0;
  std::uint32_t bodylen_ = 0;
  std::uint32_t opaque_ = 0;
  std::uint64_t cas_ = 0;
  std::string error_;
};

// Appends one response packet: header, then extras, key and value.
void append_response(std::string& out, std::uint8_t opcode, std::uint16_t status,
                     std::uint32_t opaque, std::uint64_t cas, std::string_view extras,
                     std::string_view key, std::string_view value);
// The 24-byte header of a response whose body (of `body_len` bytes) the caller appends; the
// first form writes it at `p` (kHeaderSize bytes), for replies built without an allocation.
void encode_header(char* p, std::uint8_t opcode, std::uint16_t status, std::uint32_t opaque,
                   std::uint64_t cas, std::size_t extlen, std::size_t keylen,
                   std::size_t body_len) noexcept;
void append_header(std::string& out, std::uint8_t opcode, std::uint16_t status,
                   std::uint32_t opaque, std::uint64_t cas, std::size_t extlen, std::size_t keylen,
                   std::size_t body_len);
void put_be32(char* p, std::uint32_t v) noexcept;
void append_be32(std::string& out, std::uint32_t v);
void append_be64(std::string& out, std::uint64_t v);

}  // namespace chash::proxy::memcache::binary
