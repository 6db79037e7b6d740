// SPDX-License-Identifier: Apache-2.0
// FastMod64 (chash/internal/fastmod.h) is exactly `%`: every divisor a table uses (maglev's and
// Envoy's 65537 and 655373, small primes, the largest table size, 32-bit extremes) against edge
// numerators (around multiples of d, around 2^32, 2^63 and 2^64) and random 64-bit ones; and
// maglev's pick() is the entry at hash % M.
#include "chash/internal/fastmod.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "chash/maglev.h"

namespace chash {
namespace {

std::uint64_t largest_prime_at_most(std::uint64_t n) {
  while (!is_prime(n)) --n;
  return n;
}

std::vector<std::uint64_t> divisors() {
  std::vector<std::uint64_t> d = {1,     2,     3,      5,      7,       11,     13,
                                  17,    31,    101,    251,    257,     1009,   4093,
                                  65521, 65537, 131071, 655373, 1000003, 5000011};
  d.push_back(largest_prime_at_most(kMaxMaglevTableSize));
  d.push_back(largest_prime_at_most(0xFFFFFFFFull));  // 4294967291
  for (const std::uint64_t x : std::initializer_list<std::uint64_t>{
           std::uint64_t{1} << 16, std::uint64_t{1} << 26, std::uint64_t{1} << 31,
           std::uint64_t{1} << 32, 0xFFFFFFFF, 1000000, 999999999}) {
    d.push_back(x);  // not table sizes, but the proof does not need a prime
  }
  return d;
}

TEST(FastModTest, EqualsRemainderOnEdgeAndRandomNumerators) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::mt19937_64 rng(2024);
  for (const std::uint64_t d : divisors()) {
    const internal::FastMod64 mod(d);
    std::vector<std::uint64_t> hs = {0,
                                     1,
                                     2,
                                     kMax,
                                     kMax - 1,
                                     std::uint64_t{1} << 63,
                                     (std::uint64_t{1} << 63) - 1,
                                     (std::uint64_t{1} << 63) + 1};
    // Around multiples of d: at the start, around 2^32, in the middle and at the top of the range.
    for (const std::uint64_t base : std::initializer_list<std::uint64_t>{
             0, std::uint64_t{1} << 32, std::uint64_t{1} << 63, kMax - 3 * d}) {
      const std::uint64_t k = base / d;
      for (std::uint64_t m = k; m < k + 3 && m <= kMax / d; ++m) {
        for (const std::uint64_t delta : std::initializer_list<std::uint64_t>{0, 1, d - 1}) {
          hs.push_back(m * d + delta);
          hs.push_back(m * d - delta);
        }
      }
    }
    hs.push_back(kMax / d * d);
    hs.push_back(kMax / d * d - 1);
    for (int i = 0; i < 200000; ++i) hs.push_back(rng());
    for (int i = 0; i < 20000; ++i) hs.push_back(rng() >> (rng() % 64));  // every magnitude
    for (const std::uint64_t h : hs) ASSERT_EQ(mod(h), h % d) << h << " % " << d;
  }
}

TEST(FastModTest, MaglevPicksTheEntryAtHashModM) {
  std::vector<Node> nodes;
  for (int i = 0; i < 50; ++i) {
    std::string name("n");  // appended, not "n" + to_string (GCC 12 -Wrestrict at -O3)
    name += std::to_string(i);
    nodes.push_back({name, 1});
  }
  std::mt19937_64 rng(9);
  for (const std::uint64_t m : {std::uint64_t{53}, std::uint64_t{65537}, std::uint64_t{655373}}) {
    MaglevOptions o;
    o.table_size = m;
    const MaglevTable t = MaglevTable::build(nodes, o);
    for (int i = 0; i < 100000; ++i) {
      const std::uint64_t h = i < 64 ? ~std::uint64_t{0} - static_cast<std::uint64_t>(i) : rng();
      ASSERT_EQ(t.entry_of(h), h % m);
      ASSERT_EQ(t.pick(h), t.entries()[h % m]);
    }
  }
}

}  // namespace
}  // namespace chash
