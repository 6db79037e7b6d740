// SPDX-License-Identifier: Apache-2.0
// Guava's Hashing.consistentHash (jvm.cc), one input and many, for the guava preset and for
// tests/presets/jvm_test.cc (the lanes against the loop on inputs chosen to hit its edges). Not
// part of the installed API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chash/node.h"

namespace chash::presets {

// Hashing.consistentHash(input, buckets), Guava 31.1; buckets in 1..2^31-1.
std::uint32_t guava_consistent_hash(std::uint64_t input, std::uint32_t buckets) noexcept;

// out[i] = guava_consistent_hash(inputs[i], buckets) for i < n, several inputs in lockstep
// (AVX2 lanes with the unfinished keys packed between rounds where the CPU has AVX2, else 8
// SSE2 lanes, then one at a time).
void guava_consistent_hash_batch(const std::uint64_t* inputs, std::size_t n, std::uint32_t buckets,
                                 NodeId* out) noexcept;

}  // namespace chash::presets
