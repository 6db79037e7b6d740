// SPDX-License-Identifier: Apache-2.0
// chash — jump consistent hash (Lamping & Veach 2014, "A Fast, Minimal Memory, Consistent Hash
// Algorithm", arXiv:1406.2294).
//
// No table at all: O(ln N) time, O(1) memory. Growing N -> N+1 moves exactly the keys that land
// on the new last bucket (1/(N+1)), and only to it. Jump numbers buckets, so only the LAST node
// can truly be removed; a drained (weight 0) node elsewhere keeps its bucket and its keys are
// rehashed to the other nodes (only its keys move) — use memento for frequent removals in the
// middle. Unweighted: weights must be 0 or 1.
// Next choices: jump over a rehash of the key (attempt 1, 2, ...), then a linear scan (the table
// is shared with jumpback: chash/internal/numbered_table.h).
#pragma once

#include <cstdint>
#include <span>

#include "chash/internal/numbered_table.h"
#include "chash/node.h"

namespace chash {

// The paper's algorithm, verbatim in behaviour: the 64-bit LCG 2862933555777941757 * k + 1 and the
// jump (b + 1) * 2^31 / ((k >> 33) + 1) in double precision.
constexpr std::uint32_t jump_consistent_hash(std::uint64_t key,
                                             std::uint32_t num_buckets) noexcept {
  std::int64_t b = -1;
  std::int64_t j = 0;
  while (j < static_cast<std::int64_t>(num_buckets)) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<std::int64_t>(
        static_cast<double>(b + 1) *
        (static_cast<double>(std::int64_t{1} << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<std::uint32_t>(b);
}

namespace internal {
struct JumpBuckets {
  static constexpr const char* kName = "jump";
  static constexpr std::uint32_t bucket(std::uint64_t hash, std::uint32_t n) noexcept {
    return jump_consistent_hash(hash, n);
  }
  // bucket() for every hash (out.size() >= hashes.size()). One key's loop is a chain of dependent
  // float conversions and multiplies; here 8 keys run it in lockstep, so the chains overlap.
  static void bucket_batch(std::span<const std::uint64_t> hashes, std::uint32_t n,
                           std::span<NodeId> out) noexcept;
};
}  // namespace internal

using JumpTable = internal::NumberedBucketTable<internal::JumpBuckets>;
extern template class internal::NumberedBucketTable<internal::JumpBuckets>;

}  // namespace chash
