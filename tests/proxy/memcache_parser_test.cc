// SPDX-License-Identifier: Apache-2.0
// memcached text-protocol parsers: every request and reply shape, memcached's answers to bad
// requests (checked against memcached 1.6.18), and the same results whether the bytes arrive
// whole or split at any byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "proto/memcache/protocol.h"

namespace chash::proxy::memcache {
namespace {

// One parsed request, flattened for comparison.
std::string describe(const RequestParser& p, std::string_view buf) {
  std::string s = std::to_string(static_cast<int>(p.command())) + "|";
  if (p.command() == Command::kNone) return s + "reply=" + std::string(p.reply());
  for (std::size_t i = 0; i < p.token_count(); ++i) s += std::string(p.token(buf, i)) + ",";
  s += "|keys=" + std::to_string(p.first_key()) + ".." + std::to_string(p.key_end());
  s += "|fwd=" + std::to_string(p.forward_end()) + (p.forward_zero() ? "+0" : "");
  if (p.noreply()) s += "|noreply";
  if (is_storage(p.command())) {
    s += "|" + std::to_string(p.flags()) + " " + std::to_string(p.exptime()) + " " +
         std::to_string(p.cas_unique());
    s += "|data=" + std::string(p.data(buf));
  }
  return s;
}

// Feeds `input` to `p` in pieces of `step` bytes (0: whole) and appends `describe_one(buf)` for
// every message it completes; "FATAL:<error>" ends the list on kError. Both parsers share the
// incremental contract: parse, next() after kDone, then drop start() bytes and consume() them.
template <class Parser, class Describe>
std::vector<std::string> feed(Parser& p, std::string_view input, std::size_t step,
                              Describe describe_one) {
  std::vector<std::string> out;
  std::string buf;
  std::size_t off = 0;
  while (off < input.size()) {
    const std::size_t n = step == 0 ? input.size() : std::min(step, input.size() - off);
    buf.append(input.substr(off, n));
    off += n;
    for (;;) {
      const ParseResult r = p.parse(buf);
      if (r == ParseResult::kError) {
        out.push_back("FATAL:" + std::string(p.error()));
        return out;
      }
      if (r == ParseResult::kDone) {
        out.push_back(describe_one(buf));
        p.next();
      }
      // As the sessions do (drop_consumed): what precedes start() goes after every parse, also
      // when the request is still incomplete, so offsets kept across calls must follow.
      const std::size_t drop = p.start();
      buf.erase(0, drop);
      p.consume(drop);
      if (r == ParseResult::kNeedMore) break;
    }
  }
  return out;
}

// Requests of `input` fed in pieces of `step` bytes, described.
std::vector<std::string> parse_all(std::string_view input, std::size_t step = 0,
                                   RequestLimits limits = {}) {
  RequestParser p(limits);
  return feed(p, input, step, [&](const std::string& buf) { return describe(p, buf); });
}

std::string reply_of(std::string_view input) {
  const auto r = parse_all(input);
  return r.empty() ? "<none>" : r.front();
}

std::string none(std::string_view reply) { return "0|reply=" + std::string(reply); }

TEST(MemcacheParserTest, StorageCommandsCarryTheirNumbersAndData) {
  RequestParser p;
  std::string buf = "set k 5 -1 3\r\nabc\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(p.command(), Command::kSet);
  EXPECT_EQ(p.token(buf, 1), "k");
  EXPECT_EQ(p.flags(), 5u);
  EXPECT_EQ(p.exptime(), -1);
  EXPECT_EQ(p.data(buf), "abc");
  EXPECT_EQ(p.end(), buf.size());
  const auto cas = parse_all("cas k 0 0 1 77 noreply\r\nx\r\n");
  ASSERT_EQ(cas.size(), 1u);
  EXPECT_NE(cas[0].find("|noreply|0 0 77|data=x"), std::string::npos) << cas[0];
  // Empty values and "\n"-only command lines are fine (the data block still needs \r\n).
  EXPECT_NE(reply_of("set k 0 0 0\r\n\r\n").find("data="), std::string::npos);
  EXPECT_NE(reply_of("set k 0 0 1\nx\r\n").find("data=x"), std::string::npos);
}

TEST(MemcacheParserTest, RetrievalsListTheirKeys) {
  const auto r = parse_all("get a b  c\r\ngets x\r\ngat 100 k1 k2\r\ngats -1 k\r\n get spaced\r\n");
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], "1|get,a,b,c,|keys=1..4|fwd=4");
  EXPECT_EQ(r[1], "2|gets,x,|keys=1..2|fwd=2");
  EXPECT_EQ(r[2], "3|gat,100,k1,k2,|keys=2..4|fwd=4");
  EXPECT_EQ(r[3], "4|gats,-1,k,|keys=2..3|fwd=3");
  EXPECT_EQ(r[4], "1|get,spaced,|keys=1..2|fwd=2");
  EXPECT_EQ(reply_of("gat 0\r\n"), "3|gat,0,|keys=2..2|fwd=2");  // no keys: the session says END
  EXPECT_EQ(reply_of("gat abc k\r\n"), none("CLIENT_ERROR invalid exptime argument\r\n"));
}

TEST(MemcacheParserTest, AnswersBadRequestsAsMemcachedDoes) {
  EXPECT_EQ(reply_of("\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("foo bar\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("GET k\r\n"), none("ERROR\r\n"));  // case-sensitive, as memcached
  EXPECT_EQ(reply_of("get\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("gat\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("set k 0 0\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("touch k\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("delete a b c d\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(reply_of("get " + std::string(251, 'k') + "\r\n"),
            none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(reply_of("get " + std::string(250, 'k') + "\r\n").substr(0, 2), "1|");
  EXPECT_EQ(reply_of("get a\x01"
                     "b\r\n"),
            none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(reply_of("get a\tb\r\n"), none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(reply_of("set k -1 0 1\r\nx\r\n"), none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(reply_of("set k 0 abc 1\r\nx\r\n"), none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(reply_of("cas k 0 0 1 abc\r\nx\r\n"), none("CLIENT_ERROR bad command line format\r\n"));
  // A negative length: memcached does not swallow the block; it is read as the next command.
  const auto neg = parse_all("set k 0 0 -1\r\nxx\r\nget k\r\n");
  ASSERT_EQ(neg.size(), 3u);
  EXPECT_EQ(neg[0], none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(neg[1], none("ERROR\r\n"));
  EXPECT_EQ(neg[2].substr(0, 2), "1|");
  // Data longer than announced: bad data chunk, then the rest is read as a command.
  const auto chunk = parse_all("set k 0 0 3\r\nabcde\r\nget k\r\n");
  ASSERT_EQ(chunk.size(), 3u);
  EXPECT_EQ(chunk[0], none("CLIENT_ERROR bad data chunk\r\n"));
  EXPECT_EQ(chunk[1], none("ERROR\r\n"));
}

TEST(MemcacheParserTest, TooLargeValueIsRefusedAndSwallowed) {
  RequestLimits lim;
  lim.max_value_bytes = 100;
  const std::string big = "set k 0 0 101\r\n" + std::string(101, 'v') + "\r\nget k\r\n";
  for (std::size_t step : {0u, 1u, 7u}) {
    const auto r = parse_all(big, step, lim);
    ASSERT_EQ(r.size(), 2u) << step;
    EXPECT_EQ(r[0], none("SERVER_ERROR object too large for cache\r\n"));
    EXPECT_EQ(r[1], "1|get,k,|keys=1..2|fwd=2");
  }
  // noreply silences it, as in memcached.
  EXPECT_EQ(parse_all("set k 0 0 101 noreply\r\n" + std::string(103, 'v'), 0, lim)[0], none(""));
  // memcached unlinks the old value of a refused set and of a refused ms (any mode), not of a
  // refused add/replace/append/prepend/cas (proto_text.c, "Avoid stale data persisting").
  auto unlinks = [&](const std::string& line) {
    RequestParser p(lim);
    const std::string buf = line + std::string(101, 'v') + "\r\n";
    EXPECT_EQ(p.parse(buf), ParseResult::kDone) << line;
    EXPECT_EQ(p.command(), Command::kNone) << line;
    const bool u = p.unlink();
    if (u) {
      EXPECT_EQ(p.meta_key(buf), "k") << line;
    }
    p.next();
    EXPECT_FALSE(p.unlink()) << line;  // cleared for the next request
    return u;
  };
  EXPECT_TRUE(unlinks("set k 0 0 101\r\n"));
  EXPECT_TRUE(unlinks("set k 0 0 101 noreply\r\n"));
  EXPECT_TRUE(unlinks("ms k 101 T0\r\n"));
  EXPECT_TRUE(unlinks("ms k 101 MA q\r\n"));
  for (const char* verb : {"add", "replace", "append", "prepend"}) {
    EXPECT_FALSE(unlinks(std::string(verb) + " k 0 0 101\r\n"));
  }
  EXPECT_FALSE(unlinks("cas k 0 0 101 7\r\n"));
}

// memcached closes, without a reply, a connection whose unknown command line ends in an HTTP
// version (a browser or an HTTP health check on the memcached port); other unknown lines, and
// lines its dispatch reads as one of its commands first, get ERROR.
TEST(MemcacheParserTest, AnHttpRequestLineClosesTheConnection) {
  for (const char* line : {"GET / HTTP/1.0\r\n", "PUT /asdf HTTP/1.1\r\n", "DELETE HTTP/1.1\r\n",
                           "HTTP/1.1\r\n", "OPTIONS * HTTP/2\r\n"}) {
    EXPECT_EQ(parse_all(line), std::vector<std::string>{"FATAL:"}) << line;
  }
  EXPECT_EQ(parse_all("GET /\r\n"), std::vector<std::string>{none("ERROR\r\n")});
  EXPECT_EQ(parse_all("gxx / HTTP/1.0\r\n"), std::vector<std::string>{none("ERROR\r\n")});
  EXPECT_EQ(parse_all("txx / HTTP/1.0\r\n"), std::vector<std::string>{none("ERROR\r\n")});
}

// A storage command whose data block arrives later, after earlier requests (or swallowed bytes)
// were dropped from the buffer: its tokens must follow the drop. (Found by CI: chash-proxy
// aborted on the next `set` after a swallowed oversized value when a read ended mid-block.)
TEST(MemcacheParserTest, StorageLineSurvivesDropsWhileItsDataArrives) {
  RequestLimits lim;
  lim.max_value_bytes = 10;
  const std::string input =
      "get a\r\nset big 0 0 20\r\n" + std::string(20, 'z') + "\r\nset kk 3 0 5\r\nabcde\r\n";
  for (std::size_t step : {0u, 1u, 3u, 7u, 30u, 45u}) {
    const auto r = parse_all(input, step, lim);
    ASSERT_EQ(r.size(), 3u) << step;
    EXPECT_EQ(r[0], "1|get,a,|keys=1..2|fwd=2") << step;
    EXPECT_EQ(r[1], none("SERVER_ERROR object too large for cache\r\n")) << step;
    EXPECT_EQ(r[2], "5|set,kk,3,0,5,|keys=1..2|fwd=5|3 0 0|data=abcde") << step;
  }
}

TEST(MemcacheParserTest, SwallowedBytesAreNotBuffered) {
  RequestLimits lim;
  lim.max_value_bytes = 10;
  RequestParser p(lim);
  std::string buf = "set k 0 0 1000000\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  p.next();
  for (int i = 0; i < 100; ++i) {
    buf.append(10000, 'x');
    EXPECT_EQ(p.parse(buf), ParseResult::kNeedMore);
    EXPECT_EQ(p.start(), buf.size());  // everything so far may be dropped
    const std::size_t drop = p.start();
    buf.erase(0, drop);
    p.consume(drop);
  }
  buf += "\r\nversion\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(p.command(), Command::kVersion);
}

TEST(MemcacheParserTest, NoreplyIsStrippedWithoutDesyncingTheBackend) {
  EXPECT_EQ(reply_of("set k 0 0 1 noreply\r\nx\r\n"),
            "5|set,k,0,0,1,noreply,|keys=1..2|fwd=5|noreply|0 0 0|data=x");
  EXPECT_EQ(reply_of("set k 0 0 1 whatever\r\nx\r\n"),
            "5|set,k,0,0,1,whatever,|keys=1..2|fwd=5|0 0 0|data=x");
  EXPECT_EQ(reply_of("incr k 5 noreply\r\n"), "12|incr,k,5,noreply,|keys=1..2|fwd=3|noreply");
  EXPECT_EQ(reply_of("touch k 10 noreply\r\n"), "14|touch,k,10,noreply,|keys=1..2|fwd=3|noreply");
  EXPECT_EQ(reply_of("delete k noreply\r\n"), "11|delete,k,noreply,|keys=1..2|fwd=2+0|noreply");
  EXPECT_EQ(reply_of("delete k 0 noreply\r\n"), "11|delete,k,0,noreply,|keys=1..2|fwd=2+0|noreply");
  EXPECT_EQ(reply_of("delete noreply\r\n"), "11|delete,noreply,|keys=1..2|fwd=2+0|noreply");
  EXPECT_EQ(reply_of("delete k 0\r\n"), "11|delete,k,0,|keys=1..2|fwd=3");
  // The argument is "noreply" itself: memcached's error is silenced; nothing is forwarded.
  EXPECT_EQ(reply_of("incr k noreply\r\n"), none(""));
  EXPECT_EQ(reply_of("incr k noreply noreply\r\n"), none(""));
  EXPECT_EQ(reply_of("delete k 5 noreply\r\n"), none(""));
  EXPECT_EQ(reply_of("get k noreply\r\n"), "1|get,k,noreply,|keys=1..3|fwd=3");  // a key, for get
  EXPECT_EQ(reply_of("flush_all noreply\r\n"), "17|flush_all,noreply,|keys=0..0|fwd=0|noreply");
}

TEST(MemcacheParserTest, LongLinesAndBinaryClientsAreFatal) {
  EXPECT_EQ(parse_all(std::string(3000, 'x')),
            std::vector<std::string>{"FATAL:CLIENT_ERROR line too long\r\n"});
  EXPECT_EQ(parse_all("delete " + std::string(3000, 'k') + "\r\n"),
            std::vector<std::string>{"FATAL:CLIENT_ERROR line too long\r\n"});
  // A multiget may be long (up to max_get_line).
  std::string get = "get";
  for (int i = 0; i < 1000; ++i) get += " key" + std::to_string(i);
  EXPECT_EQ(parse_all(get + "\r\n").front().substr(0, 2), "1|");
  RequestLimits small;
  small.max_get_line = 4096;
  EXPECT_EQ(parse_all(get + "\r\n", 100, small).front(), "FATAL:CLIENT_ERROR line too long\r\n");
  EXPECT_EQ(parse_all(std::string("\x80\x00\x00\x00", 4)), std::vector<std::string>{"FATAL:"});
  EXPECT_EQ(parse_all("version\r\n\x80"),
            (std::vector<std::string>{"15|version,|keys=0..0|fwd=0", "FATAL:"}));
}

TEST(MemcacheParserTest, SplitAtEveryByteGivesTheSameRequests) {
  const std::string stream =
      "set a 1 2 3\r\nabc\r\nget a b c\r\ngets a\r\nadd b 0 0 2 noreply\r\nxy\r\nappend a 0 0 "
      "1\r\nz\r\n"
      "prepend a 0 0 1\r\ny\r\ncas a 0 0 1 99\r\nq\r\nincr n 5\r\ndecr n 2 noreply\r\ntouch a "
      "10\r\n"
      "gat 5 a b\r\ngats 6 c\r\ndelete a\r\ndelete b noreply\r\nversion\r\nbogus\r\n\r\nstats\r\n"
      "set k 0 0 3\r\nabcde\r\nset big 0 0 5000000\r\n" +
      std::string(5000002, 'b') + "quit\r\n";
  const auto whole = parse_all(stream);
  ASSERT_EQ(whole.size(), 22u);
  for (std::size_t step = 1; step <= 13; ++step) EXPECT_EQ(parse_all(stream, step), whole) << step;
  // Every single split point of the small part.
  const std::string small = stream.substr(0, stream.find("set big"));
  const auto small_whole = parse_all(small);
  for (std::size_t cut = 1; cut < small.size(); ++cut) {
    RequestParser p;
    std::vector<std::string> got;
    std::string buf;
    for (const std::string_view piece :
         {std::string_view(small).substr(0, cut), std::string_view(small).substr(cut)}) {
      buf += piece;
      while (p.parse(buf) == ParseResult::kDone) {
        got.push_back(describe(p, buf));
        p.next();
      }
    }
    ASSERT_EQ(got, small_whole) << "cut at " << cut;
  }
}

// ---- Meta commands (memcached 1.6.18's proto_text.c is the reference) ----------------------

// A meta request: command, routing key (hex when binary), flags seen, the bytes forwarded.
std::string meta(std::string_view input, RequestLimits limits = {}, std::size_t step = 0) {
  RequestParser p(limits);
  const auto all = feed(p, input, step, [&](const std::string& buf) {
    if (p.command() == Command::kNone) return none(p.reply());
    std::string s = std::to_string(static_cast<int>(p.command()));
    if (!is_meta_keyed(p.command())) return s;
    s += "|key=";
    const std::string_view k = p.meta_key(buf);
    if (p.key_binary()) {
      static constexpr char kHex[] = "0123456789abcdef";
      s += "b:";
      for (const char c : k) {
        s += kHex[static_cast<unsigned char>(c) >> 4];
        s += kHex[c & 15];
      }
    } else {
      s += k;
    }
    s += "|";
    for (char f = 'A'; f <= 'z'; ++f) {
      if (p.has_flag(f)) s += f;
    }
    return s + "|req=" + std::string(p.request(buf));
  });
  std::string out;
  for (const auto& r : all) out += (out.empty() ? "" : "\n") + r;
  return out;
}

constexpr int kMg = static_cast<int>(Command::kMetaGet);

TEST(MemcacheParserTest, MetaRequestsAreForwardedWholeWithTheirKeyAndFlags) {
  EXPECT_EQ(meta("mg foo v k O123 q\r\n"),
            std::to_string(kMg) + "|key=foo|Okqv|req=mg foo v k O123 q\r\n");
  EXPECT_EQ(meta("ms foo 3 T30 F5 I\r\nabc\r\n"),
            std::to_string(kMg + 1) + "|key=foo|FIT|req=ms foo 3 T30 F5 I\r\nabc\r\n");
  EXPECT_EQ(meta("ms foo 0\r\n\r\n"), std::to_string(kMg + 1) + "|key=foo||req=ms foo 0\r\n\r\n");
  EXPECT_EQ(meta("md foo q C99 x\n").substr(0, 4), "0|re");  // x: no such flag
  EXPECT_EQ(meta("md foo q C99\n"), std::to_string(kMg + 2) + "|key=foo|Cq|req=md foo q C99\n");
  EXPECT_EQ(meta("ma n MI D5 N30 J10 v\r\n"),
            std::to_string(kMg + 3) + "|key=n|DJMNv|req=ma n MI D5 N30 J10 v\r\n");
  EXPECT_EQ(meta("me foo\r\n"), std::to_string(kMg + 4) + "|key=foo||req=me foo\r\n");
  EXPECT_EQ(meta("mn\r\nmn whatever\r\n"),
            std::to_string(kMg + 5) + "\n" + std::to_string(kMg + 5));
  // Stale-while-revalidate, leases and recache flags are the server's: not interpreted.
  EXPECT_EQ(meta("mg k s t v c f h l u R30 N30 T30 Oabc P L\r\n").substr(0, 2),
            std::to_string(kMg));
  // memcached's numbers (strtol): a sign, leading space-class bytes, no range check for T.
  EXPECT_EQ(meta("mg k T-1 N+5 T\r\n"), none("CLIENT_ERROR duplicate flag\r\n"));
  EXPECT_EQ(meta("mg k T99999999999 C18446744073709551615\r\n").substr(0, 2), std::to_string(kMg));
}

TEST(MemcacheParserTest, MetaBase64KeysRouteOnTheDecodedBytes) {
  EXPECT_EQ(meta("mg Zm9v b v\r\n"), std::to_string(kMg) + "|key=b:666f6f|bv|req=mg Zm9v b v\r\n");
  EXPECT_EQ(meta("ms Zm9vYmFy 1 b\r\nx\r\n"),
            std::to_string(kMg + 1) + "|key=b:666f6f626172|b|req=ms Zm9vYmFy 1 b\r\nx\r\n");
  EXPECT_EQ(meta("me Zm9v b\r\n"), std::to_string(kMg + 4) + "|key=b:666f6f||req=me Zm9v b\r\n");
  EXPECT_EQ(meta("me Zm9v v b\r\n"), std::to_string(kMg + 4) + "|key=Zm9v||req=me Zm9v v b\r\n");
  EXPECT_EQ(meta("md AAEC/w== b\r\n"),
            std::to_string(kMg + 2) + "|key=b:000102ff|b|req=md AAEC/w== b\r\n");
  // Invalid base64: memcached's error per command (me says "bad command line format").
  EXPECT_EQ(meta("mg Zm9v= b\r\n"), none("CLIENT_ERROR error decoding key\r\n"));
  EXPECT_EQ(meta("mg ==== b v\r\n"), none("CLIENT_ERROR error decoding key\r\n"));
  EXPECT_EQ(meta("md Zm9 b\r\n"), none("CLIENT_ERROR invalid or duplicate flag\r\n"));
  EXPECT_EQ(meta("me Zm9 b\r\n"), none("CLIENT_ERROR bad command line format\r\n"));
  EXPECT_EQ(meta("ms Zm9 2 b\r\nab\r\nmn\r\n"),
            none("CLIENT_ERROR error decoding key\r\n") + "\n" + std::to_string(kMg + 5));
}

TEST(MemcacheParserTest, Base64DecodesAsMemcachedDoes) {
  auto dec = [](std::string_view in) {
    char out[64];
    const std::size_t n = base64_decode(in, out);
    return n == 0 ? std::string("<bad>") : std::string(out, n);
  };
  EXPECT_EQ(dec("Zm9vYmFy"), "foobar");
  EXPECT_EQ(dec("Zm9vYg=="), "foob");
  EXPECT_EQ(dec("Zm9vYmE="), "fooba");
  EXPECT_EQ(dec("Zg=="), "f");
  EXPECT_EQ(dec("Zm9v!YmFy"), "foobar");  // bytes outside the alphabet are skipped
  EXPECT_EQ(dec("Zg==Zm9v"), "f");        // nothing after a padded block is read
  EXPECT_EQ(dec("Zg="), "<bad>");         // not a multiple of 4
  EXPECT_EQ(dec("Z==="), "<bad>");        // three pads
  EXPECT_EQ(dec(""), "<bad>");
  EXPECT_EQ(dec("!!!!"), "<bad>");
  for (const std::string s : {"", "a", "ab", "abc", "\x00\xff\x10 x", "hello world!"}) {
    std::string enc;
    base64_encode(s, enc);
    if (!s.empty()) {
      EXPECT_EQ(dec(enc), s) << enc;
    }
  }
  std::string enc;
  base64_encode("foob", enc);
  EXPECT_EQ(enc, "Zm9vYg==");
}

TEST(MemcacheParserTest, MalformedMetaRequestsGetMemcachedsAnswers) {
  const std::string bad = "CLIENT_ERROR bad command line format\r\n";
  EXPECT_EQ(meta("mg\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(meta("md\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(meta("ms\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(meta("me\r\n"), none(bad));
  EXPECT_EQ(meta("mz k\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(meta("m k\r\n"), none("ERROR\r\n"));
  EXPECT_EQ(meta("mg " + std::string(251, 'k') + " v\r\n"), none(bad));
  EXPECT_EQ(meta("me " + std::string(251, 'k') + "\r\n"), none(bad));
  EXPECT_EQ(meta("mg k\x01y v\r\n"), none(bad));  // the proxy refuses control bytes in keys
  EXPECT_EQ(meta("mg k z\r\n"), none("CLIENT_ERROR invalid flag\r\n"));
  EXPECT_EQ(meta("mg k 1\r\n"), none("CLIENT_ERROR invalid flag\r\n"));
  EXPECT_EQ(meta("mg k v v\r\n"), none("CLIENT_ERROR duplicate flag\r\n"));
  EXPECT_EQ(meta("mg k \x80\r\n"), none("CLIENT_ERROR duplicate flag\r\n"));
  EXPECT_EQ(meta("mg k Tabc\r\n"), none("CLIENT_ERROR bad token in command line format\r\n"));
  EXPECT_EQ(meta("mg k T\r\n"), none("CLIENT_ERROR bad token in command line format\r\n"));
  EXPECT_EQ(meta("mg k Fx\r\n"), none(bad));  // F has no text of its own
  EXPECT_EQ(meta("mg k F-1\r\n"), none(bad));
  EXPECT_EQ(meta("mg k Tx Fx\r\n"), none("CLIENT_ERROR bad token in command line format\r\n"));
  EXPECT_EQ(meta("mg k MAB\r\n"), none("CLIENT_ERROR incorrect length for M token\r\n"));
  EXPECT_EQ(meta("ma k Jx\r\n"), none("CLIENT_ERROR invalid or duplicate flag\r\n"));
  EXPECT_EQ(meta("md k Tx\r\n"), none("CLIENT_ERROR invalid or duplicate flag\r\n"));
  EXPECT_EQ(meta("mg k Jx\r\n"), none("CLIENT_ERROR invalid numeric initial value\r\n"));
  EXPECT_EQ(meta("mg k D-1\r\n"), none("CLIENT_ERROR invalid numeric delta value\r\n"));
  // `q` never silences an error.
  EXPECT_EQ(meta("mg k q z\r\n"), none("CLIENT_ERROR invalid flag\r\n"));
  // At most 19 tokens (MFLAG_MAX_OPT_LENGTH counts memcached's terminal token too).
  const std::string flags17 = " a b c d e f g h i j k l m n o p q";  // letters: not parsed yet
  EXPECT_EQ(meta("mg k O1 P L s t v c f h l u k q T1 N1 R1 I\r\n").substr(0, 2),
            std::to_string(kMg));
  EXPECT_EQ(meta("mg k" + flags17 + " r\r\n"), none("CLIENT_ERROR options flags are too long\r\n"));
  EXPECT_EQ(meta("md k" + flags17 + " r\r\n"), none("CLIENT_ERROR options flags too long\r\n"));
  EXPECT_EQ(meta("ma k" + flags17 + " r\r\n"), none("CLIENT_ERROR options flags too long\r\n"));
  EXPECT_EQ(meta("ms k 1" + flags17 + "\r\nx\r\n"),
            none("CLIENT_ERROR options flags too long\r\n") + "\n" + none("ERROR\r\n"));
  // ms: errors before the flags leave the data to be read as a command line; from the flags
  // on, the data block is swallowed.
  EXPECT_EQ(meta("ms k\r\n"), none(bad));
  EXPECT_EQ(meta("ms k abc\r\nmn\r\n"), none(bad) + "\n" + std::to_string(kMg + 5));
  EXPECT_EQ(meta("ms k -1\r\n"), none(bad));
  EXPECT_EQ(meta("ms k 2147483646\r\n"), none(bad));  // over INT_MAX - 2
  EXPECT_EQ(meta("ms k 2 T\r\nmn\r\nmn\r\n"),
            none("CLIENT_ERROR bad token in command line format\r\n") + "\n" +
                std::to_string(kMg + 5));  // "mn\r\n" was the swallowed data
  EXPECT_EQ(meta("ms k 2 zz\r\nab\r\nmn\r\n"),
            none("CLIENT_ERROR invalid flag\r\n") + "\n" + std::to_string(kMg + 5));
  RequestLimits small;
  small.max_value_bytes = 10;
  EXPECT_EQ(meta("ms k 11 T0\r\n01234567890\r\nmn\r\n", small),
            none("SERVER_ERROR object too large for cache\r\n") + "\n" + std::to_string(kMg + 5));
  // 4294967298 is 2 as memcached's int32 reads it (safe_strtol truncates).
  EXPECT_EQ(meta("ms k 4294967298\r\nab\r\n"),
            std::to_string(kMg + 1) + "|key=k||req=ms k 4294967298\r\nab\r\n");
  // The data block must end in \r\n; what follows is read as commands (here an empty line).
  EXPECT_EQ(meta("ms k 2 q\r\nabcd\r\n"),
            none("CLIENT_ERROR bad data chunk\r\n") + "\n" + none("ERROR\r\n"));
}

TEST(MemcacheParserTest, MetaStreamSplitAtEveryByteGivesTheSameRequests) {
  const std::string stream =
      "mg foo v k O1 q\r\nms foo 3 T30 b\r\nabc\r\nms Zm9v 2 b\r\nxy\r\nmd foo q\r\nma n D2\r\n"
      "me foo\r\nmn\r\nmg Zm9v= b\r\nms k 2 zz\r\nab\r\nmx\r\nms k 2\r\nabcd\r\nmg k v\n";
  const std::string whole = meta(stream);
  ASSERT_EQ(std::count(whole.begin(), whole.end(), '\n') >= 12, true) << whole;
  for (std::size_t step = 1; step <= 9; ++step) EXPECT_EQ(meta(stream, {}, step), whole) << step;
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    RequestParser p;
    std::string buf, got;
    for (const std::string_view piece :
         {std::string_view(stream).substr(0, cut), std::string_view(stream).substr(cut)}) {
      buf += piece;
      while (p.parse(buf) == ParseResult::kDone) {
        got += std::to_string(static_cast<int>(p.command())) + std::string(p.reply());
        if (is_meta_keyed(p.command()))
          got += std::string(p.meta_key(buf)) + std::string(p.request(buf));
        p.next();
      }
    }
    RequestParser q;
    std::string expect;
    std::string_view all(stream);
    while (q.parse(all) == ParseResult::kDone) {
      expect += std::to_string(static_cast<int>(q.command())) + std::string(q.reply());
      if (is_meta_keyed(q.command()))
        expect += std::string(q.meta_key(all)) + std::string(q.request(all));
      q.next();
    }
    ASSERT_EQ(got, expect) << "cut at " << cut;
  }
}

TEST(MemcacheParserTest, ReplyParserReadsMetaReplies) {
  auto meta_replies = [](std::string_view input, std::size_t step = 0) {
    ReplyParser p(1000);
    p.expect_meta(true);
    return feed(p, input, step, [&](const std::string& buf) {
      return std::to_string(static_cast<int>(p.kind())) + (p.is_error() ? "!" : "") + ":" +
             std::string(p.span().in(buf));
    });
  };
  const std::string stream =
      "HD\r\nHD O12 c5 kfoo\r\nEN\r\nEN Oab\r\nVA 3 s3 W\r\nabc\r\nVA 0\r\n\r\nNS\r\nEX c1\r\n"
      "NF\r\nMN\r\nME foo exp=-1 la=1 cas=2 fetch=no cls=1 size=63\r\n"
      "CLIENT_ERROR bad data chunk\r\n";
  const auto whole = meta_replies(stream);
  ASSERT_EQ(whole.size(), 12u);
  EXPECT_EQ(whole[4], "2:VA 3 s3 W\r\nabc\r\n");
  EXPECT_EQ(whole[11], "2!:CLIENT_ERROR bad data chunk\r\n");
  for (std::size_t step = 1; step < 8; ++step) EXPECT_EQ(meta_replies(stream, step), whole);
  for (const char* bad :
       {"HDX\r\n", "ENd\r\n", "ME\r\n", "VA x\r\n", "VALUE a 0 1\r\n", "END\r\n"}) {
    EXPECT_EQ(meta_replies(bad)[0].substr(0, 6), "FATAL:") << bad;
  }
  EXPECT_EQ(meta_replies("VA 3\r\nabcd\r\n")[0].substr(0, 6), "FATAL:");
}

// ---- Replies ------------------------------------------------------------------------------------

std::vector<std::string> replies(std::string_view input, bool values, std::size_t step = 0) {
  ReplyParser p(1000);
  p.expect_values(values);
  return feed(p, input, step, [&](const std::string& buf) {
    std::string s = std::to_string(static_cast<int>(p.kind())) + (p.is_error() ? "!" : "") + ":" +
                    std::string(p.span().in(buf));
    if (p.kind() == ReplyKind::kValue) s += "key=" + std::string(p.key().in(buf));
    return s;
  });
}

TEST(MemcacheParserTest, ReplyParserReadsValuesAndLines) {
  const std::string get =
      "VALUE a 0 3\r\nabc\r\nVALUE bb 5 0 123\r\n\r\nVALUE c 1 5\r\nEND\r\n\r\nEND\r\n";
  const auto whole = replies(get, true);
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_EQ(whole[0], "0:VALUE a 0 3\r\nabc\r\nkey=a");
  EXPECT_EQ(whole[1], "0:VALUE bb 5 0 123\r\n\r\nkey=bb");
  EXPECT_EQ(whole[2], "0:VALUE c 1 5\r\nEND\r\n\r\nkey=c");  // "END" inside a value is data
  EXPECT_EQ(whole[3], "1:END\r\n");
  for (std::size_t step = 1; step < 8; ++step) EXPECT_EQ(replies(get, true, step), whole);
  EXPECT_EQ(replies("CLIENT_ERROR invalid exptime argument\r\n", true)[0],
            "2!:CLIENT_ERROR invalid exptime argument\r\n");
  for (const char* line : {"STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED", "TOUCHED",
                           "42", "ERROR", "SERVER_ERROR out of memory", "VERSION 1.6.18"}) {
    EXPECT_EQ(replies(std::string(line) + "\r\n", false)[0].substr(0, 1), "2") << line;
  }
  EXPECT_EQ(replies("BOGUS\r\n", false)[0].substr(0, 6), "FATAL:");
  EXPECT_EQ(replies("END\r\n", false)[0].substr(0, 6), "FATAL:");  // END only ends a retrieval
  EXPECT_EQ(replies("STORED\r\n", true)[0].substr(0, 6), "FATAL:");
  EXPECT_EQ(replies("VALUE a 0 3\r\nabcd\r\n", true)[0].substr(0, 6), "FATAL:");
  EXPECT_EQ(replies("VALUE a 0 1001\r\n", true)[0].substr(0, 6), "FATAL:");  // over the limit
  EXPECT_EQ(replies("VALUE a 0\r\n", true)[0].substr(0, 6), "FATAL:");
  EXPECT_EQ(replies(std::string(9000, 'x'), true)[0].substr(0, 6), "FATAL:");
}

}  // namespace
}  // namespace chash::proxy::memcache
