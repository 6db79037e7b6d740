// SPDX-License-Identifier: Apache-2.0
// xxHash key hashes: thin wrappers over the system libxxhash (XXH3 64-bit and XXH64), so the
// values are exactly the reference implementation's. Pinned in tests/hash/ to xxHash's published
// sanity values and to the `xxhsum` CLI's output.
#include <xxhash.h>

#include "chash/hash.h"

namespace chash::hash {

std::uint64_t xxh3_64(std::string_view data, std::uint64_t seed) noexcept {
  // XXH3_64bits_withSeed(seed 0) == XXH3_64bits: one entry point for both.
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

std::uint64_t xxh64(std::string_view data, std::uint64_t seed) noexcept {
  return XXH64(data.data(), data.size(), seed);
}

}  // namespace chash::hash
