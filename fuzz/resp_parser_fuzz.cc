// SPDX-License-Identifier: Apache-2.0
// Client bytes are untrusted: the RESP request and reply parsers must accept or refuse any
// input, fed in arbitrary pieces, with the same result as in one piece, never reading out of
// bounds, and never holding a request larger than the limit.
#include <cstdlib>
#include <string>
#include <vector>

#include "proto/redis/resp.h"

namespace {

using chash::proxy::redis::ParseResult;

// Every complete request's arguments, parsing `data` in pieces whose sizes come from `cuts`.
template <class Parser, class Collect>
bool feed(std::string_view data, std::string_view cuts, Parser& p, Collect collect) {
  std::string buf;
  std::size_t off = 0, ci = 0;
  while (off < data.size()) {
    std::size_t n = data.size() - off;
    if (ci < cuts.size())
      n = std::min<std::size_t>(n, static_cast<unsigned char>(cuts[ci++]) % 17 + 1);
    buf.append(data.substr(off, n));
    off += n;
    for (;;) {
      const ParseResult r = p.parse(buf);
      if (r == ParseResult::kError) return false;
      if (r == ParseResult::kDone) {
        collect(p, buf);
        p.next();
      }
      // As the sessions' drop_consumed: the consumed prefix goes after every parse.
      const std::size_t drop = p.start();
      if (drop > buf.size()) std::abort();
      buf.erase(0, drop);
      p.consume(drop);
      if (r == ParseResult::kNeedMore) break;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t split = static_cast<unsigned char>(all[0]) % 8;
  const std::string_view cuts = all.substr(1, std::min(split, all.size() - 1));
  const std::string_view input = all.substr(1 + cuts.size());

  chash::proxy::redis::ParserLimits lim;
  lim.max_request_bytes = 4096;
  lim.max_args = 64;
  lim.max_inline_bytes = 512;
  lim.max_depth = 8;

  std::vector<std::string> whole, pieces;
  auto collect_req = [](std::vector<std::string>& out) {
    return [&out](const chash::proxy::redis::RequestParser& p, std::string_view buf) {
      if (p.argc() == 0 || p.end() - p.start() > 4096 + 64) std::abort();
      std::string joined;
      for (std::size_t i = 0; i < p.argc(); ++i) {
        joined += p.arg(buf, i);
        joined += '\x1f';
      }
      out.push_back(joined);
    };
  };
  chash::proxy::redis::RequestParser a(lim), b(lim);
  const bool ok_whole = feed(input, "", a, collect_req(whole));
  const bool ok_pieces = feed(input, cuts, b, collect_req(pieces));
  if (ok_whole != ok_pieces || whole != pieces) std::abort();

  std::vector<std::string> r1, r2;
  auto collect_rep = [](std::vector<std::string>& out) {
    return [&out](const chash::proxy::redis::ReplyParser& p, std::string_view buf) {
      std::string s(p.span().in(buf));
      for (const auto& e : p.elements()) {
        if (e.off + e.len > s.size()) std::abort();  // reply-relative, inside the reply
        s += '\x1f';
        s += e.in(p.span().in(buf));
      }
      out.push_back(s);
    };
  };
  chash::proxy::redis::ReplyParser c(lim), d(lim);
  c.set_record_elements(true);
  d.set_record_elements(true);
  const bool rw = feed(input, "", c, collect_rep(r1));
  const bool rp = feed(input, cuts, d, collect_rep(r2));
  if (rw != rp || r1 != r2) std::abort();
  return 0;
}
