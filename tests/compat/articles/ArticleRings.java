// SPDX-License-Identifier: Apache-2.0
// Writes one tests/compat/vectors/<preset>__<case>.tsv: the node the Java code of one of the
// articles chash grew from (README of the articles: 000, 002, 004) picks for each key. The
// articles' code is re-implemented here with the same behaviour (not copied):
//
//   guava-iphash       article 000 "IP Hash 与一致性哈希", IPHashLoadBalancer:
//                        h = Hashing.murmur3_128().hashString(key, UTF_8).asInt();
//                        servers.get(Math.abs(h % servers.size()))
//   guava-treemap      article 000, ConsistentHashLoadBalancer: TreeMap<Long, String>; per server
//                        in order put(hash(server)), then put(hash(server + "#VN" + i)) for
//                        i < vnodes (default 150); hash = murmur3_128 hashString UTF_8 asLong;
//                        select = first entry of tailMap(hash(key)), else firstKey()
//   java-hashcode-ring article 002 "一致性hash算法和hash算法的区别": TreeMap<Integer, String>; per
//                        server put(Math.abs(server.hashCode())), then
//                        put(Math.abs((server + "#" + i).hashCode())) for i < vnodes (default 3;
//                        0 is the article's first variant, servers only); client = first entry
//                        of tailMap(Math.abs(key.hashCode())), else firstKey()
//   murmur64a-treemap  article 004 "一致性哈希算法的原理与应用剖析", ConsistentHash + HashService:
//                        MurmurHash64A (seed 0x1234ABCD, 8-byte little-endian blocks, the tail
//                        zero-padded little-endian) over key.getBytes() (the default charset:
//                        run with -Dfile.encoding=UTF-8); TreeMap<Long, Node> (signed order);
//                        put(hash(node.toString() + i)) for i < replicas (default 500), where
//                        toString() is the node's IP (the node name here); get = the exact
//                        point, else the first entry of tailMap, else firstKey()
//
// Every put is TreeMap.put: when two points share a position the later put owns it, as in the
// articles. The article 002 ring stores a decorated label ("...虚拟节点 i ...: server") as the
// value of a virtual point; the node it names is the server, which is what is written here.
//
//   java -Dfile.encoding=UTF-8 -cp CLASSES:/usr/share/java/guava.jar ArticleRings \
//       OUT PEER KEYS PRESET VNODES NODE...
//
// KEYS is keys.hex. VNODES is "-" for the preset's default (no @option line) or a number
// (written as @option vnodes N). Keys are given to the article code as Java Strings:
// new String(bytes, UTF_8). A key that is not valid UTF-8 has no such String and is skipped (and
// counted in a # line); every valid key is checked to give back its own bytes. After the keys of
// keys.hex come a few keys of the article's own (see extraKeys) and, for the rings, the names of
// some ring points, which hash exactly onto a point (the ">=" of tailMap decides them).
import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.Function;

public class ArticleRings {
  static final HashFunction MURMUR3_128 = Hashing.murmur3_128();

  // ---- article 000 -----------------------------------------------------------------------------
  static int murmur3Int(String s) {
    return MURMUR3_128.hashString(s, StandardCharsets.UTF_8).asInt();
  }

  static long murmur3Long(String s) {
    return MURMUR3_128.hashString(s, StandardCharsets.UTF_8).asLong();
  }

  // ---- article 004: MurmurHash64A as the article's HashService computes it ----------------------
  static long murmur64a(String key) {
    final long m = 0xc6a4a7935bd1e995L;
    final int r = 47;
    final int seed = 0x1234ABCD;
    final ByteBuffer in = ByteBuffer.wrap(key.getBytes()).order(ByteOrder.LITTLE_ENDIAN);
    long h = seed ^ (in.remaining() * m);
    while (in.remaining() >= 8) {
      long k = in.getLong();
      k *= m;
      k ^= k >>> r;
      k *= m;
      h ^= k;
      h *= m;
    }
    if (in.hasRemaining()) {
      final ByteBuffer tail = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      tail.put(in);
      tail.rewind();
      h ^= tail.getLong();
      h *= m;
    }
    h ^= h >>> r;
    h *= m;
    h ^= h >>> r;
    return h;
  }

  // ---- a ring: TreeMap positions -> node, filled in the articles' put order --------------------
  static final class Ring<K extends Comparable<K>> {
    final TreeMap<K, String> points = new TreeMap<>();
    final Function<String, K> hash;
    int puts = 0;
    int sameNode = 0;  // puts onto a position that node already held
    int takenOver = 0;  // puts onto a position another node held: the later node owns it now

    Ring(Function<String, K> hash) {
      this.hash = hash;
    }

    void put(String label, String node) {
      final String before = points.put(hash.apply(label), node);
      ++puts;
      if (before != null) {
        if (before.equals(node)) {
          ++sameNode;
        } else {
          ++takenOver;
        }
      }
    }

    // tailMap(hash) first entry, else the first entry of the ring. (Article 004 first asks
    // containsKey(hash) and answers that point: the same entry tailMap's first would give.)
    String get(String key) {
      final SortedMap<K, String> tail = points.tailMap(hash.apply(key));
      return points.get(tail.isEmpty() ? points.firstKey() : tail.firstKey());
    }

    String describe() {
      return puts + " puts, " + points.size() + " positions; " + (sameNode + takenOver)
          + " puts onto a position already held (" + takenOver + " by another node, which the"
          + " later node now owns)";
    }
  }

  // Keys the articles themselves route (client IPs, the flowchart's IPs), and keys whose
  // String.hashCode() is Integer.MIN_VALUE (Math.abs leaves it negative).
  static List<String> extraKeys(String preset) {
    switch (preset) {
      case "guava-iphash":
      case "guava-treemap":
        return List.of("192.168.1.100", "192.168.1.101");
      case "java-hashcode-ring":
        return List.of("10.78.12.3", "113.25.63.1", "126.12.3.8", "polygenelubricants", "GydZG_");
      default:
        return List.of();
    }
  }

  public static void main(String[] args) throws IOException {
    if (args.length < 6) {
      System.err.println("usage: ArticleRings OUT PEER KEYS PRESET VNODES NODE...");
      System.exit(2);
    }
    final String out = args[0];
    final String peer = args[1];
    final String keysPath = args[2];
    final String preset = args[3];
    final Integer vnodesOption = args[4].equals("-") ? null : Integer.valueOf(args[4]);
    final List<String> nodes = List.of(args).subList(5, args.length);
    if (new HashSet<>(nodes).size() != nodes.size()) throw new IllegalArgumentException("dup node");
    if (!Charset.defaultCharset().equals(StandardCharsets.UTF_8)) {
      // Article 004 hashes key.getBytes(): the vectors are for a UTF-8 default charset.
      throw new IllegalStateException(
          "run with -Dfile.encoding=UTF-8, not " + Charset.defaultCharset());
    }

    // Keys: keys.hex, each as the String its UTF-8 bytes decode to (strictly).
    final CharsetDecoder strict = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    final LinkedHashSet<String> keys = new LinkedHashSet<>();
    int fromFile = 0;
    int skipped = 0;
    for (String line : Files.readAllLines(Path.of(keysPath))) {
      line = line.strip();
      if (line.isEmpty() || line.startsWith("#")) continue;
      final byte[] raw = HexFormat.of().parseHex(line);
      final String s;
      try {
        s = strict.decode(ByteBuffer.wrap(raw)).toString();
      } catch (CharacterCodingException e) {
        ++skipped;
        continue;
      }
      if (!Arrays.equals(s.getBytes(StandardCharsets.UTF_8), raw)) {
        throw new IllegalStateException("key does not round-trip: " + line);
      }
      keys.add(s);
      ++fromFile;
    }
    final List<String> extra = new ArrayList<>(extraKeys(preset));

    // The preset.
    final Function<String, String> route;
    String ringInfo = null;
    String extraNote;
    switch (preset) {
      case "guava-iphash": {
        if (vnodesOption != null) throw new IllegalArgumentException("guava-iphash has no vnodes");
        route = key -> nodes.get(Math.abs(murmur3Int(key) % nodes.size()));
        extraNote = "the article's 192.168.1.100 and 192.168.1.101";
        break;
      }
      case "guava-treemap":
      case "java-hashcode-ring": {
        final boolean guava = preset.equals("guava-treemap");
        final int vnodes = vnodesOption != null ? vnodesOption : (guava ? 150 : 3);
        final String sep = guava ? "#VN" : "#";
        final Ring<?> ring = guava ? new Ring<Long>(ArticleRings::murmur3Long)
                                   : new Ring<Integer>(s -> Math.abs(s.hashCode()));
        for (String server : nodes) {
          ring.put(server, server);
          for (int i = 0; i < vnodes; ++i) ring.put(server + sep + i, server);
        }
        for (String server : nodes) {
          extra.add(server);
          if (vnodes > 0) {
            extra.add(server + sep + 0);
            extra.add(server + sep + (vnodes - 1));
          }
        }
        route = ring::get;
        ringInfo = ring.describe();
        extraNote = (guava ? "the article's 192.168.1.100 and 192.168.1.101"
                           : "the article's clients 10.78.12.3, 113.25.63.1, 126.12.3.8, then"
                               + " polygenelubricants and GydZG_ (hashCode Integer.MIN_VALUE)")
            + ", then per node <node>" + (vnodes > 0 ? ", <node>" + sep + "0, <node>" + sep
                + (vnodes - 1) : "") + " (point names)";
        break;
      }
      case "murmur64a-treemap": {
        final int replicas = vnodesOption != null ? vnodesOption : 500;
        final Ring<Long> ring = new Ring<>(ArticleRings::murmur64a);
        for (String node : nodes) {
          for (int i = 0; i < replicas; ++i) ring.put(node + i, node);
        }
        for (String node : nodes) {
          if (replicas > 0) {
            extra.add(node + 0);
            extra.add(node + 1);
            extra.add(node + (replicas - 1));
          }
        }
        route = ring::get;
        ringInfo = ring.describe();
        extraNote = "per node <node>0, <node>1, <node>" + (replicas - 1) + " (point names)";
        break;
      }
      default:
        throw new IllegalArgumentException("unknown preset " + preset);
    }
    int added = 0;
    for (String k : extra) {
      if (keys.add(k)) ++added;
    }

    final Set<String> chosen = new HashSet<>();
    try (PrintStream ps = new PrintStream(Files.newOutputStream(Path.of(out)), false, "UTF-8")) {
      ps.println("# peer: " + peer);
      ps.println("# command: tests/compat/articles/generate.sh");
      ps.println("# keys: the " + fromFile + " keys of keys.hex that are UTF-8 (" + skipped
          + " skipped: Java takes Strings), then " + added + " more: " + extraNote);
      if (ringInfo != null) ps.println("# ring: " + ringInfo);
      ps.println("@preset " + preset);
      if (vnodesOption != null) ps.println("@option vnodes " + vnodesOption);
      for (String n : nodes) ps.println("@node " + n + " 1");
      for (String k : keys) {
        final String node = route.apply(k);
        chosen.add(node);
        ps.println(HexFormat.of().formatHex(k.getBytes(StandardCharsets.UTF_8)) + "\t"
            + node);
      }
    }
    if (nodes.size() > 1 && chosen.size() < 2) {
      throw new IllegalStateException(out + ": every key went to one node");
    }
  }
}
