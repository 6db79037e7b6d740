// SPDX-License-Identifier: Apache-2.0
// Guava (Debian libguava-java) Hashing.consistentHash over murmur3_128 of the UTF-8 key, as the
// guava preset; JIT warmed up by WARMUP untimed passes before ROUNDS timed ones. Then
// consistentHash alone, on the keys' hashes computed before the timed passes (padToLong, as
// consistentHash(HashCode, n) takes them): the placement chash's pick(<algorithm>) rows compare with.
//
//   java -cp /usr/share/java/guava.jar:DIR GuavaBench NODES.txt KEYS.txt ROUNDS
//     -> "guava\t<ns per key>\t<checksum>"   (node index = bucket)
//        "guava-consistentHash\t<ns per key>\t<checksum>"
import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

public class GuavaBench {
  static final int WARMUP = 30;

  public static void main(String[] args) throws Exception {
    // Only the count is needed (bucket = node index); the list is not kept, so a million node
    // names do not stay on the heap for every collection of the timed passes.
    int n;
    {
      List<String> nodes = Files.readAllLines(Paths.get(args[0]));
      nodes.removeIf(String::isEmpty);
      n = nodes.size();
    }
    List<String> keyList = Files.readAllLines(Paths.get(args[1]));
    keyList.removeIf(String::isEmpty);
    String[] keys = keyList.toArray(new String[0]);
    int rounds = Integer.parseInt(args[2]);
    HashFunction murmur = Hashing.murmur3_128();
    double best = Double.MAX_VALUE;
    long checksum = 0;
    for (int r = 0; r < WARMUP + rounds; ++r) {
      long sum = 0;
      long t0 = System.nanoTime();
      for (int i = 0; i < keys.length; ++i) {
        int b = Hashing.consistentHash(murmur.hashString(keys[i], StandardCharsets.UTF_8), n);
        sum += (long) b * (i % 1000 + 1);
      }
      double ns = (double) (System.nanoTime() - t0) / keys.length;
      checksum = sum;
      if (r >= WARMUP && ns < best) best = ns;
    }
    System.out.printf("guava\t%.2f\t%d%n", best, checksum);

    long[] hashes = new long[keys.length];
    for (int i = 0; i < keys.length; ++i) {
      hashes[i] = murmur.hashString(keys[i], StandardCharsets.UTF_8).padToLong();
    }
    best = Double.MAX_VALUE;
    for (int r = 0; r < WARMUP + rounds; ++r) {
      long sum = 0;
      long t0 = System.nanoTime();
      for (int i = 0; i < hashes.length; ++i) {
        sum += (long) Hashing.consistentHash(hashes[i], n) * (i % 1000 + 1);
      }
      double ns = (double) (System.nanoTime() - t0) / hashes.length;
      checksum = sum;
      if (r >= WARMUP && ns < best) best = ns;
    }
    System.out.printf("guava-consistentHash\t%.2f\t%d%n", best, checksum);
  }
}
