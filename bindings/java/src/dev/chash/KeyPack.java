// SPDX-License-Identifier: Apache-2.0
package dev.chash;

/**
 * A batch's keys, a chunk at a time, as one array and their offsets: what one JNI call hands to C
 * (two arrays pinned once) instead of one array object per key.
 *
 * <p>String keys are packed as their UTF-16 chars and encoded to UTF-8 in C
 * (bindings/common/chash_packed.h): String.getChars of a Latin-1 string is one vectorised
 * widening copy, where encoding here (getBytes, or a charAt loop) works char by char. And the
 * keys go a chunk at a time through buffers reused from chunk to chunk, which stay in the cache
 * between Java's write and C's read, instead of one array of every key that is allocated,
 * zeroed, written and read back from memory. Packing 100k of the bindings bench's String keys
 * took 13.8 ns per key char by char into one byte[], 7.3 this way.
 */
final class KeyPack {
  /** Keys per chunk: ~25 KB of chars for keys of a dozen chars, within the L1 cache. */
  static final int CHUNK = 1024;

  byte[] bytes = new byte[0]; // raw keys of the chunk
  char[] chars = new char[0]; // String keys' UTF-16 units
  final int[] offsets = new int[CHUNK + 1]; // key i is [offsets[i] .. offsets[i + 1])

  /** Packs keys[from .. from + count) (count <= CHUNK) into {@link #chars}. */
  void chars(String[] keys, int from, int count) {
    long total = 0;
    for (int i = from; i < from + count; i++) {
      if (keys[i] == null) {
        throw new NullPointerException("keys[" + i + "]");
      }
      total += keys[i].length();
    }
    if (total > chars.length) {
      chars = new char[(int) Math.max(total, Math.min(2L * chars.length, Integer.MAX_VALUE - 8))];
    }
    int pos = 0;
    for (int i = 0; i < count; i++) {
      String k = keys[from + i];
      int n = k.length();
      k.getChars(0, n, chars, pos);
      pos += n;
      offsets[i + 1] = pos;
    }
  }

  /** Packs raw keys[from .. from + count) (count <= CHUNK), bytes as they are, into {@link #bytes}. */
  void bytes(byte[][] keys, int from, int count) {
    long total = 0;
    for (int i = from; i < from + count; i++) {
      if (keys[i] == null) {
        throw new NullPointerException("keys[" + i + "]");
      }
      total += keys[i].length;
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("keys: " + total + " bytes in one chunk, over one array's limit");
    }
    if (total > bytes.length) {
      bytes = new byte[(int) Math.max(total, Math.min(2L * bytes.length, Integer.MAX_VALUE - 8))];
    }
    int pos = 0;
    for (int i = 0; i < count; i++) {
      byte[] k = keys[from + i];
      System.arraycopy(k, 0, bytes, pos, k.length);
      pos += k.length;
      offsets[i + 1] = pos;
    }
  }
}
