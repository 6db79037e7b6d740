// SPDX-License-Identifier: Apache-2.0
// chash-proxy — process-wide counters for the admin port (/metrics, /status).
// Relaxed atomics: each is an independent counter; readers tolerate a torn view across them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace chash::proxy {

struct Metrics {
  // Latency buckets (upper bounds, microseconds), Prometheus-style cumulative when printed.
  static constexpr std::array<std::uint64_t, 12> kBucketsUs = {
      50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 500000, 2000000};
  std::atomic<std::uint64_t> requests{0};         // commands received
  std::atomic<std::uint64_t> local_replies{0};    // answered by the proxy
  std::atomic<std::uint64_t> proxy_errors{0};     // -ERR made by the proxy (unsupported, ...)
  std::atomic<std::uint64_t> protocol_errors{0};  // malformed clients (closed)
  std::atomic<std::uint64_t> auth_failures{0};
  std::atomic<std::uint64_t> clients_accepted{0};
  std::atomic<std::int64_t> clients_open{0};
  std::atomic<std::uint64_t> clients_rejected{0};  // over client_connections
  std::atomic<std::uint64_t> reloads{0};
  std::atomic<std::uint64_t> reload_failures{0};
  std::array<std::atomic<std::uint64_t>, kBucketsUs.size() + 1> latency{};  // last: +Inf
  std::atomic<std::uint64_t> latency_sum_us{0};

  void observe_latency(std::uint64_t us) noexcept {
    std::size_t i = 0;
    while (i < kBucketsUs.size() && us > kBucketsUs[i]) ++i;
    latency[i].fetch_add(1, std::memory_order_relaxed);
    latency_sum_us.fetch_add(us, std::memory_order_relaxed);
  }
};

}  // namespace chash::proxy
