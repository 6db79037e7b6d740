// SPDX-License-Identifier: Apache-2.0
// Writes one spymemcached__<case>.tsv: the server spymemcached's KetamaNodeLocator picks for each
// key, as KetamaConnectionFactory builds it (KETAMA_HASH, the default SPYMEMCACHED key format, no
// weights).
//
//   java -cp /usr/share/java/spymemcached.jar SpymemcachedVectors.java OUT PEER KEYSET ADDR...
//
// ADDR is host:port, or name=ip:port for a resolved host name (InetSocketAddress of
// InetAddress.getByAddress(name, ip): it prints as "name/ip:port"). The vector's node names are
// what spymemcached hashes for the servers' points: String.valueOf(address) without its leading
// '/'. Keys come from KEYSET (keys.hex); a key is given as the String its bytes decode to, and
// keys that are not UTF-8 are skipped (spymemcached takes String keys). For every position two
// servers share (the later put owns it), up to 20 extra keys that hash into the arc ending there
// are added, found by a seeded search, so that the tie rule is checked.
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaNodeLocator;
import net.spy.memcached.MemcachedNode;

public class SpymemcachedVectors {
  static final HexFormat HEX = HexFormat.of();

  // A MemcachedNode as the locator sees one: only its address is asked for.
  static MemcachedNode node(InetSocketAddress a) {
    return (MemcachedNode) java.lang.reflect.Proxy.newProxyInstance(
        SpymemcachedVectors.class.getClassLoader(), new Class<?>[] {MemcachedNode.class},
        (proxy, m, args) -> switch (m.getName()) {
          case "getSocketAddress" -> a;
          case "hashCode" -> System.identityHashCode(proxy);
          case "equals" -> proxy == args[0];
          case "toString" -> String.valueOf(a);
          default -> throw new UnsupportedOperationException(m.getName());
        });
  }

  static InetSocketAddress address(String spec) throws IOException {
    int eq = spec.indexOf('=');
    int colon = spec.lastIndexOf(':');
    int port = Integer.parseInt(spec.substring(colon + 1));
    if (eq < 0) return new InetSocketAddress(spec.substring(0, colon), port);
    String[] ip = spec.substring(eq + 1, colon).split("\\.");
    byte[] b = new byte[4];
    for (int i = 0; i < 4; i++) b[i] = (byte) Integer.parseInt(ip[i]);
    return new InetSocketAddress(InetAddress.getByAddress(spec.substring(0, eq), b), port);
  }

  static String nodeKey(InetSocketAddress a) {
    String s = String.valueOf(a);
    return s.startsWith("/") ? s.substring(1) : s;
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 4) {
      System.err.println("usage: SpymemcachedVectors OUT PEER KEYSET ADDR...");
      System.exit(2);
    }
    List<InetSocketAddress> addrs = new ArrayList<>();
    List<MemcachedNode> nodes = new ArrayList<>();
    Map<MemcachedNode, String> names = new HashMap<>();
    for (int i = 3; i < args.length; i++) {
      InetSocketAddress a = address(args[i]);
      MemcachedNode n = node(a);
      addrs.add(a);
      nodes.add(n);
      names.put(n, nodeKey(a));
    }
    KetamaNodeLocator loc = new KetamaNodeLocator(nodes, DefaultHashAlgorithm.KETAMA_HASH);

    List<String> keys = new ArrayList<>();
    var decoder = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    int skipped = 0;
    for (String line : Files.readAllLines(Path.of(args[2]))) {
      String hex = line.trim();
      if (hex.isEmpty()) continue;
      try {
        keys.add(decoder.decode(ByteBuffer.wrap(HEX.parseHex(hex))).toString());
      } catch (CharacterCodingException e) {
        skipped++;
      }
    }

    // The ring as the locator builds it, to find the positions two servers share.
    TreeMap<Long, Integer> owners = new TreeMap<>();
    TreeMap<Long, Integer> count = new TreeMap<>();
    for (int s = 0; s < nodes.size(); s++) {
      for (int k = 0; k < 40; k++) {
        byte[] d = DefaultHashAlgorithm.computeMd5(nodeKey(addrs.get(s)) + "-" + k);
        for (int h = 0; h < 4; h++) {
          long p = ((long) (d[3 + h * 4] & 0xFF) << 24) | ((long) (d[2 + h * 4] & 0xFF) << 16)
              | ((long) (d[1 + h * 4] & 0xFF) << 8) | (d[h * 4] & 0xFF);
          Integer prev = owners.put(p, s);
          if (prev != null && prev != s) count.merge(p, 1, Integer::sum);
        }
      }
    }
    int ties = count.size();
    long seed = 0;
    for (long tie : count.keySet()) {
      Long before = owners.lowerKey(tie);
      long lo = before == null ? -1 : before;
      int found = 0;
      for (long i = 0; found < 20 && i < 50_000_000L; i++, seed++) {
        String k = "tie-" + seed;
        long h = DefaultHashAlgorithm.KETAMA_HASH.hash(k);
        if (h > lo && h <= tie) {
          keys.add(k);
          found++;
        }
      }
    }

    try (PrintStream ps = new PrintStream(Files.newOutputStream(Path.of(args[0])), false, "UTF-8")) {
      ps.println("# peer: " + args[1]);
      ps.println("# command: tests/compat/spymemcached/generate.sh");
      if (skipped > 0) ps.println("# keys: " + skipped + " keys of the set are not UTF-8 and skipped");
      if (ties > 0) ps.println("# ties: " + ties + " positions shared by two servers; keys in their arcs added");
      ps.println("@preset spymemcached");
      for (InetSocketAddress a : addrs) ps.println("@node " + nodeKey(a) + " 1");
      for (String k : keys) {
        ps.println(HEX.formatHex(k.getBytes(StandardCharsets.UTF_8)) + "\t"
            + names.get(loc.getPrimary(k)));
      }
    }
  }
}
