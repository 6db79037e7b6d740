// SPDX-License-Identifier: Apache-2.0
// The Java binding next to its peers in one JVM (bench/bindings/run.sh, docs/BENCHMARKS.md):
// Guava's Hashing.consistentHash(murmur3_128().hashString(key, UTF_8), n) against
// GuavaConsistentHash, and spymemcached's KetamaNodeLocator.getPrimary against SpyKetamaLocator,
// on the same keys, alternating round by round: the peer's per-key loop, the binding's per-key
// loop (single calls), the binding's batch. Each round's answers are compared, so a fast wrong
// answer cannot pass. Prints one table row per peer and node count (least ns per key of the rounds).
import com.google.common.hash.Hashing;
import dev.chash.Keys;
import dev.chash.compat.GuavaConsistentHash;
import dev.chash.compat.SpyKetamaLocator;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaNodeLocator;
import net.spy.memcached.MemcachedNode;

public final class JavaBench {
  static final int ROUNDS = 9;
  static int sink;

  static String[] keys(int n) {
    String[] keys = new String[n];
    for (int i = 0; i < n; i++) {
      keys[i] = i % 10 == 0 ? "ключ-" + i + "-ü€" : "user:" + i;
    }
    return keys;
  }

  // The least time of the rounds: the round least disturbed by the other processes on this
  // shared machine (docs/BENCHMARKS.md, "The machine").
  static double least(double[] v) {
    return Arrays.stream(v).min().getAsDouble();
  }

  // ns per key of one pass of f over every key index; the answers into out.
  static double loop(int count, IntUnaryOperator f, int[] out) {
    long t0 = System.nanoTime();
    for (int i = 0; i < count; i++) {
      out[i] = f.applyAsInt(i);
    }
    return (System.nanoTime() - t0) / (double) count;
  }

  static double batch(int count, Supplier<int[]> f, int[][] out) {
    long t0 = System.nanoTime();
    out[0] = f.get();
    return (System.nanoTime() - t0) / (double) count;
  }

  static void row(String peer, int nodes, int count, IntUnaryOperator peerFn,
      IntUnaryOperator single, Supplier<int[]> batchFn) {
    row(peer, nodes, count, peerFn, single, batchFn, true);
  }

  static void row(String peer, int nodes, int count, IntUnaryOperator peerFn,
      IntUnaryOperator single, Supplier<int[]> batchFn, boolean print) {
    double[] p = new double[ROUNDS];
    double[] s = new double[ROUNDS];
    double[] b = new double[ROUNDS];
    int[] want = new int[count];
    int[] got = new int[count];
    int[][] all = new int[1][];
    for (int r = -5; r < ROUNDS; r++) { // five warm-up rounds for the JIT
      double tp = loop(count, peerFn, want);
      double ts = loop(count, single, got);
      double tb = batch(count, batchFn, all);
      if (!Arrays.equals(want, got) || !Arrays.equals(want, all[0])) {
        throw new AssertionError(peer + " " + nodes + ": answers differ from the peer");
      }
      if (r >= 0) {
        p[r] = tp;
        s[r] = ts;
        b[r] = tb;
      }
    }
    double mp = least(p);
    double ms = least(s);
    double mb = least(b);
    if (print) {
      System.out.printf("| Java | %s | %d | %.0f | %.0f | %.2f× | %.0f | %.1f× |%n", peer, nodes,
          mp, ms, mp / ms, mb, mp / mb);
    }
  }

  public static void main(String[] args) {
    int count = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    String[] keys = keys(count);
    // One unprinted pass first: the JIT's compilations (Guava's, the binding's, the lambdas')
    // finish before the first printed row, instead of inside it.
    try (GuavaConsistentHash g = new GuavaConsistentHash(10)) {
      row("warm-up", 10, count,
          i -> Hashing.consistentHash(
              Hashing.murmur3_128().hashString(keys[i], StandardCharsets.UTF_8), 10),
          i -> g.bucket(keys[i]), () -> g.buckets(keys), false);
    }
    for (int n : new int[] {10, 100, 1000}) {
      try (GuavaConsistentHash g = new GuavaConsistentHash(n)) {
        row("Guava consistentHash", n, count,
            i -> Hashing.consistentHash(
                Hashing.murmur3_128().hashString(keys[i], StandardCharsets.UTF_8), n),
            i -> g.bucket(keys[i]), () -> g.buckets(keys));
      }
    }
    // The same keys as bytes (the caller's own encoding, as a cache client holds them): Guava's
    // hashBytes against the byte[] calls, so that neither side pays for UTF-8 encoding.
    byte[][] raw = new byte[count][];
    for (int i = 0; i < count; i++) {
      raw[i] = keys[i].getBytes(StandardCharsets.UTF_8);
    }
    for (int n : new int[] {10, 100, 1000}) {
      try (GuavaConsistentHash g = new GuavaConsistentHash(n)) {
        row("Guava consistentHash, byte[] keys", n, count,
            i -> Hashing.consistentHash(Hashing.murmur3_128().hashBytes(raw[i]), n),
            i -> g.bucket(raw[i]), () -> g.buckets(raw));
      }
    }
    for (int n : new int[] {10, 100, 1000}) {
      List<InetSocketAddress> addrs = new ArrayList<>();
      List<MemcachedNode> nodes = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        InetSocketAddress a = new InetSocketAddress("10.0." + (i / 250) + "." + (i % 250 + 1), 11211);
        addrs.add(a);
        nodes.add(Keys.spyNode(a));
      }
      KetamaNodeLocator peer = new KetamaNodeLocator(nodes, DefaultHashAlgorithm.KETAMA_HASH);
      java.util.Map<MemcachedNode, Integer> index = new java.util.IdentityHashMap<>();
      for (int i = 0; i < n; i++) {
        index.put(nodes.get(i), i);
      }
      try (SpyKetamaLocator loc = new SpyKetamaLocator(addrs)) {
        row("spymemcached KetamaNodeLocator", n, count, i -> index.get(peer.getPrimary(keys[i])),
            i -> loc.getPrimaryIndex(keys[i]), () -> loc.getPrimaryIndexes(keys));
      }
    }
  }
}
