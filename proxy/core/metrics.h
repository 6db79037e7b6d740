// SPDX-License-Identifier: Apache-2.0
// chash-proxy — process-wide counters for the admin port (/metrics, /status) and the stats port.
// Relaxed atomics: each is an independent counter; readers tolerate a torn view across them.
// Per-pool and per-backend counters live in membership/topology.h (PoolShared, BackendState), which
// outlive reloads by name.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace chash::proxy {

// Request latency, Prometheus-style (cumulative when printed). One per pool (PoolShared).
struct LatencyHistogram {
  // Upper bounds, microseconds.
  static constexpr std::array<std::uint64_t, 12> kBucketsUs = {
      50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 500000, 2000000};
  std::array<std::atomic<std::uint64_t>, kBucketsUs.size() + 1> counts{};  // last: +Inf
  std::atomic<std::uint64_t> sum_us{0};

  static std::size_t bucket(std::uint64_t us) noexcept {
    std::size_t i = 0;
    while (i < kBucketsUs.size() && us > kBucketsUs[i]) ++i;
    return i;
  }
  void observe(std::uint64_t us) noexcept {
    counts[bucket(us)].fetch_add(1, std::memory_order_relaxed);
    sum_us.fetch_add(us, std::memory_order_relaxed);
  }
};

// Samples gathered by one thread and added to a LatencyHistogram at once: a pipeline's replies
// released together cost two atomic adds on the pool's shared histogram, not two each.
class LatencyBatch {
 public:
  void observe(std::uint64_t us) noexcept {
    ++counts_[LatencyHistogram::bucket(us)];
    sum_us_ += us;
    any_ = true;
  }
  void publish(LatencyHistogram& h) noexcept {
    if (!any_) return;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      if (counts_[i] != 0) h.counts[i].fetch_add(counts_[i], std::memory_order_relaxed);
    }
    h.sum_us.fetch_add(sum_us_, std::memory_order_relaxed);
    *this = LatencyBatch();
  }

 private:
  std::array<std::uint32_t, LatencyHistogram::kBucketsUs.size() + 1> counts_{};
  std::uint64_t sum_us_ = 0;
  bool any_ = false;
};

struct Metrics {
  std::atomic<std::uint64_t> requests{0};         // commands received, every pool (/status)
  std::atomic<std::uint64_t> protocol_errors{0};  // malformed clients (closed)
  std::atomic<std::uint64_t> auth_failures{0};
  // Client TLS handshakes that failed or timed out (every pool with `tls:`).
  std::atomic<std::uint64_t> tls_handshake_failures{0};
  std::atomic<std::uint64_t> clients_accepted{0};
  std::atomic<std::int64_t> clients_open{0};
  std::atomic<std::uint64_t> clients_rejected{0};  // over client_connections
  // Backend connections opened (every protocol), for the stats port's total_connections.
  std::atomic<std::uint64_t> backend_connects{0};
  std::atomic<std::uint64_t> reloads{0};
  std::atomic<std::uint64_t> reload_failures{0};
  // The last reload attempt (applied or refused): wall-clock ms since the epoch (0: none yet)
  // and whether it was applied.
  std::atomic<std::int64_t> last_reload_ms{0};
  std::atomic<bool> last_reload_ok{true};
};

}  // namespace chash::proxy
