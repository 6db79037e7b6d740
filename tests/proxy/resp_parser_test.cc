// SPDX-License-Identifier: Apache-2.0
// The RESP parsers: resumable at every byte, pipelining, and hostile sizes refused before any
// payload is buffered.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "proto/redis/commands.h"
#include "proto/redis/resp.h"

namespace chash::proxy::redis {
namespace {

std::vector<std::string> args_of(const RequestParser& p, std::string_view buf) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < p.argc(); ++i) out.emplace_back(p.arg(buf, i));
  return out;
}

TEST(RequestParserTest, ParsesOneMultibulkCommand) {
  RequestParser p;
  const std::string buf = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(args_of(p, buf), (std::vector<std::string>{"SET", "k", "hello"}));
  EXPECT_EQ(p.end(), buf.size());
  EXPECT_FALSE(p.is_inline());
}

TEST(RequestParserTest, ResumesWhenSplitAtEveryByte) {
  using namespace std::string_literals;
  const std::string whole = "*2\r\n$3\r\nGET\r\n$10\r\nab\r\ncd\0efg\r\n"s;
  for (std::size_t cut = 0; cut <= whole.size(); ++cut) {
    RequestParser p;
    std::string buf = whole.substr(0, cut);
    ParseResult r = p.parse(buf);
    if (cut < whole.size()) {
      ASSERT_EQ(r, ParseResult::kNeedMore) << cut;
      buf = whole;
      r = p.parse(buf);
    }
    ASSERT_EQ(r, ParseResult::kDone) << cut;
    EXPECT_EQ(p.arg(buf, 1), std::string_view("ab\r\ncd\0efg", 10));
  }
}

TEST(RequestParserTest, ByteAtATimeFeedsEqualOneShot) {
  const std::string whole = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\nGET  k\r\n";
  RequestParser p;
  std::string buf;
  std::vector<std::vector<std::string>> got;
  for (const char c : whole) {
    buf += c;
    while (p.parse(buf) == ParseResult::kDone) {
      got.push_back(args_of(p, buf));
      p.next();
    }
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1], (std::vector<std::string>{"ECHO", ""}));
  EXPECT_EQ(got[2], (std::vector<std::string>{"GET", "k"}));
}

TEST(RequestParserTest, PipelinedRequestsComeOutInOrderAndConsumeShiftsOffsets) {
  RequestParser p;
  std::string buf;
  for (int i = 0; i < 100; ++i) {
    const std::string k = "key" + std::to_string(i);
    buf += "*2\r\n$3\r\nGET\r\n$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(p.parse(buf), ParseResult::kDone);
    EXPECT_EQ(p.arg(buf, 1), "key" + std::to_string(i));
    p.next();
    if (i % 7 == 0) {  // the connection drops what it consumed
      const std::size_t n = p.start();
      buf.erase(0, n);
      p.consume(n);
    }
  }
  EXPECT_EQ(p.parse(buf), ParseResult::kNeedMore);
}

TEST(RequestParserTest, InlineCommandsAndEmptyLinesAndEmptyArrays) {
  RequestParser p;
  const std::string buf = "\r\n*0\r\n*-1\r\nSET  a\tb\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_TRUE(p.is_inline());
  EXPECT_EQ(args_of(p, buf), (std::vector<std::string>{"SET", "a", "b"}));
}

// Inline requests with quotes are split as redis-server's sdssplitargs splits them: "..." with
// \xHH and \n-style escapes, '...' with \', adjacent quoted and bare parts joined; a closing
// quote not followed by a space, or a missing one, is Redis's "unbalanced quotes in request".
TEST(RequestParserTest, InlineQuotesAreSplitAsRedisDoes) {
  RequestParser p;
  std::string buf = "SET \"my key\" 'it\\'s' \"a\\x41\\n\" x\"y z\"\r\nGET k\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(args_of(p, buf),
            (std::vector<std::string>{"SET", "my key", "it's", "aA\n", "xy z"}));
  p.next();
  buf.erase(0, p.start());
  p.consume(p.start());
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);  // the next, plain, request after a quoted one
  EXPECT_EQ(args_of(p, buf), (std::vector<std::string>{"GET", "k"}));
  for (const std::string bad : {"set \"\"\"test-key\"\"\" v\r\n", "get \"k\r\n", "get 'k\r\n",
                                "get \"k\"x\r\n"}) {
    RequestParser q;
    ASSERT_EQ(q.parse(bad), ParseResult::kError) << bad;
    EXPECT_EQ(q.error(), "Protocol error: unbalanced quotes in request") << bad;
  }
}

TEST(RequestParserTest, TenGigabyteBulkIsRefusedBeforeBuffering) {
  RequestParser p;  // default limit 64 MiB
  const std::string buf = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10737418240\r\n";
  ASSERT_EQ(p.parse(buf), ParseResult::kError);
  // Over redis-server's proto-max-bulk-len (512 MiB): its words.
  EXPECT_EQ(p.error(), "Protocol error: invalid bulk length");
  RequestParser q;
  ASSERT_EQ(q.parse("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000000\r\n"), ParseResult::kError);
  EXPECT_NE(q.error().find("larger than"), std::string::npos);  // the proxy's own bound
}

TEST(RequestParserTest, WholeRequestIsBoundedNotJustEachBulk) {
  ParserLimits lim;
  lim.max_request_bytes = 100;
  RequestParser p(lim);
  std::string buf = "*3\r\n$3\r\nSET\r\n$40\r\n" + std::string(40, 'a') + "\r\n$60\r\n";
  EXPECT_EQ(p.parse(buf), ParseResult::kError);
}

TEST(RequestParserTest, HostileHeadersAreErrors) {
  const char* bad[] = {
      "*99999999999999999999\r\n",  // overflows
      "*2000000\r\n",               // more args than max_args
      "*1\r\n$-5\r\n",              // negative bulk
      "*1\r\n:5\r\n",               // not a bulk
      "*1\r\n$3\r\nabcX\n",         // no CRLF after payload
      "*1x\r\n",                    // junk in the count
      "*+1\r\n",                    // '+' not allowed
  };
  for (const char* b : bad) {
    RequestParser p;
    EXPECT_EQ(p.parse(b), ParseResult::kError) << b;
  }
}

TEST(RequestParserTest, EndlessHeaderOrInlineLineIsRefused) {
  {
    RequestParser p;
    EXPECT_EQ(p.parse("*" + std::string(100, '1')), ParseResult::kError);
  }
  {
    RequestParser p;
    EXPECT_EQ(p.parse(std::string(70 * 1024, 'a')), ParseResult::kError);
  }
}

TEST(ReplyParserTest, EveryTypeAndNesting) {
  const std::string replies[] = {
      "+OK\r\n",        "-ERR x\r\n", ":-42\r\n", "$-1\r\n",
      "$3\r\na\nb\r\n", "*-1\r\n",    "*0\r\n",   "*2\r\n*1\r\n:1\r\n$1\r\nx\r\n"};
  for (const auto& r : replies) {
    for (std::size_t cut = 0; cut < r.size(); ++cut) {
      ReplyParser p;
      std::string buf = r.substr(0, cut);
      ASSERT_EQ(p.parse(buf), ParseResult::kNeedMore) << r << " cut " << cut;
      buf = r;
      ASSERT_EQ(p.parse(buf), ParseResult::kDone) << r;
    }
    ReplyParser p;
    ASSERT_EQ(p.parse(r), ParseResult::kDone);
    EXPECT_EQ(p.end(), r.size());
    EXPECT_EQ(p.type(), r[0]);
  }
}

// Regression: several replies in one read; the second's elements must be relative to its own
// first byte (the MGET merge copies each reply and slices the copy). Before the fix the spans
// were buffer offsets and the merge read out of range (std::out_of_range in Msg::finish).
TEST(ReplyParserTest, ElementsAreRelativeToTheirReply) {
  const std::string buf = "+OK\r\n*2\r\n$1\r\nx\r\n$-1\r\n*1\r\n$2\r\nyz\r\n";
  ReplyParser p;
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  p.next();
  p.set_record_elements(true);
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  const std::string copy(p.span().in(buf));
  ASSERT_EQ(p.elements().size(), 2u);
  EXPECT_EQ(p.elements()[0].in(copy), "$1\r\nx\r\n");
  EXPECT_EQ(p.elements()[1].in(copy), "$-1\r\n");
  p.next();
  p.consume(p.start());  // the consumed prefix is dropped: spans do not move
  const std::string rest = buf.substr(buf.size() - 12);
  p.set_record_elements(true);
  ASSERT_EQ(p.parse(rest), ParseResult::kDone);
  ASSERT_EQ(p.elements().size(), 1u);
  EXPECT_EQ(p.elements()[0].in(p.span().in(rest)), "$2\r\nyz\r\n");
}

TEST(ReplyParserTest, RecordsTopLevelElementsOfNestedArrays) {
  const std::string buf = "*3\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n$-1\r\n+next\r\n";
  ReplyParser p;
  p.set_record_elements(true);
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  ASSERT_EQ(p.elements().size(), 3u);
  EXPECT_EQ(p.elements()[0].in(buf), "$1\r\na\r\n");
  EXPECT_EQ(p.elements()[1].in(buf), "*2\r\n:1\r\n:2\r\n");
  EXPECT_EQ(p.elements()[2].in(buf), "$-1\r\n");
  p.next();
  ASSERT_EQ(p.parse(buf), ParseResult::kDone);
  EXPECT_EQ(p.span().in(buf), "+next\r\n");
}

TEST(ReplyParserTest, DeepNestingAndJunkAreErrors) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "*1\r\n";
  ReplyParser p;
  EXPECT_EQ(p.parse(deep), ParseResult::kError);
  ReplyParser q;
  EXPECT_EQ(q.parse("?what\r\n"), ParseResult::kError);
}

// RESP3 (a client's connections after HELLO 3): every type redis-server 7 writes, resumable at
// every byte like RESP2's; a map of n pairs has 2n elements, an attribute describes the value
// after it (one value in all).
TEST(ReplyParserTest, Resp3TypesAndMapsCountPairs) {
  const std::string replies[] = {"_\r\n",
                                 ",1.5\r\n",
                                 ",-inf\r\n",
                                 "#t\r\n",
                                 "(3492890328409238509324850943850943825024385\r\n",
                                 "=15\r\ntxt:Some string\r\n",
                                 "!21\r\nSYNTAX invalid syntax\r\n",
                                 "%2\r\n+a\r\n:1\r\n$1\r\nb\r\n~2\r\n:1\r\n_\r\n",
                                 "~0\r\n",
                                 "%0\r\n",
                                 ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n",
                                 "|1\r\n+ttl\r\n:3\r\n:42\r\n"};
  for (const auto& r : replies) {
    for (std::size_t cut = 0; cut < r.size(); ++cut) {
      ReplyParser p;
      std::string buf = r.substr(0, cut);
      ASSERT_EQ(p.parse(buf), ParseResult::kNeedMore) << r << " cut " << cut;
      buf = r;
      ASSERT_EQ(p.parse(buf), ParseResult::kDone) << r;
      EXPECT_EQ(p.end(), r.size()) << r;
    }
  }
  ReplyParser p;
  p.set_record_elements(true);
  const std::string map = "%2\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\ng\r\n,2.5\r\n+after\r\n";
  ASSERT_EQ(p.parse(map), ParseResult::kDone);
  EXPECT_EQ(p.type(), '%');
  ASSERT_EQ(p.elements().size(), 4u);
  EXPECT_EQ(p.elements()[3].in(map), ",2.5\r\n");
  p.next();
  ASSERT_EQ(p.parse(map), ParseResult::kDone);
  EXPECT_EQ(p.span().in(map), "+after\r\n");
  for (const std::string bad :
       {"_x\r\n", "#x\r\n", "(1.5\r\n", "%-1\r\n", "=-1\r\n", "~-1\r\n", "$?\r\n"}) {
    ReplyParser q;
    EXPECT_EQ(q.parse(bad), ParseResult::kError) << bad;
  }
}

TEST(CommandTableTest, SortedUniqueAndCaseInsensitive) {
  const auto t = command_table();
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_LT(t[i - 1].name, t[i].name);
  for (const auto& c : t) EXPECT_EQ(find_command(c.name), &c);
  ASSERT_NE(find_command("mGeT"), nullptr);
  EXPECT_EQ(find_command("MGET")->route, Route::kSplitKeys);
  EXPECT_EQ(find_command("nosuchcommand"), nullptr);
  EXPECT_EQ(find_command(std::string(100, 'a')), nullptr);
}

TEST(CommandTableTest, NamesCommandIsFindCommandForOneEntry) {
  // The dispatch shortcut for a repeated command must answer as find_command would.
  const Command& get = *find_command("get");
  EXPECT_TRUE(names_command("GET", get));
  EXPECT_TRUE(names_command("gEt", get));
  EXPECT_FALSE(names_command("GETS", get));
  EXPECT_FALSE(names_command("GE", get));
  EXPECT_FALSE(names_command("SET", get));
  EXPECT_FALSE(names_command("G\xc5T", get));
  for (const auto& c : command_table()) {
    std::string upper(c.name);
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_TRUE(names_command(upper, c)) << c.name;
    EXPECT_EQ(names_command(upper, get), find_command(upper) == &get) << c.name;
  }
}

}  // namespace
}  // namespace chash::proxy::redis

#ifdef CHASH_PROXY_DOCS
#include <filesystem>
#include <fstream>
#include <sstream>
namespace chash::proxy::redis {
namespace {
TEST(CommandTableTest, EveryCommandIsDocumented) {
  std::ifstream f(std::filesystem::path(CHASH_PROXY_DOCS).parent_path() / "REDIS.md");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  ASSERT_FALSE(doc.empty());
  for (const auto& c : command_table()) {
    std::string up(c.name);
    for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_NE(doc.find(up), std::string::npos) << up << " is not in docs/REDIS.md";
  }
}
}  // namespace
}  // namespace chash::proxy::redis
#endif
