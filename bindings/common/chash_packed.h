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
#include <stdlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/* ---- Java Strings as UTF-16 ------------------------------------------------------------------
 * A JVM copies a String's chars into a char[] far faster than it encodes them (String.getChars
 * of a Latin-1 string is one vectorised widening copy; getBytes or a charAt loop is per char), so
 * Java packs its String keys as UTF-16 and they are encoded here, a chunk at a time into a stack
 * buffer. Measured on the bindings bench's keys: Java's packing 13.8 -> 6.3 ns per key. */

enum { CHASH_PACKED_UTF8_BYTES = 16384 };

/* String.getBytes(UTF_8) of n UTF-16 units (OpenJDK 17, StringCoding.encodeUTF8_UTF16): a
 * surrogate pair becomes 4 bytes, an unpaired surrogate the replacement byte '?', and the unit
 * after an unpaired high surrogate is encoded on its own. out must hold 3 * n bytes; returns the
 * bytes written. */
static inline size_t chash_utf16_to_utf8(const uint16_t* s, size_t n, char* out) {
  size_t o = 0;
  size_t i = 0;
#if defined(__SSE2__)
  /* ASCII, the common key, eight units at a time (and the last eight, overlapping): the
   * char-by-char loop below alone cost ~4 ns of a 10-char key (Java's Guava batch of String
   * keys, 10 nodes: 25.0 -> 21.4 ns per key). */
  const __m128i non_ascii = _mm_set1_epi16((short)0xFF80);
  for (; i + 8 <= n; i += 8, o += 8) {
    const __m128i v = _mm_loadu_si128((const __m128i*)(const void*)(s + i));
    const __m128i high = _mm_cmpeq_epi16(_mm_and_si128(v, non_ascii), _mm_setzero_si128());
    if (_mm_movemask_epi8(high) != 0xFFFF) break;
    _mm_storel_epi64((__m128i*)(void*)(out + o), _mm_packus_epi16(v, v));
  }
  if (i < n && n >= 8 && o == i) { /* an ASCII run so far: the last eight units, overlapping */
    const __m128i v = _mm_loadu_si128((const __m128i*)(const void*)(s + n - 8));
    const __m128i high = _mm_cmpeq_epi16(_mm_and_si128(v, non_ascii), _mm_setzero_si128());
    if (_mm_movemask_epi8(high) == 0xFFFF) {
      _mm_storel_epi64((__m128i*)(void*)(out + n - 8), _mm_packus_epi16(v, v));
      return n;
    }
  }
#endif
  for (; i < n; ++i) {
    const unsigned c = s[i];
    if (c < 0x80) {
      out[o++] = (char)c;
    } else if (c < 0x800) {
      out[o++] = (char)(0xC0 | (c >> 6));
      out[o++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0xD800 || c > 0xDFFF) {
      out[o++] = (char)(0xE0 | (c >> 12));
      out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
      out[o++] = (char)(0x80 | (c & 0x3F));
    } else if (c <= 0xDBFF && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] <= 0xDFFF) {
      const unsigned cp = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00u);
      out[o++] = (char)(0xF0 | (cp >> 18));
      out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
      out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
      out[o++] = (char)(0x80 | (cp & 0x3F));
      ++i;
    } else {
      out[o++] = '?';
    }
  }
  return o;
}

/* As chash_route_packed, for keys given as UTF-16 units (Java chars): key i is
 * chars[offsets[i] .. offsets[i + 1]) and is routed as its String.getBytes(UTF_8). A key too long
 * for the stack buffer is encoded into memory of its own (CHASH_ERR_NO_MEMORY if there is none). */
static inline int chash_route_packed_utf16(const chash_router* router, const uint16_t* chars,
                                           size_t chars_len, const int32_t* offsets,
                                           size_t count, uint32_t* out) {
  char utf8[CHASH_PACKED_UTF8_BYTES];
  const char* keys[CHASH_PACKED_CHUNK];
  size_t lens[CHASH_PACKED_CHUNK];
  if (router == NULL || (count > 0 && (offsets == NULL || out == NULL))) {
    return CHASH_ERR_INVALID_ARGUMENT;
  }
  size_t i = 0;
  while (i < count) {
    size_t base = i, n = 0, used = 0;
    for (; i < count && n < CHASH_PACKED_CHUNK; ++i, ++n) {
      const int32_t from = offsets[i], to = offsets[i + 1];
      if (from < 0 || to < from || (size_t)to > chars_len) return CHASH_ERR_INVALID_ARGUMENT;
      const size_t units = (size_t)(to - from);
      if (3 * units > CHASH_PACKED_UTF8_BYTES - used) break; /* routed after this chunk */
      keys[n] = utf8 + used;
      lens[n] = chash_utf16_to_utf8(chars + from, units, utf8 + used);
      used += lens[n];
    }
    if (n > 0) {
      const int rc = chash_route_batch(router, keys, lens, n, out + base, NULL);
      if (rc != CHASH_OK) return rc;
    } else { /* one key longer than the whole buffer: alone, in memory of its own */
      const size_t units = (size_t)(offsets[i + 1] - offsets[i]);
      char* big = (char*)malloc(3 * units);
      if (big == NULL) return CHASH_ERR_NO_MEMORY;
      out[i] = chash_route(router, big, chash_utf16_to_utf8(chars + offsets[i], units, big));
      free(big);
      ++i;
    }
  }
  return CHASH_OK;
}

#endif /* CHASH_BINDINGS_PACKED_H_ */
