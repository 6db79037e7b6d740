// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** dev.chash.Router: routing as `chash route` does, batches, replicas, changes, errors. */
class RouterTest {
  static final List<String> NODES =
      List.of("10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211", "10.0.0.4:11211");

  @Test
  void routesAsTheCliOnEveryKind() throws Exception {
    String[] keys = Keys.make(20_000);
    String nodes = String.join(",", NODES);
    try (Router ketama = Router.preset("ketama", NODES);
        Router maglev = Router.builder().algorithm("maglev").nodes(NODES).build();
        Router ring = Router.builder().ring("points={name}#VN{i}; vnodes=150; hash=guava-long")
            .nodes(NODES).build()) {
      assertArrayEquals(Keys.cli(List.of("--preset", "ketama", "--nodes", nodes), keys)
          .toArray(new String[0]), ketama.routeAll(keys));
      assertArrayEquals(Keys.cli(List.of("--algo", "maglev", "--nodes", nodes), keys)
          .toArray(new String[0]), maglev.routeAll(keys));
      String[] viaCli = Keys.cli(List.of("--ring", "points={name}#VN{i}; vnodes=150; "
          + "hash=guava-long", "--nodes", nodes), keys).toArray(new String[0]);
      for (int i = 0; i < keys.length; i++) {
        assertEquals(viaCli[i], ring.route(keys[i]), keys[i]);
        assertEquals(viaCli[i], ring.route(keys[i].getBytes(StandardCharsets.UTF_8)));
      }
    }
  }

  @Test
  void batchEqualsSingleCallsAcrossChunksAndEmptyKeys() {
    String[] keys = Keys.make(1000);
    keys[5] = "";
    keys[700] = "";
    try (Router r = Router.builder().algorithm("ring").hash("md5").nodes(NODES).build()) {
      int[] batch = r.routeAllIndexes(keys);
      for (int i = 0; i < keys.length; i++) {
        assertEquals(r.routeIndex(keys[i]), batch[i], keys[i]);
        assertEquals(NODES.get(batch[i]), r.route(keys[i]));
      }
      assertEquals(0, r.routeAll(new String[0]).length);
      assertThrows(NullPointerException.class, () -> r.routeAll(new String[] {"a", null}));
    }
  }

  @Test
  void byteArrayBatchEqualsSingleCallsOnBinaryKeys() {
    java.util.Random rnd = new java.util.Random(7);
    byte[][] keys = new byte[600][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = new byte[i % 40]; // key 0, 40, 80 ... empty
      rnd.nextBytes(keys[i]);
    }
    String[] text = Keys.make(300);
    byte[][] encoded = new byte[text.length][];
    for (int i = 0; i < text.length; i++) {
      encoded[i] = text[i].getBytes(StandardCharsets.UTF_8);
    }
    try (Router r = Router.preset("ketama", "10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211")) {
      int[] batch = r.routeAllIndexes(keys);
      String[] names = r.routeAll(keys);
      for (int i = 0; i < keys.length; i++) {
        assertEquals(r.routeIndex(keys[i]), batch[i], "key " + i);
        assertEquals(r.nodes().get(batch[i]), names[i]);
      }
      assertArrayEquals(r.routeAllIndexes(text), r.routeAllIndexes(encoded),
          "a String key routes as its UTF-8 bytes");
      assertEquals(0, r.routeAllIndexes(new byte[0][]).length);
      assertThrows(NullPointerException.class, () -> r.routeAll(new byte[][] {{1}, null}));
    }
  }

  // String batches go to the library as the JDK holds each String (Latin-1 bytes or UTF-16 units,
  // StringBytes) or, without that, as chars, and are encoded there
  // (chash_route_java_strings): each key must route as String.getBytes(UTF_8) does,
  // unpaired surrogates ('?') included, Latin-1 and UTF-16 keys side by side (a UTF-16 key after
  // an odd number of bytes is aligned), for keys that fill the 16 KiB stack buffer and keys longer
  // than all of it, of each kind. CI runs this class with and without StringBytes.
  @Test
  void stringBatchRoutesEachKeyAsItsUtf8Bytes() {
    java.util.Random rnd = new java.util.Random(11);
    java.util.List<String> list = new java.util.ArrayList<>();
    String[] odd = {"\uD83D", "a\uD83D", "\uD83Db", "\uDE00", "x\uDE00\uD83D", "\uD83D\uD83D\uDE00",
        "\uDE00\uD83D", "\u0000", "caf\u00e9", "\u00ff\u0100\u07ff\u0800\uffff", "", "\uD7FF\uE000",
        // eight ASCII chars, one that is not, eight more: the C encoder once cut these short
        "abcdefgh\u00e9ijklmnopq", "12345678\u043a12345678", "12345678\u20ac\u20ac12345678"};
    list.addAll(java.util.Arrays.asList(odd));
    // Every length up to 40, ASCII, Latin-1 and UTF-16, one after another so that each starts at
    // every offset modulo 8 (the C side reads the short ones with vector loads).
    for (int len = 0; len <= 40; len++) {
      list.add("k".repeat(len));
      list.add("\u00e9".repeat(len));
      list.add("\u043a".repeat(len));
    }
    for (int i = 0; i < 400; i++) {
      char[] c = new char[rnd.nextInt(24)];
      for (int j = 0; j < c.length; j++) {
        c[j] = (char) (rnd.nextInt(4) == 0 ? 0xD800 + rnd.nextInt(0x800) : rnd.nextInt(0x10000));
      }
      list.add(new String(c));
    }
    // ASCII, Latin-1 (2 bytes in UTF-8 each non-ASCII char) and UTF-16 (3 bytes) long keys, at
    // and past the sizes where their UTF-8 fills the buffer (3 * units + 64 spare bytes).
    String[] alphabets = {"abcdefghij", "abcéÿà", "abк€"};
    for (int len : new int[] {2000, 2000, 5440, 5441, 8160, 8161, 9000}) {
      for (String alphabet : alphabets) {
        StringBuilder b = new StringBuilder();
        for (int j = 0; j < len; j++) {
          b.append(alphabet.charAt(rnd.nextInt(alphabet.length())));
        }
        list.add(b.toString());
        list.add("x" + b); // one more byte before the next key's
        list.addAll(java.util.Arrays.asList(Keys.make(50)));
      }
    }
    String[] keys = list.toArray(new String[0]);
    try (Router r = Router.preset("ketama", "10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211",
        "10.0.0.4:11211")) {
      int[] batch = r.routeAllIndexes(keys);
      for (int i = 0; i < keys.length; i++) {
        assertEquals(r.routeIndex(keys[i].getBytes(StandardCharsets.UTF_8)), batch[i], "key " + i);
        assertEquals(r.routeIndex(keys[i]), batch[i], "key " + i);
      }
    }
  }

  // On JDK 17 a batch of String keys reads each String's own bytes (StringBytes); the property
  // turns that off, and CI runs the String tests both ways.
  @Test
  void stringBatchesReadTheStringsBytesUnlessTurnedOff() {
    assertEquals(!"false".equals(System.getProperty("chash.stringBytes")), StringBytes.AVAILABLE);
  }

  @Test
  void keysThatCannotBeRoutedAreNull() {
    try (Router r = Router.preset("nginx-ip-hash", "a", "b")) {
      assertNull(r.route("not an address"));
      assertEquals(-1, r.routeIndex("not an address"));
      assertArrayEquals(new int[] {-1, r.routeIndex("10.1.2.3")},
          r.routeAllIndexes(new String[] {"nope", "10.1.2.3"}));
      assertTrue(r.route("10.1.2.3") != null);
    }
  }

  @Test
  void replicasAreDistinctAndStartWithTheOwner() {
    try (Router r = Router.preset("ketama", NODES)) {
      for (String key : Keys.make(200)) {
        List<String> rep = r.replicas(key, 3);
        assertEquals(3, rep.size());
        assertEquals(r.route(key), rep.get(0));
        assertEquals(3, new HashSet<>(rep).size());
        assertEquals(4, r.replicas(key, 10).size());
      }
      assertEquals(0, r.replicas("k", 0).size());
      assertThrows(IllegalArgumentException.class, () -> r.replicas("k", -1));
    }
  }

  @Test
  void membershipChangesReturnNewRoutersAndLeaveTheOldOne() {
    String[] keys = Keys.make(5000);
    try (Router r = Router.preset("ketama", NODES)) {
      String[] before = r.routeAll(keys);
      try (Router added = r.withNode("10.0.0.5:11211", 2);
          Router fresh = Router.builder().preset("ketama").nodes(NODES)
              .node("10.0.0.5:11211", 2).build();
          Router removed = r.withoutNode("10.0.0.2:11211");
          Router ring = Router.builder().algorithm("ring").nodes(NODES).build();
          Router drained = ring.withWeight("10.0.0.3:11211", 0)) {
        assertArrayEquals(fresh.routeAll(keys), added.routeAll(keys));
        assertEquals(5, added.nodes().size());
        assertEquals(2, added.weight(4));
        assertEquals(List.of("10.0.0.1:11211", "10.0.0.3:11211", "10.0.0.4:11211"),
            removed.nodes());
        int moved = 0;
        for (int i = 0; i < keys.length; i++) {
          // Consistent hashing: only the removed node's keys move; no key goes to the drained one.
          if (!before[i].equals("10.0.0.2:11211")) {
            assertEquals(before[i], removed.route(keys[i]));
          } else {
            moved++;
          }
          assertNotEquals("10.0.0.3:11211", drained.route(keys[i]));
        }
        assertTrue(moved > 0);
        assertEquals(0, drained.weight(2));
        // ketama cannot drain (libmemcached reads weight 0 as 1): refused, with the reason.
        assertTrue(assertThrows(ChashException.class, () -> r.withWeight(NODES.get(2), 0))
            .getMessage().contains("weight 0"));
      }
      assertArrayEquals(before, r.routeAll(keys), "the old router routes as before");
    }
  }

  @Test
  void badSpecsAndNodesThrowWithLibchashsMessage() {
    ChashException e = assertThrows(ChashException.class, () -> Router.preset("ketamaa", NODES));
    assertEquals("CHASH_ERR_PARSE", e.status());
    assertEquals(7, e.code());
    assertTrue(e.getMessage().contains("ketamaa"), e.getMessage());
    assertEquals("CHASH_ERR_EMPTY_NODE_SET",
        assertThrows(ChashException.class, () -> Router.preset("ketama")).status());
    assertEquals("CHASH_ERR_DUPLICATE_NODE",
        assertThrows(ChashException.class, () -> Router.preset("ketama", "a", "a")).status());
    assertThrows(ChashException.class, () -> Router.builder().build());
    assertThrows(ChashException.class,
        () -> Router.builder().algorithm("ring").option("vnodes", "many").node("a").build());
    assertThrows(ChashException.class,
        () -> Router.builder().algorithm("ring").option("no-such-flag", "1").node("a").build());
    assertThrows(ChashException.class,
        () -> Router.builder().ring("points={name; hash=nope").node("a").build());
    assertThrows(IllegalArgumentException.class, () -> Router.builder().algorithm("ring")
        .node("a", -1).build());
    assertThrows(NullPointerException.class, () -> Router.builder().node(null));
    try (Router r = Router.preset("ketama", NODES)) {
      assertEquals("CHASH_ERR_UNKNOWN_NODE",
          assertThrows(ChashException.class, () -> r.withoutNode("nope")).status());
      assertEquals("CHASH_ERR_DUPLICATE_NODE",
          assertThrows(ChashException.class, () -> r.withNode(NODES.get(0))).status());
      assertThrows(NullPointerException.class, () -> r.route((String) null));
      assertThrows(IndexOutOfBoundsException.class, () -> r.weight(4));
    }
  }

  @Test
  void aClosedRouterThrowsInsteadOfCrashing() {
    Router r = Router.preset("ketama", NODES);
    r.close();
    r.close();
    assertThrows(IllegalStateException.class, () -> r.route("k"));
    assertThrows(IllegalStateException.class, () -> r.routeAll(new String[] {"k"}));
    assertThrows(IllegalStateException.class, () -> r.withNode("x"));
  }

  @Test
  void nodeNamesAreBytesAndRoundTrip() {
    List<String> names = List.of("ü-node", "節点", "with space", "a\0b");
    try (Router r = Router.builder().algorithm("rendezvous").nodes(names).build()) {
      assertEquals(names, r.nodes());
      assertTrue(names.contains(r.route("k")));
    }
    assertEquals("CHASH_ERR_INVALID_ARGUMENT", assertThrows(ChashException.class,
        () -> Router.builder().algorithm("ring").node("a").node("").build()).status());
  }

  @Test
  void threadsShareOneRouter() throws Exception {
    String[] keys = Keys.make(20_000);
    try (Router r = Router.preset("ketama", NODES)) {
      int[] expect = r.routeAllIndexes(keys);
      ExecutorService pool = Executors.newFixedThreadPool(4);
      List<Future<int[]>> results = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        results.add(pool.submit(() -> {
          int[] got = new int[keys.length];
          for (int i = 0; i < keys.length; i++) {
            got[i] = r.routeIndex(keys[i]);
          }
          return got;
        }));
      }
      for (Future<int[]> f : results) {
        assertArrayEquals(expect, f.get());
      }
      pool.shutdown();
    }
  }

  @Test
  void describesItselfAndTheLibrary() {
    assertTrue(Router.version().matches("\\d+\\.\\d+\\.\\d+"), Router.version());
    assertTrue(Router.presets().containsAll(List.of("ketama", "guava", "libketama")));
    try (Router r = Router.preset("ketama", NODES)) {
      assertTrue(r.describe().contains("ketama"), r.describe());
      assertTrue(r.toString().contains("4 nodes"));
    }
  }
}
