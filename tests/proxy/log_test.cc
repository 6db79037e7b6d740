// SPDX-License-Identifier: Apache-2.0
// The log's logfmt lines (control/log.h): values quoted when they must be, and no raw control
// or non-UTF-8 byte from a key or a server's reply reaching the log.
#include "base/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace chash::proxy {
namespace {

std::string log_one(std::string_view value) {
  char path[] = "/tmp/chash-log-test-XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::string error;
  EXPECT_TRUE(set_log_file(path, error)) << error;
  log(LogLevel::kWarn, "hot key", {{"pool", "p"}, {"key", value}});
  EXPECT_TRUE(set_log_file("", error)) << error;
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  ::unlink(path);
  const std::string line = all.str();
  const std::size_t at = line.find(" key=");
  EXPECT_NE(at, std::string::npos) << line;
  return at == std::string::npos ? line : line.substr(at + 5, line.size() - at - 6);
}

TEST(LogTest, ValuesAreQuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(log_one("user:42"), "user:42");
  EXPECT_EQ(log_one("two words"), "\"two words\"");
  EXPECT_EQ(log_one("a=\"b\"\\"), "\"a=\\\"b\\\"\\\\\"");
  EXPECT_EQ(log_one(""), "\"\"");
}

TEST(LogTest, ControlAndNonUtf8BytesAreShownAsHex) {
  // A terminal escape in a key must not reach an operator's terminal raw.
  EXPECT_EQ(log_one("\x1b[31mred"), "\"\\x1b[31mred\"");
  EXPECT_EQ(log_one("bin\xff\xfe"), "\"bin\\xff\\xfe\"");
  EXPECT_EQ(log_one("line\nbreak\r"), "\"line break \"");
  EXPECT_EQ(log_one("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // valid UTF-8 kept
  EXPECT_EQ(log_one("del\x7f"), "\"del\\x7f\"");
}

}  // namespace
}  // namespace chash::proxy
