// SPDX-License-Identifier: Apache-2.0
package dev.chash.compat;

import dev.chash.Router;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * A drop-in for spymemcached 2.12's {@code KetamaNodeLocator} as {@code KetamaConnectionFactory}
 * builds it (KETAMA_HASH, the SPYMEMCACHED key format, no weights): the same primary server for
 * every key, checked key for key against Debian's libspymemcached-java in the tests.
 *
 * <pre>{@code
 * List<InetSocketAddress> servers = AddrUtil.getAddresses("10.0.0.1:11211 10.0.0.2:11211");
 * try (SpyKetamaLocator locator = new SpyKetamaLocator(servers)) {
 *   InetSocketAddress owner = locator.getPrimary("user:42");
 * }
 * }</pre>
 *
 * It routes with libchash's "spymemcached" preset, whose node names are the strings spymemcached
 * hashes for a server's points (before "-i"): {@code String.valueOf(socketAddress)} without its
 * leading '/', "10.0.0.1:11211" or "host/10.0.0.1:11211" for a resolved host name
 * ({@link #nodeKey}). Weighted locators (a weights map) are not covered. Immutable and
 * thread-safe.
 */
public final class SpyKetamaLocator implements AutoCloseable {
  private final Router router;
  private final InetSocketAddress[] servers;

  /** The servers in the order the client was given them. */
  public SpyKetamaLocator(List<InetSocketAddress> servers) {
    List<String> names = new ArrayList<>(servers.size());
    for (InetSocketAddress a : servers) {
      names.add(nodeKey(a));
    }
    this.router = Router.preset("spymemcached", names);
    this.servers = servers.toArray(new InetSocketAddress[0]);
  }

  /** The string spymemcached hashes for a server's points (before "-i"). */
  public static String nodeKey(InetSocketAddress address) {
    String s = String.valueOf(address);
    return s.startsWith("/") ? s.substring(1) : s;
  }

  /** The server spymemcached's {@code getPrimary(key)} returns. */
  public InetSocketAddress getPrimary(String key) {
    return servers[router.routeIndex(key)];
  }

  /** Its index in the server list. */
  public int getPrimaryIndex(String key) {
    return router.routeIndex(key);
  }

  /** The primaries' indexes of many keys, in one native call. */
  public int[] getPrimaryIndexes(String[] keys) {
    return router.routeAllIndexes(keys);
  }

  @Override
  public void close() {
    router.close();
  }
}
