// SPDX-License-Identifier: Apache-2.0
// Writes one jedis__<case>.tsv: the shard Jedis' Sharded (redis.clients.jedis.util, Jedis 3.x)
// picks for each key. Compiled by generate.sh against a Jedis source checkout.
//
//   JedisVectors OUT PEER HASH KEYMODE KEYSET NODE WEIGHT [NODE WEIGHT]...
//
// HASH: MURMUR_HASH (Hashing.MURMUR_HASH, Sharded's default) or MD5 (Hashing.MD5).
// KEYMODE: bytes — getShardInfo(byte[]), what BinaryShardedJedis does with the key's bytes (and,
//          for UTF-8 keys, what getShardInfo(String) does: checked here);
//          tag — new Sharded(shards, algo, Sharded.DEFAULT_KEY_TAG_PATTERN) and
//          getShardInfo(String), what ShardedJedis(shards, keyTagPattern) does; the key must be
//          UTF-8 (a Java String cannot carry other bytes).
// KEYSET: a keys.hex path; "PATH+tag-edge" adds short keys mixing braces and line terminators;
//         "PATH+arc:LOW:HIGH" adds 200 keys "arc-<i>" whose HASH lies in (LOW, HIGH];
//         "malformed" is byte strings that are not UTF-8 (seeded).
// NODE: "name=host:port" is a named shard, new JedisShardInfo(host, name, port, timeout, weight);
//       anything else ("host:port", "host") an unnamed one, new JedisShardInfo(host, port,
//       timeout, timeout, weight) (port 6379 when absent). createResource() is overridden so no
//       connection is made: Sharded only needs each shard's name and weight.
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisShardInfo;
import redis.clients.jedis.util.Hashing;
import redis.clients.jedis.util.Sharded;

public class JedisVectors {
  static final HexFormat HEX = HexFormat.of();

  static JedisShardInfo shard(String node, int weight) {
    String name = null;
    String address = node;
    int eq = node.indexOf('=');
    if (eq >= 0) {
      name = node.substring(0, eq);
      address = node.substring(eq + 1);
    }
    String host = address;
    int port = 6379;
    int colon = address.lastIndexOf(':');
    if (colon > 0 && address.substring(colon + 1).matches("[0-9]+")) {
      host = address.substring(0, colon);
      port = Integer.parseInt(address.substring(colon + 1));
    }
    if (name != null) {
      return new JedisShardInfo(host, name, port, 2000, weight) {
        @Override
        public Jedis createResource() {
          return null;
        }
      };
    }
    return new JedisShardInfo(host, port, 2000, 2000, weight) {
      @Override
      public Jedis createResource() {
        return null;
      }
    };
  }

  static boolean isUtf8(byte[] k) {
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(k));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  static final String[] TAG_FRAGMENTS = {"{", "}", "a", "\n", "\r", "\u0085", "\u2028", "\u2029",
      "\u00e9", "{}"};

  static List<byte[]> tagEdgeKeys() {
    List<byte[]> keys = new ArrayList<>();
    for (String a : TAG_FRAGMENTS) {
      for (String b : TAG_FRAGMENTS) {
        for (String c : TAG_FRAGMENTS) {
          keys.add(("k" + a + b + c).getBytes(StandardCharsets.UTF_8));
          keys.add((a + "x" + b + c + "}").getBytes(StandardCharsets.UTF_8));
        }
      }
    }
    return keys;
  }

  static List<byte[]> malformedKeys() {
    List<byte[]> keys = new ArrayList<>();
    Random rnd = new Random(20240602L);
    for (int i = 0; i < 2000; ++i) {
      byte[] k = new byte[1 + rnd.nextInt(40)];
      rnd.nextBytes(k);
      keys.add(k);
    }
    return keys;
  }

  public static void main(String[] args) throws IOException {
    if (args.length < 7 || (args.length - 5) % 2 != 0) {
      System.err.println("usage: JedisVectors OUT PEER HASH KEYMODE KEYSET NODE WEIGHT...");
      System.exit(2);
    }
    final String out = args[0];
    final String peer = args[1];
    final Hashing algo = args[2].equals("MD5") ? Hashing.MD5 : Hashing.MURMUR_HASH;
    if (!args[2].equals("MD5") && !args[2].equals("MURMUR_HASH")) {
      throw new IllegalArgumentException("HASH must be MURMUR_HASH or MD5");
    }
    final boolean tag = args[3].equals("tag");
    final String keyset = args[4];

    List<JedisShardInfo> shards = new ArrayList<>();
    Map<JedisShardInfo, String> names = new IdentityHashMap<>();
    List<String> nodeLines = new ArrayList<>();
    for (int i = 5; i < args.length; i += 2) {
      JedisShardInfo s = shard(args[i], Integer.parseInt(args[i + 1]));
      shards.add(s);
      names.put(s, args[i]);
      nodeLines.add("@node " + args[i] + " " + args[i + 1]);
    }
    Sharded<Jedis, JedisShardInfo> sharded = tag
        ? new Sharded<>(shards, algo, Sharded.DEFAULT_KEY_TAG_PATTERN)
        : new Sharded<>(shards, algo);

    List<byte[]> keys = new ArrayList<>();
    String extra = "";
    if (keyset.equals("malformed")) {
      keys = malformedKeys();
    } else {
      String path = keyset;
      int plus = keyset.indexOf('+');
      if (plus >= 0) {
        path = keyset.substring(0, plus);
        extra = keyset.substring(plus + 1);
      }
      for (String line : Files.readAllLines(Path.of(path))) {
        line = line.strip();
        if (!line.isEmpty() && !line.startsWith("#")) keys.add(HEX.parseHex(line));
      }
      if (extra.equals("tag-edge")) {
        keys.addAll(tagEdgeKeys());
      } else if (extra.startsWith("arc:")) {
        // 200 keys "arc-<i>" whose hash lies in (LOW, HIGH]: the arc a contested point owns.
        String[] bounds = extra.split(":");
        long low = Long.parseLong(bounds[1]);
        long high = Long.parseLong(bounds[2]);
        for (int i = 0, found = 0; found < 200 && i < 10_000_000; ++i) {
          byte[] k = ("arc-" + i).getBytes(StandardCharsets.UTF_8);
          long h = algo.hash(k);
          if (h > low && h <= high) {
            keys.add(k);
            ++found;
          }
        }
      } else if (!extra.isEmpty()) {
        throw new IllegalArgumentException("unknown key set suffix " + extra);
      }
    }

    try (PrintStream ps = new PrintStream(Files.newOutputStream(Path.of(out)), false, "UTF-8")) {
      ps.println("# peer: " + peer);
      ps.println("# command: tests/compat/jvm/generate.sh JEDIS_CHECKOUT");
      if (keyset.equals("malformed")) {
        ps.println("# keys: random bytes (mostly not UTF-8), made by JedisVectors.java");
      }
      if (extra.equals("tag-edge")) {
        ps.println("# keys: keys.hex, then short keys of braces, line terminators and UTF-8");
      }
      if (extra.startsWith("arc:")) {
        ps.println("# keys: keys.hex, then 200 keys hashing into the arc of the contested point");
      }
      ps.println("@preset jedis");
      if (algo == Hashing.MD5) ps.println("@option hash MD5");
      if (tag) ps.println("@option hash_tag {}");
      for (String l : nodeLines) ps.println(l);
      int skipped = 0;
      for (byte[] k : keys) {
        JedisShardInfo s;
        if (tag) {
          if (!isUtf8(k)) {
            ++skipped;
            continue;
          }
          s = sharded.getShardInfo(new String(k, StandardCharsets.UTF_8));
        } else {
          s = sharded.getShardInfo(k);
          if (isUtf8(k) && sharded.getShardInfo(new String(k, StandardCharsets.UTF_8)) != s) {
            throw new IllegalStateException("String and byte[] lookups differ");
          }
        }
        ps.println(HEX.formatHex(k) + "\t" + names.get(s));
      }
      if (skipped > 0) System.err.println(out + ": skipped " + skipped + " non-UTF-8 keys");
    }
  }
}
