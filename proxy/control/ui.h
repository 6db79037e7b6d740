// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the admin port's status page (GET / and GET /ui) and each pool's picture
// (GET /ring.svg?pool=NAME).
//
// One HTML document with inline CSS and inline SVG: no script, no external font, image or style
// sheet, so it works from a locked-down host and behind the same admin_auth as the rest of the
// port. It reloads itself every kUiRefreshSeconds (<meta http-equiv="refresh">). Per pool: its
// clients, requests and errors a second, p50/p99 latency, warm-up and rebalance progress, the
// Redis Cluster map's state, the hot keys, the picture of its key space (chash::svg::placement:
// a ring's points, a slot map's ranges, or each node's share of sampled keys) and one table row
// per server (`<tr data-server="NAME">`) with its state in words (control/status.h
// server_state) and role (master, replica of X, Sentinel master group). The hot keys are only
// those at or above the pool's min_rate, at their rate over the sketch's last window. For pools
// fed by etcd, the fleet ("fleet" in /status, membership/fleet/agent.h): etcd and each endpoint
// up or down, the leader, each pool's epoch and phase, every live proxy with its revision and
// lag, and the votes against each backend. Every name from the config or the network is
// HTML-escaped.
//
// Pure functions of their arguments: the caller keeps the samples and passes the window's first
// back, so rates are counter deltas between two samples (UiHistory: the proxy samples every second and
// the page's rates are over the last kUiRateWindowMs, whoever loads it and how often).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/metrics.h"
#include "membership/topology.h"

namespace chash::proxy {

inline constexpr int kUiRefreshSeconds = 2;
// The page's reload interval for `servers` members in all (pools summed): kUiRefreshSeconds up
// to 256, then 2 s more per 256 more, at most 60 s — a 10,000-server page is 3.5 MB, and a tab
// left open must not pull it every 2 s.
constexpr int ui_refresh_seconds(std::size_t servers) noexcept {
  if (servers <= 256) return kUiRefreshSeconds;
  const std::size_t s = kUiRefreshSeconds * ((servers + 255) / 256);
  return s > 60 ? 60 : static_cast<int>(s);
}

// The counters rates and recent latency are computed from, by pool and (pool, server) name.
struct UiSample {
  struct Counts {
    std::uint64_t requests = 0, errors = 0;
    // Steady clock when these were taken, if later than the sample's at_ms: a baseline made of
    // several samples (UiHistory) takes a server added since the oldest from its first one.
    std::int64_t at_ms = 0;
  };
  using Buckets = std::array<std::uint64_t, LatencyHistogram::kBucketsUs.size() + 1>;
  std::int64_t at_ms = 0;    // steady clock
  std::int64_t wall_ms = 0;  // wall clock (the fleet's "last heard" stamps are)
  std::map<std::string, Counts> pools;
  std::map<std::pair<std::string, std::string>, Counts> servers;
  std::map<std::string, Buckets> latency;  // per pool, not cumulative (last: over 2 s)
};
UiSample take_ui_sample(const Topology& topology, std::int64_t now_ms);

// The status page's rates are over a fixed window of the proxy's own, never "since the page was
// last loaded": the control loop adds a sample every kUiSampleMs, the history keeps the window's
// worth, and baseline() is where the page's rates start — the oldest sample in the window, with
// each server or pool that came since taken from the first sample that has it (so a server
// added a moment ago shows its rate since then, not "–"), and one added after the newest sample
// counted from zero at that sample (it had served nothing before it existed).
inline constexpr std::int64_t kUiSampleMs = 1000;
inline constexpr std::int64_t kUiRateWindowMs = 10000;
class UiHistory {
 public:
  void add(UiSample s);
  // nullopt until a sample at least kUiSampleMs / 2 older than `now` exists.
  std::optional<UiSample> baseline(const UiSample& now) const;

 private:
  std::vector<UiSample> samples_;  // oldest first, within the window (plus one before it)
};

// The q-quantile (0..1) of a latency histogram's counts, in microseconds, linear within the
// bucket it falls in (as Prometheus's histogram_quantile); one in the last (+Inf) bucket is
// given as the largest finite bound. -1 when there are no samples.
double latency_quantile(const UiSample::Buckets& counts, double q);

// One row of a pool's hot keys (the /status document's per-pool
// "hot_keys":{"window_ms":10000,"top":[{"key":"...","rate":123.4,"owner":"r1"}]}).
struct HotKeyRow {
  std::string key;  // as sampled (an HMAC in hex when the pool hashes keys)
  double rate = 0;  // requests a second over the window
  std::string owner;
};

// The page. `status_json` is the /status document (render_status_json plus what the membership
// sources and the rebalancer add: "sentinel", "cluster", "rebalance", per pool "hot_keys"); an
// unparsable or empty one just leaves those parts out. `before` null: no rates yet.
std::string render_ui(const Topology& topology, std::string_view status_json, const UiSample& now,
                      const UiSample* before);

// Pool `pool`'s key-space picture (SVG), or nullopt when there is no such pool.
std::optional<std::string> render_pool_svg(const Topology& topology, std::string_view pool);

// A query string's value for `name` ("pool=a%20b&x=1" -> "a b"), percent- and '+'-decoded;
// empty when absent.
std::string query_value(std::string_view query, std::string_view name);

}  // namespace chash::proxy
