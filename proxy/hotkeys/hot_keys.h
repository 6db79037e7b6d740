// SPDX-License-Identifier: Apache-2.0
// chash-proxy — hot keys: found per pool (a Space-Saving sketch per worker, merged every window),
// shown in /status, /metrics, the status page and the log, and relieved when configured: a
// short-TTL copy in the proxy (hot_cache) and reads spread over replicas (hot_reads).
//
// Consistent hashing cannot spread one key: a key at 30% of the reads pins its owner whatever
// the ring (the articles this project grew from name hot keys as the reason for bounded loads;
// Tair's proxy query cache and camellia's hot-key cache are the peers' answer). docs/HOTKEYS.md.
//
// Threads: a worker samples into its own shard (shard = worker index) under the shard's mutex,
// which only the control loop's rotate() ever contends for, once per window. The hot cache is
// per worker (each its own copies, no sharing on the hot path); what makes it safe across
// workers is the pool's write generations: every write or delete of a key through this proxy
// bumps its generation before it is sent, and a copy is served only while the generation it
// was read under is still current. So a read that follows a write made through any worker of
// this proxy never sees the old value; writes made elsewhere are seen within ttl_ms.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hotkeys/config.h"
#include "hotkeys/space_saving.h"

namespace chash::proxy::hotkeys {

// A key's place in the top list of the last window.
struct HotKey {
  std::string key;          // as sent (internal: the cache and relief use it)
  std::string shown;        // what /status, /metrics and the log show: the key, or its HMAC
  std::uint64_t count = 0;  // sampled requests, times `sample`: the estimate
  double rate = 0;          // requests per second over the window
  std::string owner;        // the server the key routes to now
};
struct View {
  std::int64_t at_ms = 0;       // wall clock of the rotation (0: none yet)
  std::uint32_t window_ms = 0;  // the window the rates are over, as measured
  double min_rate = 0;          // the pool's min_rate then: keys at or above it are hot
  std::uint64_t requests = 0;   // sampled requests of the window, times `sample`
  std::vector<HotKey> top;
};

// Counters of the relief, for /metrics and /status.
struct Counters {
  std::atomic<std::uint64_t> cache_hits{0}, cache_misses{0}, cache_fills{0}, cache_invalidations{0},
      replica_reads{0};
};

class HotKeys {
 public:
  static constexpr std::size_t kShards = 64;         // workers beyond this share shards
  static constexpr std::size_t kGenerations = 4096;  // write generations, by key hash

  HotKeys();
  HotKeys(const HotKeys&) = delete;
  HotKeys& operator=(const HotKeys&) = delete;

  // Control loop, at start and on reload: the pool's settings and how many workers there are.
  void configure(const Config& c, const CacheConfig& cache, unsigned workers);
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }

  // Worker hot path: whether this request is one of the sampled ones (a thread-local
  // count-down with a random skip averaging `sample`; no lock, no shared write).
  bool sample() const noexcept;
  // Worker: counts `key` (a sampled request) in shard `worker`.
  void record(unsigned worker, std::string_view key);
  // Worker: whether `key` was hot in the last window (a lock only while some key is).
  bool hot(unsigned worker, std::string_view key) const;
  bool any_hot() const noexcept { return any_hot_.load(std::memory_order_relaxed); }

  // Write generations: `key` (or everything: FLUSHALL, EXEC, a script) is being written.
  void wrote(std::string_view key) noexcept;
  void wrote_all() noexcept;
  // The generation a read of `key` starts under; a copy filled under it is served only while
  // stamp(key) still returns it.
  std::uint64_t stamp(std::string_view key) const noexcept;

  // The hot cache, per worker. lookup: the reply bytes of a fresh copy (stamp current, within
  // ttl at `now_ms`, steady clock). fill: a reply read under `stamp` (dropped when the key is
  // not hot, the stamp is no longer current, or it does not fit).
  std::optional<std::string> lookup(unsigned worker, std::string_view key, std::int64_t now_ms);
  void fill(unsigned worker, std::string_view key, std::string_view reply, std::uint64_t stamp,
            std::int64_t now_ms);

  // Control loop, every window: merges the shards' sketches into the View (`owner` names the
  // server a key routes to), hands the hot set to the workers, drops copies of keys no longer
  // hot, and logs keys crossing log_rate (naming `pool`). `wall_ms`: wall clock, for at_ms;
  // `steady_ms`: for due().
  void rotate(std::string_view pool, std::int64_t wall_ms, std::int64_t steady_ms,
              const std::function<std::string(std::string_view key)>& owner);
  // Whether a window has passed since the last rotate (`steady_ms`).
  bool due(std::int64_t steady_ms) const noexcept;

  std::shared_ptr<const View> view() const;
  Counters counters;

  // HMAC-SHA256(key) with this process's secret, as 32 hex digits (hash_keys: true).
  static std::string hmac(std::string_view key);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  using KeySet = std::unordered_set<std::string, Hash, std::equal_to<>>;
  struct Copy {
    std::string reply;
    std::uint64_t stamp = 0;
    std::int64_t filled_ms = 0;
  };
  struct alignas(64) Shard {
    mutable std::mutex mu;
    SpaceSaving sketch{256};
    std::shared_ptr<const KeySet> hot;  // the last window's hot keys
    std::unordered_map<std::string, Copy, Hash, std::equal_to<>> cache;
    std::uint64_t cache_bytes = 0;
  };
  Shard& shard(unsigned worker) noexcept { return shards_[worker % kShards]; }
  const Shard& shard(unsigned worker) const noexcept { return shards_[worker % kShards]; }

  std::atomic<bool> enabled_{false};
  std::atomic<bool> any_hot_{false};
  std::atomic<std::uint32_t> sample_{16};
  std::atomic<std::uint32_t> window_ms_{10000};
  std::atomic<std::uint32_t> ttl_ms_{1000};
  std::atomic<std::uint32_t> max_keys_{1024};
  std::atomic<std::uint64_t> max_bytes_{std::uint64_t{64} << 20};
  std::array<Shard, kShards> shards_;
  std::array<std::atomic<std::uint32_t>, kGenerations> generations_{};
  std::atomic<std::uint32_t> epoch_{0};

  mutable std::mutex view_mu_;  // view_, config_, last_rotate_ms_, logged_
  Config config_;
  std::shared_ptr<const View> view_ = std::make_shared<View>();
  std::atomic<std::int64_t> last_rotate_ms_{0};
  std::set<std::string> logged_;  // keys over log_rate (noted once until they cool)
};

}  // namespace chash::proxy::hotkeys
