// SPDX-License-Identifier: Apache-2.0
// xxHash key hashes: the reference implementation (Debian's libxxhash-dev) compiled in
// (XXH_INLINE_ALL, as chash/internal/xxh3.h does for the lookup path) rather than called in
// libxxhash.so, so the values are exactly the reference's without a PLT call per key. Pinned in
// tests/hash/ to xxHash's published sanity values and to the `xxhsum` CLI's output.
#define XXH_INLINE_ALL
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
