// SPDX-License-Identifier: Apache-2.0
// spymemcached 2.12 (Debian's libspymemcached-java) in binary mode against chash-proxy: run by
// tests/proxy/memcache_binary_e2e_test.cc as `java -cp spymemcached.jar SpyBinary PORT PREFIX`
// (Java's single-file launcher). Exercises what an application does through
// BinaryConnectionFactory: set/get/gets/cas, add/replace/append/prepend, delete, incr/decr with
// defaults, touch, getAndTouch, getBulk (getkq... + noop pipelines) and getVersions. Prints
// "ok <step>" per step and DONE; exits 1 on the first surprise.
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.spy.memcached.BinaryConnectionFactory;
import net.spy.memcached.CASResponse;
import net.spy.memcached.CASValue;
import net.spy.memcached.MemcachedClient;

public class SpyBinary {
  static void check(boolean ok, String step) {
    if (!ok) {
      System.out.println("FAILED " + step);
      System.exit(1);
    }
    System.out.println("ok " + step);
  }

  public static void main(String[] args) throws Exception {
    final int port = Integer.parseInt(args[0]);
    final String p = args[1];
    MemcachedClient c = new MemcachedClient(new BinaryConnectionFactory(),
        List.of(new InetSocketAddress("127.0.0.1", port)));
    try {
      check(c.set(p + "s", 0, "hello").get(), "set");
      check("hello".equals(c.get(p + "s")), "get");
      CASValue<Object> cv = c.gets(p + "s");
      check(cv != null && "hello".equals(cv.getValue()), "gets");
      check(c.cas(p + "s", cv.getCas(), "world") == CASResponse.OK, "cas");
      check(c.cas(p + "s", cv.getCas(), "stale") == CASResponse.EXISTS, "cas stale");
      check(!c.add(p + "s", 0, "x").get(), "add existing");
      check(c.add(p + "a", 0, "x").get(), "add new");
      check(c.replace(p + "a", 0, "y").get(), "replace");
      check(!c.replace(p + "none", 0, "y").get(), "replace missing");
      check(c.append(0, p + "a", "z").get(), "append");
      check(c.prepend(0, p + "a", "w").get(), "prepend");
      check("wyz".equals(c.get(p + "a")), "get after append/prepend");
      check(c.delete(p + "a").get(), "delete");
      check(c.get(p + "a") == null, "get deleted");
      check(!c.delete(p + "a").get(), "delete missing");
      check(c.incr(p + "n", 5, 10) == 10, "incr default");
      check(c.incr(p + "n", 5, 10) == 15, "incr");
      check(c.decr(p + "n", 20, 0) == 0, "decr");
      check(c.incr(p + "missing", 1) == -1, "incr missing without default");
      check(c.set(p + "t", 0, "tv").get(), "set for touch");
      check(c.touch(p + "t", 100).get(), "touch");
      CASValue<Object> gat = c.getAndTouch(p + "t", 100);
      check(gat != null && "tv".equals(gat.getValue()), "getAndTouch");
      // getBulk over many keys: getkq for each, then noop; hits and misses mixed.
      Map<String, String> want = new HashMap<>();
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        String k = p + "bulk:" + i;
        keys.add(k);
        if (i % 3 != 0) {
          want.put(k, "v" + i);
          c.set(k, 0, "v" + i);
        }
      }
      check(c.set(p + "bulk:sync", 0, "s").get(), "bulk set");
      Map<String, Object> got = c.getBulk(keys);
      check(got.equals(want), "getBulk (" + got.size() + " of " + want.size() + ")");
      // A serialized Java object (flags mark it) round-trips.
      HashMap<String, Integer> obj = new HashMap<>();
      obj.put("answer", 42);
      check(c.set(p + "obj", 0, obj).get(), "set object");
      check(obj.equals(c.get(p + "obj")), "get object");
      check(c.set(p + "shared", 0, "from-spymemcached").get(), "set shared");
      check(!c.getVersions().isEmpty(), "getVersions");
    } finally {
      c.shutdown();
    }
    System.out.println("DONE");
  }
}
