// SPDX-License-Identifier: Apache-2.0
// chash — h % d for a divisor fixed at build time, without a division instruction.
//
// A 64-bit `div` is 10-18 cycles of latency on current x86 cores and is not pipelined like a
// multiply; a table lookup keyed by `hash % prime` (maglev) spends most of its arithmetic there.
// Barrett reduction (P. Barrett, "Implementing the RSA public key encryption algorithm on a
// standard digital signal processor", CRYPTO 1986; for invariant divisors see also Granlund &
// Montgomery, "Division by invariant integers using multiplication", PLDI 1994) replaces it by
// a multiply-high with a precomputed reciprocal, a multiply, a subtraction and one conditional
// correction — exact for every 64-bit numerator:
//
//   m = floor((2^64 - 1) / d), so 2^64/d - 1 <= m < 2^64/d.
//   q = floor(h * m / 2^64): since h < 2^64, h/d - 1 < h*m/2^64 <= h/d,
//       hence q is floor(h/d) or floor(h/d) - 1, and r = h - q*d lies in [0, 2d).
//   r >= d ? r - d : r  is then exactly h % d.
//
// Valid for 1 <= d < 2^63 (r < 2d must not overflow); chash uses it for table sizes < 2^32.
// Tested against `%` on edge and random numerators for every divisor in use
// (tests/placement/fastmod_test.cc).
#pragma once

#include <cstdint>

namespace chash::internal {

__extension__ typedef unsigned __int128 Uint128;  // GCC/Clang; __extension__: no -Wpedantic note

class FastMod64 {
 public:
  constexpr FastMod64() noexcept = default;
  constexpr explicit FastMod64(std::uint64_t d) noexcept
      : d_(d), m_(d == 0 ? 0 : ~std::uint64_t{0} / d) {}

  // h % d, exactly.
  constexpr std::uint64_t operator()(std::uint64_t h) const noexcept {
    const auto q = static_cast<std::uint64_t>((static_cast<Uint128>(h) * m_) >> 64);
    const std::uint64_t r = h - q * d_;
    return r >= d_ ? r - d_ : r;
  }
  constexpr std::uint64_t divisor() const noexcept { return d_; }

 private:
  std::uint64_t d_ = 0;
  std::uint64_t m_ = 0;
};

}  // namespace chash::internal
