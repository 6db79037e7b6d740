// SPDX-License-Identifier: Apache-2.0
#include "scan.h"

#include <charconv>
#include <thread>

#include "chash/error.h"
#include "chash/internal/uri_decode.h"
#include "chash/node.h"
#include "wire.h"

namespace chash::cli {

std::string ScanTarget::address() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ScanTarget parse_scan_target(std::string_view text, ScanTarget::Kind kind, std::string_view flag) {
  auto fail = [&](const std::string& why) {
    throw Error(ErrorCode::kParse, std::string(flag) + " \"" + std::string(text.substr(0, 128)) +
                                       "\": " + why + " (expected NAME=HOST:PORT or HOST:PORT)");
  };
  ScanTarget t;
  t.kind = kind;
  std::string_view addr = text;
  // NAME=HOST:PORT: the address is after the last '=' (a name may hold '=', an address not).
  if (const auto eq = text.rfind('='); eq != std::string_view::npos) {
    if (eq == 0) fail("empty node name");
    t.name = std::string(text.substr(0, eq));
    addr = text.substr(eq + 1);
  }
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0) fail("no HOST:PORT");
  std::string_view host = addr.substr(0, colon);
  const std::string_view port = addr.substr(colon + 1);
  unsigned value = 0;
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || p != port.data() + port.size() || value == 0 || value > 65535) {
    fail("port \"" + std::string(port.substr(0, 16)) + "\" is not 1..65535");
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') fail("unbalanced [ ] around an IPv6 address");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    fail("write an IPv6 address in brackets, [::1]:6379");
  }
  t.host = std::string(host);
  t.port = static_cast<std::uint16_t>(value);
  if (t.name.empty()) t.name = std::string(addr);
  if (t.name.size() > kMaxNodeNameBytes) fail("node name too long");
  return t;
}

namespace {

// ---- Redis: SCAN cursor COUNT 1000 until the cursor is back at 0 ---------------------------------

// A RESP header line "<type><number>": the number, checked to be in [min, max].
std::int64_t resp_count(Connection& c, std::string_view line, char type, std::int64_t min,
                        std::int64_t max, const char* what) {
  if (!line.empty() && line.front() == '-') {
    c.fail("SCAN answered \"" + std::string(line.substr(1, 200)) + "\"" +
           (line.starts_with("-NOAUTH") ? " (the server requires AUTH)" : ""));
  }
  std::int64_t v = 0;
  bool ok = !line.empty() && line.front() == type;
  if (ok) {
    const char* e = line.data() + line.size();
    const auto [p, ec] = std::from_chars(line.data() + 1, e, v);
    ok = ec == std::errc() && p == e && v >= min && v <= max;
  }
  if (!ok) {
    c.fail(std::string("unexpected reply to SCAN (") + what + "): \"" +
           std::string(line.substr(0, 64)) + "\"");
  }
  return v;
}

std::string_view resp_bulk(Connection& c, const char* what) {
  const std::string_view head = c.line();
  const auto n = resp_count(c, head, '$', 0, static_cast<std::int64_t>(kMaxItemBytes), what);
  return c.block(static_cast<std::size_t>(n));
}

}  // namespace

std::string redis_scan_page(Connection& c, const std::string& cursor, std::size_t count,
                            std::vector<std::string>& keys, std::uint64_t limit) {
  c.send(resp_command({"SCAN", cursor, "COUNT", std::to_string(count)}));
  resp_count(c, c.line(), '*', 2, 2, "not a two-element array");
  std::string next(resp_bulk(c, "cursor"));
  if (next.empty() || next.find_first_not_of("0123456789") != std::string::npos) {
    c.fail("SCAN returned cursor \"" + next.substr(0, 32) + "\"");
  }
  const auto n = resp_count(c, c.line(), '*', 0, kMaxScanBatch, "keys");
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string_view key = resp_bulk(c, "key");
    if (keys.size() < limit) keys.emplace_back(key);
  }
  return next;
}

// ---- memcached: lru_crawler metadump all -------------------------------------------------------
// One line per item, "key=<URI-encoded key> exp=... la=... cas=... ...", then "END". BUSY when
// another crawl is running: retried for up to the timeout.

void metadump(Connection& c, std::chrono::milliseconds timeout,
              const std::function<bool(std::string&)>& each) {
  const auto give_up = Clock::now() + timeout;
  std::string key;
  for (;;) {
    c.send("lru_crawler metadump all\r\n");
    std::string_view l = c.line();
    if (l.starts_with("BUSY") && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    for (;; l = c.line()) {
      if (l == "END") return;
      if (!l.starts_with("key=")) {
        c.fail("lru_crawler metadump answered \"" + std::string(l.substr(0, 200)) +
               "\" (memcached 1.4.31 or later with the LRU crawler enabled is needed)");
      }
      const std::string_view field = l.substr(4, l.find(' ') - 4);
      if (!internal::uri_decode(field, key)) {
        c.fail("metadump key \"" + std::string(field.substr(0, 64)) + "\" is not URI-encoded");
      }
      if (!each(key)) return;  // the rest of the dump is dropped with the socket
    }
  }
}

std::vector<std::string> scan_keys(const ScanTarget& target, std::uint64_t limit,
                                   std::chrono::milliseconds timeout) {
  if (limit == 0) return {};
  Connection c(target, timeout);
  std::vector<std::string> keys;
  if (target.kind == ScanTarget::Kind::kRedis) {
    std::string cursor = "0";
    do {
      cursor = redis_scan_page(c, cursor, 1000, keys, limit);
    } while (cursor != "0" && keys.size() < limit);
    return keys;
  }
  metadump(c, timeout, [&](std::string& key) {
    keys.push_back(key);
    return keys.size() < limit;
  });
  return keys;
}

}  // namespace chash::cli
