// SPDX-License-Identifier: Apache-2.0
// Writes one guava__<case>.tsv: the node Guava's Hashing.consistentHash picks for each key.
//
//   java -cp /usr/share/java/guava.jar GuavaVectors.java OUT PEER KEYSET NODE...
//
// KEYSET is a keys.hex path (the shared key set: every key is used) or "malformed": byte strings
// that are not UTF-8, cut every way the JDK's decoder distinguishes (made here, seeded).
// A key is given to Guava as a Java service holding its bytes would: s = new String(bytes,
// UTF_8) (malformed sequences become U+FFFD), then
// Hashing.consistentHash(Hashing.murmur3_128().hashString(s, UTF_8), nodes) -> node index, in
// list order.
import com.google.common.hash.Hashing;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

public class GuavaVectors {
  static final HexFormat HEX = HexFormat.of();

  // One byte of each class the decoder tells apart (ASCII, continuation ranges, leads).
  static final int[] CLASSES = {0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc1, 0xc2, 0xe0, 0xed,
      0xef, 0xf0, 0xf4, 0xf5, 0xff};
  static final int[] TAIL = {0x41, 0x80, 0x8f, 0x90, 0xa0, 0xbf, 0xc2, 0xf0};

  static List<byte[]> malformedKeys() {
    List<byte[]> keys = new ArrayList<>();
    // Every 1-, 2- and 3-byte string over the classes (some of them are valid UTF-8).
    for (int a : CLASSES) {
      keys.add(new byte[] {(byte) a});
      for (int b : CLASSES) {
        keys.add(new byte[] {(byte) a, (byte) b});
        for (int c : CLASSES) keys.add(new byte[] {(byte) a, (byte) b, (byte) c});
      }
    }
    // Four-byte leads followed by three bytes of every tail class.
    for (int lead : new int[] {0xf0, 0xf1, 0xf4}) {
      for (int b : TAIL) {
        for (int c : TAIL) {
          for (int d : TAIL) keys.add(new byte[] {(byte) lead, (byte) b, (byte) c, (byte) d});
        }
      }
    }
    // Longer keys: text with malformed bytes inside, past the 16-byte block boundary.
    Random rnd = new Random(20240601L);
    for (int i = 0; i < 400; ++i) {
      byte[] k = new byte[1 + rnd.nextInt(48)];
      for (int j = 0; j < k.length; ++j) {
        k[j] = rnd.nextInt(3) == 0 ? (byte) CLASSES[rnd.nextInt(CLASSES.length)]
                                   : (byte) ('a' + rnd.nextInt(26));
      }
      keys.add(k);
    }
    return keys;
  }

  public static void main(String[] args) throws IOException {
    if (args.length < 4) {
      System.err.println("usage: GuavaVectors OUT PEER KEYSET NODE...");
      System.exit(2);
    }
    final String out = args[0];
    final String peer = args[1];
    final String keyset = args[2];
    final List<String> nodes = List.of(args).subList(3, args.length);

    List<byte[]> keys = new ArrayList<>();
    if (keyset.equals("malformed")) {
      keys = malformedKeys();
    } else {
      for (String line : Files.readAllLines(Path.of(keyset))) {
        line = line.strip();
        if (!line.isEmpty() && !line.startsWith("#")) keys.add(HEX.parseHex(line));
      }
    }

    try (PrintStream ps = new PrintStream(Files.newOutputStream(Path.of(out)), false, "UTF-8")) {
      ps.println("# peer: " + peer);
      ps.println("# command: tests/compat/jvm/generate.sh JEDIS_CHECKOUT");
      if (keyset.equals("malformed")) {
        ps.println("# keys: not UTF-8, made by GuavaVectors.java; each is decoded by the JDK");
      }
      ps.println("@preset guava");
      for (String n : nodes) ps.println("@node " + n + " 1");
      for (byte[] k : keys) {
        String s = new String(k, StandardCharsets.UTF_8);
        int b = Hashing.consistentHash(Hashing.murmur3_128().hashString(s, StandardCharsets.UTF_8),
            nodes.size());
        ps.println(HEX.formatHex(k) + "\t" + nodes.get(b));
      }
    }
  }
}
