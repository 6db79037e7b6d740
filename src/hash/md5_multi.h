// SPDX-License-Identifier: Apache-2.0
// Multi-buffer MD5 (internal, not installed): the digests of many independent messages at once,
// bit-identical to OpenSSL's MD5() on each.
//
// Why hand-written: every ketama-family preset hashes each key with MD5, and one short key's MD5
// is a 64-step dependency chain that leaves the core mostly idle (~124 ns for 16 bytes through
// OpenSSL here). OpenSSL has no API for hashing independent short messages side by side (its
// multi-buffer code is for SHA in TLS record encryption, not exposed as a digest API), so the
// lanes are ours (md5_lanes.h): 8 messages per SSE2 step, 16 per AVX2 step, chosen at run time
// by CPUID (__builtin_cpu_supports); OpenSSL one message at a time elsewhere. Pinned to OpenSSL
// in tests/hash/md5_multi_test.cc and fuzz/md5_multi_fuzz.cc.
//
// Example:
//   std::string_view keys[3] = {"a", "b", "c"};
//   chash::hash::Md5Digest d[3];
//   chash::hash::internal::md5_many(keys, d);            // d[i] == chash::hash::md5(keys[i])
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "chash/hash.h"

namespace chash::hash::internal {

enum class Md5Isa : std::uint8_t {
  kScalar,  // OpenSSL's MD5(), one message at a time
  kSse2,    // 2 x 4 lanes (every x86-64 CPU)
  kAvx2,    // 2 x 8 lanes
};

// Whether this CPU (and this build's architecture) runs `isa`.
bool md5_isa_supported(Md5Isa isa) noexcept;
// The fastest supported: AVX2, else SSE2 on x86-64, else scalar. Decided once per process.
Md5Isa md5_best_isa() noexcept;
std::string_view md5_isa_name(Md5Isa isa) noexcept;

// out[i] = md5(msgs[i]) for every i < msgs.size(); out.size() >= msgs.size(). Any lengths
// (messages of different lengths share the lanes), any count; reads no byte outside the
// messages. noexcept, no allocation. Gains over one at a time from about 4 messages per call.
void md5_many(std::span<const std::string_view> msgs, std::span<Md5Digest> out) noexcept;
// The same with a chosen implementation, which must be supported (tests, benchmarks).
void md5_many(Md5Isa isa, std::span<const std::string_view> msgs,
              std::span<Md5Digest> out) noexcept;

}  // namespace chash::hash::internal
