// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import java.util.Arrays;

/**
 * A batch's keys, a chunk at a time, as one array and their offsets: what one JNI call hands to C
 * (two arrays pinned once) instead of one array object per key.
 *
 * <p>String keys are packed as the JDK holds them (StringBytes: Latin-1 bytes or UTF-16 units,
 * copied as they are) and encoded to UTF-8 by the library only where they are not ASCII
 * (chash_route_java_strings, include/chash/chash_c.h); where the JDK's Strings cannot be read so,
 * as their UTF-16
 * chars (String.getChars, one vectorised copy per key), encoded in C. Encoding here (getBytes,
 * or a charAt loop) works char by char. The keys go a chunk at a time through buffers reused
 * from chunk to chunk, which stay in the cache between Java's write and C's read, instead of one
 * array of every key that is allocated, zeroed, written and read back from memory. Packing 100k
 * of the bindings bench's String keys took 13.8 ns per key char by char into one byte[], 7.3 as
 * chars in two passes, 4.4 as chars in one pass, and 4.4 as their own bytes, which C then reads
 * without encoding the ASCII ones (the whole batch at 10 nodes: 23.5 -> 19 ns per key).
 */
final class KeyPack {
  /**
   * Keys per chunk: ~55 KB of the bindings bench's String keys, in the L2 cache between Java's
   * write and C's read. Measured on that bench's Guava String rows (10 / 100 / 1000 nodes, two
   * runs each, least ns per key of the rounds): 1024 keys 18-19 / 19-20 / 22, 512 16-17 / 19 /
   * 22-23, 2048 16-18 / 18-21 / 20-23, 4096 17 / 18-19 / 21; 1024, the earlier choice, was the
   * slowest of them, for no reason found.
   */
  static final int CHUNK = 4096;

  byte[] bytes = new byte[0]; // raw keys of the chunk, or String keys' own bytes (StringBytes)
  final byte[] coders = new byte[CHUNK]; // String keys' coders, with their bytes
  char[] chars = new char[0]; // String keys' UTF-16 units, where StringBytes is not available
  final int[] offsets = new int[CHUNK + 1]; // key i is [offsets[i] .. offsets[i + 1])

  /** Packs keys[from .. from + count) (count <= CHUNK) into {@link #chars}. */
  void chars(String[] keys, int from, int count) {
    // One pass, the buffer grown when a key does not fit: a first pass for the total length read
    // every String twice.
    char[] into = chars;
    int pos = 0;
    for (int i = 0; i < count; i++) {
      String k = keys[from + i];
      if (k == null) {
        throw new NullPointerException("keys[" + (from + i) + "]");
      }
      int n = k.length();
      if (n > into.length - pos) {
        into = chars = grow(into, pos, n);
      }
      k.getChars(0, n, into, pos);
      pos += n;
      offsets[i + 1] = pos;
    }
  }

  /**
   * Packs String keys[from .. from + count) (count <= CHUNK) into {@link #bytes} as the JDK holds
   * them (StringBytes, only when AVAILABLE), their coders into {@link #coders}. A UTF-16 key starts
   * at an even offset (a byte of padding before it when needed), where C reads it as uint16_t;
   * key i is then [offsets[i], rounded up to even, .. offsets[i + 1]).
   */
  void strings(String[] keys, int from, int count) {
    byte[] into = bytes;
    int pos = 0;
    for (int i = 0; i < count; i++) {
      String k = keys[from + i];
      if (k == null) {
        throw new NullPointerException("keys[" + (from + i) + "]");
      }
      byte[] v = StringBytes.value(k);
      byte coder = StringBytes.coder(k);
      int n = v.length;
      if (n + 1 > into.length - pos) {
        into = bytes = grow(into, pos, n + 1);
      }
      pos += coder & pos; // UTF16 is 1: an odd position moves on by one
      System.arraycopy(v, 0, into, pos, n);
      coders[i] = coder;
      pos += n;
      offsets[i + 1] = pos;
    }
  }

  /** Packs raw keys[from .. from + count) (count <= CHUNK), bytes as they are, into {@link #bytes}. */
  void bytes(byte[][] keys, int from, int count) {
    byte[] into = bytes;
    int pos = 0;
    for (int i = 0; i < count; i++) {
      byte[] k = keys[from + i];
      if (k == null) {
        throw new NullPointerException("keys[" + (from + i) + "]");
      }
      int n = k.length;
      if (n > into.length - pos) {
        into = bytes = grow(into, pos, n);
      }
      System.arraycopy(k, 0, into, pos, n);
      pos += n;
      offsets[i + 1] = pos;
    }
  }

  // The larger of what is needed (`used` elements plus `more`) and double the length, within one
  // array's limit; a chunk whose keys exceed it is refused.
  private static int capacity(int length, int used, int more) {
    long need = (long) used + more;
    if (need > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "keys: " + need + " elements in one chunk, over one array's limit");
    }
    return (int) Math.max(need, Math.min(2L * length, Integer.MAX_VALUE - 8));
  }

  private static char[] grow(char[] a, int used, int more) {
    return Arrays.copyOf(a, capacity(a.length, used, more));
  }

  private static byte[] grow(byte[] a, int used, int more) {
    return Arrays.copyOf(a, capacity(a.length, used, more));
  }
}
