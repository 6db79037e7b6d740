// SPDX-License-Identifier: Apache-2.0
// Gathering observed placements from live servers for `chash detect`: every key a Redis node
// holds (SCAN, cursor loop, COUNT 1000, database 0) or a memcached node holds
// (`lru_crawler metadump all`), as the key -> node observations the search compares against.
// A small blocking client: connect and every read are bounded by a timeout, replies by size,
// and every error names the server's address.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chash::cli {

struct ScanTarget {
  enum class Kind : std::uint8_t { kRedis, kMemcached } kind = Kind::kRedis;
  std::string name;  // the node's name as the mapping knows it
  std::string host;  // a name or address; IPv6 without brackets
  std::uint16_t port = 0;

  std::string address() const;  // HOST:PORT ([HOST]:PORT for IPv6)
};

// Parses "NAME=HOST:PORT" or "HOST:PORT" (then the name is HOST:PORT as written; IPv6 as
// "[::1]:6379"). Throws Error(kParse) naming `flag` for anything else.
ScanTarget parse_scan_target(std::string_view text, ScanTarget::Kind kind, std::string_view flag);

// The keys stored on `target`, at most `limit` of them. Throws Error naming the address when it
// cannot connect, the server answers with an error or something that is not the expected reply,
// or a connect or read takes longer than `timeout`.
std::vector<std::string> scan_keys(const ScanTarget& target, std::uint64_t limit,
                                   std::chrono::milliseconds timeout);

}  // namespace chash::cli
