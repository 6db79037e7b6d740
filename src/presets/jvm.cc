// SPDX-License-Identifier: Apache-2.0
// Presets of JVM clients: Jedis' client-side sharding (jedis) and Guava's consistentHash (guava).
// docs/compat/jvm.md has the details and the commands that regenerate the vectors.
#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/placement.h"
#include "chash/ring.h"
#include "common.h"
#include "cpu.h"
#include "guava.h"
#include "java_strings.h"
#include "java_text.h"
#include "registry.h"

namespace chash::presets {
namespace {

// ==== Jedis (redis.clients.jedis.util.Sharded, Jedis 3.x) ========================================
//
// Sharded.initialize(): shard i of weight w gets 160 * w points, n = 0 .. 160w-1, each the 64-bit
// hash of "SHARD-" + i + "-NODE-" + n when the shard has no name, or of name + "*" + n when it has
// one, put into a TreeMap<Long, ShardInfo>: an equal point put later REPLACES the earlier one.
// getShardInfo(byte[]): the first point >= hash(key) in signed Long order (tailMap), else the
// first point. Hashing.MURMUR_HASH is MurmurHash64A seed 0x1234ABCD over the bytes (Strings are
// SafeEncoder'd to UTF-8); Hashing.MD5 is bytes 0..3 of the MD5 digest, little-endian, as a
// non-negative long.

constexpr std::uint32_t kJedisPointsPerWeight = 160;
constexpr std::uint64_t kJedisMurmurSeed = 0x1234ABCD;

// Signed Long order as unsigned order: flip the sign bit.
constexpr std::uint64_t signed_order(std::uint64_t v) noexcept { return v ^ (1ULL << 63); }

struct JedisMurmur {
  std::uint64_t operator()(std::string_view bytes) const noexcept {
    return signed_order(hash::murmur64a(bytes, kJedisMurmurSeed));
  }
};

struct JedisMd5 {
  std::uint64_t operator()(std::string_view bytes) const noexcept {
    return signed_order(hash::ketama_point(hash::md5(bytes), 0));
  }
};

// Sharded.DEFAULT_KEY_TAG_PATTERN, \{(.+?)\} with Matcher.find(): the first '{' followed by at
// least one character and then a '}', with no line terminator in between ('.' does not match
// \n, \r, U+0085, U+2028, U+2029); the tag is what lies between. No match: the whole key.
// Java applies it to the String; on valid UTF-8 the byte positions give the same substring.
std::string_view jedis_key_tag(std::string_view key) noexcept {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(key[i]); };
  auto terminator_at = [&](std::size_t i) {
    if (byte(i) == '\n' || byte(i) == '\r') return true;
    if (byte(i) == 0xC2) return i + 1 < key.size() && byte(i + 1) == 0x85;  // U+0085
    return byte(i) == 0xE2 && i + 2 < key.size() && byte(i + 1) == 0x80 &&
           (byte(i + 2) == 0xA8 || byte(i + 2) == 0xA9);  // U+2028, U+2029
  };
  for (std::size_t open = key.find('{'); open != std::string_view::npos;
       open = key.find('{', open + 1)) {
    // The lazy group takes one character at least, so the '}' is searched from open + 2.
    for (std::size_t i = open + 1; i < key.size(); ++i) {
      if (terminator_at(i)) break;  // '.' cannot cross it: no match from this '{'.
      if (key[i] == '}' && i > open + 1) return key.substr(open + 1, i - open - 1);
    }
  }
  return key;
}

template <class HashFn, bool kTag>
struct JedisKey {
  std::uint64_t operator()(std::string_view key) const noexcept {
    if constexpr (kTag) key = jedis_key_tag(key);
    return HashFn{}(key);
  }
  // Hashing.MD5: a chunk's digests side by side.
  void batch(std::span<const std::string_view> keys,
             std::uint64_t* out) const noexcept requires std::same_as<HashFn, JedisMd5> {
    assert(keys.size() <= kBatchChunk);
    std::string_view hashed[kBatchChunk];
    for (std::size_t i = 0; i < keys.size(); ++i) {
      hashed[i] = kTag ? jedis_key_tag(keys[i]) : keys[i];
    }
    md5_positions(std::span<const std::string_view>(hashed, keys.size()), out,
                  [](const hash::Md5Digest& d) { return signed_order(hash::ketama_point(d, 0)); });
  }
};

// A node "name=host:port" is a named shard (JedisShardInfo(host, port, name)); any other node
// ("host:port", "host", "redis://...") is unnamed and placed by its position in the list.
std::string_view jedis_shard_name(const Node& n, bool& named) {
  const std::size_t eq = n.name.find('=');
  named = eq != std::string::npos;
  return named ? std::string_view(n.name).substr(0, eq) : std::string_view();
}

template <class HashFn>
Ring64Table jedis_ring(std::span<const Node> nodes) {
  struct Put {
    std::uint64_t position;
    std::uint64_t order;  // put order: a later put replaces an equal earlier point
    NodeId node;
  };
  std::uint64_t total = 0;
  for (const Node& n : nodes) total += std::uint64_t{n.weight} * kJedisPointsPerWeight;
  if (total > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "jedis ring would have " + std::to_string(total) +
                                               " points (160 x weight summed); at most " +
                                               std::to_string(kMaxRingPoints));
  }
  std::vector<Put> puts;
  puts.reserve(static_cast<std::size_t>(total));
  std::string point;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    bool named = false;
    const std::string_view name = jedis_shard_name(nodes[i], named);
    const std::uint64_t points = std::uint64_t{nodes[i].weight} * kJedisPointsPerWeight;
    for (std::uint64_t n = 0; n < points; ++n) {
      if (named) {
        point.assign(name).append("*").append(std::to_string(n));
      } else {
        point.assign("SHARD-").append(std::to_string(i)).append("-NODE-").append(std::to_string(n));
      }
      puts.push_back(Put{HashFn{}(point), puts.size(), static_cast<NodeId>(i)});
    }
  }
  // TreeMap.put: keep only the last put of each position.
  std::sort(puts.begin(), puts.end(), [](const Put& a, const Put& b) {
    return a.position != b.position ? a.position < b.position : a.order > b.order;
  });
  std::vector<Ring64Table::Point> points;
  points.reserve(puts.size());
  for (std::size_t k = 0; k < puts.size(); ++k) {
    if (k > 0 && puts[k].position == puts[k - 1].position) continue;
    points.push_back(Ring64Table::Point{puts[k].position, puts[k].node});
  }
  return Ring64Table::from_points(std::move(points), nodes.size());
}

template <class HashFn>
std::unique_ptr<Preset> make_jedis_with(std::span<const Node> nodes, bool tag) {
  Ring64Table ring = jedis_ring<HashFn>(nodes);
  if (tag) return make_ring_preset(std::move(ring), JedisKey<HashFn, true>{});
  return make_ring_preset(std::move(ring), JedisKey<HashFn, false>{});
}

std::unique_ptr<Preset> make_jedis(std::span<const Node> nodes, const PresetOptions& options) {
  reject_options("jedis", options, /*hash=*/true, /*hash_tag=*/true, /*vnodes=*/false);
  validate_nodes(nodes);
  bool tag = false;
  if (options.hash_tag) {
    if (*options.hash_tag != "{}") {
      throw Error(ErrorCode::kUnsupported,
                  "preset jedis: --hash-tag must be \"{}\" (Sharded.DEFAULT_KEY_TAG_PATTERN, "
                  "\\{(.+?)\\}); got \"" +
                      options.hash_tag->substr(0, 16) + "\"");
    }
    tag = true;
  }
  const std::string hash = options.hash.value_or("MURMUR_HASH");
  if (hash == "MURMUR_HASH" || hash == "murmur") return make_jedis_with<JedisMurmur>(nodes, tag);
  if (hash == "MD5" || hash == "md5") return make_jedis_with<JedisMd5>(nodes, tag);
  throw Error(ErrorCode::kUnsupported, "preset jedis: --hash must be MURMUR_HASH (Hashing." +
                                           std::string("MURMUR_HASH, the default) or MD5; got \"") +
                                           hash.substr(0, 32) + "\"");
}

}  // namespace

// ==== Guava (com.google.common.hash.Hashing, Guava 31.1) =========================================
//
// consistentHash(murmur3_128().hashString(key, UTF_8), n): the key is a Java String; hashString
// hashes String.getBytes(UTF_8) (guava_key_hash, java_text.h).

// Hashing.consistentHash(long input, int buckets) — Guava's own variant of jump hashing, not the
// paper's: a 64-bit LCG (state = 2862933555777941757 * state + 1) whose nextDouble() is
// ((int) (state >>> 33) + 1) / 2^31 — the int addition wraps to -2^31 when the top 31 bits are
// all ones, giving -1.0 — and next = (int) ((candidate + 1) / nextDouble()), kept while it lies
// in [0, buckets). (int) of a double truncates and saturates; both sides compare alike here.
std::uint32_t guava_consistent_hash(std::uint64_t input, std::uint32_t buckets) noexcept {
  std::uint64_t state = input;
  std::uint32_t candidate = 0;
  for (;;) {
    state = 2862933555777941757ULL * state + 1;
    const auto top = static_cast<std::uint32_t>(state >> 33) + 1u;  // int wraps at 2^31
    const double next_double = static_cast<double>(static_cast<std::int32_t>(top)) / 2147483648.0;
    const double next = static_cast<double>(candidate + 1) / next_double;
    if (next < 0.0 || next >= static_cast<double>(buckets)) return candidate;
    candidate = static_cast<std::uint32_t>(next);
  }
}

// guava_consistent_hash for many inputs. One key's loop is a chain of dependent steps (the
// candidate feeds the next division), so one loop at a time leaves the core waiting on the
// divider; here several keys run the loop in lockstep, each lane frozen once its answer is found,
// until every lane is done. No branch per lane (a compare-and-branch mispredicts on every exit):
// AVX2 lanes, the unfinished keys packed between rounds (guava_batch_packed below), where the CPU
// has it; SSE2 (every x86-64) 8 lanes in lockstep; elsewhere scalar lanes with masks.

#if defined(__x86_64__)
// jvm_avx2.cc (compiled with -mavx2; call only when the CPU has AVX2): up to `steps` steps of the
// loop on `lanes` (a multiple of 4) lanes of state and candidate, in place; live[i] = 1 while
// lane i's loop has not ended.
void guava_steps_avx2(std::uint64_t* state, double* candidate, std::uint32_t* live,
                      std::size_t lanes, std::uint32_t buckets, int steps) noexcept;
#endif

namespace {

constexpr std::size_t kGuavaLanes = 8;

#if defined(__x86_64__)
// The lanes in SSE2: the candidate is kept as a double (an integer below 2^31, so exact), the
// LCG's 64-bit multiply is built from 32 x 32 -> 64 multiplies (pmuludq), and the truncation
// (int) of Java is cvttpd2dq then back.
void guava_lanes(const std::uint64_t* inputs, std::uint32_t buckets, NodeId* out) noexcept {
  constexpr std::size_t kRegs = kGuavaLanes / 2;
  constexpr std::uint64_t kMul = 2862933555777941757ULL;
  const __m128i mul_lo = _mm_set1_epi64x(static_cast<std::int64_t>(kMul & 0xffffffffu));
  const __m128i mul_hi = _mm_set1_epi64x(static_cast<std::int64_t>(kMul >> 32));
  const __m128i one64 = _mm_set1_epi64x(1);
  const __m128i one32 = _mm_set1_epi32(1);
  const __m128d limit = _mm_set1_pd(static_cast<double>(buckets));
  const __m128d zero = _mm_setzero_pd();
  const __m128d one = _mm_set1_pd(1.0);
  const __m128d two_to_minus_31 = _mm_set1_pd(1.0 / 2147483648.0);  // exact: a power of two
  __m128i state[kRegs];
  __m128d candidate[kRegs];
  __m128d live[kRegs];  // all ones while the lane's loop runs
  for (std::size_t r = 0; r < kRegs; ++r) {
    state[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(inputs + 2 * r));
    candidate[r] = zero;
    live[r] = _mm_castsi128_pd(_mm_set1_epi32(-1));
  }
  for (;;) {
    __m128d any = zero;
    for (std::size_t r = 0; r < kRegs; ++r) {
      // state = kMul * state + 1 (mod 2^64): lo*lo + ((hi*lo + lo*hi) << 32) + 1.
      const __m128i s = state[r];
      const __m128i cross =
          _mm_add_epi64(_mm_mul_epu32(_mm_srli_epi64(s, 32), mul_lo), _mm_mul_epu32(s, mul_hi));
      const __m128i next_state =
          _mm_add_epi64(_mm_add_epi64(_mm_mul_epu32(s, mul_lo), _mm_slli_epi64(cross, 32)), one64);
      state[r] = next_state;
      // ((int) (state >>> 33) + 1) / 2^31: the int addition wraps 2^31 to -2^31.
      const __m128i top = _mm_add_epi32(
          _mm_shuffle_epi32(_mm_srli_epi64(next_state, 33), _MM_SHUFFLE(3, 1, 2, 0)), one32);
      const __m128d next_double = _mm_mul_pd(_mm_cvtepi32_pd(top), two_to_minus_31);
      const __m128d next = _mm_div_pd(_mm_add_pd(candidate[r], one), next_double);
      const __m128d in = _mm_and_pd(_mm_cmpge_pd(next, zero), _mm_cmplt_pd(next, limit));
      const __m128d taken = _mm_cvtepi32_pd(_mm_cvttpd_epi32(next));  // meaningful when in
      live[r] = _mm_and_pd(live[r], in);
      candidate[r] = _mm_or_pd(_mm_and_pd(live[r], taken), _mm_andnot_pd(live[r], candidate[r]));
      any = _mm_or_pd(any, live[r]);
    }
    if (_mm_movemask_pd(any) == 0) break;
  }
  for (std::size_t r = 0; r < kRegs; ++r) {
    alignas(16) std::int32_t c[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(c), _mm_cvttpd_epi32(candidate[r]));
    out[2 * r] = static_cast<NodeId>(c[0]);
    out[2 * r + 1] = static_cast<NodeId>(c[1]);
  }
}
#else
void guava_lanes(const std::uint64_t* inputs, std::uint32_t buckets, NodeId* out) noexcept {
  const double limit = static_cast<double>(buckets);
  const double top_candidate = limit - 1.0;
  std::uint64_t state[kGuavaLanes];
  std::uint32_t candidate[kGuavaLanes];
  std::uint32_t live[kGuavaLanes];  // all ones while the lane's loop runs
  for (std::size_t l = 0; l < kGuavaLanes; ++l) {
    state[l] = inputs[l];
    candidate[l] = 0;
    live[l] = ~0u;
  }
  for (std::uint32_t any = ~0u; any != 0;) {
    any = 0;
    for (std::size_t l = 0; l < kGuavaLanes; ++l) {
      state[l] = 2862933555777941757ULL * state[l] + 1;
      const auto top = static_cast<std::uint32_t>(state[l] >> 33) + 1u;
      const double next_double = static_cast<double>(static_cast<std::int32_t>(top)) / 2147483648.0;
      const double next =
          static_cast<double>(static_cast<std::int32_t>(candidate[l] + 1)) / next_double;
      const std::uint32_t in = 0u - static_cast<std::uint32_t>((next >= 0.0) & (next < limit));
      // Clamped into [0, buckets - 1] so the conversion is defined; it equals next when in.
      const auto taken = static_cast<std::uint32_t>(
          static_cast<std::int32_t>(std::min(std::max(next, 0.0), top_candidate)));
      live[l] &= in;
      candidate[l] ^= (candidate[l] ^ taken) & live[l];
      any |= live[l];
    }
  }
  for (std::size_t l = 0; l < kGuavaLanes; ++l) out[l] = candidate[l];
}
#endif

}  // namespace

#if defined(__x86_64__)
namespace {

// With AVX2: lanes in lockstep wait for the slowest of them, and a key's step count varies a lot
// (the candidate jumps ~ln(buckets) times, and the last of 32 lanes takes about twice the mean),
// so much of the lanes' work was for keys already done. Here a chunk of keys runs a few steps,
// the ones still running are packed together (no branch per key: every entry is copied and the
// count advances by its live flag) and run again, until none is left. The first round is about
// as long as most keys need (ln(buckets) + 2 steps), later ones short (kLaterSteps).
// Measured with the step in jvm_avx2.cc (100k random inputs, ns per key at 10 / 100 / 1000
// buckets): lockstep 4.9 / 8.0 / 10.7, packed 5.0 / 6.8 / 8.6 (chunks of 128..1024 alike).
void guava_batch_packed(const std::uint64_t* inputs, std::size_t n, std::uint32_t buckets,
                        NodeId* out) noexcept {
  constexpr std::size_t kPending = 256;
  constexpr int kLaterSteps = 3;
  // A padding lane's candidate: (2^31 + 1) / nextDouble() is out of [0, buckets) at step one.
  constexpr double kEnded = 2147483648.0;
  const int first_steps = std::max(2, static_cast<int>(std::log(static_cast<double>(buckets))) + 2);
  std::uint64_t state[kPending + 4];
  double candidate[kPending + 4];
  std::uint32_t live[kPending + 4];
  std::uint32_t at[kPending];  // out index of each pending entry, from `base`
  for (std::size_t base = 0; base < n; base += kPending) {
    std::size_t m = std::min(kPending, n - base);
    for (std::size_t i = 0; i < m; ++i) {
      state[i] = inputs[base + i];
      candidate[i] = 0.0;
      at[i] = static_cast<std::uint32_t>(i);
    }
    for (int steps = first_steps; m > 0; steps = kLaterSteps) {
      const std::size_t lanes = (m + 3) & ~std::size_t{3};
      for (std::size_t i = m; i < lanes; ++i) {
        state[i] = 0;
        candidate[i] = kEnded;
      }
      guava_steps_avx2(state, candidate, live, lanes, buckets, steps);
      std::size_t kept = 0;
      for (std::size_t i = 0; i < m; ++i) {
        const std::uint32_t a = at[i];
        out[base + a] = static_cast<NodeId>(candidate[i]);  // final unless the entry is kept
        state[kept] = state[i];
        candidate[kept] = candidate[i];
        at[kept] = a;
        kept += live[i];
      }
      m = kept;
    }
  }
}

}  // namespace
#endif

namespace {

GuavaKernel usable(GuavaKernel kernel) noexcept {
#if defined(__x86_64__)
  if (kernel == GuavaKernel::kBest) {
    return internal::cpu_has_avx512() ? GuavaKernel::kAvx512
           : internal::cpu_has_avx2() ? GuavaKernel::kAvx2
                                      : GuavaKernel::kScalar;
  }
  if (kernel == GuavaKernel::kAvx512 && internal::cpu_has_avx512()) return kernel;
  if (kernel == GuavaKernel::kAvx2 && internal::cpu_has_avx2()) return kernel;
#endif
  (void)kernel;
  return GuavaKernel::kScalar;
}

}  // namespace

bool utf8_well_formed_short(std::string_view key, GuavaKernel kernel) noexcept {
  assert(key.size() < 32);
#if defined(__x86_64__)
  if (usable(kernel) == GuavaKernel::kAvx512) return utf8_well_formed_short_avx512(key);
#endif
  (void)kernel;
  return utf8_well_formed(key);
}

void guava_consistent_hash_batch(const std::uint64_t* inputs, std::size_t n, std::uint32_t buckets,
                                 NodeId* out, GuavaKernel kernel) noexcept {
#if defined(__x86_64__)
  switch (usable(kernel)) {
    case GuavaKernel::kAvx512:
      return guava_consistent_hash_avx512(inputs, n, buckets, out);
    case GuavaKernel::kAvx2:
      return guava_batch_packed(inputs, n, buckets, out);
    default:
      break;
  }
#endif
  std::size_t i = 0;
  for (; i + kGuavaLanes <= n; i += kGuavaLanes) guava_lanes(inputs + i, buckets, out + i);
  for (; i < n; ++i) out[i] = guava_consistent_hash(inputs[i], buckets);
}

#if defined(__x86_64__)
// jvm_avx2.cc (AVX2 only): h1 of MurmurHash3 x64_128 (seed 0) for n (a multiple of 4) keys
// shorter than 16 bytes, given as their tail words k1 (bytes 0..7) and k2 (bytes 8..14) and
// lengths.
void murmur3_short_h1_avx2(const std::uint64_t* k1, const std::uint64_t* k2,
                           const std::uint64_t* len, std::uint64_t* out, std::size_t n) noexcept;
#endif

namespace {

#if defined(__x86_64__)
// guava_key_hashes (guava.h) with AVX2. Keys are mostly short ASCII strings, and one key's
// murmur3 is a chain of dependent multiplies (~5 ns per key in a loop, perf: 40% of the batch),
// so the ASCII keys under 16 bytes are hashed four at a time (murmur3_short_h1_avx2); the others
// one at a time. Their words are loaded as in murmur3_x64.h, and the ASCII test is made on the
// same words.
void guava_key_hashes_avx2(std::span<const std::string_view> keys, std::uint64_t* out) noexcept {
  std::uint64_t k1[kBatchChunk + 3];
  std::uint64_t k2[kBatchChunk + 3];
  std::uint64_t len[kBatchChunk + 3];
  std::uint64_t h[kBatchChunk + 3];
  std::uint32_t at[kBatchChunk];
  std::size_t m = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string_view key = keys[i];
    const auto* p = reinterpret_cast<const unsigned char*>(key.data());
    const std::size_t n = key.size();
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    std::uint64_t seen = 0;  // every byte read, for the ASCII test
    if (n >= 8 && n < 16) {
      lo = hash::internal::murmur3_load64(p);
      const std::uint64_t last = hash::internal::murmur3_load64(p + n - 8);
      hi = n > 8 ? last >> (8 * (16 - n)) : 0;
      seen = lo | last;
    } else if (n < 8) {
      lo = seen = hash::internal::murmur3_short(p, n);
    } else {
      seen = ~std::uint64_t{0};  // 16 bytes or more: the scalar hash
    }
    if ((seen & 0x8080808080808080ULL) != 0) {
      out[i] = guava_key_hash(key);
      continue;
    }
    k1[m] = lo;
    k2[m] = hi;
    len[m] = n;
    at[m] = static_cast<std::uint32_t>(i);
    ++m;
  }
  const std::size_t lanes = (m + 3) & ~std::size_t{3};
  for (std::size_t j = m; j < lanes; ++j) k1[j] = k2[j] = len[j] = 0;
  murmur3_short_h1_avx2(k1, k2, len, h, lanes);
  for (std::size_t j = 0; j < m; ++j) out[at[j]] = h[j];
}
#endif

}  // namespace

void guava_key_hashes(std::span<const std::string_view> keys, std::uint64_t* out,
                      GuavaKernel kernel) noexcept {
  assert(keys.size() <= kBatchChunk);
#if defined(__x86_64__)
  switch (usable(kernel)) {
    case GuavaKernel::kAvx512: {
      GuavaLaneLists lists;
      guava_lane_hashes_avx512(keys.data(), keys.size(), out, lists);
      for (std::size_t j = 0; j < lists.checks; ++j) {
        const std::string_view key = keys[lists.check[j]];
        if (!utf8_well_formed_short_avx512(key)) out[lists.check[j]] = guava_key_hash(key);
      }
      for (std::size_t j = 0; j < lists.rests; ++j) {
        out[lists.rest[j]] = guava_key_hash(keys[lists.rest[j]]);
      }
      return;
    }
    case GuavaKernel::kAvx2:
      return guava_key_hashes_avx2(keys, out);
    default:
      break;
  }
#endif
  for (std::size_t i = 0; i < keys.size(); ++i) out[i] = guava_key_hash(keys[i]);
}

namespace {

// guava_key_hash of a Java String's UTF-8 (well-formed by construction: never checked): in place
// when it is ASCII Latin-1, else encoded into a stack buffer or, when too long for that, hashed
// piece by piece.
std::uint64_t guava_java_key_hash(const JavaKey& key) {
  char utf8[3072 + kJavaUtf8Slack];
  std::size_t used = 0;
  std::string_view view;
  if (java_utf8_view(key, utf8, sizeof utf8, used, view)) {
    return hash::internal::murmur3_x64_128_inline(view, 0).h1;
  }
  Murmur3x64Stream m;
  java_utf8_pieces(key, [&](std::string_view piece) { m.update(piece); });
  return m.finish();
}

}  // namespace

void guava_java_key_hashes(const JavaStrings& keys, std::size_t from, std::size_t n,
                           std::uint64_t* out, GuavaKernel kernel) {
  assert(n <= kBatchChunk);
#if defined(__x86_64__)
  if (usable(kernel) == GuavaKernel::kAvx512 && internal::cpu_has_avx512_vbmi2()) {
    // The keys go into the lanes where they lie (no copy, no view): only the non-ASCII Latin-1
    // keys are encoded afterwards, and the long or surrogate-holding UTF-16 ones hashed alone.
    // C side, 100k bindings-bench keys handed over as the Java binding does, ns per key at 10 /
    // 100 / 1000 buckets, with plain UTF-8 byte keys of the same batch beside them in one run:
    // the bindings' C header (encode, then chash_route_batch) 9.6 / 11.5 / 13.5, bytes 7.9 / 9.9
    // / 11.9; here, keys as views 9.2 / 11.3 / 13.3; filled into the lanes 8.3 / 10.2 / 12.5,
    // bytes 7.9 / 10.0 / 12.0.
    GuavaJavaLists lists;
    guava_java_lane_hashes_avx512(keys, from, n, out, lists);
    for (std::size_t j = 0; j < lists.lanes.checks; ++j) {  // under 32 bytes, not ASCII
      const std::uint32_t i = lists.lanes.check[j];
      if ((lists.utf16 >> i & 1) != 0) continue;  // UTF-8 from UTF-16: its hash stands
      char utf8[2 * 32 + kJavaUtf8Slack];         // a Latin-1 key under 32 bytes
      out[i] = hash::internal::murmur3_x64_128_inline(
                   std::string_view(utf8, java_to_utf8(java_key(keys, from + i), utf8)), 0)
                   .h1;
    }
    for (std::size_t j = 0; j < lists.lanes.rests; ++j) {  // 32 bytes or more
      out[lists.lanes.rest[j]] = guava_java_key_hash(java_key(keys, from + lists.lanes.rest[j]));
    }
    for (std::size_t j = 0; j < lists.slows; ++j) {
      out[lists.slow[j]] = guava_java_key_hash(java_key(keys, from + lists.slow[j]));
    }
    return;
  }
#endif
  // Elsewhere the keys become UTF-8 views for guava_key_hashes: ASCII Latin-1 ones where they
  // lie, the others encoded into a stack buffer, those too long for it hashed alone.
  char buf[kBatchChunk * 3 * 64 + kJavaUtf8Slack];  // 64 UTF-16 units a key
  std::string_view views[kBatchChunk];
  std::uint32_t alone[kBatchChunk];
  std::size_t alones = 0;
  std::size_t used = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!java_utf8_view(java_key(keys, from + i), buf, sizeof buf, used, views[i])) {
      views[i] = std::string_view();
      alone[alones++] = static_cast<std::uint32_t>(i);
    }
  }
  guava_key_hashes(std::span<const std::string_view>(views, n), out, kernel);
  for (std::size_t j = 0; j < alones; ++j) {
    out[alone[j]] = guava_java_key_hash(java_key(keys, from + alone[j]));
  }
}

namespace {

// Guava numbers the nodes 0..n-1 in list order; it has no weights and no second choice. Next
// choices (route_n) are chash's: consistentHash over rehashes of the key (attempt 1, 2, ...),
// skipping nodes already chosen, then the remaining nodes in list order.
class GuavaPreset final : public Preset {
 public:
  explicit GuavaPreset(std::uint32_t n) : n_(n) {}

  NodeId route(std::string_view key) const noexcept override {
    return guava_consistent_hash(guava_key_hash(key), n_);
  }

  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const override {
    // Hashed a chunk at a time, placed four chunks at a time: the placement packs its unfinished
    // keys between rounds (guava_batch_packed), which pays when the rounds stay wide.
    constexpr std::size_t kPlaced = 4 * kBatchChunk;
    std::uint64_t h[kPlaced];
    for (std::size_t at = 0; at < keys.size(); at += kPlaced) {
      const std::size_t n = std::min(kPlaced, keys.size() - at);
      for (std::size_t i = 0; i < n; i += kBatchChunk) {
        guava_key_hashes(keys.subspan(at + i, std::min(kBatchChunk, n - i)), h + i);
      }
      guava_consistent_hash_batch(h, n, n_, out.data() + at);
    }
  }

  // route_batch for Java Strings (java_strings.h), hashed where they lie.
  void route_java(const JavaStrings& keys, NodeId* out) const {
    constexpr std::size_t kPlaced = 4 * kBatchChunk;
    std::uint64_t h[kPlaced];
    for (std::size_t at = 0; at < keys.count; at += kPlaced) {
      const std::size_t n = std::min(kPlaced, keys.count - at);
      for (std::size_t i = 0; i < n; i += kBatchChunk) {
        guava_java_key_hashes(keys, at + i, std::min(kBatchChunk, n - i), h + i);
      }
      guava_consistent_hash_batch(h, n, n_, out + at);
    }
  }

  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    if (out.empty()) return 0;
    const std::uint64_t h = guava_key_hash(key);
    const std::size_t want = std::min<std::size_t>(out.size(), n_);
    internal::SeenSet seen(n_);
    std::size_t k = 0;
    auto take = [&](NodeId id) {
      if (k < want && seen.insert(id)) out[k++] = id;
    };
    take(guava_consistent_hash(h, n_));
    for (std::uint64_t attempt = 1; attempt <= kRehashAttempts && k < want; ++attempt) {
      take(guava_consistent_hash(internal::rehash(h, attempt), n_));
    }
    for (NodeId id = 0; id < n_ && k < want; ++id) take(id);
    return k;
  }

  std::size_t node_count() const noexcept override { return n_; }

 private:
  static constexpr std::uint64_t kRehashAttempts = 64;
  std::uint32_t n_;
};

std::unique_ptr<Preset> make_guava(std::span<const Node> nodes, const PresetOptions& options) {
  reject_options("guava", options, false, false, false);
  validate_nodes(nodes);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight != 1) {
      throw Error(ErrorCode::kUnsupported,
                  "preset guava: Hashing.consistentHash has no weights (node \"" +
                      nodes[i].name.substr(0, 64) + "\" has weight " +
                      std::to_string(nodes[i].weight) + "); give every node weight 1");
    }
  }
  return std::make_unique<GuavaPreset>(static_cast<std::uint32_t>(nodes.size()));
}

}  // namespace

bool guava_route_java_strings(const Preset& preset, const JavaStrings& keys, NodeId* out) {
  const auto* guava = dynamic_cast<const GuavaPreset*>(&preset);
  if (guava == nullptr) return false;
  guava->route_java(keys, out);
  return true;
}

std::unique_ptr<Preset> make_jvm(std::string_view name, std::span<const Node> nodes,
                                 const PresetOptions& options) {
  if (name == "jedis") return make_jedis(nodes, options);
  if (name == "guava") return make_guava(nodes, options);
  throw Error(ErrorCode::kInvalidArgument, "jvm presets: unknown preset " + std::string(name));
}

}  // namespace chash::presets
