// SPDX-License-Identifier: Apache-2.0
// chash-proxy — RESP (Redis serialization protocol) parsers and writers: requests as RESP2
// has them, replies of RESP2 and RESP3 (maps, sets, doubles, booleans, nulls, big numbers,
// verbatim strings, blob errors, push frames, attributes) for clients that said HELLO 3.
//
// Both parsers are resumable state machines over a connection's input buffer (as twemproxy's
// proto/nc_redis.c): a request or reply may arrive in any number of reads, and parse() continues
// where the last call stopped without rescanning what it already accepted. They never copy
// payload bytes: arguments and reply elements are (offset, length) spans into the buffer, so the
// buffer may grow (reallocate) between calls; when the connection drops consumed bytes from the
// front it calls consume(n).
//
// Every size a peer announces is checked *before* any byte of it is buffered: a client that
// announces a 10 GB bulk string gets kError at once (the connection answers and closes), so a
// connection's memory is bounded by ParserLimits, never by what a peer claims.
//
// Example:
//   RequestParser p;
//   std::string buf = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
//   if (p.parse(buf) == ParseResult::kDone) { p.arg(buf, 1) == "k"; p.next(); }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chash::proxy::redis {

enum class ParseResult : std::uint8_t { kNeedMore, kDone, kError };

struct ParserLimits {
  std::size_t max_request_bytes = std::size_t{64} << 20;  // one request (or one reply), all of it
  std::size_t max_args = std::size_t{1} << 20;            // as Redis: 1024*1024 multibulk items
  std::size_t max_inline_bytes = std::size_t{64} << 10;   // as Redis PROTO_INLINE_MAX_SIZE
  std::size_t max_depth = 64;                             // reply array nesting
};

struct Span {
  std::size_t off = 0;
  std::size_t len = 0;
  std::string_view in(std::string_view buf) const noexcept { return buf.substr(off, len); }
};

// Client requests: RESP arrays of bulk strings ("multibulk"), or inline commands
// ("GET k\r\n", as redis-server accepts from telnet). Empty arrays (*0, *-1) and empty inline
// lines are skipped, as redis-server does.
class RequestParser {
 public:
  explicit RequestParser(ParserLimits limits = {}) : limits_(limits) {}

  // Parses the request that starts at start(). `buf` is the connection's buffer: the same bytes
  // as at the previous call (minus what consume() dropped) plus any appended since.
  ParseResult parse(std::string_view buf);

  // After kDone: the arguments (argv[0] is the command name) and the request's bytes.
  std::size_t argc() const noexcept { return args_.size(); }
  std::string_view arg(std::string_view buf, std::size_t i) const noexcept {
    return args_[i].in(decoded_ ? std::string_view(scratch_) : buf);
  }
  const std::vector<Span>& args() const noexcept { return args_; }
  bool is_inline() const noexcept { return inline_; }
  std::size_t start() const noexcept { return start_; }
  std::size_t end() const noexcept { return pos_; }  // one past the request (after kDone)
  // After kError: why, for the client ("Protocol error: ...").
  const std::string& error() const noexcept { return error_; }
  // True when part of a request has been accepted (a read ended mid-request).
  bool in_progress() const noexcept { return state_ != State::kStart || pos_ != start_; }

  // After kDone: the next request starts at end().
  void next() noexcept;
  // The owner dropped the first n bytes of its buffer (n <= start()).
  void consume(std::size_t n) noexcept;

 private:
  enum class State : std::uint8_t { kStart, kBulkLen, kBulkData };
  ParseResult fail(std::string message);
  ParseResult parse_inline(std::string_view buf);
  // An inline line with quotes, split as redis-server splits it (sds.c sdssplitargs) into
  // scratch_; the error when its quotes are unbalanced (or it has too many arguments).
  const char* split_quoted(std::string_view line);

  ParserLimits limits_;
  State state_ = State::kStart;
  std::size_t start_ = 0;  // first byte of the current request
  std::size_t pos_ = 0;    // first byte not yet accepted
  std::size_t expected_args_ = 0;
  std::size_t bulk_len_ = 0;
  bool inline_ = false;
  bool decoded_ = false;  // args_ are spans of scratch_ (a quoted inline request), not of buf
  std::string scratch_;
  std::vector<Span> args_;
  std::string error_;
};

// Backend replies: any RESP2 or RESP3 value, aggregates nested up to max_depth (a map of n
// pairs is 2n elements). With record_elements, the
// top-level elements of an array reply are kept as spans (for merging MGET answers), relative
// to the reply's own first byte: `elements()[i].in(span().in(buf))`, so they stay valid on a
// copy of the reply wherever it sat in the read buffer.
class ReplyParser {
 public:
  explicit ReplyParser(ParserLimits limits = {}) : limits_(limits) {}

  ParseResult parse(std::string_view buf);

  char type() const noexcept {
    return type_;
  }  // the reply's first byte: '+', '-', ':', '$', '*', ...
  std::size_t start() const noexcept { return start_; }
  std::size_t end() const noexcept { return pos_; }
  Span span() const noexcept { return {start_, pos_ - start_}; }
  const std::vector<Span>& elements() const noexcept { return elements_; }  // reply-relative
  // The same, for the caller to swap out (the parser clears it at next()).
  std::vector<Span>& take_elements() noexcept { return elements_; }
  const std::string& error() const noexcept { return error_; }
  bool in_progress() const noexcept { return pos_ != start_ || !stack_.empty(); }

  // Set before the reply's first byte is parsed (applies to the current reply).
  void set_record_elements(bool on) noexcept { record_ = on; }
  void next() noexcept;
  void consume(std::size_t n) noexcept;

 private:
  ParseResult fail(std::string message);
  bool complete_value() noexcept;  // true when the whole reply is complete

  ParserLimits limits_;
  std::size_t start_ = 0;
  std::size_t pos_ = 0;
  std::size_t elem_start_ = 0;
  std::size_t scan_ = 0;        // no '\n' in [pos_, scan_) for the current line
  std::int64_t bulk_len_ = -1;  // >= 0: reading a bulk payload of this size
  char type_ = 0;
  bool record_ = false;
  std::vector<std::int64_t> stack_;  // elements still expected, per open array
  std::vector<Span> elements_;
  std::string error_;
};

// Strict RESP integer: optional '-', 1..19 digits, no '+', no spaces. False on anything else.
bool parse_int(std::string_view text, std::int64_t& out) noexcept;

// ---- Writers ------------------------------------------------------------------------------------
void append_array_header(std::string& out, std::size_t n);
void append_bulk(std::string& out, std::string_view s);
void append_int(std::string& out, std::int64_t v);
void append_status(std::string& out, std::string_view s);  // "+s\r\n"
// "-s\r\n" with CR/LF in s replaced by spaces (an error line must stay one line).
void append_error(std::string& out, std::string_view s);
// The same as a string of its own.
std::string error_text(std::string_view s);
// A whole command as a RESP array of bulk strings.
void append_command(std::string& out, const std::vector<std::string_view>& argv);

}  // namespace chash::proxy::redis
