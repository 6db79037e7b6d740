// SPDX-License-Identifier: Apache-2.0
// Multi-buffer MD5 (src/hash/md5_multi.h) against OpenSSL's MD5(), on message sets the fuzzer
// chooses: byte 0 picks the implementation (scalar, SSE2, AVX2 where the CPU has it), then each
// message is a length byte (times 3, so up to 765 bytes: several blocks) and that many bytes (or
// what is left). Every message is copied to a heap block of exactly its size, so a read past any
// one of them is an ASan error, not only past the input's end.
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "hash/md5_multi.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using chash::hash::internal::Md5Isa;
  if (size == 0) return 0;
  const auto isa = static_cast<Md5Isa>(data[0] % 3);
  if (!chash::hash::internal::md5_isa_supported(isa)) return 0;
  std::vector<std::unique_ptr<char[]>> owned;
  std::vector<std::string_view> msgs;
  std::size_t at = 1;
  while (at < size && msgs.size() < 200) {
    const std::size_t want = std::size_t{data[at++]} * 3;
    const std::size_t len = want < size - at ? want : size - at;
    owned.push_back(std::make_unique<char[]>(len));
    for (std::size_t i = 0; i < len; ++i) owned.back()[i] = static_cast<char>(data[at + i]);
    msgs.emplace_back(owned.back().get(), len);
    at += len;
  }
  std::vector<chash::hash::Md5Digest> got(msgs.size());
  chash::hash::internal::md5_many(isa, msgs, got);
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    if (got[i] != chash::hash::md5(msgs[i])) std::abort();
  }
  return 0;
}
