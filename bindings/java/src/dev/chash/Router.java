// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A libchash router: maps keys to nodes exactly as {@code chash route}, chash-proxy and the C++
 * {@code chash::Router} do for the same spec — for a compatibility preset, as the peer itself
 * picks (docs/COMPATIBILITY.md). A thin layer over the C ABI (libchash_c, chash/chash_c.h) through
 * JNI (libchash_jni.so); no hashing happens in Java.
 *
 * <pre>{@code
 * try (Router r = Router.preset("ketama", "10.0.0.1:11211", "10.0.0.2:11211")) {
 *   String node = r.route("user:42");
 * }
 * }</pre>
 *
 * <p>A router is immutable: any number of threads may route through it at once. Membership
 * changes ({@link #withNode}, {@link #withoutNode}, {@link #withWeight}) return a new router and
 * leave this one routing as before. {@link #close()} frees the native router; it must not race
 * with calls on the same router, and a closed router throws {@link IllegalStateException}. A
 * router that is never closed is freed after it becomes unreachable (a {@link Cleaner}); close()
 * frees it now.
 *
 * <p>String keys are hashed as their UTF-8 bytes ({@code key.getBytes(UTF_8)}: an unpaired
 * surrogate is {@code '?'}), which is what Guava's {@code hashString(key, UTF_8)}, spymemcached and
 * memcached clients hash.
 */
public final class Router implements AutoCloseable {
  static {
    NativeLibrary.load();
  }

  // Frees routers nobody closed. The state it cleans is Handle, which does not refer to the Router.
  private static final Cleaner CLEANER = Cleaner.create();

  private static final class Handle implements Runnable {
    volatile long value;

    Handle(long value) {
      this.value = value;
    }

    @Override
    public void run() {
      long h = value;
      value = 0;
      if (h != 0) {
        nativeFree(h);
      }
    }
  }

  private final Handle handle;
  private final Cleaner.Cleanable cleanable;
  // The node names by index, decoded once: route() answers with an index from C and a lookup here,
  // so no Java string is made per key.
  private final String[] names;

  private Router(long handle) {
    this.handle = new Handle(handle);
    this.cleanable = CLEANER.register(this, this.handle);
    this.names = nodeNames(handle);
  }

  /** A router for the compatibility preset {@code preset} over {@code nodes} (weight 1 each). */
  public static Router preset(String preset, String... nodes) {
    return builder().preset(preset).nodes(Arrays.asList(nodes)).build();
  }

  /** A router for the compatibility preset {@code preset} over {@code nodes} (weight 1 each). */
  public static Router preset(String preset, List<String> nodes) {
    return builder().preset(preset).nodes(nodes).build();
  }

  /** A builder for any spec: a preset, a native algorithm or a ring spec, hash and options. */
  public static Builder builder() {
    return new Builder();
  }

  /** The owner of {@code key}'s UTF-8 bytes, or null when the key cannot be routed. */
  public String route(String key) {
    return name(routeIndex(key));
  }

  /** The owner of the bytes {@code key}, or null when the key cannot be routed. */
  public String route(byte[] key) {
    return name(routeIndex(key));
  }

  /** The owner's index in {@link #nodes()}, or -1 when the key cannot be routed. */
  public int routeIndex(String key) {
    return routeIndex(key.getBytes(StandardCharsets.UTF_8));
  }

  /** The owner's index in {@link #nodes()}, or -1 when the key cannot be routed. */
  public int routeIndex(byte[] key) {
    Objects.requireNonNull(key, "key");
    try {
      return nativeRoute(live(), key);
    } finally {
      // The Cleaner must not free the router while C is reading it: keep this reachable until
      // the call returns (here and after every native call that takes the handle).
      Reference.reachabilityFence(this);
    }
  }

  /** The owners of {@code keys}, in order (null for a key that cannot be routed). */
  public String[] routeAll(String[] keys) {
    return names(routeAllIndexes(keys));
  }

  /**
   * The owners' indexes of {@code keys} (-1 for a key that cannot be routed): one native call
   * per 4096 keys (chash_route_java_strings, which hashes keys side by side), so this is the fast
   * way to route many keys.
   */
  public int[] routeAllIndexes(String[] keys) {
    Objects.requireNonNull(keys, "keys");
    if (StringBytes.AVAILABLE) {
      return routeChunks(keys.length, (pack, at, n, out) -> {
        pack.strings(keys, at, n);
        nativeRouteBatchStrings(live(), pack.bytes, pack.coders, pack.offsets, n, out, at);
      });
    }
    return routeChunks(keys.length, (pack, at, n, out) -> {
      pack.chars(keys, at, n);
      nativeRouteBatchUtf16(live(), pack.chars, pack.offsets, n, out, at);
    });
  }

  /** The owners of raw {@code keys}, in order (null for a key that cannot be routed). */
  public String[] routeAll(byte[][] keys) {
    return names(routeAllIndexes(keys));
  }

  /**
   * The owners' indexes of raw {@code keys} (-1 for a key that cannot be routed), each key's
   * bytes as given — binary keys, or keys the caller keeps encoded — batched as
   * {@link #routeAllIndexes(String[])}.
   */
  public int[] routeAllIndexes(byte[][] keys) {
    Objects.requireNonNull(keys, "keys");
    return routeChunks(keys.length, (pack, at, n, out) -> {
      pack.bytes(keys, at, n);
      nativeRouteBatch(live(), pack.bytes, pack.offsets, n, out, at);
    });
  }

  // Packs and routes keys [at, at + n) into out[at ..] (one native call).
  private interface Chunk {
    void route(KeyPack pack, int at, int n, int[] out);
  }

  // A batch of `count` keys, KeyPack.CHUNK at a time through one KeyPack's reused buffers.
  private int[] routeChunks(int count, Chunk chunk) {
    int[] out = new int[count];
    KeyPack pack = new KeyPack();
    try {
      for (int at = 0; at < count; at += KeyPack.CHUNK) {
        chunk.route(pack, at, Math.min(KeyPack.CHUNK, count - at), out);
      }
    } finally {
      Reference.reachabilityFence(this);
    }
    return out;
  }

  // Node names for indexes (null for -1).
  private String[] names(int[] idx) {
    String[] out = new String[idx.length];
    for (int i = 0; i < idx.length; i++) {
      out[i] = name(idx[i]);
    }
    return out;
  }

  /**
   * Up to {@code n} distinct nodes for {@code key} in the placement's preference order: the owner
   * first, then the next choices (the next distinct nodes clockwise on a ring).
   */
  public List<String> replicas(String key, int n) {
    Objects.requireNonNull(key, "key");
    if (n < 0) {
      throw new IllegalArgumentException("replicas: n must be >= 0, not " + n);
    }
    int[] out = new int[Math.min(n, names.length)];
    int count;
    try {
      count = nativeRouteN(live(), key.getBytes(StandardCharsets.UTF_8), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    List<String> result = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      result.add(names[out[i]]);
    }
    return Collections.unmodifiableList(result);
  }

  /** A new router with {@code name} appended (weight 1); this one is unchanged. */
  public Router withNode(String name) {
    return withNode(name, 1);
  }

  /** A new router with {@code name} appended with {@code weight}; this one is unchanged. */
  public Router withNode(String name, int weight) {
    try {
      return new Router(nativeAddNode(live(), utf8(name), weight));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A new router without {@code name} (later nodes move down one index); this one is unchanged. */
  public Router withoutNode(String name) {
    try {
      return new Router(nativeRemoveNode(live(), utf8(name)));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A new router where {@code name} has {@code weight} (0 drains it where weights count). */
  public Router withWeight(String name, int weight) {
    try {
      return new Router(nativeSetWeight(live(), utf8(name), weight));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The node names in index order. */
  public List<String> nodes() {
    return Collections.unmodifiableList(Arrays.asList(names));
  }

  /** Node {@code index}'s weight. */
  public int weight(int index) {
    Objects.checkIndex(index, names.length);
    try {
      return nativeWeight(live(), index);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** One line a person reads: "preset ketama", "maglev (xxh3)". */
  public String describe() {
    try {
      return nativeDescribe(live());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The presets libchash has, e.g. "ketama", "guava", "node-hashring". */
  public static List<String> presets() {
    return List.of(nativePresets());
  }

  /** libchash's version, "major.minor.patch". */
  public static String version() {
    return nativeVersion();
  }

  @Override
  public void close() {
    cleanable.clean(); // runs Handle.run at most once, whoever calls first
  }

  @Override
  public String toString() {
    return handle.value == 0 ? "Router(closed)" : "Router(" + describe() + ", " + names.length + " nodes)";
  }

  private long live() {
    long h = handle.value;
    if (h == 0) {
      throw new IllegalStateException("chash: this Router is closed");
    }
    return h;
  }

  private String name(int index) {
    return index < 0 ? null : names[index];
  }

  private static byte[] utf8(String s) {
    return Objects.requireNonNull(s, "node name").getBytes(StandardCharsets.UTF_8);
  }

  private static String[] nodeNames(long handle) {
    byte[][] raw = nativeNodeNames(handle);
    String[] out = new String[raw.length];
    for (int i = 0; i < raw.length; i++) {
      out[i] = new String(raw[i], StandardCharsets.UTF_8);
    }
    return out;
  }

  /** How to route: one of preset, algorithm and ring, and the rest of {@code chash route}'s flags. */
  public static final class Builder {
    private String preset;
    private String algorithm;
    private String ring;
    private String hash;
    private String hashTag;
    private final List<String> optionNames = new ArrayList<>();
    private final List<String> optionValues = new ArrayList<>();
    private final List<String> nodeNames = new ArrayList<>();
    private final List<Integer> nodeWeights = new ArrayList<>();

    private Builder() {}

    /** A compatibility preset: "ketama", "ketama-spy", "guava", "groupcache", ... */
    public Builder preset(String name) {
      this.preset = name;
      return this;
    }

    /** A native algorithm: "ring", "jump", "maglev", "rendezvous", ... */
    public Builder algorithm(String name) {
      this.algorithm = name;
      return this;
    }

    /** A ring spec, e.g. "points={name}#VN{i}; vnodes=150; hash=guava-long" (docs/CLI.md). */
    public Builder ring(String spec) {
      this.ring = spec;
      return this;
    }

    /** The key hash (chash's for an algorithm, the peer's own setting for a preset). */
    public Builder hash(String name) {
      this.hash = name;
      return this;
    }

    /** Two characters, e.g. "{}": only the bytes between them are hashed. */
    public Builder hashTag(String tag) {
      this.hashTag = tag;
      return this;
    }

    /** Any other flag of {@code chash route} without its dashes: "vnodes", "preset-option" ... */
    public Builder option(String name, String value) {
      optionNames.add(Objects.requireNonNull(name, "option name"));
      optionValues.add(Objects.requireNonNull(value, "option value"));
      return this;
    }

    /** Appends a node of weight 1. */
    public Builder node(String name) {
      return node(name, 1);
    }

    /** Appends a node; its index is its position in the list. */
    public Builder node(String name, int weight) {
      nodeNames.add(Objects.requireNonNull(name, "node name"));
      nodeWeights.add(weight);
      return this;
    }

    /** Appends nodes of weight 1. */
    public Builder nodes(List<String> names) {
      for (String n : names) {
        node(n);
      }
      return this;
    }

    /** Builds the router; a spec or node list libchash refuses throws {@link ChashException}. */
    public Router build() {
      byte[][] names = new byte[nodeNames.size()][];
      int[] weights = new int[names.length];
      for (int i = 0; i < names.length; i++) {
        names[i] = nodeNames.get(i).getBytes(StandardCharsets.UTF_8);
        weights[i] = nodeWeights.get(i);
        if (weights[i] < 0) {
          throw new IllegalArgumentException(
              "chash: node " + nodeNames.get(i) + " has a negative weight " + weights[i]);
        }
      }
      long h = nativeNew(preset, algorithm, ring, hash, hashTag,
          optionNames.toArray(new String[0]), optionValues.toArray(new String[0]), names, weights);
      return new Router(h);
    }
  }

  // ---- native/chash_jni.c ----
  private static native long nativeNew(String preset, String algorithm, String ring, String hash,
      String hashTag, String[] optionNames, String[] optionValues, byte[][] names, int[] weights);

  private static native void nativeFree(long handle);

  private static native int nativeRoute(long handle, byte[] key);

  // Keys packed a chunk at a time (KeyPack); their owners go to out[outAt .. outAt + count).
  private static native void nativeRouteBatch(long handle, byte[] packed, int[] offsets, int count,
      int[] out, int outAt);

  // String keys as the JDK holds them (KeyPack.strings), each routed as its
  // String.getBytes(UTF_8) (encoded in C where it is not ASCII).
  private static native void nativeRouteBatchStrings(long handle, byte[] packed, byte[] coders,
      int[] offsets, int count, int[] out, int outAt);

  // Keys as UTF-16 units, each routed as its String.getBytes(UTF_8) (encoded in C).
  private static native void nativeRouteBatchUtf16(long handle, char[] chars, int[] offsets,
      int count, int[] out, int outAt);

  private static native int nativeRouteN(long handle, byte[] key, int[] out);

  private static native long nativeAddNode(long handle, byte[] name, int weight);

  private static native long nativeRemoveNode(long handle, byte[] name);

  private static native long nativeSetWeight(long handle, byte[] name, int weight);

  private static native byte[][] nativeNodeNames(long handle);

  private static native int nativeWeight(long handle, int index);

  private static native String nativeDescribe(long handle);

  private static native String[] nativePresets();

  private static native String nativeVersion();
}
