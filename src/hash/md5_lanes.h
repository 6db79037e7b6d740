// SPDX-License-Identifier: Apache-2.0
// Multi-buffer MD5, the lane machinery (internal; included by md5_multi.cc for SSE2 and by
// md5_multi_avx2.cc, which is compiled with -mavx2).
//
// MD5 (RFC 1321) is one long dependency chain per message: 64 steps per 64-byte block, each
// needing the previous one. A short key (one block) therefore leaves most of the core idle.
// Independent messages have independent chains, so this runs one message per 32-bit SIMD lane
// (4 per SSE2 register, 8 per AVX2 register) and two registers' worth of messages side by side,
// so one register's step overlaps the other's latency. Lanes are refilled as their messages end
// (a "job manager": a lane whose message is done takes the next one), so keys of different
// lengths share the lanes without waiting for the longest.
//
// Everything here lives in an anonymous namespace and uses no standard-library inline function:
// md5_multi_avx2.cc is compiled with -mavx2, and an inline function with external linkage
// instantiated there (std::string_view::size at -O0, a template) could be the copy the linker
// keeps for the whole program, putting AVX2 instructions on the baseline path. Messages come in
// as plain (pointer, size) pairs for the same reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace chash::hash::internal {

// A message for the lanes: `size` bytes at `data` (data may be null when size is 0).
struct Md5Message {
  const unsigned char* data;
  std::size_t size;
};

namespace {  // NOLINT(google-build-namespaces): per translation unit on purpose (see above)

// RFC 1321 section 3.3: the initial A, B, C, D.
constexpr std::uint32_t kMd5Iv[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};

// RFC 1321 section 3.4: T[i] = floor(2^32 * abs(sin(i + 1))).
constexpr std::uint32_t kMd5T[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

// T[i] in 8 lanes, read by the steps as memory operands (see md5_compress).
struct Md5TWide {
  alignas(32) std::uint32_t t[64][8];
};
constexpr Md5TWide md5_t_wide() {
  Md5TWide w{};
  for (int i = 0; i < 64; ++i) {
    for (int k = 0; k < 8; ++k) w.t[i][k] = kMd5T[i];
  }
  return w;
}
alignas(64) constexpr Md5TWide kMd5TWide = md5_t_wide();

// Step i rotates by kMd5S[i] and reads message word kMd5X[i] (the RFC's [abcd k s i] lines).
constexpr int kMd5S[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                           5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                           4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                           6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
constexpr int kMd5X[64] = {0, 1, 2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                           1, 6, 11, 0,  5,  10, 15, 4,  9,  14, 3,  8,  13, 2,  7,  12,
                           5, 8, 11, 14, 1,  4,  7,  10, 13, 0,  3,  6,  9,  12, 15, 2,
                           0, 7, 14, 5,  12, 3,  10, 1,  8,  15, 6,  13, 4,  11, 2,  9};

// Two registers of an instruction set as one vector of 2 x Isa::kLanes lanes: the steps of the
// two halves are independent, so the core overlaps them.
template <class Isa>
struct Md5Pair {
  struct V {
    typename Isa::V lo, hi;
  };
  static constexpr std::size_t kLanes = 2 * Isa::kLanes;
  [[gnu::always_inline]] static V load(const std::uint32_t* p) {
    return {Isa::load(p), Isa::load(p + Isa::kLanes)};
  }
  [[gnu::always_inline]] static void store(std::uint32_t* p, V v) {
    Isa::store(p, v.lo);
    Isa::store(p + Isa::kLanes, v.hi);
  }
  [[gnu::always_inline]] static V set1(std::uint32_t x) {
    const typename Isa::V v = Isa::set1(x);
    return {v, v};
  }
  // A constant of Isa::kLanes lanes at p, the same for both halves.
  [[gnu::always_inline]] static V load_splat(const std::uint32_t* p) {
    return {Isa::load(p), Isa::load(p)};
  }
  [[gnu::always_inline]] static void clear128(unsigned char* p) { Isa::clear128(p); }
  // x[k * kLanes + i] = word k of blocks[i] (64 bytes each), for every lane i.
  [[gnu::always_inline]] static void transpose(std::uint32_t* x,
                                               const unsigned char* const* blocks) {
    Isa::transpose(x, kLanes, blocks);
    Isa::transpose(x + Isa::kLanes, kLanes, blocks + Isa::kLanes);
  }
  [[gnu::always_inline]] static V add(V a, V b) {
    return {Isa::add(a.lo, b.lo), Isa::add(a.hi, b.hi)};
  }
  [[gnu::always_inline]] static V and_(V a, V b) {
    return {Isa::and_(a.lo, b.lo), Isa::and_(a.hi, b.hi)};
  }
  [[gnu::always_inline]] static V or_(V a, V b) {
    return {Isa::or_(a.lo, b.lo), Isa::or_(a.hi, b.hi)};
  }
  [[gnu::always_inline]] static V xor_(V a, V b) {
    return {Isa::xor_(a.lo, b.lo), Isa::xor_(a.hi, b.hi)};
  }
  template <int S>
  [[gnu::always_inline]] static V rotl(V a) {
    return {Isa::template rotl<S>(a.lo), Isa::template rotl<S>(a.hi)};
  }
};

// One step: a = b + ((a + f(b, c, d) + X[k] + T[i]) <<< s), with the round's f written with
// the fewest operations (F = d ^ (b & (c ^ d)), G = c ^ (d & (b ^ c)), I = c ^ (b | ~d)).
template <class Isa, int I>
[[gnu::always_inline]] inline void md5_step(typename Isa::V& a, typename Isa::V b,
                                            typename Isa::V c, typename Isa::V d,
                                            const std::uint32_t* x, const std::uint32_t* t) {
  using V = typename Isa::V;
  V f;
  if constexpr (I < 16) {
    f = Isa::xor_(d, Isa::and_(b, Isa::xor_(c, d)));
  } else if constexpr (I < 32) {
    f = Isa::xor_(c, Isa::and_(d, Isa::xor_(b, c)));
  } else if constexpr (I < 48) {
    f = Isa::xor_(Isa::xor_(b, c), d);
  } else {
    f = Isa::xor_(c, Isa::or_(b, Isa::xor_(d, Isa::set1(0xffffffffu))));
  }
  // a + X[k] + T[i] does not wait for the previous step; only f does.
  const V ahead =
      Isa::add(a, Isa::add(Isa::load(x + kMd5X[I] * Isa::kLanes), Isa::load_splat(t + I * 8)));
  a = Isa::add(b, Isa::template rotl<kMd5S[I]>(Isa::add(ahead, f)));
}

// Steps I..63, the roles turning (a, b, c, d) -> (d, a, b, c) after each, as the RFC lists them.
template <class Isa, int I>
[[gnu::always_inline]] inline void md5_steps(typename Isa::V& a, typename Isa::V& b,
                                             typename Isa::V& c, typename Isa::V& d,
                                             const std::uint32_t* x, const std::uint32_t* t) {
  if constexpr (I < 64) {
    md5_step<Isa, I>(a, b, c, d, x, t);
    md5_steps<Isa, I + 1>(d, a, b, c, x, t);
  }
}

// One block for every lane: state[r][lane] (r = A, B, C, D) += MD5 compression of the block
// whose word k for `lane` is x[k * kLanes + lane].
template <class Isa>
inline void md5_compress(std::uint32_t* state, const std::uint32_t* x) {
  constexpr std::size_t L = Isa::kLanes;
  typename Isa::V a = Isa::load(state), b = Isa::load(state + L), c = Isa::load(state + 2 * L),
                  d = Isa::load(state + 3 * L);
  // T is read from memory through a pointer the compiler cannot see through: as constants it
  // built each one with a move, a vmovd and a broadcast (two vector uops a step, ~20% of them).
  const std::uint32_t* t = &kMd5TWide.t[0][0];
  asm("" : "+r"(t));
  md5_steps<Isa, 0>(a, b, c, d, x, t);
  // The old state is read back from memory: kept in registers it would push the steps' values
  // out of the 16 vector registers.
  Isa::store(state, Isa::add(a, Isa::load(state)));
  Isa::store(state + L, Isa::add(b, Isa::load(state + L)));
  Isa::store(state + 2 * L, Isa::add(c, Isa::load(state + 2 * L)));
  Isa::store(state + 3 * L, Isa::add(d, Isa::load(state + 3 * L)));
}

// dst[0..n) = src[0..n) for n < 64 with a few fixed-size moves (overlapping where n is not a
// multiple): a memcpy of a variable size is a library call, per message.
inline void md5_copy_short(unsigned char* dst, const unsigned char* src, std::size_t n) {
  auto move = [&](std::size_t at, auto width) {
    unsigned char tmp[decltype(width)::value];
    std::memcpy(tmp, src + at, sizeof tmp);
    std::memcpy(dst + at, tmp, sizeof tmp);
  };
  using W16 = std::integral_constant<std::size_t, 16>;
  using W8 = std::integral_constant<std::size_t, 8>;
  using W4 = std::integral_constant<std::size_t, 4>;
  if (n >= 32) {
    move(0, W16{});
    move(16, W16{});
    move(n - 32, W16{});
    move(n - 16, W16{});
  } else if (n >= 16) {
    move(0, W16{});
    move(n - 16, W16{});
  } else if (n >= 8) {
    move(0, W8{});
    move(n - 8, W8{});
  } else if (n >= 4) {
    move(0, W4{});
    move(n - 4, W4{});
  } else if (n > 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

// out + 16 * i receives the digest of msgs[i], for i < n.
template <class Isa>
void md5_lanes(const Md5Message* msgs, std::size_t n, unsigned char* out) {
  constexpr std::size_t L = Isa::kLanes;
  alignas(64) static constexpr unsigned char kIdleBlock[64] = {};
  alignas(64) std::uint32_t x[16 * L];  // the lanes' current blocks, word-major
  alignas(64) std::uint32_t state[4 * L];
  // The padded end of each lane's message (its last partial block, 0x80, zeros, the bit length):
  // one block, or two when fewer than 8 bytes are left after the 0x80.
  alignas(64) unsigned char tail[L][128];
  struct Lane {
    const unsigned char* data;  // null: idle
    std::size_t job;
    std::size_t block;   // the block about to be compressed
    std::size_t full;    // blocks read straight from the message
    std::size_t blocks;  // all blocks, padding included
  };
  Lane lanes[L];
  const unsigned char* blocks[L];
  std::size_t next = 0;
  std::size_t active = 0;

  auto start = [&](std::size_t i) {
    Lane& lane = lanes[i];
    if (next == n) {
      lane.data = nullptr;
      return;
    }
    const Md5Message& m = msgs[next];
    lane.job = next++;
    ++active;
    const std::size_t rest = m.size % 64;
    lane.full = m.size / 64;
    lane.blocks = (m.size + 8) / 64 + 1;
    lane.block = 0;
    lane.data = m.data != nullptr ? m.data : kIdleBlock;
    unsigned char* t = tail[i];
    // Cleared with vector stores: a memset here became `rep stos`, a third of the time.
    Isa::clear128(t);
    md5_copy_short(t, lane.data + lane.full * 64, rest);
    t[rest] = 0x80;
    const std::uint64_t bits = static_cast<std::uint64_t>(m.size) * 8;
    std::memcpy(t + (rest < 56 ? 56 : 120), &bits, 8);  // little-endian, as x86 stores it
    for (std::size_t r = 0; r < 4; ++r) state[r * L + i] = kMd5Iv[r];
  };
  for (std::size_t i = 0; i < L; ++i) start(i);

  while (active > 0) {
    for (std::size_t i = 0; i < L; ++i) {
      const Lane& lane = lanes[i];
      if (lane.data == nullptr) {
        blocks[i] = kIdleBlock;  // computed, never read
      } else if (lane.block < lane.full) {
        blocks[i] = lane.data + lane.block * 64;
      } else {
        blocks[i] = tail[i] + (lane.block - lane.full) * 64;
      }
    }
    Isa::transpose(x, blocks);
    md5_compress<Isa>(state, x);
    for (std::size_t i = 0; i < L; ++i) {
      Lane& lane = lanes[i];
      if (lane.data == nullptr || ++lane.block < lane.blocks) continue;
      unsigned char* d = out + 16 * lane.job;
      for (std::size_t r = 0; r < 4; ++r) std::memcpy(d + 4 * r, &state[r * L + i], 4);
      --active;
      start(i);
    }
  }
}

}  // namespace
}  // namespace chash::hash::internal
