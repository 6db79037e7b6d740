// SPDX-License-Identifier: Apache-2.0
// Key streams are user input: any bytes split into keys without crashing or losing bytes, and
// read in batches (next_batch, as route/analyze/migrate read them; the batch size from byte 0,
// some batches interleaved with single next() calls) the same keys on the same lines as one at a
// time.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chash/error.h"
#include "io.h"

namespace {

struct Read {
  std::vector<std::string> keys;
  std::vector<std::uint64_t> lines;
  bool threw = false;
};

Read read_keys(const std::uint8_t* data, std::size_t size, std::size_t batch) {
  Read r;
  std::FILE* f = fmemopen(const_cast<std::uint8_t*>(data), size, "rb");
  if (f == nullptr) std::abort();
  std::FILE* saved = stdin;
  stdin = f;
  try {
    chash::cli::KeySource src(chash::cli::KeyInput{});
    std::string_view k;
    if (batch == 0) {
      while (src.next(k)) {
        r.keys.emplace_back(k);
        r.lines.push_back(src.line());
      }
    } else {
      std::vector<std::string_view> views(batch);
      for (std::size_t round = 0;; ++round) {
        if (round % 3 == 2) {  // now and then one key alone, between batches
          if (!src.next(k)) break;
          r.keys.emplace_back(k);
          r.lines.push_back(src.line());
          continue;
        }
        const std::size_t n = src.next_batch(views);
        if (n == 0) break;
        for (std::size_t i = 0; i < n; ++i) {
          r.keys.emplace_back(views[i]);  // every view of the batch still valid here
          r.lines.push_back(src.line() - n + 1 + i);
        }
      }
    }
  } catch (const chash::Error&) {
    r.threw = true;
  }
  stdin = saved;
  std::fclose(f);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Read one = read_keys(data, size, 0);
  std::size_t bytes = 0;
  for (const auto& k : one.keys) bytes += k.size();
  // Every byte is a key byte, a separator or a dropped '\r' before one.
  if (bytes > size) std::abort();
  const Read batched = read_keys(data, size, data[0] % 300 + 1);
  if (batched.keys != one.keys || batched.lines != one.lines || batched.threw != one.threw) {
    std::abort();
  }
  return 0;
}
