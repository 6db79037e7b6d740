// SPDX-License-Identifier: Apache-2.0
// chash-proxy run as a program: flags that answer without a config.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "chash/version.h"

namespace chash::proxy {
namespace {

// The version comes from project(chash VERSION ...) through chash/version.h.
TEST(ProxyBinary, VersionIsTheProjectVersionAndNeedsNoConfig) {
  FILE* p = ::popen((std::string(CHASH_PROXY_PATH) + " --version").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // nutcracker's form: scripts that strip "This is nutcracker-" read 0.5.0-compatible ...
  EXPECT_EQ(out, "This is nutcracker-0.5.0-compatible chash-proxy-" CHASH_VERSION_STRING "\n");
}

}  // namespace
}  // namespace chash::proxy
