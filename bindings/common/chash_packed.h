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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CHASH_PACKED_AVX512 1
#include <immintrin.h>

/* Spare bytes chash_utf16_to_utf8 may write past a key's UTF-8 (whole-register stores). */
enum { CHASH_UTF8_SLACK = 64 };

/* With AVX-512 VBMI2: up to 16 UTF-16 units that hold no surrogate, encoded in one go (after
 * simdutf's scheme: each unit's 1-3 bytes built in a 32-bit lane, the bytes kept compressed
 * together by vpcompressb). The scalar loop below spent ~25 ns on each of the bindings bench's
 * Cyrillic keys. Returns the bytes written to out (which has CHASH_UTF8_SLACK bytes to spare
 * past them), or -1 when a unit is a surrogate (the caller encodes those keys unit by unit). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi2,bmi2"))) static inline long
chash_utf16_block_avx512(const uint16_t* s, size_t n, char* out) {
  const __mmask16 valid = (__mmask16)_bzhi_u32(0xFFFFu, (unsigned)n);
  const __m512i c = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, s));
  const __m512i top5 = _mm512_and_si512(c, _mm512_set1_epi32(0xF800));
  if (_mm512_cmpeq_epi32_mask(top5, _mm512_set1_epi32(0xD800)) != 0) return -1;
  const __mmask16 two = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80));
  if (two == 0) { /* ASCII: the units narrowed to bytes */
    _mm_storeu_si128((__m128i*)(void*)out, _mm512_cvtepi32_epi8(c));
    return (long)n;
  }
  const __mmask16 three = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x800));
  const __m512i low6 = _mm512_set1_epi32(0x3F);
  const __m512i cont = _mm512_set1_epi32(0x80);
  /* byte 0: the unit, or the 2- or 3-byte lead; byte 1: the next 6 bits; byte 2: the last 6 */
  __m512i lead = _mm512_mask_or_epi32(c, two, _mm512_srli_epi32(c, 6), _mm512_set1_epi32(0xC0));
  lead = _mm512_mask_or_epi32(lead, three, _mm512_srli_epi32(c, 12), _mm512_set1_epi32(0xE0));
  const __m512i mid_bits = _mm512_mask_srli_epi32(c, three, c, 6);
  const __m512i mid = _mm512_or_si512(_mm512_and_si512(mid_bits, low6), cont);
  const __m512i last = _mm512_or_si512(_mm512_and_si512(c, low6), cont);
  /* In a 2-byte unit `mid` is the last byte and `last` is not written; in a 3-byte unit both. */
  const __m512i word = _mm512_or_si512(
      lead, _mm512_or_si512(_mm512_slli_epi32(mid, 8), _mm512_slli_epi32(last, 16)));
  /* Bytes kept: byte 0 of each valid unit, byte 1 of 2- and 3-byte units, byte 2 of 3-byte. */
  __m512i keep = _mm512_maskz_mov_epi32(valid, _mm512_set1_epi32(0x80));
  keep = _mm512_mask_or_epi32(keep, two, keep, _mm512_set1_epi32(0x8000));
  keep = _mm512_mask_or_epi32(keep, three, keep, _mm512_set1_epi32(0x800000));
  const __mmask64 bytes = _mm512_movepi8_mask(keep);
  _mm512_storeu_si512(out, _mm512_maskz_compress_epi8(bytes, word));
  return (long)__builtin_popcountll(bytes);
}

static inline int chash_packed_has_avx512(void) {
  static int has = -1; /* decided once per process; a race only decides it twice, alike */
  if (has < 0) {
    __builtin_cpu_init();
    has = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
          __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2");
  }
  return has;
}
#else
enum { CHASH_UTF8_SLACK = 0 };
#endif

/* String.getBytes(UTF_8) of n UTF-16 units (OpenJDK 17, StringCoding.encodeUTF8_UTF16): a
 * surrogate pair becomes 4 bytes, an unpaired surrogate the replacement byte '?', and the unit
 * after an unpaired high surrogate is encoded on its own. out must hold 3 * n + CHASH_UTF8_SLACK
 * bytes; returns the bytes written. */
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
  /* All ASCII so far and fewer than eight units left: the last eight, overlapping. (Not when the
   * loop stopped at a non-ASCII unit: the last eight being ASCII then says nothing of that one,
   * and the key was cut short; a test from C found it, tests/c_api/packed_test.c.) */
  if (i < n && i + 8 > n && n >= 8 && o == i) {
    const __m128i v = _mm_loadu_si128((const __m128i*)(const void*)(s + n - 8));
    const __m128i high = _mm_cmpeq_epi16(_mm_and_si128(v, non_ascii), _mm_setzero_si128());
    if (_mm_movemask_epi8(high) == 0xFFFF) {
      _mm_storel_epi64((__m128i*)(void*)(out + n - 8), _mm_packus_epi16(v, v));
      return n;
    }
  }
#endif
#if defined(CHASH_PACKED_AVX512)
  if (chash_packed_has_avx512()) { /* not ASCII: 16 units at a time until a surrogate */
    for (; i < n; i += 16) {
      const long w = chash_utf16_block_avx512(s + i, n - i < 16 ? n - i : 16, out + o);
      if (w < 0) break; /* a surrogate: this block and the rest unit by unit */
      o += (size_t)w;
    }
    if (i >= n) return o;
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

/* String.getBytes(UTF_8) of n Latin-1 bytes (a compact Java String's bytes): each byte of 0x80
 * or more becomes two. out must hold 2 * n bytes; returns the bytes written. */
static inline size_t chash_latin1_to_utf8(const uint8_t* s, size_t n, char* out) {
  size_t o = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned c = s[i];
    if (c < 0x80) {
      out[o++] = (char)c;
    } else {
      out[o++] = (char)(0xC0 | (c >> 6));
      out[o++] = (char)(0x80 | (c & 0x3F));
    }
  }
  return o;
}

/* True when the n bytes at s are all ASCII: 8 bytes at a time and the last 8 overlapping. */
static inline int chash_bytes_ascii(const uint8_t* s, size_t n) {
  uint64_t high = 0, w;
  if (n < 8) {
    for (size_t i = 0; i < n; ++i) high |= s[i];
  } else {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      memcpy(&w, s + i, 8);
      high |= w;
    }
    memcpy(&w, s + n - 8, 8);
    high |= w;
  }
  return (high & UINT64_C(0x8080808080808080)) == 0;
}

/* Java Strings' text, as JDK 9+ holds it (compact strings): Latin-1 bytes (coder 0) or UTF-16
 * units in the platform's byte order (coder 1). */
enum { CHASH_JAVA_LATIN1 = 0, CHASH_JAVA_UTF16 = 1 };

/* As chash_route_packed, for Java String keys, each routed as its String.getBytes(UTF_8):
 * key i is data[from .. offsets[i + 1]) in coders[i]'s form, where from is offsets[i], rounded up
 * to even for a UTF-16 key (KeyPack.java aligns them so). With coders NULL every key is UTF-16
 * and the offsets count units (a char[] of String.getChars). An ASCII Latin-1 key, the common one,
 * is routed where it lies; the others are encoded a chunk at a time into a stack buffer, and a
 * key too long for it into memory of its own (CHASH_ERR_NO_MEMORY if there is none). */
static inline int chash_route_packed_java(const chash_router* router, const char* data,
                                          size_t data_len, const uint8_t* coders,
                                          const int32_t* offsets, size_t count, uint32_t* out) {
  char utf8[CHASH_PACKED_UTF8_BYTES];
  const char* keys[CHASH_PACKED_CHUNK];
  size_t lens[CHASH_PACKED_CHUNK];
  if (router == NULL || (count > 0 && (offsets == NULL || out == NULL))) {
    return CHASH_ERR_INVALID_ARGUMENT;
  }
  const size_t scale = coders == NULL ? 2 : 1; /* bytes per offset step */
  const size_t limit = data_len / scale;        /* the largest offset */
  size_t i = 0;
  while (i < count) {
    size_t base = i, n = 0, used = 0;
    const char* big_key = NULL; /* the bounds of a key that fits no chunk */
    size_t big_len = 0;
    int big_coder = 0;
    for (; i < count && n < CHASH_PACKED_CHUNK; ++i, ++n) {
      const int coder = coders == NULL ? (int)CHASH_JAVA_UTF16 : (int)coders[i];
      const int32_t start = offsets[i], to = offsets[i + 1];
      if (start < 0 || to < start || (size_t)to > limit) {
        return CHASH_ERR_INVALID_ARGUMENT;
      }
      size_t from = (size_t)start * scale;
      const size_t end = (size_t)to * scale;
      if (coder == CHASH_JAVA_UTF16) from += from & 1; /* aligned for uint16_t */
      if (from > end || (coder == CHASH_JAVA_UTF16 && ((end - from) & 1) != 0) ||
          (coder != CHASH_JAVA_UTF16 && coder != CHASH_JAVA_LATIN1)) {
        return CHASH_ERR_INVALID_ARGUMENT;
      }
      const uint8_t* text = (const uint8_t*)data + from;
      const size_t len = end - from;
      if (coder == CHASH_JAVA_LATIN1 && chash_bytes_ascii(text, len)) {
        keys[n] = (const char*)text; /* its UTF-8 already */
        lens[n] = len;
        continue;
      }
      const size_t need = (coder == CHASH_JAVA_UTF16 ? 3 * (len / 2) : 2 * len) + CHASH_UTF8_SLACK;
      if (need > CHASH_PACKED_UTF8_BYTES - used) {
        if (n == 0) { /* longer than the whole buffer: alone, below */
          big_key = (const char*)text;
          big_len = len;
          big_coder = coder;
        }
        break; /* routed after this chunk */
      }
      keys[n] = utf8 + used;
      lens[n] = coder == CHASH_JAVA_UTF16
                    ? chash_utf16_to_utf8((const uint16_t*)(const void*)text, len / 2, utf8 + used)
                    : chash_latin1_to_utf8(text, len, utf8 + used);
      used += lens[n];
    }
    if (n > 0) {
      const int rc = chash_route_batch(router, keys, lens, n, out + base, NULL);
      if (rc != CHASH_OK) return rc;
    } else if (big_key != NULL) {
      char* big = (char*)malloc(3 * big_len + CHASH_UTF8_SLACK);
      if (big == NULL) return CHASH_ERR_NO_MEMORY;
      const size_t m =
          big_coder == CHASH_JAVA_UTF16
              ? chash_utf16_to_utf8((const uint16_t*)(const void*)big_key, big_len / 2, big)
              : chash_latin1_to_utf8((const uint8_t*)big_key, big_len, big);
      out[i] = chash_route(router, big, m);
      free(big);
      ++i;
    }
  }
  return CHASH_OK;
}

#endif /* CHASH_BINDINGS_PACKED_H_ */
