// SPDX-License-Identifier: Apache-2.0
package dev.chash;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.spy.memcached.MemcachedNode;

/**
 * The tests' key set, `chash route` run on it for the reference answers, and spymemcached nodes
 * for its KetamaNodeLocator (the tests and bench/bindings/JavaBench.java).
 */
public final class Keys {
  private Keys() {}

  /**
   * n keys as applications name them — "user:i", "session/i/cart", every 10th with non-ASCII
   * text — so that every path of the UTF-8 packing is exercised.
   */
  public static String[] make(int n) {
    String[] keys = new String[n];
    for (int i = 0; i < n; i++) {
      switch (i % 10) {
        case 0:
          keys[i] = "ключ-" + i + "-ü€😀";
          break;
        case 1:
        case 2:
        case 3:
          keys[i] = "session/" + Integer.toHexString(i * 31) + "/cart";
          break;
        default:
          keys[i] = "user:" + i;
      }
    }
    return keys;
  }

  /** `chash route` (the CLI of this build, -Dchash.cli) for keys: one node name per key. */
  public static List<String> cli(List<String> args, String[] keys) throws IOException,
      InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("chash.cli", "chash"));
    cmd.add("route");
    cmd.addAll(args);
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    Thread writer = new Thread(() -> {
      try (OutputStream out = p.getOutputStream()) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        for (String k : keys) {
          buf.write(k.getBytes(StandardCharsets.UTF_8));
          buf.write('\n');
        }
        buf.writeTo(out);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    writer.start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    writer.join();
    if (p.waitFor() != 0) {
      throw new IOException("chash route " + args + " failed: exit " + p.exitValue());
    }
    return List.of(text.split("\n"));
  }

  /**
   * A spymemcached MemcachedNode as KetamaNodeLocator sees one: it asks nothing but the socket
   * address (the rest of the interface is I/O the locator never calls; it fails loudly if called).
   */
  public static MemcachedNode spyNode(InetSocketAddress address) {
    return (MemcachedNode) java.lang.reflect.Proxy.newProxyInstance(
        Keys.class.getClassLoader(), new Class<?>[] {MemcachedNode.class},
        (proxy, method, args) -> {
          switch (method.getName()) {
            case "getSocketAddress":
              return address;
            case "hashCode":
              return System.identityHashCode(proxy);
            case "equals":
              return proxy == args[0];
            case "toString":
              return "node " + address;
            default:
              throw new UnsupportedOperationException(method.getName());
          }
        });
  }
}
