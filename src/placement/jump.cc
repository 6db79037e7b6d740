// SPDX-License-Identifier: Apache-2.0
#include "chash/jump.h"

namespace chash {

void internal::JumpBuckets::bucket_batch(std::span<const std::uint64_t> hashes,
                                         std::uint32_t buckets, std::span<NodeId> out) noexcept {
  // jump_consistent_hash, kLanes keys at a time: each lane runs the paper's loop and freezes
  // once its j passes the bucket count; the group ends when every lane has. Lanes that are done
  // keep computing on their frozen inputs (cheaper than a branch per lane), never stored.
  constexpr std::size_t kLanes = 8;
  const auto n = static_cast<std::int64_t>(buckets);
  const double two31 = static_cast<double>(std::int64_t{1} << 31);
  std::size_t i = 0;
  for (; i + kLanes <= hashes.size(); i += kLanes) {
    std::uint64_t key[kLanes];
    std::int64_t b[kLanes];
    std::int64_t j[kLanes];
    for (std::size_t l = 0; l < kLanes; ++l) {
      key[l] = hashes[i + l];
      b[l] = -1;
      j[l] = 0;
    }
    for (bool any = true; any;) {
      any = false;
      for (std::size_t l = 0; l < kLanes; ++l) {
        const bool live = j[l] < n;
        // A finished lane steps from b = 0 so the conversion below stays in range.
        const std::int64_t from = live ? j[l] : 0;
        const std::uint64_t k = key[l] * 2862933555777941757ULL + 1;
        const auto next = static_cast<std::int64_t>(static_cast<double>(from + 1) *
                                                    (two31 / static_cast<double>((k >> 33) + 1)));
        b[l] = live ? from : b[l];
        key[l] = live ? k : key[l];
        j[l] = live ? next : j[l];
        any = any || (live && next < n);
      }
    }
    for (std::size_t l = 0; l < kLanes; ++l) out[i + l] = static_cast<NodeId>(b[l]);
  }
  for (; i < hashes.size(); ++i) out[i] = jump_consistent_hash(hashes[i], buckets);
}

}  // namespace chash
