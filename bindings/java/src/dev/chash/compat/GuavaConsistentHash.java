// SPDX-License-Identifier: Apache-2.0
package dev.chash.compat;

import dev.chash.Router;
import java.util.ArrayList;
import java.util.List;

/**
 * A drop-in for Guava's {@code Hashing.consistentHash(Hashing.murmur3_128().hashString(key,
 * UTF_8), buckets)}: the same bucket for every key (checked key for key against Guava 31.1 in
 * the tests), computed by libchash's "guava" preset.
 *
 * <pre>{@code
 * // before: int b = Hashing.consistentHash(Hashing.murmur3_128().hashString(key, UTF_8), n);
 * try (GuavaConsistentHash g = new GuavaConsistentHash(n)) {
 *   int b = g.bucket(key);
 *   int[] all = g.buckets(keys);   // many keys in one native call
 * }
 * }</pre>
 *
 * Immutable and thread-safe, as {@link Router} is.
 */
public final class GuavaConsistentHash implements AutoCloseable {
  private final Router router;

  /** Buckets 0 .. buckets-1, as Guava's second argument. */
  public GuavaConsistentHash(int buckets) {
    if (buckets <= 0) {
      // Guava's own check and message (checkArgument in consistentHash).
      throw new IllegalArgumentException("buckets must be positive: " + buckets);
    }
    List<String> names = new ArrayList<>(buckets);
    for (int i = 0; i < buckets; i++) {
      names.add(Integer.toString(i));
    }
    this.router = Router.preset("guava", names);
  }

  /** Guava's bucket for the key's UTF-8 bytes ({@code hashString(key, UTF_8)}). */
  public int bucket(String key) {
    return router.routeIndex(key);
  }

  /**
   * Guava's bucket for a key held as UTF-8 bytes: {@code hashString(new String(key, UTF_8))},
   * which is {@code hashBytes(key)} for well-formed UTF-8 (every key a {@code String} encodes
   * to). Malformed bytes are decoded as Java decodes them (each to U+FFFD) before hashing, as
   * the "guava" preset does for every key; there {@code hashBytes} of the raw bytes differs.
   */
  public int bucket(byte[] key) {
    return router.routeIndex(key);
  }

  /** The buckets of many keys, in one native call. */
  public int[] buckets(String[] keys) {
    return router.routeAllIndexes(keys);
  }

  /** The buckets of many keys held as UTF-8 bytes ({@link #bucket(byte[])}), in one call. */
  public int[] buckets(byte[][] keys) {
    return router.routeAllIndexes(keys);
  }

  /** The number of buckets. */
  public int size() {
    return router.nodes().size();
  }

  @Override
  public void close() {
    router.close();
  }
}
