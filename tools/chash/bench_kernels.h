// SPDX-License-Identifier: Apache-2.0
// chash benchmarks — the measurement kernels of `chash bench` (bench.cc beside this file), shared
// with the Google Benchmark suites (bench/) and the peer comparison (bench/peers/chash_peers.cc),
// so the three report the same figures for the same configuration. The CLI owns them: bench/
// includes this header (bench/CMakeLists.txt adds tools/chash to its include path), never the
// other way round.
//
// Latency is measured as a dependent chain: the index of the next key is computed from the node
// the previous lookup returned, so the CPU cannot start lookup i+1 before lookup i finished (the
// Abseil hash benchmarks' method). Throughput walks the keys in order, lookups independent.
// Keys are key_size bytes each in one contiguous buffer (kKeyCount keys: 1 MiB at 16 bytes —
// L2-resident here, so the key load is part of every lookup, hash_only included).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chash/node.h"

namespace chash::bench {

inline constexpr std::size_t kKeyCount = std::size_t{1} << 16;  // a power of two

// Node names as a memcached/Redis config writes them: 10.0.<i/250>.<i%250+1>:11211.
inline std::vector<Node> make_nodes(std::size_t n) {
  std::vector<Node> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(
        {"10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ":11211", 1});
  }
  return v;
}

// `count` keys of `size` bytes, printable, distinct for size >= 8 ("k" + base-36 counter + a
// splitmix64 filler), in one buffer.
class KeySet {
 public:
  KeySet(std::size_t count, std::size_t size) : size_(size), count_(count), bytes_(count * size) {
    static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    std::uint64_t state = 0x9E3779B97F4A7C15ULL;
    for (std::size_t i = 0; i < count; ++i) {
      char* k = bytes_.data() + i * size;
      for (std::size_t j = 0; j < size; ++j) {
        state += 0x9E3779B97F4A7C15ULL;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        k[j] = kDigits[(z ^ (z >> 31)) % 36];
      }
      // A unique prefix: "k" and i in base 36 (4 digits cover 1.6M keys).
      std::size_t v = i;
      if (size > 0) k[0] = 'k';
      for (std::size_t j = 1; j < size && j <= 4; ++j) {
        k[j] = kDigits[v % 36];
        v /= 36;
      }
    }
  }
  std::string_view operator[](std::size_t i) const noexcept {
    return {bytes_.data() + i * size_, size_};
  }
  std::size_t size() const noexcept { return count_; }
  std::size_t key_size() const noexcept { return size_; }

 private:
  std::size_t size_, count_;
  std::vector<char> bytes_;
};

// Keeps a value observable without a store (the Google Benchmark DoNotOptimize idea).
inline void keep(std::uint64_t v) noexcept { __asm__ __volatile__("" : : "r"(v) : "memory"); }

// The key index of step i+1 of a chain: a stride walk over all keys (an odd stride is a
// permutation mod a power of two) offset by the answer of step i, so it depends on it.
// Not a function of the previous index alone: x -> f(x) on N keys falls into a cycle of about
// sqrt(pi N / 8) keys (~160 of 65,536), a working set small enough to sit in L1 whose size
// depends on the table — which made some node counts look several times faster than others.
inline constexpr std::size_t kChainStride = 0x9E3779B1;  // odd
inline std::size_t chain_next(std::uint64_t step, std::uint64_t answer, std::size_t mask) noexcept {
  return static_cast<std::size_t>(step * kChainStride + answer) & mask;
}

// ns per lookup of `lookup(items[idx])` over `iters` chained lookups. Items: a KeySet or a vector
// of hashes (any indexable, power-of-two sized container).
template <class Items, class F>
double chain_ns(const Items& items, std::uint64_t iters, F&& lookup) {
  const std::size_t mask = items.size() - 1;
  std::size_t idx = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 1; i <= iters; ++i) idx = chain_next(i, lookup(items[idx]), mask);
  const auto t1 = std::chrono::steady_clock::now();
  keep(idx);
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
}

// ns per lookup over `iters` independent lookups, walking the items in order from `start`.
template <class Items, class F>
double throughput_ns(const Items& items, std::uint64_t iters, std::size_t start, F&& lookup) {
  const std::size_t mask = items.size() - 1;
  std::uint64_t sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < iters; ++i) sum += lookup(items[(start + i) & mask]);
  const auto t1 = std::chrono::steady_clock::now();
  keep(sum);
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
}

// The least of `reps` runs of f() (each returns ns per lookup): the run least disturbed by the
// other processes on the machine.
template <class F>
double min_of(int reps, F&& f) {
  double best = f();
  for (int r = 1; r < reps; ++r) best = std::min(best, f());
  return best;
}

}  // namespace chash::bench
