// SPDX-License-Identifier: Apache-2.0
// Client and backend bytes are untrusted: the memcached text-protocol request and reply parsers
// must accept or refuse any input, fed in arbitrary pieces, with the same result as in one
// piece, never reading outside the buffer, and never holding more than a line plus a value.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "proto/memcache/protocol.h"

namespace {

using chash::proxy::memcache::ParseResult;
using chash::proxy::memcache::ReplyParser;
using chash::proxy::memcache::RequestLimits;
using chash::proxy::memcache::RequestParser;

constexpr std::size_t kMaxValue = 64;
constexpr std::size_t kMaxGetLine = 4096;

// Every parsed element (and a final "fatal" marker on kError), parsing `data` in pieces whose
// sizes come from `cuts` (whole when empty).
template <class Parser, class Collect>
void feed(std::string_view data, std::string_view cuts, std::size_t bound, Parser& p,
          std::vector<std::string>& out, Collect collect) {
  std::string buf;
  std::size_t off = 0, ci = 0;
  while (off < data.size()) {
    std::size_t n = data.size() - off;
    if (!cuts.empty())
      n = std::min<std::size_t>(n, static_cast<unsigned char>(cuts[ci++ % cuts.size()]) % 23 + 1);
    buf.append(data.substr(off, n));
    off += n;
    for (;;) {
      const ParseResult r = p.parse(buf);
      if (r == ParseResult::kError) {
        out.push_back("fatal");
        return;
      }
      if (p.start() > buf.size()) std::abort();
      if (r == ParseResult::kDone) {
        out.push_back(collect(p, std::string_view(buf)));
        p.next();
      }
      // As the sessions' drop_consumed: the consumed prefix goes after every parse, also while
      // a message is incomplete, so offsets kept across calls must follow it.
      const std::size_t drop = p.start();
      if (drop > buf.size()) std::abort();
      buf.erase(0, drop);
      p.consume(drop);
      if (r == ParseResult::kNeedMore) break;
    }
    // Bounded: what is kept is at most one line plus one value (plus the last piece).
    if (!cuts.empty() && buf.size() > bound + 23) std::abort();
  }
}

std::string request(const RequestParser& p, std::string_view buf) {
  if (p.end() > buf.size()) std::abort();
  std::string s = std::to_string(static_cast<int>(p.command())) + ":" + std::string(p.reply());
  for (std::size_t i = 0; i < p.token_count(); ++i) {
    const std::string_view t = p.token(buf, i);
    if (t.data() < buf.data() || t.data() + t.size() > buf.data() + buf.size()) std::abort();
    s += std::string(t) + "\x1f";
  }
  if (is_storage(p.command()) || p.command() == chash::proxy::memcache::Command::kMetaSet) {
    const std::string_view d = p.data(buf);
    if (d.size() > kMaxValue || d.data() + d.size() > buf.data() + buf.size()) std::abort();
    s += "|" + std::string(d);
  }
  if (is_meta_keyed(p.command())) {
    // Meta requests go whole: the forwarded bytes and the routing key (decoded from base64 into
    // the parser's own buffer) stay in bounds, and a request ends where the parser says.
    const std::string_view r = p.request(buf);
    if (r.data() < buf.data() || r.data() + r.size() > buf.data() + buf.size() ||
        r.size() != p.end() - p.start()) {
      std::abort();
    }
    const std::string_view k = p.meta_key(buf);
    if (k.empty() || k.size() > chash::proxy::memcache::kMaxKeyLength) std::abort();
    s += "|key=" + std::string(k) + (p.quiet() ? "|q" : "") + "|req=" + std::string(r);
  }
  if (p.first_key() > p.key_end() || p.key_end() > p.token_count() ||
      p.forward_end() > p.token_count())
    std::abort();
  return s + (p.noreply() ? "|noreply" : "");
}

std::string reply(const ReplyParser& p, std::string_view buf) {
  const auto span = p.span();
  if (span.off + span.len > buf.size()) std::abort();
  const auto key = p.key();
  if (p.kind() == chash::proxy::memcache::ReplyKind::kValue &&
      (key.off < span.off || key.off + key.len > span.off + span.len)) {
    std::abort();
  }
  return std::to_string(static_cast<int>(p.kind())) + std::string(span.in(buf));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t split = static_cast<unsigned char>(all[0]) % 8;
  const bool values = (static_cast<unsigned char>(all[0]) & 0x80) != 0;
  const std::string_view cuts = all.substr(1, std::min(split, all.size() - 1));
  const std::string_view input = all.substr(1 + cuts.size());

  RequestLimits lim;
  lim.max_value_bytes = kMaxValue;
  lim.max_get_line = kMaxGetLine;
  std::vector<std::string> whole, pieces;
  RequestParser a(lim), b(lim);
  const std::size_t request_bound =
      std::max(kMaxGetLine, chash::proxy::memcache::kMaxLine + kMaxValue + 2);
  feed(input, "", request_bound, a, whole, request);
  feed(input, cuts, request_bound, b, pieces, request);
  if (whole != pieces) std::abort();

  std::vector<std::string> r1, r2;
  ReplyParser c(kMaxValue), d(kMaxValue);
  c.expect_values(values);
  d.expect_values(values);
  // Meta replies (VA/HD/EN/... and ME) on the other half of the inputs.
  const bool meta = (static_cast<unsigned char>(all[0]) & 0x40) != 0;
  c.expect_meta(meta);
  d.expect_meta(meta);
  const std::size_t reply_bound = 8192 + kMaxValue + 2;  // a reply line (protocol.cc) and a value
  feed(input, "", reply_bound, c, r1, reply);
  feed(input, cuts, reply_bound, d, r2, reply);
  if (r1 != r2) std::abort();
  return 0;
}
