// SPDX-License-Identifier: Apache-2.0
// chash internal — the kernels of a ring lookup (chash::BasicRing::index_of): branch-free counts
// of the points below a key's position over a fixed window or over a bucket's cache lines
// (explicit SSE2 on x86-64), the binary search for crowded buckets, and the cache-line-aligned
// storage they read. Why each is written as it is lives beside it; the contract (the same point
// as a plain binary search) is BasicRing's, pinned by tests/placement/ring_index_test.cc.
// Not part of the API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chash::internal {

// std::allocator with 64-byte (cache line) alignment: ring positions start on a line, so the
// lines a lookup reads are those of its bucket and no more (see BasicRing::index_of).
template <class T>
struct LineAlignedAllocator {
  using value_type = T;
  static constexpr std::size_t kAlign = 64;
  LineAlignedAllocator() noexcept = default;
  template <class U>
  LineAlignedAllocator(const LineAlignedAllocator<U>&) noexcept {}
  // clang-format 14 writes `operator new (`.
  // clang-format off
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kAlign}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kAlign}); }
  // clang-format on
  template <class U>
  bool operator==(const LineAlignedAllocator<U>&) const noexcept {
    return true;
  }
};

// Counting kernels over sorted 32- or 64-bit ring positions. `ge` is the ring's successor rule:
// true = the owner is the first point >= the position (count points < pos), false = the first
// point > it (count points <= pos).
template <class Pos>
struct RingSearch {
  // Points counted by a window (BasicRing::pick when the bucket fits).
  static constexpr std::size_t kWindow = 16;
  // Points per 64-byte cache line: 16 (32-bit positions) or 8.
  static constexpr std::size_t kLine = 64 / sizeof(Pos);

  // Points of the window w[0 .. kWindow) below `pos`.
  static std::size_t count_window(const Pos* w, Pos pos, bool ge) noexcept {
#if defined(__SSE2__)
    if constexpr (sizeof(Pos) == 4) {
      // Explicit SSE2, as in count_lines (GCC scalarizes this loop once pick() is inlined into a
      // caller's loop).
      const __m128i bias = _mm_set1_epi32(INT32_MIN);
      const __m128i p = _mm_xor_si128(_mm_set1_epi32(static_cast<int>(pos)), bias);
      __m128i acc = _mm_setzero_si128();  // lanes: minus the points counted
      for (std::size_t k = 0; k < kWindow / 4; ++k) {
        const __m128i x =
            _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w) + k), bias);
        acc = _mm_add_epi32(acc, ge ? _mm_cmpgt_epi32(p, x) : _mm_cmpgt_epi32(x, p));
      }
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4E));
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xB1));
      const auto counted = static_cast<std::size_t>(-_mm_cvtsi128_si32(acc));
      return ge ? counted : kWindow - counted;
    }
#endif
    std::uint32_t below = 0;
    if (ge) {
      for (std::size_t j = 0; j < kWindow; ++j) below += w[j] < pos ? 1u : 0u;
    } else {
      for (std::size_t j = 0; j < kWindow; ++j) below += w[j] <= pos ? 1u : 0u;
    }
    return below;
  }

  // Points of positions[a .. hi) that come before the owner of `pos`, where a is line-aligned
  // and hi - a <= 2 * kLine: the points of the line at a plus, when hi is past that line, those
  // of the next. No index mask is needed: the points of a line before the bucket are in earlier
  // buckets (all below pos) and those from hi on in later ones (all above it). The one exception
  // is the padding after the last point (the largest Pos), counted for !ge when pos is the
  // largest Pos — then the answer is past the last point, i.e. a wrap to 0, which the caller's
  // `i >= points` gives.
  static std::size_t count_lines(const Pos* positions, std::size_t a, std::size_t hi, Pos pos,
                                 bool ge) noexcept {
    std::size_t second = hi - a > kLine ? 1 : 0;  // does the bucket run into the next line?
    // Opaque to the optimizer, so this stays a select: GCC otherwise turns it into a branch
    // (duplicating the counts on both sides), which mispredicts on a third of the lookups.
    __asm__("" : "+r"(second));
    const Pos* l0 = positions + a;
#if defined(__SSE2__)
    if constexpr (sizeof(Pos) == 4) {
      // Explicit SSE2 (baseline x86-64): left to itself, GCC vectorizes the two counts well in
      // a lone pick() but not once pick() is inlined into a caller's loop, where it spills the
      // lanes to the stack. Unsigned compares as signed ones on values biased by 2^31.
      // Without a second line, a constant line that counts nothing stands in for it.
      // l1 = second ? the next line : the constant line, by masking (second is 0 or 1) and kept
      // opaque too — else GCC branches on it again and folds the constant line's compares.
      const auto next = reinterpret_cast<std::uintptr_t>(l0 + kLine);
      const auto none = reinterpret_cast<std::uintptr_t>(ge ? kNeverBelowGe.v : kNeverBelowGt.v);
      std::uintptr_t u1 = none ^ ((next ^ none) & (std::uintptr_t{0} - second));
      __asm__("" : "+r"(u1));
      const Pos* l1 = reinterpret_cast<const Pos*>(u1);
      const __m128i bias = _mm_set1_epi32(INT32_MIN);
      const __m128i p = _mm_xor_si128(_mm_set1_epi32(static_cast<int>(pos)), bias);
      const auto* v0 = reinterpret_cast<const __m128i*>(l0);
      const auto* v1 = reinterpret_cast<const __m128i*>(l1);
      __m128i acc = _mm_setzero_si128();  // lanes: minus the points counted
      for (std::size_t k = 0; k < kLine / 4; ++k) {
        const __m128i x0 = _mm_xor_si128(_mm_load_si128(v0 + k), bias);
        const __m128i x1 = _mm_xor_si128(_mm_load_si128(v1 + k), bias);
        // ge counts w < pos; !ge counts w > pos (then below = points - that).
        const __m128i c0 = ge ? _mm_cmpgt_epi32(p, x0) : _mm_cmpgt_epi32(x0, p);
        const __m128i c1 = ge ? _mm_cmpgt_epi32(p, x1) : _mm_cmpgt_epi32(x1, p);
        acc = _mm_add_epi32(acc, _mm_add_epi32(c0, c1));
      }
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4E));
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xB1));
      const auto counted = static_cast<std::size_t>(-_mm_cvtsi128_si32(acc));
      return ge ? counted : kLine + second * kLine - counted;
    }
#endif
    // Without a second line, line 0 is read again (no extra miss) and its count discarded.
    const std::size_t c1 = count_line(l0 + second * kLine, pos, ge);
    return count_line(l0, pos, ge) + (c1 & (std::size_t{0} - second));
  }

  // Points of one aligned line below `pos`; vectorized.
  static std::size_t count_line(const Pos* w, Pos pos, bool ge) noexcept {
    w = std::assume_aligned<64>(w);
    std::uint32_t below = 0;
    if (ge) {
      for (std::size_t j = 0; j < kLine; ++j) below += w[j] < pos ? 1u : 0u;
    } else {
      for (std::size_t j = 0; j < kLine; ++j) below += w[j] <= pos ? 1u : 0u;
    }
    return below;
  }

  // First i in [lo, hi) whose point is >= pos (> pos for !ge); hi if none. Branchless binary
  // search inside one bucket.
  [[gnu::noinline]] static std::size_t search_bucket(const Pos* positions, std::size_t lo,
                                                     std::size_t hi, Pos pos, bool ge) noexcept {
    std::size_t len = hi - lo;
    if (len == 0) return lo;
    const Pos* base = positions + lo;
    while (len > 1) {
      const std::size_t half = len / 2;
      const Pos p = base[half - 1];
      base += (ge ? p < pos : p <= pos) ? half : 0;
      len -= half;
    }
    const bool before = ge ? *base < pos : *base <= pos;
    return static_cast<std::size_t>(base - positions) + (before ? 1 : 0);
  }

 private:
  // A cache line of positions that count_lines' SSE2 path never counts: the largest Pos is never
  // < pos (ge), 0 never > pos (!ge, which counts the points above).
  struct alignas(64) Line {
    Pos v[kLine];
  };
  static constexpr Line filled_line(Pos x) noexcept {
    Line l{};
    for (Pos& e : l.v) e = x;
    return l;
  }
  static constexpr Line kNeverBelowGe = filled_line(static_cast<Pos>(~Pos{0}));
  static constexpr Line kNeverBelowGt = filled_line(0);
};

}  // namespace chash::internal
