// SPDX-License-Identifier: Apache-2.0
// Key streams are user input: any bytes split into keys without crashing or losing bytes.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chash/error.h"
#include "io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::FILE* f = fmemopen(const_cast<std::uint8_t*>(data), size, "rb");
  if (f == nullptr) return 0;
  std::FILE* saved = stdin;
  stdin = f;
  std::size_t bytes = 0, keys = 0;
  try {
    chash::cli::KeySource src(chash::cli::KeyInput{});
    std::string_view k;
    while (src.next(k)) {
      bytes += k.size();
      ++keys;
    }
  } catch (const chash::Error&) {
  }
  stdin = saved;
  std::fclose(f);
  // Every byte is a key byte, a separator or a dropped '\r' before one.
  if (bytes > size) std::abort();
  return 0;
}
