// SPDX-License-Identifier: Apache-2.0
// The guava preset's batch with AVX-512 (jvm.cc calls these only when the CPU has it, cpu.h):
// keys under 32 bytes hashed eight at a time, their UTF-8 checked by lookup tables, and
// Hashing.consistentHash in eight-lane registers whose lanes take the next keys when theirs have
// ended (checked every second step). Unlike jvm_avx2.cc this file is compiled for baseline x86-64
// and only its kernels carry the target attribute, so the std::string_view accessors it inlines
// are never emitted as AVX-512 copies the linker could hand to baseline callers.
//
// Measured against the AVX2 kernels, C side alone, 100k bindings-bench keys (10% Cyrillic) as a
// Java String batch hands them over, ns per key at 10 / 100 / 1000 buckets: AVX2 11.1 / 13.2 /
// 14.9, AVX-512 9.6 / 11.7 / 13.8 (a C driver handing them over as the Java binding did; the Java
// rows of docs/BENCHMARKS.md agree). A consistentHash step without the divider (vrcp14pd, a
// Newton step and an exact FMA remainder) was correct but slower, 12.0 -> 13.5 at 10 buckets:
// 512-bit floating point runs on one port here, and the divider's two cycles a lane cost less
// than the instructions that replace it.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common.h"
#include "guava.h"
#include "java_strings.h"
#include "utf16_avx512.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), a self-initialised variable
// that -Wmaybe-uninitialized reports in every caller (a known false positive of the header).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace chash::presets {
namespace {

#define CHASH_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,bmi2")))

CHASH_AVX512 inline __m512i mul64(__m512i x, std::uint64_t c) noexcept {
  return _mm512_mullo_epi64(x, _mm512_set1_epi64(static_cast<long long>(c)));
}

CHASH_AVX512 inline __m512i fmix64(__m512i k) noexcept {  // MurmurHash3's fmix64
  k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
  k = mul64(k, 0xff51afd7ed558ccdull);
  k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
  k = mul64(k, 0xc4ceb9fe1a85ec53ull);
  return _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
}

// MurmurHash3 x64_128's finish, h1 of it, from the state after the blocks and the tail words.
CHASH_AVX512 inline __m512i murmur3_finish(__m512i h1, __m512i h2, __m512i tail1, __m512i tail2,
                                           __m512i length) noexcept {
  constexpr std::uint64_t c1 = 0x87c37b91114253d5ull;
  constexpr std::uint64_t c2 = 0x4cf5ad432745937full;
  // The tail: k1 its bytes 0..7, k2 its bytes 8..14, zero past the key; a zero word mixes to
  // zero, so the reference's `if (rest > 8)` and `if (rest > 0)` need no lanes of their own.
  h1 = _mm512_xor_si512(h1, mul64(_mm512_rol_epi64(mul64(tail1, c1), 31), c2));
  h2 = _mm512_xor_si512(h2, mul64(_mm512_rol_epi64(mul64(tail2, c2), 33), c1));
  h1 = _mm512_xor_si512(h1, length);
  h2 = _mm512_xor_si512(h2, length);
  h1 = _mm512_add_epi64(h1, h2);
  h2 = _mm512_add_epi64(h2, h1);
  return _mm512_add_epi64(fmix64(h1), fmix64(h2));
}

// Hashes rows[0 .. n) (each a key's first 32 bytes, zero past the key; len[i] its length) eight
// at a time into out[i] and lists the keys for the caller (GuavaLaneLists). rows and len have
// room for n rounded up to eight; the rows past n are zeroed here.
[[gnu::always_inline]] CHASH_AVX512 inline void hash_rows(std::uint64_t (*rows)[4],
                                                          std::uint64_t* len, std::size_t n,
                                                          std::uint64_t* out,
                                                          GuavaLaneLists& lists) noexcept {
  constexpr std::uint64_t c1 = 0x87c37b91114253d5ull;
  constexpr std::uint64_t c2 = 0x4cf5ad432745937full;
  for (std::size_t j = n; j < ((n + 7) & ~std::size_t{7}); ++j) {
    rows[j][0] = rows[j][1] = rows[j][2] = rows[j][3] = len[j] = 0;
  }
  std::size_t checks = 0;
  std::size_t rests = 0;
  // Rows to columns (words 0..3 of eight keys), by shuffles: gathers are slow where the CPU's
  // microcode guards them (Intel's GDS mitigation).
  const __m512i even_pairs = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
  const __m512i odd_pairs = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  const __m256i iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t(*r)[4] = rows + i;
    // Rows r and r + 4 in the two halves of a register.
    const auto two_rows = [r](int k) CHASH_AVX512 {
      return _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(r[k]))),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(r[k + 4])), 1);
    };
    const __m512i z0 = two_rows(0);
    const __m512i z1 = two_rows(1);
    const __m512i z2 = two_rows(2);
    const __m512i z3 = two_rows(3);
    const __m512i lo01 = _mm512_unpacklo_epi64(z0, z1);  // r0w0 r1w0 r0w2 r1w2 | r4.. r5..
    const __m512i hi01 = _mm512_unpackhi_epi64(z0, z1);  // r0w1 r1w1 r0w3 r1w3 | r4.. r5..
    const __m512i lo23 = _mm512_unpacklo_epi64(z2, z3);
    const __m512i hi23 = _mm512_unpackhi_epi64(z2, z3);
    const __m512i w0 = _mm512_permutex2var_epi64(lo01, even_pairs, lo23);
    const __m512i w1 = _mm512_permutex2var_epi64(hi01, even_pairs, hi23);
    const __m512i w2 = _mm512_permutex2var_epi64(lo01, odd_pairs, lo23);
    const __m512i w3 = _mm512_permutex2var_epi64(hi01, odd_pairs, hi23);
    const __m512i length = _mm512_load_si512(len + i);
    // The lists: keys of this group (not the padding) 32 bytes or longer, and the shorter ones
    // with a byte of 0x80 or more.
    const auto lanes = static_cast<__mmask8>(_bzhi_u32(0xFF, static_cast<unsigned>(n - i)));
    const __mmask8 is_long = _mm512_mask_cmpge_epu64_mask(lanes, length, _mm512_set1_epi64(32));
    const __mmask8 not_ascii = _mm512_mask_test_epi64_mask(
        static_cast<__mmask8>(lanes & ~is_long),
        _mm512_or_si512(_mm512_or_si512(w0, w1), _mm512_or_si512(w2, w3)),
        _mm512_set1_epi64(static_cast<long long>(0x8080808080808080ull)));
    const __m256i index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(i)), iota);
    _mm256_mask_compressstoreu_epi32(lists.check + checks, not_ascii, index);
    checks += static_cast<std::size_t>(__builtin_popcount(not_ascii));
    _mm256_mask_compressstoreu_epi32(lists.rest + rests, is_long, index);
    rests += static_cast<std::size_t>(__builtin_popcount(is_long));
    const __mmask8 block = _mm512_cmpge_epu64_mask(length, _mm512_set1_epi64(16));
    // The block (words 0, 1) from h1 = h2 = 0 (seed 0): h1 ^= mix(k1); h1 = rotl(h1, 27) + h2;
    // h1 = h1 * 5 + 0x52dce729; h2 ^= mix(k2); h2 = rotl(h2, 31) + h1; h2 = h2 * 5 + 0x38495ab5.
    const __m512i k1 = mul64(_mm512_rol_epi64(mul64(w0, c1), 31), c2);
    const __m512i k2 = mul64(_mm512_rol_epi64(mul64(w1, c2), 33), c1);
    __m512i b1 = _mm512_rol_epi64(k1, 27);
    b1 = _mm512_add_epi64(_mm512_add_epi64(b1, _mm512_slli_epi64(b1, 2)),
                          _mm512_set1_epi64(0x52dce729));
    __m512i b2 = _mm512_add_epi64(_mm512_rol_epi64(k2, 31), b1);
    b2 = _mm512_add_epi64(_mm512_add_epi64(b2, _mm512_slli_epi64(b2, 2)),
                          _mm512_set1_epi64(0x38495ab5));
    // A key under 16 bytes: no block (h1 = h2 = 0), its tail is words 0, 1; else words 2, 3.
    const __m512i h1 = _mm512_maskz_mov_epi64(block, b1);
    const __m512i h2 = _mm512_maskz_mov_epi64(block, b2);
    const __m512i t1 = _mm512_mask_mov_epi64(w0, block, w2);
    const __m512i t2 = _mm512_mask_mov_epi64(w1, block, w3);
    _mm512_mask_storeu_epi64(out + i, lanes, murmur3_finish(h1, h2, t1, t2, length));
  }
  lists.checks = checks;
  lists.rests = rests;
}

}  // namespace

// guava.h: MurmurHash3 x64_128 (seed 0) h1 of the keys shorter than 32 bytes, eight at a time,
// into out[i]: a key under 16 bytes has only a tail, one of 16..31 bytes one block and a tail;
// each lane mixes the block and keeps it or not by its length. Keys that are not all ASCII are
// hashed as their bytes too and listed in `check`: their hash is Guava's when the bytes are
// well-formed UTF-8 (Java's decoder leaves them as they are), which the caller checks. Keys of
// 32 bytes or more are listed in `rest`; their out[i] is left for the caller. Per key the gather
// is one masked load (no byte past a key is read) and two stores, without a branch; the lists
// are made eight keys at a time from masks (compress-stores), and the hashes stored whole. Keys
// compacted into the lanes, with their lists written key by key (five stores a key) and the
// hashes scattered back, cost ~1 ns more per key (C side, bindings bench keys, 10 buckets).
CHASH_AVX512 void guava_lane_hashes_avx512(const std::string_view* keys, std::size_t n,
                                           std::uint64_t* out, GuavaLaneLists& lists) noexcept {
  alignas(64) std::uint64_t rows[kBatchChunk + 7][4];  // a key's 32 bytes, zero past it
  alignas(64) std::uint64_t len[kBatchChunk + 7];
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t size = keys[i].size();
    // A key of 32 bytes or more loads what the mask's low bits say (bzhi reads eight bits of the
    // length): only bytes of the key; its lane's hash is not used.
    const auto mask = static_cast<__mmask32>(_bzhi_u32(~0u, static_cast<unsigned>(size)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(rows[i]),
                       _mm256_maskz_loadu_epi8(mask, keys[i].data()));
    len[i] = size;
  }
  hash_rows(rows, len, n, out, lists);
}


// guava.h: the lanes of guava_lane_hashes_avx512, filled straight from Java Strings: a Latin-1
// key's bytes by one masked load, a UTF-16 key of up to 16 units encoded into its row.
CHASH_AVX512_VBMI2 void guava_java_lane_hashes_avx512(const JavaStrings& keys, std::size_t from,
                                                      std::size_t n, std::uint64_t* out,
                                                      GuavaJavaLists& lists) {
  alignas(64) std::uint64_t rows[kBatchChunk + 7][4];
  alignas(64) std::uint64_t len[kBatchChunk + 7];
  std::uint64_t utf16 = 0;
  std::size_t slows = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const JavaKey key = java_key(keys, from + i);
    if (key.coder == kJavaLatin1) {  // bzhi as in guava_lane_hashes_avx512: no byte past the key
      const auto mask = static_cast<__mmask32>(_bzhi_u32(~0u, static_cast<unsigned>(key.len)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(rows[i]),
                         _mm256_maskz_loadu_epi8(mask, key.text));
      len[i] = key.len;
      continue;
    }
    utf16 |= std::uint64_t{1} << i;
    __m512i utf8;
    const long bytes = key.len <= 32 ? utf16_to_utf8_x16(reinterpret_cast<const std::uint16_t*>(
                                                             static_cast<const void*>(key.text)),
                                                         key.len / 2, utf8)
                                     : -1;
    if (bytes >= 0) {  // the first 32 bytes, zero past them (a longer key's lane goes unused)
      _mm256_store_si256(reinterpret_cast<__m256i*>(rows[i]), _mm512_castsi512_si256(utf8));
    } else {  // longer, or a surrogate: the caller hashes it
      _mm256_store_si256(reinterpret_cast<__m256i*>(rows[i]), _mm256_setzero_si256());
      len[i] = 0;
      lists.slow[slows++] = static_cast<std::uint32_t>(i);
      continue;
    }
    len[i] = static_cast<std::uint64_t>(bytes);
  }
  hash_rows(rows, len, n, out, lists.lanes);
  lists.utf16 = utf16;
  lists.slows = slows;
}

// guava.h: utf8_well_formed (java_text.h) of a key under 32 bytes, with the lookup tables of
// Keiser and Lemire, "Validating UTF-8 In Less Than One Instruction Per Byte" (2021): every
// error of a byte and the one before it sets a bit in all three tables' entries (the earlier
// byte's high and low nibble, this byte's high nibble), so the AND of the three lookups is zero
// on well-formed text, except for the bit of two continuation bytes in a row, which must be set
// exactly where the byte two or three back starts a three- or four-byte sequence. The earlier
// bytes come from masked loads one, two and three bytes back (no byte outside the key is read),
// and the zeros past the key end a sequence cut short there, as an ASCII byte would. The scalar
// loop's branches mispredict on mixed text: on the bindings bench's keys (one in ten Cyrillic,
// 22 bytes) the batch's C side went from 11.0 to 10.0 ns per key (10 buckets), ~10 ns per
// non-ASCII key.
CHASH_AVX512 bool utf8_well_formed_short_avx512(std::string_view key) noexcept {
  enum : char {
    kTooShort = 1 << 0,      // a lead byte, then no continuation
    kTooLong = 1 << 1,       // ASCII, then a continuation
    kOverlong3 = 1 << 2,     // E0 80..9F
    kTooLarge = 1 << 3,      // F4 90..BF, F5..FF 90..BF
    kSurrogate = 1 << 4,     // ED A0..BF
    kOverlong2 = 1 << 5,     // C0..C1 80..BF
    kTooLarge1000 = 1 << 6,  // F5..FF 80..8F
    kOverlong4 = 1 << 6,     // F0 80..8F
    kTwoConts = static_cast<char>(1 << 7),  // a continuation after a continuation
  };
  constexpr char kCarry = kTooShort | kTooLong | kTwoConts;
  // By the earlier byte's high nibble, by its low nibble, by this byte's high nibble.
  const __m256i by_prev_high = _mm256_setr_epi8(
      kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTwoConts,
      kTwoConts, kTwoConts, kTwoConts, kTooShort | kOverlong2, kTooShort,
      kTooShort | kOverlong3 | kSurrogate, kTooShort | kTooLarge | kTooLarge1000 | kOverlong4,
      kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTwoConts,
      kTwoConts, kTwoConts, kTwoConts, kTooShort | kOverlong2, kTooShort,
      kTooShort | kOverlong3 | kSurrogate, kTooShort | kTooLarge | kTooLarge1000 | kOverlong4);
  constexpr char kLarge = kCarry | kTooLarge | kTooLarge1000;
  const __m256i by_prev_low = _mm256_setr_epi8(
      kCarry | kOverlong3 | kOverlong2 | kOverlong4, kCarry | kOverlong2, kCarry, kCarry,
      kCarry | kTooLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge,
      kLarge | kSurrogate, kLarge, kLarge, kCarry | kOverlong3 | kOverlong2 | kOverlong4,
      kCarry | kOverlong2, kCarry, kCarry, kCarry | kTooLarge, kLarge, kLarge, kLarge, kLarge,
      kLarge, kLarge, kLarge, kLarge, kLarge | kSurrogate, kLarge, kLarge);
  constexpr char kCont8 =
      kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge1000 | kOverlong4;
  constexpr char kCont9 = kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge;
  constexpr char kContAB = kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge;
  const __m256i by_high = _mm256_setr_epi8(
      kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
      kCont8, kCont9, kContAB, kContAB, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
      kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kCont8, kCont9,
      kContAB, kContAB, kTooShort, kTooShort, kTooShort, kTooShort);
  const auto mask = static_cast<__mmask32>(_bzhi_u32(~0u, static_cast<unsigned>(key.size())));
  const auto at = reinterpret_cast<std::uintptr_t>(key.data());
  const auto back = [&](unsigned k) CHASH_AVX512 {  // byte i - k in lane i, zero before the key
    return _mm256_maskz_loadu_epi8(static_cast<__mmask32>(mask << k),
                                   reinterpret_cast<const void*>(at - k));
  };
  const __m256i in = back(0);
  const __m256i prev1 = back(1);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i special = _mm256_and_si256(
      _mm256_and_si256(
          _mm256_shuffle_epi8(by_prev_high, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low4)),
          _mm256_shuffle_epi8(by_prev_low, _mm256_and_si256(prev1, low4))),
      _mm256_shuffle_epi8(by_high, _mm256_and_si256(_mm256_srli_epi16(in, 4), low4)));
  const __mmask32 third_or_fourth =
      _mm256_cmpge_epu8_mask(back(2), _mm256_set1_epi8(static_cast<char>(0xE0))) |
      _mm256_cmpge_epu8_mask(back(3), _mm256_set1_epi8(static_cast<char>(0xF0)));
  const __mmask32 errors = _mm256_test_epi8_mask(special, _mm256_set1_epi8(0x7F)) |
                           (_mm256_movepi8_mask(special) ^ third_or_fourth);
  return errors == 0;
}

// guava.h: Hashing.consistentHash of many inputs, eight lanes to a register and four registers in
// flight (one step's chain — multiply, divide, compare — is ~60 cycles, the divider takes a new
// register every 16). Every second step (kStepsPerRefill) the lanes whose loop has ended hand
// their answers out (compressed together) and take the next inputs (expanded into the free
// lanes), so a lane idles at most one step: the number of steps varies from key to key (at 10
// buckets 1 to 8, mean 2.9), and lanes in lockstep, or packed between rounds of a fixed number
// of steps (guava_batch_packed, AVX2), ran about half as many steps again for keys already done.
CHASH_AVX512 void guava_consistent_hash_avx512(const std::uint64_t* inputs, std::size_t n,
                                               std::uint32_t buckets,
                                               std::uint32_t* out) noexcept {
  constexpr int kRegs = 4;
  // Lanes are refilled every second step: a lane that ended on the first waits one step, but the
  // refill (compress, expand, counts) costs twice a step's work, and every second step measured
  // best (C side, 100k bench keys, ns per key at 10 / 100 / 1000 buckets: every step 9.9 / 12.4
  // / 15.0, every second 9.9 / 12.0 / 14.1, every third 9.9 / 12.0 / 14.1).
  constexpr int kStepsPerRefill = 2;
  constexpr std::size_t kStage = 512;  // answers held before they are written to out
  constexpr std::uint64_t kMul = 2862933555777941757ULL;
  const __m512i mul = _mm512_set1_epi64(static_cast<long long>(kMul));
  const __m512i one64 = _mm512_set1_epi64(1);
  const __m512i low31 = _mm512_set1_epi64(0x7fffffff);
  const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512d two_to_minus_31 = _mm512_set1_pd(1.0 / 2147483648.0);  // exact: a power of two
  const __m512d limit = _mm512_set1_pd(static_cast<double>(buckets));
  const __m512d one = _mm512_set1_pd(1.0);
  alignas(64) double stage_candidate[kStage + 8];
  alignas(64) std::uint64_t stage_at[kStage + 8];
  std::size_t staged = 0;
  std::size_t pos = 0;  // the next input to start
  __m512i state[kRegs];
  __m512i at[kRegs];  // each lane's input index
  __m512d candidate[kRegs];
  __mmask8 active[kRegs];  // lanes holding a key whose loop runs
  for (int r = 0; r < kRegs; ++r) {
    const std::size_t take = n - pos < 8 ? n - pos : 8;
    active[r] = static_cast<__mmask8>(_bzhi_u32(0xFF, static_cast<unsigned>(take)));
    state[r] = _mm512_maskz_loadu_epi64(active[r], inputs + pos);
    at[r] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(pos)), iota);
    candidate[r] = _mm512_setzero_pd();
    pos += take;
  }
  for (;;) {
    unsigned any = 0;
    for (int r = 0; r < kRegs; ++r) {
      __mmask8 live = active[r];
      for (int step = 0; step < kStepsPerRefill; ++step) {
        // state = kMul * state + 1 (mod 2^64); nextDouble() = ((int) (state >>> 33) + 1) / 2^31,
        // where the int addition wraps 2^31 to -2^31 (-1.0: next < 0 ends the loop). The sum is
        // taken mod 2^31 here instead: the wrap gives 0.0, next = +inf, and the loop ends all
        // the same, on the one compare next < buckets.
        state[r] = _mm512_add_epi64(_mm512_mullo_epi64(state[r], mul), one64);
        const __m512i top =
            _mm512_and_si512(_mm512_add_epi64(_mm512_srli_epi64(state[r], 33), one64), low31);
        const __m512d next_double = _mm512_mul_pd(_mm512_cvtepi64_pd(top), two_to_minus_31);
        const __m512d next = _mm512_div_pd(_mm512_add_pd(candidate[r], one), next_double);
        live = _mm512_mask_cmp_pd_mask(live, next, limit, _CMP_LT_OQ);
        // (int) next where it is in [0, buckets): rounded toward zero.
        candidate[r] = _mm512_mask_roundscale_pd(candidate[r], live, next, _MM_FROUND_TO_ZERO);
      }
      const __mmask8 done = static_cast<__mmask8>(active[r] & ~live);
      {  // no branch on `done`: at 1000 buckets a register has no lane done on a third of its
         // steps, at random, and the branch mispredicted (5 ns more per key than AVX2's lanes)
        // Answers out: compressed to the front of a register, stored whole, kept by count.
        _mm512_storeu_pd(stage_candidate + staged, _mm512_maskz_compress_pd(done, candidate[r]));
        _mm512_storeu_si512(stage_at + staged, _mm512_maskz_compress_epi64(done, at[r]));
        staged += static_cast<std::size_t>(__builtin_popcount(done));
        // Inputs in: the next ones expanded into the lanes that ended, while there are some.
        const unsigned free_lanes = static_cast<unsigned>(__builtin_popcount(done));
        const unsigned take = n - pos < free_lanes ? static_cast<unsigned>(n - pos) : free_lanes;
        const auto refill = static_cast<__mmask8>(_pdep_u32(_bzhi_u32(0xFF, take), done));
        state[r] = _mm512_mask_expandloadu_epi64(state[r], refill, inputs + pos);
        at[r] = _mm512_mask_expand_epi64(
            at[r], refill, _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(pos)), iota));
        candidate[r] = _mm512_mask_mov_pd(candidate[r], refill, _mm512_setzero_pd());
        active[r] = static_cast<__mmask8>((active[r] & ~done) | refill);
        pos += take;
        if (staged > kStage - 8) {
          for (std::size_t j = 0; j < staged; ++j) {
            out[stage_at[j]] = static_cast<std::uint32_t>(stage_candidate[j]);
          }
          staged = 0;
        }
      }
      any |= active[r];
    }
    if (any == 0) break;
  }
  for (std::size_t j = 0; j < staged; ++j) {
    out[stage_at[j]] = static_cast<std::uint32_t>(stage_candidate[j]);
  }
}

#undef CHASH_AVX512

}  // namespace chash::presets
#endif
