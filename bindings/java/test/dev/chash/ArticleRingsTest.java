// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.common.hash.Hashing;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The articles' hand-written Java rings (docs/compat/articles.md) routed through dev.chash.Router
 * with the ring spec `chash presets` prints for them, against the same ring written here as the
 * articles write it: a TreeMap filled with put() and read with tailMap().
 */
class ArticleRingsTest {
  static final List<String> SERVERS =
      List.of("192.168.0.1:8080", "192.168.0.2:8080", "192.168.0.3:8080", "192.168.0.4:8080");

  // server's own point, then server + sep + i for i < vnodes; the key's first point at or after
  // its hash, else the first point.
  static <K extends Comparable<K>> String[] treeMapRing(Function<String, K> hash, String sep,
      int vnodes, String[] keys) {
    TreeMap<K, String> ring = new TreeMap<>();
    for (String s : SERVERS) {
      ring.put(hash.apply(s), s);
      for (int i = 0; i < vnodes; i++) {
        ring.put(hash.apply(s + sep + i), s);
      }
    }
    String[] out = new String[keys.length];
    for (int i = 0; i < keys.length; i++) {
      Map.Entry<K, String> e = ring.ceilingEntry(hash.apply(keys[i]));
      out[i] = (e != null ? e : ring.firstEntry()).getValue();
    }
    return out;
  }

  static void check(String spec, String[] expected, String[] keys) {
    try (Router r = Router.builder().ring(spec).nodes(SERVERS).build()) {
      String[] got = r.routeAll(keys);
      for (int i = 0; i < keys.length; i++) {
        assertEquals(expected[i], got[i], spec + ", key " + keys[i]);
        assertEquals(expected[i], r.route(keys[i]));
      }
    }
  }

  @Test
  void article000GuavaTreeMapRing() {
    String[] keys = Keys.make(100_000);
    check("points={name}#VN{i}; vnodes=150; bare=first; hash=guava-long",
        treeMapRing(s -> Hashing.murmur3_128().hashString(s, StandardCharsets.UTF_8).asLong(),
            "#VN", 150, keys),
        keys);
  }

  @Test
  void article002StringHashCodeRing() {
    String[] keys = Keys.make(100_000);
    check("points={name}#{i}; vnodes=3; bare=first; hash=java-hashcode; abs=yes",
        treeMapRing(s -> Math.abs(s.hashCode()), "#", 3, keys), keys);
  }
}
