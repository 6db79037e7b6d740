// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.hash.Hashing;
import dev.chash.compat.GuavaConsistentHash;
import dev.chash.compat.SpyKetamaLocator;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaNodeLocator;
import net.spy.memcached.MemcachedNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The drop-ins against the real libraries from Debian, key for key on 100,000 keys, and against
 * `chash route` with the same preset: Guava 31.1's consistentHash (libguava-java) and
 * spymemcached 2.12's KetamaNodeLocator (libspymemcached-java).
 */
class CompatTest {
  static final int KEYS = 100_000;

  @ParameterizedTest
  @ValueSource(ints = {1, 10, 100, 1000})
  void guavaConsistentHashKeyForKey(int buckets) throws Exception {
    String[] keys = Keys.make(KEYS);
    int[] peer = new int[KEYS];
    for (int i = 0; i < KEYS; i++) {
      peer[i] = Hashing.consistentHash(
          Hashing.murmur3_128().hashString(keys[i], StandardCharsets.UTF_8), buckets);
    }
    try (GuavaConsistentHash g = new GuavaConsistentHash(buckets)) {
      for (int i = 0; i < KEYS; i++) {
        assertEquals(peer[i], g.bucket(keys[i]), "key " + keys[i]);
      }
      assertArrayEquals(peer, g.buckets(keys), "batch");
      byte[] raw = keys[7].getBytes(StandardCharsets.UTF_8);
      assertEquals(Hashing.consistentHash(Hashing.murmur3_128().hashBytes(raw), buckets),
          g.bucket(raw));
      // Keys as bytes in one batch. UTF-8 ones: Guava's hashBytes. Random ones (mostly not
      // UTF-8): Guava's answer for the String Java decodes from them, which is what the preset
      // models; hashBytes of such bytes is another answer (checked: they differ).
      byte[][] bytes = new byte[KEYS][];
      int[] peerBytes = new int[KEYS];
      java.util.Random random = new java.util.Random(buckets);
      int differ = 0;
      for (int i = 0; i < KEYS; i++) {
        if (i % 2 == 0) {
          bytes[i] = keys[i].getBytes(StandardCharsets.UTF_8);
          peerBytes[i] =
              Hashing.consistentHash(Hashing.murmur3_128().hashBytes(bytes[i]), buckets);
          continue;
        }
        bytes[i] = new byte[i % 40];
        random.nextBytes(bytes[i]);
        String decoded = new String(bytes[i], StandardCharsets.UTF_8);
        peerBytes[i] = Hashing.consistentHash(
            Hashing.murmur3_128().hashString(decoded, StandardCharsets.UTF_8), buckets);
        if (peerBytes[i]
            != Hashing.consistentHash(Hashing.murmur3_128().hashBytes(bytes[i]), buckets)) {
          differ++;
        }
      }
      assertArrayEquals(peerBytes, g.buckets(bytes), "byte[][] batch");
      if (buckets > 1) {
        assertTrue(differ > 0, "malformed UTF-8 hashed as raw bytes would not be told apart");
      }
    }
    List<String> names = new ArrayList<>();
    for (int b = 0; b < buckets; b++) {
      names.add(Integer.toString(b));
    }
    List<String> cli = Keys.cli(List.of("--preset", "guava", "--nodes", String.join(",", names)),
        keys);
    assertEquals(KEYS, cli.size());
    for (int i = 0; i < KEYS; i++) {
      assertEquals(Integer.toString(peer[i]), cli.get(i), "chash route, key " + keys[i]);
    }
  }

  static List<InetSocketAddress> servers(int n) {
    List<InetSocketAddress> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      // Mostly the default port, some others: the port is part of every point's name.
      int port = i % 3 == 2 ? 11212 : 11211;
      out.add(new InetSocketAddress("10.0." + (i / 250) + "." + (i % 250 + 1), port));
    }
    return out;
  }

  // 61 servers: where libketama's float arithmetic gives 39 digests a server, spymemcached 40.
  @ParameterizedTest
  @ValueSource(ints = {1, 10, 61, 100, 1000})
  void spymemcachedKetamaKeyForKey(int n) throws Exception {
    String[] keys = Keys.make(KEYS);
    List<InetSocketAddress> addrs = servers(n);
    List<MemcachedNode> nodes = new ArrayList<>();
    for (InetSocketAddress a : addrs) {
      nodes.add(Keys.spyNode(a));
    }
    KetamaNodeLocator peer = new KetamaNodeLocator(nodes, DefaultHashAlgorithm.KETAMA_HASH);
    int[] expect = new int[KEYS];
    for (int i = 0; i < KEYS; i++) {
      expect[i] = addrs.indexOf((InetSocketAddress) peer.getPrimary(keys[i]).getSocketAddress());
    }
    List<String> names = new ArrayList<>();
    try (SpyKetamaLocator locator = new SpyKetamaLocator(addrs)) {
      for (int i = 0; i < KEYS; i++) {
        assertEquals(expect[i], locator.getPrimaryIndex(keys[i]), "key " + keys[i]);
      }
      assertEquals(addrs.get(expect[3]), locator.getPrimary(keys[3]));
      assertArrayEquals(expect, locator.getPrimaryIndexes(keys), "batch");
    }
    for (InetSocketAddress a : addrs) {
      names.add(SpyKetamaLocator.nodeKey(a));
    }
    List<String> cli = Keys.cli(
        List.of("--preset", "spymemcached", "--nodes", String.join(",", names)), keys);
    for (int i = 0; i < KEYS; i++) {
      assertEquals(names.get(expect[i]), cli.get(i), "chash route, key " + keys[i]);
    }
  }

  @Test
  void spymemcachedWithHostNamesKeyForKey() throws Exception {
    // A resolved address prints as "name/1.2.3.4:port": the drop-in names its points the same.
    List<InetSocketAddress> addrs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      addrs.add(new InetSocketAddress(java.net.InetAddress.getByAddress("cache-" + i + ".example",
          new byte[] {10, 9, 0, (byte) (i + 1)}), 11211));
    }
    assertEquals("cache-0.example/10.9.0.1:11211", SpyKetamaLocator.nodeKey(addrs.get(0)));
    List<MemcachedNode> nodes = new ArrayList<>();
    for (InetSocketAddress a : addrs) {
      nodes.add(Keys.spyNode(a));
    }
    KetamaNodeLocator peer = new KetamaNodeLocator(nodes, DefaultHashAlgorithm.KETAMA_HASH);
    String[] keys = Keys.make(20_000);
    try (SpyKetamaLocator locator = new SpyKetamaLocator(addrs)) {
      for (String k : keys) {
        assertEquals(peer.getPrimary(k).getSocketAddress(), locator.getPrimary(k), k);
      }
    }
  }
}
