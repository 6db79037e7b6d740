// SPDX-License-Identifier: Apache-2.0
package dev.chash;

/**
 * Loads libchash_jni.so: from the path in the system property {@code chash.jni.library} when set
 * (the build's tests and benchmarks point it at the build tree), else by name from
 * {@code java.library.path} (an installed copy: -Djava.library.path=/usr/local/lib/jni).
 */
final class NativeLibrary {
  private NativeLibrary() {}

  static void load() {
    String path = System.getProperty("chash.jni.library");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("chash_jni");
    }
  }
}
