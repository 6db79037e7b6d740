// SPDX-License-Identifier: Apache-2.0
// chash-proxy — memcached text protocol: request and reply parsers.
//
// Both are resumable state machines over a connection's input buffer (as twemproxy's
// proto/nc_memcache.c): a request or reply may arrive split at any byte, and parse() continues
// where the last call stopped without rescanning. Tokens and data blocks are (offset, length)
// spans into the buffer — nothing is copied — so the buffer may grow between calls; when the
// connection drops consumed bytes from the front it calls consume(n).
//
// The request parser answers what memcached 1.6 answers for malformed requests and keeps the
// connection where memcached keeps it (checked against memcached 1.6.18):
//   unknown command, wrong token count           -> ERROR
//   key over 250 bytes (or with control chars)   -> CLIENT_ERROR bad command line format
//   bad flags/exptime/bytes/cas in a storage cmd -> CLIENT_ERROR bad command line format
//                                                   (the data block is not swallowed: memcached
//                                                   reads it as the next command line)
//   bytes > max_value_bytes                      -> SERVER_ERROR object too large for cache
//                                                   (the data block is swallowed)
//   data block not followed by \r\n              -> CLIENT_ERROR bad data chunk
// and `noreply` silences each of them, as in memcached. Fatal (kError, then close): a command
// line longer than 2048 bytes (get/gets/gat/gats lines: max_get_line) -> "CLIENT_ERROR line too
// long", and the binary protocol's magic byte 0x80 at the start of a request (closed without a
// reply: a connection speaks binary only when its first byte is 0x80, and then it never reaches
// this parser — proto/memcache/binary.h).
//
// Meta commands (mg ms md ma mn me) are checked as memcached 1.6.18's proto_text.c checks them
// before it touches an item: token counts, key length, the flags (_meta_flag_preparse: a flag is
// one letter, each at most once, numeric tokens for N T R F C J D, M with one mode letter, `b`
// a base64 key), and for ms the data length; the error text is memcached's own per command
// (mg/ms name the flag error, md/ma say "invalid or duplicate flag"), and meta errors are never
// silenced by `q`. An ms whose flags are bad, or whose length is over max_value_bytes, has its
// data block swallowed as memcached does. Checks memcached makes later, with the item in hand
// (opaque over 32 bytes, an M mode the command lacks), are left to the server: the request is
// forwarded whole and the server answers (and swallows) exactly as it would directly. A `b` key
// is decoded as memcached decodes it (base64_decode below): the item's key, which routing uses.
//
// Example:
//   RequestParser p;
//   std::string buf = "set k 0 0 1\r\nx\r\n";
//   if (p.parse(buf) == ParseResult::kDone) { p.command() == Command::kSet; p.data(buf) == "x"; }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chash::proxy::memcache {

enum class ParseResult : std::uint8_t { kNeedMore, kDone, kError };

struct Span {
  std::size_t off = 0;
  std::size_t len = 0;
  std::string_view in(std::string_view buf) const noexcept { return buf.substr(off, len); }
};

enum class Command : std::uint8_t {
  kNone,  // the parser answered the request itself: reply() (may be empty with noreply)
  kGet,
  kGets,
  kGat,
  kGats,  // retrievals: keys from first_key()
  kSet,
  kAdd,
  kReplace,
  kAppend,
  kPrepend,
  kCas,  // storage: a data block follows the line
  kDelete,
  kIncr,
  kDecr,
  kTouch,  // one key, one reply line
  kVersion,
  kQuit,
  kUnsupported,  // a memcached command the proxy does not forward (its name is token 0)
  kMetaGet,
  kMetaSet,  // a data block follows the line
  kMetaDelete,
  kMetaArithmetic,
  kMetaDebug,  // me <key> [b]
  kMetaNoop,   // mn
};
bool is_retrieval(Command c) noexcept;
bool is_storage(Command c) noexcept;
// mg ms md ma me (one key each; forwarded whole: request()) — not mn.
bool is_meta_keyed(Command c) noexcept;

// memcached's base64_decode (base64.c, 1.6.18), which is what a `b` key is stored as: bytes
// outside the alphabet are skipped, the rest must be a non-zero multiple of 4, decoding stops
// after the first block with '=' padding (1 or 2; more is an error). Writes at most
// in.size() * 3 / 4 bytes to `out`; returns the decoded length, 0 on an invalid input.
// Example: "Zm9vYmFy" -> "foobar", "Zm9v!YmFy" -> "foobar", "Zg==" -> "f", "Zg=" -> 0.
std::size_t base64_decode(std::string_view in, char* out) noexcept;
// Standard base64 with '=' padding (what memcached's encoder writes).
void base64_encode(std::string_view in, std::string& out);
// A key the classic commands can carry: 1..250 bytes, no space or control character.
bool text_key_ok(std::string_view k) noexcept;

inline constexpr std::size_t kMaxKeyLength = 250;  // memcached's KEY_MAX_LENGTH
inline constexpr std::size_t kMaxLine = 2048;      // memcached closes longer non-get lines

struct RequestLimits {
  std::size_t max_value_bytes = std::size_t{1} << 20;  // memcached -I
  std::size_t max_get_line = std::size_t{1} << 20;     // a get/gets/gat/gats line (its keys)
};

class RequestParser {
 public:
  explicit RequestParser(RequestLimits limits = {}) : limits_(limits) {}

  // Parses the request that starts at start(). `buf` is the connection's buffer: the same bytes
  // as at the previous call (minus what consume() dropped) plus any appended since.
  ParseResult parse(std::string_view buf);

  // After kDone:
  Command command() const noexcept { return command_; }
  std::size_t token_count() const noexcept { return tokens_.size(); }
  std::string_view token(std::string_view buf, std::size_t i) const noexcept {
    return tokens_[i].in(buf);
  }
  // Keys: tokens [first_key(), key_end()). One for storage/delete/incr/decr/touch.
  std::size_t first_key() const noexcept { return first_key_; }
  std::size_t key_end() const noexcept { return key_end_; }
  // Tokens to forward: [0, forward_end()) — without a trailing `noreply` (delete/incr/decr/touch).
  std::size_t forward_end() const noexcept { return forward_end_; }
  // delete ... noreply is forwarded as "delete <key> 0" (this says to append " 0").
  bool forward_zero() const noexcept { return forward_zero_; }
  bool noreply() const noexcept { return noreply_; }
  // A set or ms refused as too large (Command::kNone): memcached unlinks the key's old value
  // before it answers (proto_text.c, "Avoid stale data persisting in cache"), which the proxy
  // does at the key's backend. Its key: meta_key().
  bool unlink() const noexcept { return unlink_; }
  // Storage commands: the line's numbers, validated as memcached does, and the data block.
  std::uint32_t flags() const noexcept { return flags_; }
  std::int32_t exptime() const noexcept { return exptime_; }
  std::uint64_t cas_unique() const noexcept { return cas_; }
  std::string_view data(std::string_view buf) const noexcept {
    return buf.substr(data_off_, bytes_);
  }
  // Meta commands: the whole request as received (line, and for ms its data block), the key
  // the item is stored under (decoded when `b`: a span of the parser's own buffer, valid until
  // the next parse()), and the flags present (first letters of the flag tokens).
  std::string_view request(std::string_view buf) const noexcept {
    return buf.substr(start_, pos_ - start_);
  }
  std::string_view meta_key(std::string_view buf) const noexcept {
    return key_binary_ ? std::string_view(key_buf_, key_len_) : token(buf, 1);
  }
  bool key_binary() const noexcept { return key_binary_; }
  bool has_flag(char f) const noexcept {
    const auto u = static_cast<unsigned char>(f);
    return u >= 64 && u < 128 && ((meta_flags_ >> (u - 64)) & 1) != 0;
  }
  // `q`: the server stays silent on the nominal answer (mg: EN; ms: HD; md: HD/NF; ma: HD).
  bool quiet() const noexcept { return has_flag('q'); }
  // kNone: the reply to send ("" when noreply silenced it).
  std::string_view reply() const noexcept { return reply_; }
  std::size_t start() const noexcept { return start_; }
  std::size_t end() const noexcept { return pos_; }
  // After kError: what to answer before closing ("" = close silently).
  std::string_view error() const noexcept { return reply_; }

  // After kDone: the next request starts at end().
  void next() noexcept;
  // The owner dropped the first n bytes of its buffer (n <= start()).
  void consume(std::size_t n) noexcept;

 private:
  enum class State : std::uint8_t { kLine, kData, kSwallow };
  ParseResult done_local(std::string_view reply, bool silenced_by_noreply = true);
  ParseResult interpret(std::string_view buf);
  ParseResult storage(std::string_view buf, Command c);
  ParseResult meta(std::string_view buf, Command c);
  // memcached's _meta_flag_preparse over tokens [first, n): "" when they are good, else the
  // error memcached names. Decodes a `b` key into key_buf_.
  std::string_view meta_flags(std::string_view buf, std::size_t first);
  bool keys_ok(std::string_view buf) const noexcept;
  std::size_t line_limit(std::string_view buf) const noexcept;

  RequestLimits limits_;
  State state_ = State::kLine;
  std::size_t start_ = 0;  // first byte of the current request
  std::size_t pos_ = 0;    // kLine: no '\n' in [start_, pos_); else one past the request
  std::size_t data_off_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t swallow_ = 0;  // kSwallow: bytes still to drop
  Command command_ = Command::kNone;
  std::vector<Span> tokens_;
  std::size_t first_key_ = 0, key_end_ = 0, forward_end_ = 0;
  bool noreply_ = false;
  bool unlink_ = false;
  bool forward_zero_ = false;
  std::uint32_t flags_ = 0;
  std::int32_t exptime_ = 0;
  std::uint64_t cas_ = 0;
  std::string_view reply_;  // static text
  // Meta commands: flag letters seen ('@'..DEL as bits 0..63), the decoded `b` key.
  std::uint64_t meta_flags_ = 0;
  bool key_binary_ = false;
  std::size_t key_len_ = 0;
  char key_buf_[kMaxKeyLength] = {};
};

// Backend replies. A retrieval (expect_values) is a stream of VALUE blocks then END, or one
// error line; parse() returns each VALUE block and the END as separate elements. Any other
// request's reply is one line (STORED, NOT_STORED, EXISTS, NOT_FOUND, DELETED, TOUCHED, a
// number, ERROR, CLIENT_ERROR ..., SERVER_ERROR ..., VERSION ...).
enum class ReplyKind : std::uint8_t { kValue, kEnd, kLine };

class ReplyParser {
 public:
  explicit ReplyParser(std::size_t max_value_bytes = std::size_t{64} << 20)
      : max_value_(max_value_bytes) {}

  // Set before the first byte of each reply.
  void expect_values(bool on) noexcept { values_ = on; }
  // Meta command replies: HD / EN / NS / EX / NF / MN lines (each may carry return flags,
  // e.g. "EN O12 kfoo"), "ME <key> <info>" (me), and "VA <size> <flags>*" with its data block,
  // each returned as one kLine (its span covers the data block too).
  void expect_meta(bool on) noexcept { meta_ = on; }
  ParseResult parse(std::string_view buf);

  // After kDone: the element (with its CRLFs), its kind, and for kValue the key.
  ReplyKind kind() const noexcept { return kind_; }
  Span span() const noexcept { return {start_, pos_ - start_}; }
  Span key() const noexcept { return key_; }
  // kLine: an error line (ERROR / CLIENT_ERROR / SERVER_ERROR) — for a retrieval, its whole reply.
  bool is_error() const noexcept { return error_line_; }
  std::size_t start() const noexcept { return start_; }
  const std::string& error() const noexcept { return error_; }

  void next() noexcept;
  void consume(std::size_t n) noexcept;

 private:
  ParseResult fail(std::string message);

  std::size_t max_value_;
  bool values_ = false;
  bool meta_ = false;
  bool meta_value_ = false;  // the data block being read is a VA reply's
  bool in_data_ = false;
  std::size_t start_ = 0;
  std::size_t pos_ = 0;  // no '\n' in [start_, pos_) while scanning a line
  std::size_t data_end_ = 0;
  ReplyKind kind_ = ReplyKind::kLine;
  bool error_line_ = false;
  Span key_;
  std::string error_;
};

// Strict decimal numbers (digits only; a leading '-' for parse_i64). False on anything else.
bool parse_u64(std::string_view s, std::uint64_t& out) noexcept;
bool parse_i64(std::string_view s, std::int64_t& out) noexcept;

}  // namespace chash::proxy::memcache
