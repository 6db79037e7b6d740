// SPDX-License-Identifier: Apache-2.0
#include "proto/memcache/protocol.h"

#include <algorithm>
#include <limits>

namespace chash::proxy::memcache {

namespace {

constexpr std::string_view kError = "ERROR\r\n";
constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format\r\n";
constexpr std::size_t kMaxReplyLine = 8192;  // a backend's status or error line

bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.substr(0, p.size()) == p;
}

// A valid key: 1..250 bytes, no control characters (memcached's own tokenizer would accept
// them; they break line-based clients and logs, so the proxy refuses them).
bool key_ok(std::string_view k) noexcept {
  if (k.empty() || k.size() > kMaxKeyLength) return false;
  for (const char c : k) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
  }
  return true;
}

bool is_status_line(std::string_view l) noexcept {
  if (l == "STORED" || l == "NOT_STORED" || l == "EXISTS" || l == "NOT_FOUND" || l == "DELETED" ||
      l == "TOUCHED" || starts_with(l, "VERSION ")) {
    return true;
  }
  std::uint64_t v = 0;
  return parse_u64(l, v);  // incr / decr
}

// HD EN NS EX NF MN, alone or with return flags ("HD O12 c5"), and me's "ME <key> ...".
bool is_meta_status(std::string_view l) noexcept {
  if (l.size() < 2 || (l.size() > 2 && l[2] != ' ')) return false;
  const std::string_view code = l.substr(0, 2);
  return code == "HD" || code == "EN" || code == "NS" || code == "EX" || code == "NF" ||
         code == "MN" || (code == "ME" && l.size() > 3);
}

bool is_error_line(std::string_view l) noexcept {
  return l == "ERROR" || starts_with(l, "ERROR ") || starts_with(l, "CLIENT_ERROR ") ||
         starts_with(l, "SERVER_ERROR ");
}

// memcached's numeric flag tokens go through strtol/strtoul/strtoull (util.c safe_strto*):
// leading white space, a sign, at least one digit, no overflow of 64 bits, then the end of the
// token or white space. Values are not range-checked further (safe_strtol truncates to 32
// bits); the proxy only needs the verdict, and the server reads the same digits.
bool c_space(char c) noexcept { return c == ' ' || (c >= '\t' && c <= '\r'); }

enum class Num : std::uint8_t { kSigned, kUnsigned32, kUnsigned64 };

bool c_number(std::string_view s, Num kind, std::int64_t* out = nullptr) noexcept {
  std::size_t i = 0;
  while (i < s.size() && c_space(s[i])) ++i;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  const std::size_t digits = i;
  std::uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const auto d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;  // ERANGE
    v = v * 10 + d;
  }
  if (i == digits) return false;  // no digits: str == endptr
  if (i < s.size() && !c_space(s[i])) return false;
  constexpr std::uint64_t kTop = std::uint64_t{1} << 63;
  if (kind == Num::kSigned) {
    if (neg ? v > kTop : v >= kTop) return false;  // strtol's ERANGE
    if (out != nullptr)
      *out = neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
    return true;
  }
  // strtoul negates in unsigned arithmetic; safe_strtoul(l) refuses a '-' whose result reads
  // as negative when signed ("-1"), and lets "-0" through.
  return !neg || (0 - v) < kTop;
}

// The line [start, nl) without a trailing '\r' (memcached accepts "\n" alone).
std::string_view line_of(std::string_view buf, std::size_t start, std::size_t nl) noexcept {
  std::size_t e = nl;
  if (e > start && buf[e - 1] == '\r') --e;
  return buf.substr(start, e - start);
}

}  // namespace

bool parse_u64(std::string_view s, std::uint64_t& out) noexcept {
  if (s.empty() || s.size() > 20) return false;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

bool parse_i64(std::string_view s, std::int64_t& out) noexcept {
  const bool neg = !s.empty() && s[0] == '-';
  std::uint64_t v = 0;
  if (!parse_u64(neg ? s.substr(1) : s, v)) return false;
  if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
  out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

bool is_retrieval(Command c) noexcept {
  return c == Command::kGet || c == Command::kGets || c == Command::kGat || c == Command::kGats;
}

bool is_storage(Command c) noexcept {
  return c == Command::kSet || c == Command::kAdd || c == Command::kReplace ||
         c == Command::kAppend || c == Command::kPrepend || c == Command::kCas;
}

bool is_meta_keyed(Command c) noexcept {
  return c == Command::kMetaGet || c == Command::kMetaSet || c == Command::kMetaDelete ||
         c == Command::kMetaArithmetic || c == Command::kMetaDebug;
}

std::size_t base64_decode(std::string_view in, char* out) noexcept {
  // Value of a base64 character, 64 for '=' (a zero that counts as padding), -1 outside.
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    if (c == '=') return 64;
    return -1;
  };
  std::size_t count = 0;
  for (const char c : in) count += value(c) >= 0 ? 1 : 0;
  if (count == 0 || count % 4 != 0) return 0;
  std::size_t n = 0;
  unsigned block[4];
  std::size_t k = 0;
  int pad = 0;
  for (const char c : in) {
    const int v = value(c);
    if (v < 0) continue;
    if (v == 64) ++pad;
    block[k++] = v == 64 ? 0 : static_cast<unsigned>(v);
    if (k < 4) continue;
    out[n++] = static_cast<char>((block[0] << 2) | (block[1] >> 4));
    out[n++] = static_cast<char>((block[1] << 4) | (block[2] >> 2));
    out[n++] = static_cast<char>((block[2] << 6) | block[3]);
    k = 0;
    if (pad > 0) {
      if (pad > 2) return 0;  // "invalid padding"
      n -= static_cast<std::size_t>(pad);
      break;  // what follows a padded block is ignored, as memcached does
    }
  }
  return n;
}

void base64_encode(std::string_view in, std::string& out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const auto a = static_cast<unsigned char>(in[i]), b = static_cast<unsigned char>(in[i + 1]),
               c = static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[a >> 2];
    out += kAlphabet[((a & 3) << 4) | (b >> 4)];
    out += kAlphabet[((b & 15) << 2) | (c >> 6)];
    out += kAlphabet[c & 63];
  }
  if (i < in.size()) {
    const auto a = static_cast<unsigned char>(in[i]);
    const unsigned b = i + 1 < in.size() ? static_cast<unsigned char>(in[i + 1]) : 0;
    out += kAlphabet[a >> 2];
    out += kAlphabet[((a & 3) << 4) | (b >> 4)];
    out += i + 1 < in.size() ? kAlphabet[(b & 15) << 2] : '=';
    out += '=';
  }
}

bool text_key_ok(std::string_view k) noexcept { return key_ok(k); }

// ---- RequestParser ------------------------------------------------------------------------------

// memcached lets only get/gets lines grow past 2048 bytes (a large multiget), looking at most
// 100 leading spaces for the command; gat/gats are allowed too. Decided from the first bytes
// only, so the verdict never depends on how the line was split.
std::size_t RequestParser::line_limit(std::string_view buf) const noexcept {
  std::size_t i = start_;
  while (i < buf.size() && i - start_ < 100 && buf[i] == ' ') ++i;
  const std::string_view head = buf.substr(i, 5);
  if (starts_with(head, "get ") || starts_with(head, "gets ") || starts_with(head, "gat ") ||
      starts_with(head, "gats ")) {
    return std::max(kMaxLine, limits_.max_get_line);
  }
  return kMaxLine;
}

ParseResult RequestParser::parse(std::string_view buf) {
  for (;;) {
    switch (state_) {
      case State::kSwallow: {
        const auto take =
            static_cast<std::size_t>(std::min<std::uint64_t>(buf.size() - pos_, swallow_));
        pos_ += take;
        start_ = pos_;  // swallowed bytes are consumed as they come: nothing is buffered
        swallow_ -= take;
        if (swallow_ > 0) return ParseResult::kNeedMore;
        state_ = State::kLine;
        continue;
      }
      case State::kData: {
        const std::size_t need = data_off_ + bytes_ + 2;
        if (buf.size() < need) return ParseResult::kNeedMore;
        pos_ = need;
        if (buf[need - 2] != '\r' || buf[need - 1] != '\n')
          return done_local("CLIENT_ERROR bad data chunk\r\n");
        return ParseResult::kDone;
      }
      case State::kLine: {
        // The binary protocol's request magic inside a text connection (the session picks the
        // binary parser from a connection's first byte, as memcached does): closed.
        if (pos_ == start_ && pos_ < buf.size() && static_cast<unsigned char>(buf[pos_]) == 0x80) {
          reply_ = {};
          return ParseResult::kError;
        }
        const std::size_t nl = buf.find('\n', pos_);
        const std::size_t len = (nl == std::string_view::npos ? buf.size() : nl) - start_;
        if (len > kMaxLine && len > line_limit(buf)) {
          reply_ = "CLIENT_ERROR line too long\r\n";
          return ParseResult::kError;
        }
        if (nl == std::string_view::npos) {
          pos_ = buf.size();
          return ParseResult::kNeedMore;
        }
        const std::string_view line = line_of(buf, start_, nl);
        pos_ = nl + 1;
        tokens_.clear();
        for (std::size_t i = 0; i < line.size();) {
          while (i < line.size() && line[i] == ' ') ++i;
          const std::size_t j = std::min(line.find(' ', i), line.size());
          if (j > i) tokens_.push_back({start_ + i, j - i});
          i = j;
        }
        const ParseResult r = interpret(buf);
        if (state_ == State::kData) continue;
        return r;
      }
    }
  }
}

ParseResult RequestParser::done_local(std::string_view reply, bool silenced_by_noreply) {
  command_ = Command::kNone;
  reply_ = silenced_by_noreply && noreply_ ? std::string_view() : reply;
  return ParseResult::kDone;
}

bool RequestParser::keys_ok(std::string_view buf) const noexcept {
  for (std::size_t i = first_key_; i < key_end_; ++i) {
    if (!key_ok(token(buf, i))) return false;
  }
  return true;
}

ParseResult RequestParser::interpret(std::string_view buf) {
  noreply_ = false;
  forward_zero_ = false;
  first_key_ = key_end_ = forward_end_ = 0;
  const std::size_t n = tokens_.size();
  if (n == 0) return done_local(kError, false);
  const std::string_view name = token(buf, 0);
  const bool last_noreply = token(buf, n - 1) == "noreply";
  // One key, a few arguments, an optional `noreply`: delete / incr / decr / touch. memcached
  // takes `noreply` from the last token whatever the count, and the forwarded line must not end
  // in another `noreply` (the backend would then stay silent while the proxy waits).
  auto one_key = [&](Command c, std::size_t min_tokens, std::size_t max_tokens) {
    if (n < min_tokens || n > max_tokens) return done_local(kError, false);
    noreply_ = last_noreply;
    first_key_ = 1;
    key_end_ = 2;
    forward_end_ = n;
    if (!keys_ok(buf)) return done_local(kBadFormat);
    if (noreply_ && c == Command::kDelete) {
      // delete <key> [0] noreply (or `delete noreply`: the key is "noreply"): sent as
      // "delete <key> 0", the reply dropped. Anything else is an error noreply silences.
      if (n == 4 && token(buf, 2) != "0") return done_local({});
      forward_end_ = 2;
      forward_zero_ = true;
    } else if (noreply_) {
      // The argument itself is "noreply" (incr k noreply): an error noreply silences.
      if (token(buf, 2) == "noreply") return done_local({});
      forward_end_ = 3;
    }
    command_ = c;
    return ParseResult::kDone;
  };
  auto retrieval = [&](Command c, std::size_t first) {
    if (n < 2) return done_local(kError, false);
    first_key_ = first;
    key_end_ = std::max(first, n);
    forward_end_ = n;
    if (first == 2) {
      std::int64_t t = 0;
      if (!parse_i64(token(buf, 1), t) || t < std::numeric_limits<std::int32_t>::min() ||
          t > std::numeric_limits<std::int32_t>::max()) {
        return done_local("CLIENT_ERROR invalid exptime argument\r\n", false);
      }
    }
    if (!keys_ok(buf)) return done_local(kBadFormat, false);
    command_ = c;
    return ParseResult::kDone;
  };
  if (name == "get") return retrieval(Command::kGet, 1);
  if (name == "gets") return retrieval(Command::kGets, 1);
  if (name == "gat") return retrieval(Command::kGat, 2);
  if (name == "gats") return retrieval(Command::kGats, 2);
  if (name == "set") return storage(buf, Command::kSet);
  if (name == "add") return storage(buf, Command::kAdd);
  if (name == "replace") return storage(buf, Command::kReplace);
  if (name == "append") return storage(buf, Command::kAppend);
  if (name == "prepend") return storage(buf, Command::kPrepend);
  if (name == "cas") return storage(buf, Command::kCas);
  if (name == "delete") return one_key(Command::kDelete, 2, 4);
  if (name == "incr") return one_key(Command::kIncr, 3, 4);
  if (name == "decr") return one_key(Command::kDecr, 3, 4);
  if (name == "touch") return one_key(Command::kTouch, 3, 4);
  // memcached reads any two-letter command starting with 'm' as a meta command (an unknown one
  // is ERROR).
  if (name.size() == 2 && name[0] == 'm') {
    switch (name[1]) {
      case 'g':
        return meta(buf, Command::kMetaGet);
      case 's':
        return meta(buf, Command::kMetaSet);
      case 'd':
        return meta(buf, Command::kMetaDelete);
      case 'a':
        return meta(buf, Command::kMetaArithmetic);
      case 'e':
        return meta(buf, Command::kMetaDebug);
      case 'n':
        command_ = Command::kMetaNoop;  // whatever follows it: memcached answers MN
        return ParseResult::kDone;
      default:
        return done_local(kError, false);
    }
  }
  if (name == "version") {
    command_ = Command::kVersion;
    return ParseResult::kDone;
  }
  if (name == "quit") {
    command_ = Command::kQuit;
    return ParseResult::kDone;
  }
  static constexpr std::string_view kKnown[] = {
      "flush_all", "stats", "verbosity", "shutdown",  "cache_memlimit", "lru_crawler",
      "slabs",     "lru",   "watch",     "misbehave", "debugtime",      "extstore"};
  if (std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown)) {
    noreply_ = n > 1 && last_noreply;
    command_ = Command::kUnsupported;
    return ParseResult::kDone;
  }
  // An HTTP request line (a browser, a health checker pointed at the wrong port): memcached
  // closes the connection without a word, where its command dispatch falls through to the end
  // (process_command_ascii: not a two-letter m command, not a word starting g s a c i d t).
  if (std::string_view("gsacidt").find(name[0]) == std::string_view::npos &&
      token(buf, n - 1).starts_with("HTTP/")) {
    reply_ = {};
    return ParseResult::kError;
  }
  return done_local(kError, false);
}

ParseResult RequestParser::storage(std::string_view buf, Command c) {
  const std::size_t n = tokens_.size();
  const std::size_t want = c == Command::kCas ? 6 : 5;
  if (n != want && n != want + 1) return done_local(kError, false);
  noreply_ = token(buf, n - 1) == "noreply";  // memcached's set_noreply_maybe
  first_key_ = 1;
  key_end_ = 2;
  forward_end_ = want;
  if (!keys_ok(buf)) return done_local(kBadFormat);
  std::uint64_t flags = 0, cas = 0;
  std::int64_t exptime = 0, bytes = 0;
  if (!parse_u64(token(buf, 2), flags) || flags > std::numeric_limits<std::uint32_t>::max() ||
      !parse_i64(token(buf, 3), exptime) || exptime < std::numeric_limits<std::int32_t>::min() ||
      exptime > std::numeric_limits<std::int32_t>::max() || !parse_i64(token(buf, 4), bytes) ||
      bytes < 0 || bytes > std::numeric_limits<std::int32_t>::max() - 2 ||
      (c == Command::kCas && !parse_u64(token(buf, 5), cas))) {
    return done_local(kBadFormat);  // memcached does not swallow the data here either
  }
  if (static_cast<std::uint64_t>(bytes) > limits_.max_value_bytes) {
    swallow_ = static_cast<std::uint64_t>(bytes) + 2;
    unlink_ = c == Command::kSet;  // memcached unlinks the old value of a failed set only
    return done_local("SERVER_ERROR object too large for cache\r\n");
  }
  flags_ = static_cast<std::uint32_t>(flags);
  exptime_ = static_cast<std::int32_t>(exptime);
  cas_ = cas;
  bytes_ = static_cast<std::size_t>(bytes);
  data_off_ = pos_;
  command_ = c;
  state_ = State::kData;
  return ParseResult::kNeedMore;  // parse() continues with the data block
}

// memcached 1.6.18's meta command checks, in its order (process_mget_command and its
// siblings). Counts below are memcached's ntokens minus its terminal empty token.
ParseResult RequestParser::meta(std::string_view buf, Command c) {
  const std::size_t n = tokens_.size();
  meta_flags_ = 0;
  key_binary_ = false;
  if (n < 2) return done_local(c == Command::kMetaDebug ? kBadFormat : kError, false);
  first_key_ = 1;
  key_end_ = 2;
  forward_end_ = n;
  if (c == Command::kMetaDebug) {
    // process_meta_command: only "me <key> b" decodes (b must be the first flag).
    if (!keys_ok(buf)) return done_local(kBadFormat, false);
    if (n >= 3 && token(buf, 2) == "b") {
      key_len_ = base64_decode(token(buf, 1), key_buf_);
      if (key_len_ == 0) return done_local(kBadFormat, false);
      key_binary_ = true;
    }
    command_ = c;
    return ParseResult::kDone;
  }
  // Over 250 bytes before decoding, as memcached checks; control characters: see key_ok.
  if (!keys_ok(buf)) return done_local(kBadFormat, false);
  if (c == Command::kMetaSet && n == 2) return done_local(kBadFormat, false);
  if (n >= 20) {  // MFLAG_MAX_OPT_LENGTH
    return done_local(c == Command::kMetaGet ? "CLIENT_ERROR options flags are too long\r\n"
                                             : "CLIENT_ERROR options flags too long\r\n",
                      false);
  }
  if (c != Command::kMetaSet) {
    const std::string_view error = meta_flags(buf, 2);
    if (!error.empty()) {
      // md and ma do not pass the flag parser's own text on.
      return done_local(
          c == Command::kMetaGet ? error : "CLIENT_ERROR invalid or duplicate flag\r\n", false);
    }
    command_ = c;
    return ParseResult::kDone;
  }
  // ms <key> <datalen> <flags>*: safe_strtol into an int32 (a longer number wraps, as there).
  std::int64_t len64 = 0;
  if (!c_number(token(buf, 2), Num::kSigned, &len64)) return done_local(kBadFormat, false);
  const auto len = static_cast<std::int32_t>(static_cast<std::uint32_t>(len64));
  if (len < 0 || len > std::numeric_limits<std::int32_t>::max() - 2) {
    return done_local(kBadFormat, false);  // the data is not swallowed here: read as commands
  }
  const std::string_view error = meta_flags(buf, 3);
  if (!error.empty() || static_cast<std::size_t>(len) > limits_.max_value_bytes) {
    // From here memcached swallows the data block with the error.
    swallow_ = static_cast<std::uint64_t>(len) + 2;
    unlink_ = error.empty();  // a failed ms unlinks the old value, whatever its mode
    return done_local(error.empty() ? "SERVER_ERROR object too large for cache\r\n" : error, false);
  }
  bytes_ = static_cast<std::size_t>(len);
  data_off_ = pos_;
  command_ = c;
  state_ = State::kData;
  return ParseResult::kNeedMore;  // parse() continues with the data block
}

std::string_view RequestParser::meta_flags(std::string_view buf, std::size_t first) {
  std::string_view error;  // memcached's errstr: the last error seen wins
  bool failed = false;
  for (std::size_t i = first; i < tokens_.size(); ++i) {
    const std::string_view t = token(buf, i);
    const auto o = static_cast<unsigned char>(t[0]);
    const std::uint64_t bit = o >= 64 && o < 127 ? std::uint64_t{1} << (o - 64) : 0;
    // seen[] covers 0..126: a byte past it, or a letter twice, ends the parse at once.
    if (o >= 127 || (o >= 64 && (meta_flags_ & bit) != 0)) {
      return "CLIENT_ERROR duplicate flag\r\n";
    }
    meta_flags_ |= bit;
    const std::string_view arg = t.substr(1);
    switch (o) {
      case 'b':
        key_len_ = base64_decode(token(buf, 1), key_buf_);
        key_binary_ = true;
        if (key_len_ == 0) {
          error = "CLIENT_ERROR error decoding key\r\n";
          failed = true;
        }
        break;
      case 'N':
      case 'T':
      case 'R':
        if (!c_number(arg, Num::kSigned)) {
          error = "CLIENT_ERROR bad token in command line format\r\n";
          failed = true;
        }
        break;
      case 'F':
        // No text of its own: the default (or an earlier flag's) stands.
        if (!c_number(arg, Num::kUnsigned32)) failed = true;
        break;
      case 'C':
        if (!c_number(arg, Num::kUnsigned64)) {
          error = "CLIENT_ERROR bad token in command line format\r\n";
          failed = true;
        }
        break;
      case 'M':
        if (t.size() != 2) {
          error = "CLIENT_ERROR incorrect length for M token\r\n";
          failed = true;
        }
        break;
      case 'J':
        if (!c_number(arg, Num::kUnsigned64)) {
          error = "CLIENT_ERROR invalid numeric initial value\r\n";
          failed = true;
        }
        break;
      case 'D':
        if (!c_number(arg, Num::kUnsigned64)) {
          error = "CLIENT_ERROR invalid numeric delta value\r\n";
          failed = true;
        }
        break;
      case 'O':
      case 'P':
      case 'L':
      case 'k':
      case 's':
      case 't':
      case 'c':
      case 'f':
      case 'v':
      case 'h':
      case 'l':
      case 'u':
      case 'q':
      case 'I':
        break;
      default:
        return "CLIENT_ERROR invalid flag\r\n";
    }
  }
  if (!failed) return {};
  return error.empty() ? kBadFormat : error;
}

void RequestParser::next() noexcept {
  start_ = pos_;
  state_ = swallow_ > 0 ? State::kSwallow : State::kLine;
  command_ = Command::kNone;
  reply_ = {};
  noreply_ = false;
  unlink_ = false;
  meta_flags_ = 0;
  key_binary_ = false;
  if (tokens_.capacity() > 4096) {
    tokens_.clear();
    tokens_.shrink_to_fit();  // a huge multiget's token list is not kept
  }
}

void RequestParser::consume(std::size_t n) noexcept {
  start_ -= n;
  pos_ -= n;
  data_off_ = data_off_ >= n ? data_off_ - n : 0;
  // A storage line waiting for its data block keeps its tokens across calls; they are offsets
  // into the buffer and move with it. (Other states re-tokenise the line when it completes.)
  if (state_ == State::kData) {
    for (Span& t : tokens_) t.off -= n;
  }
}

// ---- ReplyParser --------------------------------------------------------------------------------

ParseResult ReplyParser::fail(std::string message) {
  error_ = std::move(message);
  return ParseResult::kError;
}

ParseResult ReplyParser::parse(std::string_view buf) {
  if (!in_data_) {
    const std::size_t nl = buf.find('\n', pos_);
    if (nl == std::string_view::npos) {
      pos_ = buf.size();
      if (pos_ - start_ > kMaxReplyLine) return fail("reply line too long");
      return ParseResult::kNeedMore;
    }
    const std::string_view line = line_of(buf, start_, nl);
    pos_ = nl + 1;
    error_line_ = false;
    if (values_ && starts_with(line, "VALUE ")) {
      // VALUE <key> <flags> <bytes> [<cas unique>]
      Span tok[6];
      std::size_t count = 0;
      for (std::size_t i = 0; i < line.size() && count < 6;) {
        while (i < line.size() && line[i] == ' ') ++i;
        const std::size_t j = std::min(line.find(' ', i), line.size());
        if (j > i) tok[count++] = {start_ + i, j - i};
        i = j;
      }
      std::uint64_t bytes = 0;
      if (count < 4 || count > 5 || !parse_u64(tok[3].in(buf), bytes))
        return fail("bad VALUE line");
      if (bytes > max_value_)
        return fail("value of " + std::to_string(bytes) + " bytes is over the limit");
      key_ = tok[1];
      data_end_ = pos_ + static_cast<std::size_t>(bytes) + 2;
      in_data_ = true;
    } else if (values_ && line == "END") {
      kind_ = ReplyKind::kEnd;
      return ParseResult::kDone;
    } else if (meta_ && starts_with(line, "VA ")) {
      // VA <size> <flags>*: the value follows; the whole reply is one element.
      const std::size_t end = std::min(line.find(' ', 3), line.size());
      std::uint64_t bytes = 0;
      if (!parse_u64(line.substr(3, end - 3), bytes)) return fail("bad VA line");
      if (bytes > max_value_)
        return fail("value of " + std::to_string(bytes) + " bytes is over the limit");
      data_end_ = pos_ + static_cast<std::size_t>(bytes) + 2;
      in_data_ = true;
      meta_value_ = true;
    } else if (meta_ && is_meta_status(line)) {
      kind_ = ReplyKind::kLine;
      return ParseResult::kDone;
    } else if (is_error_line(line)) {
      kind_ = ReplyKind::kLine;
      error_line_ = true;
      return ParseResult::kDone;
    } else if (!values_ && is_status_line(line)) {
      kind_ = ReplyKind::kLine;
      return ParseResult::kDone;
    } else {
      std::string shown(line.substr(0, 40));
      for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
      }
      return fail("unexpected reply '" + shown + "'");
    }
  }
  if (buf.size() < data_end_) return ParseResult::kNeedMore;
  if (buf[data_end_ - 2] != '\r' || buf[data_end_ - 1] != '\n')
    return fail("bad data chunk in a VALUE reply");
  pos_ = data_end_;
  in_data_ = false;
  kind_ = meta_value_ ? ReplyKind::kLine : ReplyKind::kValue;
  meta_value_ = false;
  return ParseResult::kDone;
}

void ReplyParser::next() noexcept {
  start_ = pos_;
  in_data_ = false;
  meta_value_ = false;
  error_line_ = false;
  key_ = {};
}

void ReplyParser::consume(std::size_t n) noexcept {
  start_ -= n;
  pos_ -= n;
  if (in_data_) data_end_ -= n;
  if (key_.off >= n) key_.off -= n;
}

}  // namespace chash::proxy::memcache
