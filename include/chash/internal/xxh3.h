// SPDX-License-Identifier: Apache-2.0
// chash::internal — xxh3 compiled into the caller (xxHash's header-only mode, XXH_INLINE_ALL, from
// Debian's libxxhash-dev), for the lookup path: KeyPolicy (router.h), route_batch (batch.h) and
// hash_key. Through the shared library a 16-byte key's xxh3 is a PLT call into libxxhash and
// its own dispatch, ~2-3 ns of a ~10 ns lookup; inlined it is a dozen instructions.
//
// The values are the library's (the same reference code; tests/hash/xxhash_test.cc checks both
// against the published sanity values). XXH_INLINE_ALL renames the inlined functions
// (XXH_INLINE_ prefix) so they cannot clash with libxxhash's symbols, and xxhash.h may still be
// included normally afterwards. Not API.
#pragma once

#include <cstdint>
#include <string_view>

#if !defined(XXH_INLINE_ALL)
#define XXH_INLINE_ALL
#define CHASH_XXH_INLINE_ALL_SET
#endif
#include <xxhash.h>
#if defined(CHASH_XXH_INLINE_ALL_SET)
#undef XXH_INLINE_ALL
#undef CHASH_XXH_INLINE_ALL_SET
#endif

namespace chash::internal {

// hash::xxh3_64(data) (seed 0, KeyHash::kXxh3), inlined.
inline std::uint64_t xxh3_64_inline(std::string_view data) noexcept {
  return XXH3_64bits(data.data(), data.size());
}

}  // namespace chash::internal
