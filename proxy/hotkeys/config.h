// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a pool's hot-key settings (`hot_keys:`, `hot_cache:`, `hot_reads:`; parsed in
// config/hot_keys_parser.cc, used by proxy/hotkeys/hot_keys.h). docs/HOTKEYS.md.
#pragma once

#include <cstdint>

namespace chash::proxy::hotkeys {

// `hot_keys:` of a pool (config/hot_keys_parser.cc).
struct Config {
  bool enabled = true;
  std::uint32_t top = 20;           // ranks shown (/status, /metrics, the page)
  std::uint32_t window_ms = 10000;  // rates are over this window; the hot set changes per window
  bool hash_keys = false;           // show HMAC-SHA256(key) (a per-process secret), not the key
  std::uint32_t sample = 16;        // one request in `sample` (on average) is counted
  double min_rate = 100;            // requests/s from which a key is hot (relief applies)
  double log_rate = 1000;           // the log notes a key going over this (0: never)
};
// `hot_cache:` of a pool (off unless given).
struct CacheConfig {
  bool enabled = false;
  std::uint32_t ttl_ms = 1000;                        // a copy older than this is read again
  std::uint32_t max_keys = 1024;                      // per proxy (split evenly over the workers)
  std::uint64_t max_bytes = std::uint64_t{64} << 20;  // replies' bytes, per proxy, likewise
};
enum class Reads : std::uint8_t { kOwner, kReplicas };  // `hot_reads:` owner | replicas

}  // namespace chash::proxy::hotkeys
