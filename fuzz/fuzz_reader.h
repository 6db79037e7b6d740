// SPDX-License-Identifier: Apache-2.0
// Reads a fuzzer's input as a stream of small choices: a byte (0 once the input runs out) or a
// string of at most `max` bytes whose length is the next byte.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace chash::fuzz {

struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t byte() { return n ? (--n, *p++) : 0; }
  std::string str(std::size_t max) {
    const std::size_t len = std::min<std::size_t>(byte() % (max + 1), n);
    std::string s(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

}  // namespace chash::fuzz
