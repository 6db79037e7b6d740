// SPDX-License-Identifier: Apache-2.0
// Compares chash::hash::java_string_hashcode with the JDK over every 1-, 2- and 3-byte string and
// every 4-byte string over JavaVectors.WIDE (the same enumeration, in the same order, as
// `JavaVectors exhaustive`). Reads the JDK's int32 little-endian hashCodes on stdin.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chash/hash.h"

namespace {

constexpr std::array<int, 32> kWide = {
    0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec,
    0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf7, 0xf8, 0xfb, 0xfc, 0xfd, 0xfe, 0xff, 0xc3};

long long g_checked = 0;
long long g_failed = 0;

void check(const std::string& key) {
  unsigned char b[4];
  if (std::fread(b, 1, 4, stdin) != 4) {
    std::fprintf(stderr, "JDK output ended early after %lld keys\n", g_checked);
    std::exit(2);
  }
  const auto want = static_cast<std::int32_t>(
      static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
      static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24);
  const std::int32_t got = chash::hash::java_string_hashcode(key);
  ++g_checked;
  if (got != want && ++g_failed <= 20) {
    std::fprintf(stderr, "mismatch for");
    for (const char c : key) std::fprintf(stderr, " %02x", static_cast<unsigned char>(c));
    std::fprintf(stderr, ": JDK %d, chash %d\n", want, got);
  }
}

void all_over(const std::vector<int>& alphabet, std::size_t length, std::string& prefix) {
  if (prefix.size() == length) {
    check(prefix);
    return;
  }
  for (const int b : alphabet) {
    prefix.push_back(static_cast<char>(b));
    all_over(alphabet, length, prefix);
    prefix.pop_back();
  }
}

}  // namespace

int main() {
  std::vector<int> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<std::size_t>(i)] = i;
  std::string prefix;
  for (std::size_t len = 1; len <= 3; ++len) all_over(all, len, prefix);
  all_over(std::vector<int>(kWide.begin(), kWide.end()), 4, prefix);
  std::printf("%lld passed, %lld failed\n", g_checked - g_failed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
