// SPDX-License-Identifier: Apache-2.0
// A watch stream arrives in reads of any size (membership/etcd/json.h WatchStream): split at
// arbitrary points, the same bytes must give the same lines, every line parses or is refused,
// and what is buffered stays under the bound.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "membership/etcd/json.h"

namespace etcd = chash::proxy::etcd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t step = 1 + data[0] % 31;  // the read size
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  constexpr std::size_t kMax = 4096;
  etcd::WatchStream whole(kMax), pieces(kMax);
  std::vector<std::string> a, b;
  bool a_failed = false, b_failed = false;
  try {
    a = whole.feed(in);
  } catch (const etcd::EtcdError&) {
    a_failed = true;
  }
  for (std::size_t at = 0; at < in.size() && !b_failed; at += step) {
    try {
      for (auto& l : pieces.feed(in.substr(at, step))) b.push_back(std::move(l));
    } catch (const etcd::EtcdError&) {
      b_failed = true;
    }
    if (pieces.pending() > kMax) std::abort();
  }
  // Fed whole, a too-long tail fails at once; in pieces the lines before it come out first.
  if (!a_failed && !b_failed && a != b) std::abort();
  for (const auto& line : b) {
    try {
      const etcd::WatchReply w = etcd::parse_watch(line);
      for (const auto& e : w.events) (void)e.kv.key.size();
    } catch (const etcd::EtcdError&) {
    }
  }
  return 0;
}
