// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/resp.h"

#include <charconv>
#include <cstring>

namespace chash::proxy::redis {

namespace {

// The longest "*<n>\r\n" / "$<n>\r\n" header we accept: a sign, 19 digits and CRLF.
constexpr std::size_t kMaxHeaderBytes = 32;
// redis-server's proto-max-bulk-len default: a longer bulk is "invalid bulk length" there,
// whatever the proxy's own max_request_bytes says.
constexpr std::int64_t kProtoMaxBulkLen = std::int64_t{512} << 20;

// Finds the '\n' of a CRLF-terminated line starting at `from`; npos when not (yet) there.
std::size_t find_lf(std::string_view buf, std::size_t from) noexcept {
  if (from >= buf.size()) return std::string_view::npos;
  const void* p = std::memchr(buf.data() + from, '\n', buf.size() - from);
  if (p == nullptr) return std::string_view::npos;
  return static_cast<std::size_t>(static_cast<const char*>(p) - buf.data());
}

std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 16)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace

bool parse_int(std::string_view text, std::int64_t& out) noexcept {
  bool neg = false;
  if (!text.empty() && text.front() == '-') {
    neg = true;
    text.remove_prefix(1);
  }
  if (text.empty() || text.size() > 19) return false;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > static_cast<std::uint64_t>(INT64_MAX)) return false;
  out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

// ---- RequestParser ------------------------------------------------------------------------------

ParseResult RequestParser::fail(std::string message) {
  error_ = "Protocol error: " + std::move(message);
  return ParseResult::kError;
}

void RequestParser::next() noexcept {
  start_ = pos_;
  state_ = State::kStart;
  args_.clear();
  inline_ = false;
  decoded_ = false;
}

void RequestParser::consume(std::size_t n) noexcept {
  start_ -= n;
  pos_ -= n;
  if (!decoded_) {
    for (Span& s : args_) s.off -= n;
  }
}

namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool split_space(char c) noexcept {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == '\0';
}

}  // namespace

const char* RequestParser::split_quoted(std::string_view line) {
  scratch_.clear();
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && split_space(line[i])) ++i;
    if (i >= line.size()) return nullptr;
    const std::size_t begin = scratch_.size();
    bool in_double = false, in_single = false;
    for (;;) {
      if (in_double) {
        if (i >= line.size()) return "unbalanced quotes in request";  // closing quote missing
        if (line[i] == '\\' && i + 3 < line.size() && line[i + 1] == 'x' &&
            hex_digit(line[i + 2]) >= 0 && hex_digit(line[i + 3]) >= 0) {
          scratch_ += static_cast<char>(hex_digit(line[i + 2]) * 16 + hex_digit(line[i + 3]));
          i += 4;
          continue;
        }
        if (line[i] == '\\' && i + 1 < line.size()) {
          const char e = line[i + 1];
          scratch_ += e == 'n'   ? '\n'
                      : e == 'r' ? '\r'
                      : e == 't' ? '\t'
                      : e == 'b' ? '\b'
                      : e == 'a' ? '\a'
                                 : e;
          i += 2;
          continue;
        }
        if (line[i] == '"') {
          // The closing quote must end the argument.
          if (i + 1 < line.size() && !split_space(line[i + 1]))
            return "unbalanced quotes in request";
          ++i;
          break;
        }
        scratch_ += line[i++];
      } else if (in_single) {
        if (i >= line.size()) return "unbalanced quotes in request";
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '\'') {
          scratch_ += '\'';
          i += 2;
          continue;
        }
        if (line[i] == '\'') {
          if (i + 1 < line.size() && !split_space(line[i + 1]))
            return "unbalanced quotes in request";
          ++i;
          break;
        }
        scratch_ += line[i++];
      } else {
        if (i >= line.size() || split_space(line[i])) break;
        if (line[i] == '"') in_double = true;
        else if (line[i] == '\'') in_single = true;
        else scratch_ += line[i];
        ++i;
      }
    }
    if (args_.size() >= limits_.max_args) return "too many arguments";
    args_.push_back({begin, scratch_.size() - begin});
  }
}

ParseResult RequestParser::parse_inline(std::string_view buf) {
  const std::size_t lf = find_lf(buf, pos_);
  if (lf == std::string_view::npos) {
    if (buf.size() - pos_ > limits_.max_inline_bytes) return fail("too big inline request");
    return ParseResult::kNeedMore;
  }
  if (lf - pos_ > limits_.max_inline_bytes) return fail("too big inline request");
  std::size_t line_end = lf;
  if (line_end > pos_ && buf[line_end - 1] == '\r') --line_end;
  const std::string_view line = buf.substr(pos_, line_end - pos_);
  if (line.find_first_of("\"'") != std::string_view::npos) {
    // Quoted arguments, as redis-server reads them (and refuses unbalanced ones in its words).
    args_.clear();
    if (const char* error = split_quoted(line)) {
      args_.clear();
      return fail(error);
    }
    decoded_ = true;
    pos_ = lf + 1;
    inline_ = true;
    return ParseResult::kDone;
  }
  // Arguments separated by spaces/tabs (the common case: spans of the buffer, no copy).
  std::size_t i = pos_;
  while (i < line_end) {
    while (i < line_end && (buf[i] == ' ' || buf[i] == '\t')) ++i;
    const std::size_t b = i;
    while (i < line_end && buf[i] != ' ' && buf[i] != '\t') ++i;
    if (i > b) {
      if (args_.size() >= limits_.max_args) return fail("too many arguments");
      args_.push_back({b, i - b});
    }
  }
  pos_ = lf + 1;
  inline_ = true;
  return ParseResult::kDone;
}

ParseResult RequestParser::parse(std::string_view buf) {
  for (;;) {
    switch (state_) {
      case State::kStart: {
        if (pos_ >= buf.size()) return ParseResult::kNeedMore;
        if (buf[pos_] != '*') {
          const ParseResult r = parse_inline(buf);
          if (r == ParseResult::kDone && args_.empty()) {  // empty line: skip it
            next();
            continue;
          }
          return r;
        }
        const std::size_t lf = find_lf(buf, pos_);
        if (lf == std::string_view::npos) {
          if (buf.size() - pos_ > kMaxHeaderBytes) return fail("invalid multibulk length");
          return ParseResult::kNeedMore;
        }
        std::int64_t n = 0;
        if (lf - pos_ > kMaxHeaderBytes || lf < pos_ + 2 || buf[lf - 1] != '\r' ||
            !parse_int(buf.substr(pos_ + 1, lf - 1 - (pos_ + 1)), n)) {
          return fail("invalid multibulk length");
        }
        if (n > 0 && static_cast<std::uint64_t>(n) > limits_.max_args) {
          return fail("invalid multibulk length");
        }
        pos_ = lf + 1;
        if (n <= 0) {  // *0 and *-1: nothing to do, as redis-server
          start_ = pos_;
          continue;
        }
        expected_args_ = static_cast<std::size_t>(n);
        args_.reserve(std::min<std::size_t>(expected_args_, 64));
        state_ = State::kBulkLen;
        continue;
      }
      case State::kBulkLen: {
        if (pos_ >= buf.size()) return ParseResult::kNeedMore;
        if (buf[pos_] != '$')
          return fail("expected '$', got '" + printable(buf.substr(pos_, 1)) + "'");
        const std::size_t lf = find_lf(buf, pos_);
        if (lf == std::string_view::npos) {
          if (buf.size() - pos_ > kMaxHeaderBytes) return fail("invalid bulk length");
          return ParseResult::kNeedMore;
        }
        std::int64_t n = 0;
        if (lf - pos_ > kMaxHeaderBytes || lf < pos_ + 2 || buf[lf - 1] != '\r' ||
            !parse_int(buf.substr(pos_ + 1, lf - 1 - (pos_ + 1)), n) || n < 0 ||
            n > kProtoMaxBulkLen) {
          return fail("invalid bulk length");
        }
        // Refuse before buffering: the whole request must fit max_request_bytes.
        const std::size_t used = lf + 1 - start_;
        if (static_cast<std::uint64_t>(n) > limits_.max_request_bytes ||
            used + static_cast<std::size_t>(n) + 2 > limits_.max_request_bytes) {
          return fail("request larger than " + std::to_string(limits_.max_request_bytes) +
                      " bytes");
        }
        bulk_len_ = static_cast<std::size_t>(n);
        pos_ = lf + 1;
        state_ = State::kBulkData;
        continue;
      }
      case State::kBulkData: {
        if (buf.size() - pos_ < bulk_len_ + 2) return ParseResult::kNeedMore;
        if (buf[pos_ + bulk_len_] != '\r' || buf[pos_ + bulk_len_ + 1] != '\n') {
          return fail("bulk string not followed by CRLF");
        }
        args_.push_back({pos_, bulk_len_});
        pos_ += bulk_len_ + 2;
        if (args_.size() == expected_args_) {
          state_ = State::kStart;
          return ParseResult::kDone;
        }
        state_ = State::kBulkLen;
        continue;
      }
    }
  }
}

// ---- ReplyParser --------------------------------------------------------------------------------

ParseResult ReplyParser::fail(std::string message) {
  error_ = "invalid reply: " + std::move(message);
  return ParseResult::kError;
}

void ReplyParser::next() noexcept {
  start_ = pos_;
  scan_ = pos_;
  bulk_len_ = -1;
  type_ = 0;
  record_ = false;
  stack_.clear();
  elements_.clear();
}

void ReplyParser::consume(std::size_t n) noexcept {
  start_ -= n;
  pos_ -= n;
  scan_ -= n;
  elem_start_ -= n;
}

bool ReplyParser::complete_value() noexcept {
  for (;;) {
    if (stack_.empty()) return true;
    if (stack_.size() == 1 && record_)
      elements_.push_back({elem_start_ - start_, pos_ - elem_start_});
    if (--stack_.back() > 0) return false;
    stack_.pop_back();  // an array is complete: it is one value of its parent
  }
}

ParseResult ReplyParser::parse(std::string_view buf) {
  for (;;) {
    if (bulk_len_ >= 0) {
      const auto need = static_cast<std::size_t>(bulk_len_) + 2;
      if (buf.size() - pos_ < need) return ParseResult::kNeedMore;
      if (buf[pos_ + need - 2] != '\r' || buf[pos_ + need - 1] != '\n') {
        return fail("bulk string not followed by CRLF");
      }
      pos_ += need;
      scan_ = pos_;
      bulk_len_ = -1;
      if (complete_value()) return ParseResult::kDone;
      continue;
    }
    if (pos_ >= buf.size()) return ParseResult::kNeedMore;
    if (stack_.size() == 1) elem_start_ = pos_;
    const std::size_t lf = find_lf(buf, std::max(scan_, pos_));
    if (lf == std::string_view::npos) {
      scan_ = buf.size();
      if (buf.size() - start_ > limits_.max_request_bytes) return fail("reply too large");
      return ParseResult::kNeedMore;
    }
    if (lf < pos_ + 2 || buf[lf - 1] != '\r') return fail("line not terminated by CRLF");
    const char t = buf[pos_];
    if (pos_ == start_) type_ = t;
    const std::string_view body = buf.substr(pos_ + 1, lf - 1 - (pos_ + 1));
    pos_ = lf + 1;
    scan_ = pos_;
    switch (t) {
      case '+':
      case '-':
      case ',':  // RESP3 double (inf, nan, 1.5e3: passed on as the server wrote it)
        break;
      case ':': {
        std::int64_t v = 0;
        if (!parse_int(body, v)) return fail("bad integer");
        break;
      }
      case '(':  // RESP3 big number
        if (body.empty() || body.find_first_not_of("-0123456789") != std::string_view::npos)
          return fail("bad big number");
        break;
      case '_':  // RESP3 null
        if (!body.empty()) return fail("bad null");
        break;
      case '#':  // RESP3 boolean
        if (body != "t" && body != "f") return fail("bad boolean");
        break;
      case '$':
      case '=':    // RESP3 verbatim string
      case '!': {  // RESP3 blob error
        std::int64_t n = 0;
        if (!parse_int(body, n) || n < (t == '$' ? -1 : 0)) return fail("bad bulk length");
        if (n >= 0) {
          if (static_cast<std::uint64_t>(n) + (pos_ - start_) + 2 > limits_.max_request_bytes) {
            return fail("reply too large");
          }
          bulk_len_ = n;
          continue;
        }
        break;
      }
      case '*':
      case '~':    // RESP3 set
      case '>':    // RESP3 push
      case '%':    // RESP3 map: n pairs
      case '|': {  // RESP3 attribute: n pairs, then the value they describe (one value in all)
        std::int64_t n = 0;
        if (!parse_int(body, n) || n < (t == '*' ? -1 : 0)) return fail("bad array length");
        if (n > static_cast<std::int64_t>(limits_.max_request_bytes))
          return fail("reply too large");
        if (t == '%' || t == '|') n *= 2;
        if (t == '|') n += 1;
        if (n > 0) {
          if (stack_.size() >= limits_.max_depth) return fail("arrays nested too deep");
          stack_.push_back(n);
          if (stack_.size() == 1 && record_) {
            elements_.reserve(std::min<std::size_t>(static_cast<std::size_t>(n), 1024));
          }
          continue;
        }
        break;
      }
      default:
        return fail("unexpected byte '" + printable(std::string_view(&t, 1)) + "'");
    }
    if (complete_value()) return ParseResult::kDone;
  }
}

// ---- Writers ------------------------------------------------------------------------------------

void append_array_header(std::string& out, std::size_t n) {
  out += '*';
  out += std::to_string(n);
  out += "\r\n";
}

void append_bulk(std::string& out, std::string_view s) {
  out += '$';
  out += std::to_string(s.size());
  out += "\r\n";
  out += s;
  out += "\r\n";
}

void append_int(std::string& out, std::int64_t v) {
  out += ':';
  out += std::to_string(v);
  out += "\r\n";
}

void append_status(std::string& out, std::string_view s) {
  out += '+';
  out += s;
  out += "\r\n";
}

void append_error(std::string& out, std::string_view s) {
  out += '-';
  for (const char c : s) out += (c == '\r' || c == '\n') ? ' ' : c;
  out += "\r\n";
}

std::string error_text(std::string_view s) {
  std::string out;
  append_error(out, s);
  return out;
}

void append_command(std::string& out, const std::vector<std::string_view>& argv) {
  // One resize and then plain stores: a split MGET/DEL/MSET of 10,000 keys writes 10,000 bulk
  // strings here, and appending each in five pieces (with std::to_string) was a sixth of the
  // proxy's CPU time on that request (perf, make bench-proxy bigkeys).
  std::size_t total = 1 + 20 + 2;
  for (const auto a : argv) total += 1 + 20 + 2 + a.size() + 2;
  const std::size_t start = out.size();
  out.resize(start + total);
  char* p = out.data() + start;
  auto header = [&p](char type, std::size_t n) {
    *p++ = type;
    p = std::to_chars(p, p + 20, n).ptr;
    *p++ = '\r';
    *p++ = '\n';
  };
  header('*', argv.size());
  for (const auto a : argv) {
    header('$', a.size());
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    p += a.size();
    *p++ = '\r';
    *p++ = '\n';
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
}

}  // namespace chash::proxy::redis
