// SPDX-License-Identifier: Apache-2.0
// Client bytes are untrusted: memcached's binary-protocol request parser (proto/memcache/
// binary.h) must accept or refuse any input, fed in arbitrary pieces, with the same packets and
// the same verdict as in one piece, never reading outside the buffer, and never holding more
// than one header plus one bounded body (a length over the limit is refused from the header).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "proto/memcache/binary.h"

namespace {

namespace bin = chash::proxy::memcache::binary;
using chash::proxy::memcache::ParseResult;
using chash::proxy::memcache::RequestLimits;

constexpr std::size_t kMaxValue = 64;
constexpr std::size_t kBound = bin::kHeaderSize + kMaxValue + bin::kBodySlack;

bool inside(std::string_view part, std::string_view buf) {
  return part.data() >= buf.data() && part.data() + part.size() <= buf.data() + buf.size();
}

// Every parsed packet (and "fatal:<error>" on kError), parsing `data` in pieces whose sizes
// come from `cuts` (whole when empty).
std::vector<std::string> feed(std::string_view data, std::string_view cuts) {
  RequestLimits lim;
  lim.max_value_bytes = kMaxValue;
  bin::RequestParser p(lim);
  std::vector<std::string> out;
  std::string buf;
  std::size_t off = 0, ci = 0;
  while (off < data.size()) {
    std::size_t n = data.size() - off;
    if (!cuts.empty())
      n = std::min<std::size_t>(n, static_cast<unsigned char>(cuts[ci++ % cuts.size()]) % 29 + 1);
    buf.append(data.substr(off, n));
    off += n;
    for (;;) {
      const ParseResult r = p.parse(buf);
      if (r == ParseResult::kError) {
        const std::string_view e = p.error();
        // An error response is one whole packet (or nothing: bad magic).
        if (!e.empty() && (e.size() < bin::kHeaderSize ||
                           bin::be32(e.data() + 8) + bin::kHeaderSize != e.size())) {
          std::abort();
        }
        out.push_back("fatal:" + std::string(e));
        return out;
      }
      if (r == ParseResult::kDone) {
        const std::string_view b(buf);
        const std::string_view ex = p.extras(b), k = p.key(b), v = p.value(b);
        if (!inside(ex, b) || !inside(k, b) || !inside(v, b) || p.end() > b.size() ||
            p.end() - p.start() != bin::kHeaderSize + ex.size() + k.size() + v.size() ||
            v.size() > kMaxValue + bin::kBodySlack) {
          std::abort();
        }
        out.push_back(std::to_string(p.opcode()) + ":" + std::to_string(p.opaque()) + ":" +
                      std::to_string(p.cas()) + ":" + std::string(ex) + "\x1f" + std::string(k) +
                      "\x1f" + std::string(v));
        p.next();
      }
      // As the sessions' drop_consumed: the consumed prefix goes after every parse.
      const std::size_t drop = p.start();
      if (drop > buf.size()) std::abort();
      buf.erase(0, drop);
      p.consume(drop);
      if (r == ParseResult::kNeedMore) break;
    }
    // Bounded: at most one packet's header and body (plus the last piece) is kept.
    if (buf.size() > kBound + 29) std::abort();
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t split = static_cast<unsigned char>(all[0]) % 8;
  const std::string_view cuts = all.substr(1, std::min(split, all.size() - 1));
  const std::string_view input = all.substr(1 + cuts.size());
  if (feed(input, "") != feed(input, cuts)) std::abort();
  return 0;
}
