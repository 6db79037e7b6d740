/* SPDX-License-Identifier: Apache-2.0 */
/* chash_route_java_strings (C ABI 1.1), from C and under ASan+UBSan with the rest of
 * chash_c_tests: Java String keys packed as KeyPack.java packs them (Latin-1 bytes or UTF-16
 * units, a UTF-16 key aligned to an even offset; or every key as chars) route as their
 * String.getBytes(UTF_8), encoded here by a plain reference encoder, on the guava preset (its own
 * path, the keys hashed in place) and on ketama (every other router's path); bad offsets and
 * coders are refused, with a message naming the key, without a read outside the buffer. The
 * library's encoder alone: tests/presets/java_strings_test.cc. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash/chash_c.h"
#include "java_strings_test.h"

static int g_failed;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: java strings: %s\n", __FILE__, __LINE__, #cond);       \
      ++g_failed;                                                              \
    }                                                                          \
  } while (0)

/* String.getBytes(UTF_8) of UTF-16 units, one unit at a time: the reference. */
static size_t reference_utf8(const uint16_t* s, size_t n, unsigned char* out) {
  size_t o = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = s[i];
    if (c < 0x80) {
      out[o++] = (unsigned char)c;
    } else if (c < 0x800) {
      out[o++] = (unsigned char)(0xC0 | (c >> 6));
      out[o++] = (unsigned char)(0x80 | (c & 0x3F));
    } else if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && s[i + 1] >= 0xDC00 &&
               s[i + 1] <= 0xDFFF) {
      const uint32_t cp = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00u);
      out[o++] = (unsigned char)(0xF0 | (cp >> 18));
      out[o++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
      out[o++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
      out[o++] = (unsigned char)(0x80 | (cp & 0x3F));
      ++i;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      out[o++] = '?';
    } else {
      out[o++] = (unsigned char)(0xE0 | (c >> 12));
      out[o++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
      out[o++] = (unsigned char)(0x80 | (c & 0x3F));
    }
  }
  return o;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
  rng_state = rng_state * 1103515245u + 12345u;
  return rng_state >> 8;
}

enum { kKeys = 700, kMaxUnits = 9000 };

/* One random key of `len` units of a kind: 0 ASCII, 1 Latin-1, 2 BMP, 3 with surrogates. */
static void make_key(uint16_t* s, size_t len, unsigned kind) {
  for (size_t j = 0; j < len; ++j) {
    const uint32_t r = rnd();
    switch (kind) {
      case 0: s[j] = (uint16_t)(r % 0x80); break;
      case 1: s[j] = (uint16_t)(r % 0x100); break;
      case 2: s[j] = (uint16_t)(r % 3 == 0 ? 0x400 + r % 0x100 : r % 0x3000); break;
      default: s[j] = (uint16_t)(r % 3 == 0 ? 0xD800 + r % 0x800 : r % 0x10000); break;
    }
  }
}

static int fits_latin1(const uint16_t* s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (s[i] > 0xFF) return 0;
  }
  return 1;
}

static void test_java_strings_route_as_their_utf8(const chash_router* r) {
  static uint16_t units[kKeys][kMaxUnits];
  static size_t lens[kKeys];
  static char packed[kKeys * (2 * kMaxUnits + 1)];
  static uint16_t chars[kKeys * kMaxUnits];
  static uint8_t coders[kKeys];
  static int32_t offsets[kKeys + 1], char_offsets[kKeys + 1];
  static uint32_t out[kKeys], out_chars[kKeys];
  static unsigned char utf8[4 * kMaxUnits];
  /* Short keys of every kind and length, and long ones at the 16 KiB stack buffer's edges. */
  static const size_t kLong[] = {2000, 5440, 5441, 8160, 8161, 9000};
  size_t pos = 0, cpos = 0;
  offsets[0] = char_offsets[0] = 0;
  for (size_t i = 0; i < kKeys; ++i) {
    const unsigned kind = (unsigned)(i % 4);
    lens[i] = i < 24 ? kLong[i % 6] : rnd() % 40;
    make_key(units[i], lens[i], kind);
    if (fits_latin1(units[i], lens[i])) {
      coders[i] = CHASH_JAVA_LATIN1;
      for (size_t j = 0; j < lens[i]; ++j) packed[pos++] = (char)units[i][j];
    } else {
      coders[i] = CHASH_JAVA_UTF16;
      pos += pos & 1;
      memcpy(packed + pos, units[i], 2 * lens[i]);
      pos += 2 * lens[i];
    }
    offsets[i + 1] = (int32_t)pos;
    memcpy(chars + cpos, units[i], 2 * lens[i]);
    cpos += lens[i];
    char_offsets[i + 1] = (int32_t)cpos;
  }
  EXPECT(chash_route_java_strings(r, packed, pos, coders, offsets, kKeys, out, NULL) == CHASH_OK);
  EXPECT(chash_route_java_strings(r, (const char*)chars, 2 * cpos, NULL, char_offsets, kKeys,
                                  out_chars, NULL) == CHASH_OK);
  for (size_t i = 0; i < kKeys; ++i) {
    const size_t n = reference_utf8(units[i], lens[i], utf8);
    const uint32_t want = chash_route(r, (const char*)utf8, n);
    EXPECT(out[i] == want);
    EXPECT(out_chars[i] == want);
  }
}

/* A refused batch: CHASH_ERR_INVALID_ARGUMENT and a message that names the key and says why. */
static void expect_refused(const chash_router* r, const char* data, const uint8_t* coders,
                           const int32_t* offsets, size_t count, const char* says) {
  uint32_t out[4];
  chash_error* err = NULL;
  EXPECT(chash_route_java_strings(r, data, 8, coders, offsets, count, out, &err) ==
         CHASH_ERR_INVALID_ARGUMENT);
  EXPECT(err != NULL && strstr(chash_error_message(err), says) != NULL);
  if (err != NULL && strstr(chash_error_message(err), says) == NULL) {
    fprintf(stderr, "  message: %s (wanted: %s)\n", chash_error_message(err), says);
  }
  chash_error_free(err);
}

static void test_bad_batches_are_refused(const chash_router* r) {
  const char data[8] = "abcdefg";
  uint8_t coders[2] = {CHASH_JAVA_LATIN1, CHASH_JAVA_LATIN1};
  uint32_t out[2];
  const int32_t past_end[3] = {0, 4, 9};
  const int32_t backwards[3] = {0, 5, 3};
  const int32_t negative[3] = {-1, 2, 3};
  expect_refused(r, data, coders, past_end, 2, "key 1 (offsets 4..9): past the end");
  expect_refused(r, data, coders, backwards, 2, "key 1 (offsets 5..3): offsets must be");
  expect_refused(r, data, coders, negative, 2, "key 0 (offsets -1..2)");
  const int32_t odd_utf16[3] = {0, 2, 5}; /* key 1: bytes 2..5, three bytes of UTF-16 */
  coders[1] = CHASH_JAVA_UTF16;
  expect_refused(r, data, coders, odd_utf16, 2, "key 1 (offsets 2..5): UTF-16 text of an odd");
  coders[1] = 7; /* no such coder */
  const int32_t fine[3] = {0, 2, 4};
  expect_refused(r, data, coders, fine, 2, "key 1 (offsets 2..4): coder 7 is neither");
  EXPECT(chash_route_java_strings(r, data, 8, coders, fine, 0, NULL, NULL) == CHASH_OK);
  EXPECT(chash_route_java_strings(NULL, data, 8, coders, fine, 2, out, NULL) ==
         CHASH_ERR_INVALID_ARGUMENT);
  EXPECT(chash_route_java_strings(r, data, 8, coders, NULL, 2, out, NULL) ==
         CHASH_ERR_INVALID_ARGUMENT);
  EXPECT(chash_route_java_strings(r, NULL, 8, coders, fine, 2, out, NULL) ==
         CHASH_ERR_INVALID_ARGUMENT);
  const int32_t chars_past_end[2] = {0, 5}; /* 5 units of an 8-byte char buffer */
  expect_refused(r, data, NULL, chars_past_end, 1, "key 0 (offsets 0..5): past the end");
  /* UTF-16 units are read as uint16_t: data must be 2-byte aligned. */
  static const uint16_t aligned[4] = {'a', 'b', 'c', 'd'};
  chash_error* err = NULL;
  EXPECT(chash_route_java_strings(r, (const char*)aligned + 1, 6, coders, fine, 2, out, &err) ==
         CHASH_ERR_INVALID_ARGUMENT);
  EXPECT(err != NULL && strstr(chash_error_message(err), "aligned to 2 bytes") != NULL);
  chash_error_free(err);
  /* Keys before the bad one's chunk are routed; the good keys here route as chash_route. */
  coders[1] = CHASH_JAVA_LATIN1;
  EXPECT(chash_route_java_strings(r, data, 8, coders, fine, 2, out, NULL) == CHASH_OK);
  EXPECT(out[0] == chash_route(r, "ab", 2) && out[1] == chash_route(r, "cd", 2));
}

int java_strings_tests(void) {
  const char* names[] = {"a", "b", "c", "d", "e", "f", "g"};
  chash_spec spec = {0};
  chash_nodes nodes = {0};
  nodes.names = names;
  nodes.count = 7;
  const char* presets[] = {"guava", "ketama"};
  for (size_t p = 0; p < 2; ++p) {
    chash_router* r = NULL;
    spec.preset = presets[p];
    EXPECT(chash_router_new(&spec, &nodes, &r, NULL) == CHASH_OK);
    if (r == NULL) continue;
    test_java_strings_route_as_their_utf8(r);
    test_bad_batches_are_refused(r);
    chash_router_free(r);
  }
  return g_failed;
}
