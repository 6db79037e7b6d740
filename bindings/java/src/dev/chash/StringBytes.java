// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A String's text as the JDK holds it, read without a copy: since JDK 9 (compact strings, JEP 254)
 * a String is a {@code byte[] value} and a {@code byte coder}, the bytes Latin-1 when the coder is
 * 0 and UTF-16 in the platform's byte order when it is 1. A batch of String keys packs these
 * bytes as a batch of byte[] keys packs its arrays (one copy each), and C routes an ASCII key
 * where it lies; through {@link String#getChars} every Latin-1 key was widened to chars in Java
 * and narrowed back in C (the bindings bench's Guava batch of String keys at 10 nodes, with the
 * C kernels of the same round: 23.5 -> 19 ns per key, docs/BENCHMARKS.md).
 *
 * <p>The fields are read through {@code sun.misc.Unsafe} (module jdk.unsupported, which the JDK
 * keeps open for such libraries; Guava itself reads arrays with it), reached by reflection so that
 * nothing is compiled against it. Reading is all this class does: the bytes are never written.
 * {@link #AVAILABLE} is false, and batches pack chars as before, when the JDK has no such fields,
 * when Unsafe is not there, when a check at start-up on known strings does not read back what the
 * JDK's own encoder gives, or when the system property {@code chash.stringBytes} is
 * {@code false}.
 */
final class StringBytes {
  static final byte LATIN1 = 0;
  static final byte UTF16 = 1;

  /** True when {@link #value} and {@link #coder} read Strings as described above. */
  static final boolean AVAILABLE;

  private static final MethodHandle VALUE; // (String) -> Object, the value array
  private static final MethodHandle CODER; // (String) -> byte

  static {
    MethodHandle value = null;
    MethodHandle coder = null;
    if (!"false".equals(System.getProperty("chash.stringBytes"))) {
      try {
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        Object unsafe = theUnsafe.get(null);
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        MethodHandle offset = lookup.findVirtual(unsafeClass, "objectFieldOffset",
            MethodType.methodType(long.class, Field.class));
        Field valueField = String.class.getDeclaredField("value");
        Field coderField = String.class.getDeclaredField("coder");
        if (valueField.getType() == byte[].class && coderField.getType() == byte.class) {
          long valueOffset = (long) offset.invoke(unsafe, valueField);
          long coderOffset = (long) offset.invoke(unsafe, coderField);
          MethodHandle getObject = lookup.findVirtual(unsafeClass, "getObject",
              MethodType.methodType(Object.class, Object.class, long.class)).bindTo(unsafe);
          MethodHandle getByte = lookup.findVirtual(unsafeClass, "getByte",
              MethodType.methodType(byte.class, Object.class, long.class)).bindTo(unsafe);
          value = MethodHandles.insertArguments(getObject, 1, valueOffset)
              .asType(MethodType.methodType(Object.class, String.class));
          coder = MethodHandles.insertArguments(getByte, 1, coderOffset)
              .asType(MethodType.methodType(byte.class, String.class));
        }
      } catch (Throwable e) { // no Unsafe, no such field, no access: pack chars instead
        value = null;
        coder = null;
      }
    }
    VALUE = value;
    CODER = coder;
    AVAILABLE = value != null && readsBack();
  }

  private StringBytes() {}

  /** The String's bytes (never to be written). Only when {@link #AVAILABLE}. */
  static byte[] value(String s) {
    try {
      return (byte[]) (Object) VALUE.invokeExact(s);
    } catch (Throwable e) {
      throw new AssertionError(e); // Unsafe.getObject throws nothing
    }
  }

  /** The String's coder: {@link #LATIN1} or {@link #UTF16}. Only when {@link #AVAILABLE}. */
  static byte coder(String s) {
    try {
      return (byte) CODER.invokeExact(s);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  // Strings of each kind read back as the JDK encodes them: Latin-1 bytes as ISO-8859-1, UTF-16
  // units in the platform's order. Anything else (another layout) turns the fast path off.
  private static boolean readsBack() {
    try {
      String[] samples = {"", "user:1", "caf\u00e9\u00ff", "\u043a\u043b\u044e\u0447-\u20ac",
          "a\uD83D\uDE00", new String(new char[] {'x', 'y'})};
      boolean bigEndian = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.BIG_ENDIAN;
      for (String s : samples) {
        byte c = coder(s);
        byte[] v = value(s);
        byte[] want;
        if (c == LATIN1) {
          want = s.getBytes(StandardCharsets.ISO_8859_1);
          if (!new String(want, StandardCharsets.ISO_8859_1).equals(s)) {
            return false; // a char outside Latin-1 in a Latin-1 string
          }
        } else if (c == UTF16) {
          want = s.getBytes(bigEndian ? StandardCharsets.UTF_16BE : StandardCharsets.UTF_16LE);
        } else {
          return false;
        }
        if (!Arrays.equals(v, want)) {
          return false;
        }
      }
      return true;
    } catch (Throwable e) {
      return false;
    }
  }
}
