/* SPDX-License-Identifier: Apache-2.0 */
/* One batch call for the bindings (Java's JNI, Go's cgo, Node's N-API): keys packed end to end in
 * one byte buffer with int32 offsets, routed by chash_route_batch in chunks whose pointer arrays
 * live on the C stack.
 *
 * Why packed: each language hands C one buffer it can pass without copying (a Java byte[] pinned
 * once, a Go []byte, a Node Buffer) instead of one object per key, which costs a JNI or N-API call
 * per key and, in Go, is not allowed (C memory may not hold Go pointers). Header-only, so the
 * bindings need no library beyond libchash_c. */
#ifndef CHASH_BINDINGS_PACKED_H_
#define CHASH_BINDINGS_PACKED_H_

#include <stddef.h>
#include <stdint.h>

#include "chash/chash_c.h"

enum { CHASH_PACKED_CHUNK = 256 };

/* out[i] = chash_route(router, packed + offsets[i], offsets[i + 1] - offsets[i]) for i < count
 * (CHASH_NO_NODE for a key that has no owner). offsets has count + 1 entries, non-decreasing,
 * within packed_len: otherwise nothing past the bad entry is routed and
 * CHASH_ERR_INVALID_ARGUMENT is returned, so a caller's bug never reads outside the buffer. */
static inline int chash_route_packed(const chash_router* router, const char* packed,
                                     size_t packed_len, const int32_t* offsets, size_t count,
                                     uint32_t* out) {
  const char* keys[CHASH_PACKED_CHUNK];
  size_t lens[CHASH_PACKED_CHUNK];
  if (router == NULL || (count > 0 && (offsets == NULL || out == NULL))) {
    return CHASH_ERR_INVALID_ARGUMENT;
  }
  for (size_t base = 0; base < count; base += CHASH_PACKED_CHUNK) {
    const size_t chunk = CHASH_PACKED_CHUNK;
    size_t n = count - base < chunk ? count - base : chunk;
    for (size_t i = 0; i < n; ++i) {
      int32_t from = offsets[base + i], to = offsets[base + i + 1];
      if (from < 0 || to < from || (size_t)to > packed_len) return CHASH_ERR_INVALID_ARGUMENT;
      keys[i] = packed + from;
      lens[i] = (size_t)(to - from);
    }
    int rc = chash_route_batch(router, keys, lens, n, out + base, NULL);
    if (rc != CHASH_OK) return rc;
  }
  return CHASH_OK;
}

/* Java's String keys go to the library as the JDK holds them: chash_route_java_strings
 * (chash/chash_c.h), where the guava preset hashes them in place. */

#endif /* CHASH_BINDINGS_PACKED_H_ */
