// SPDX-License-Identifier: Apache-2.0
// Guava's Hashing.consistentHash (jvm.cc), one input and many, for the guava preset and for
// tests/presets/jvm_test.cc (the lanes against the loop on inputs chosen to hit its edges). Not
// part of the installed API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "chash/node.h"
#include "presets/common.h"
#include "presets/java_strings.h"

namespace chash::presets {

// Hashing.consistentHash(input, buckets), Guava 31.1; buckets in 1..2^31-1.
std::uint32_t guava_consistent_hash(std::uint64_t input, std::uint32_t buckets) noexcept;

// Which code computes many Guava answers at once (tests run each the CPU has; kBest is the
// fastest there). A kernel the CPU lacks falls back to kScalar.
enum class GuavaKernel { kScalar, kAvx2, kAvx512, kBest };

// out[i] = guava_consistent_hash(inputs[i], buckets) for i < n, several inputs at once: AVX-512
// lanes refilled as their keys end, AVX2 lanes with the unfinished keys packed between rounds,
// or (kScalar) 8 SSE2 lanes in lockstep, then one at a time.
void guava_consistent_hash_batch(const std::uint64_t* inputs, std::size_t n, std::uint32_t buckets,
                                 NodeId* out, GuavaKernel kernel = GuavaKernel::kBest) noexcept;

// The key hash of the guava preset, Hashing.murmur3_128().hashString(key, UTF_8).padToLong(),
// of a chunk of at most kBatchChunk keys: out[i] for keys[i]. `kernel` picks the code (tests run
// each the CPU has; kBest is the fastest): keys under 32 bytes eight at a time (AVX-512; the
// non-ASCII ones then checked for well-formed UTF-8 one by one, with AVX-512 too), ASCII keys
// under 16 bytes four at a time (AVX2), the others one at a time; or every key one at a time
// (kScalar).
void guava_key_hashes(std::span<const std::string_view> keys, std::uint64_t* out,
                      GuavaKernel kernel = GuavaKernel::kBest) noexcept;

// guava_key_hashes of Java Strings keys[from .. from + n) (java_strings.h; n <= kBatchChunk) as
// their String.getBytes(UTF_8). With AVX-512 VBMI2 (kAvx512, kBest) the keys go into the lanes
// where they lie (guava_java_lane_hashes_avx512): no ASCII scan, no copy, no UTF-8 check of keys
// encoded from UTF-16; elsewhere they become UTF-8 views (ASCII Latin-1 keys in place, the others
// encoded into a stack buffer) for guava_key_hashes by `kernel`. Throws Error (kInvalidArgument)
// for a bad entry (java_key).
void guava_java_key_hashes(const JavaStrings& keys, std::size_t from, std::size_t n,
                           std::uint64_t* out, GuavaKernel kernel = GuavaKernel::kBest);
// guava_java_key_hashes and consistentHash, a batch of any size, when `preset` is the guava
// preset (false, nothing done, for any other): route_java_strings' fast path.
bool guava_route_java_strings(const Preset& preset, const JavaStrings& keys, NodeId* out);
// utf8_well_formed (java_text.h) of a key under 32 bytes, by `kernel`: with AVX-512 lookup tables
// (kAvx512, kBest) where the CPU has them, else by the loop.
bool utf8_well_formed_short(std::string_view key, GuavaKernel kernel) noexcept;

#if defined(__x86_64__)
// jvm_avx512.cc (call only when internal::cpu_has_avx512()): h1 of MurmurHash3 x64_128 of the
// keys (n <= kBatchChunk) shorter than 32 bytes into out[i]; of those the ones that are not all
// ASCII listed in `check` (their hash stands if they are well-formed UTF-8), the longer keys in
// `rest` (not hashed).
struct GuavaLaneLists {
  std::uint32_t check[kBatchChunk];
  std::uint32_t rest[kBatchChunk];
  std::size_t checks = 0;
  std::size_t rests = 0;
};
void guava_lane_hashes_avx512(const std::string_view* keys, std::size_t n, std::uint64_t* out,
                              GuavaLaneLists& lists) noexcept;
// jvm_avx512.cc (call only when internal::cpu_has_avx512_vbmi2()): guava_lane_hashes_avx512 of
// Java Strings keys[from .. from + n) (n <= kBatchChunk) read where they lie: Latin-1 keys as
// their bytes (the ones not all ASCII then in lanes.check, to be encoded), UTF-16 keys of up to
// 16 units encoded to UTF-8 in their lanes (marked in `utf16`: in lanes.check their hash
// stands, well-formed by construction), longer UTF-16 keys and those with a surrogate listed in
// `slow` (not hashed). Throws as java_key for a bad entry.
struct GuavaJavaLists {
  GuavaLaneLists lanes;
  std::uint32_t slow[kBatchChunk];
  std::size_t slows = 0;
  std::uint64_t utf16 = 0;  // bit i: key i is UTF-16
};
void guava_java_lane_hashes_avx512(const JavaStrings& keys, std::size_t from, std::size_t n,
                                   std::uint64_t* out, GuavaJavaLists& lists);
// jvm_avx512.cc (call only when internal::cpu_has_avx512()): utf8_well_formed (java_text.h) of a
// key under 32 bytes.
bool utf8_well_formed_short_avx512(std::string_view key) noexcept;
// jvm_avx512.cc (call only when internal::cpu_has_avx512()): guava_consistent_hash_batch.
void guava_consistent_hash_avx512(const std::uint64_t* inputs, std::size_t n,
                                  std::uint32_t buckets, std::uint32_t* out) noexcept;
#endif

}  // namespace chash::presets
