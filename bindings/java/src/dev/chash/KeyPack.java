// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Many keys as one byte array and their offsets: what a batch hands to C in one JNI call
 * (two arrays pinned once) instead of one array object per key.
 */
final class KeyPack {
  final byte[] bytes;
  final int[] offsets; // keys.length + 1: key i is bytes[offsets[i] .. offsets[i + 1])

  private KeyPack(byte[] bytes, int[] offsets) {
    this.bytes = bytes;
    this.offsets = offsets;
  }

  static KeyPack of(String[] keys) {
    int[] offsets = new int[keys.length + 1];
    // ASCII keys (the common case) are copied char by char, no temporary array; a key with any
    // other char is encoded by the JDK, so every key has exactly String.getBytes(UTF_8)'s bytes.
    byte[] buf = new byte[capacity(keys)];
    int pos = 0;
    for (int i = 0; i < keys.length; i++) {
      String k = keys[i];
      if (k == null) {
        throw new NullPointerException("keys[" + i + "]");
      }
      int n = k.length();
      buf = ensure(buf, pos + n);
      int j = 0;
      for (; j < n; j++) {
        char c = k.charAt(j);
        if (c >= 0x80) {
          break;
        }
        buf[pos + j] = (byte) c;
      }
      if (j == n) {
        pos += n;
      } else {
        byte[] enc = k.getBytes(StandardCharsets.UTF_8);
        buf = ensure(buf, pos + enc.length);
        System.arraycopy(enc, 0, buf, pos, enc.length);
        pos += enc.length;
      }
      offsets[i + 1] = pos;
    }
    return new KeyPack(buf, offsets);
  }

  /** Raw keys (binary keys, or bytes the caller already encoded): copied as they are. */
  static KeyPack of(byte[][] keys) {
    int[] offsets = new int[keys.length + 1];
    long total = 0;
    for (int i = 0; i < keys.length; i++) {
      if (keys[i] == null) {
        throw new NullPointerException("keys[" + i + "]");
      }
      total += keys[i].length;
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("keys: " + total + " bytes in all, over one array's limit");
    }
    byte[] buf = new byte[(int) total];
    int pos = 0;
    for (int i = 0; i < keys.length; i++) {
      System.arraycopy(keys[i], 0, buf, pos, keys[i].length);
      pos += keys[i].length;
      offsets[i + 1] = pos;
    }
    return new KeyPack(buf, offsets);
  }

  private static byte[] ensure(byte[] buf, int size) {
    return size <= buf.length ? buf : Arrays.copyOf(buf, Math.max(size, buf.length * 2));
  }

  // A first guess at the packed size: one byte per char (exact for ASCII); grown when a key
  // needs more.
  private static int capacity(String[] keys) {
    long total = 0;
    for (String k : keys) {
      total += k == null ? 0 : k.length();
    }
    return (int) Math.min(total, Integer.MAX_VALUE - 8);
  }
}
