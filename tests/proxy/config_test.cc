// SPDX-License-Identifier: Apache-2.0
// chash-proxy configuration: nutcracker.yml accepted unchanged; errors name the line.
#include "config/config.h"
#include "membership/fleet/ops.h"

#include <gtest/gtest.h>

#include "chash/error.h"
#include "chash/hash.h"

namespace chash::proxy {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "t.yml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigTest, NutcrackerYmlParsesUnchanged) {
  const auto c = parse_config(R"(alpha:
  listen: 127.0.0.1:22121
  hash: fnv1a_64
  hash_tag: "{}"
  distribution: ketama
  auto_eject_hosts: true
  redis: true
  redis_auth: s3cret
  server_retry_timeout: 2000
  server_failure_limit: 1
  timeout: 400
  server_connections: 2
  servers:
   - 127.0.0.1:6379:1 server1
   - 127.0.0.1:6380:2
   - /tmp/r.sock:1 sock
)",
                              "t.yml");
  ASSERT_EQ(c.pools.size(), 1u);
  const PoolConfig& p = c.pools[0];
  EXPECT_EQ(p.listen.port, 22121);
  EXPECT_EQ(p.routing.preset, "twemproxy");
  EXPECT_EQ(p.routing.hash, "fnv1a_64");
  EXPECT_EQ(p.routing.hash_tag, "{}");
  EXPECT_EQ(p.client_password, "s3cret");
  EXPECT_EQ(p.server_password, "s3cret");
  EXPECT_EQ(p.timeout_ms, 400u);
  EXPECT_EQ(p.server_connections, 2u);
  ASSERT_EQ(p.servers.size(), 3u);
  EXPECT_EQ(p.servers[0].name, "server1");
  EXPECT_EQ(p.servers[1].name, "127.0.0.1:6380");
  EXPECT_EQ(p.servers[1].weight, 2u);
  EXPECT_EQ(p.servers[2].address.unix_path, "/tmp/r.sock");
  EXPECT_EQ(p.servers[2].line, 16);
}

TEST(ConfigTest, ChashKeysAndGlobalSection) {
  const auto c = parse_config(R"(chash_proxy:
  workers: 3
  admin: 127.0.0.1:0
beta:
  listen: 127.0.0.1:0
  redis: true
  algorithm: jump
  hash: xxh3
  client_auth: a
  server_auth: b
  servers:
    - {server: "127.0.0.1:7001:1 x", password: px}
    - 127.0.0.1:7002:1 y
)",
                              "t.yml");
  EXPECT_EQ(c.workers, 3u);
  ASSERT_TRUE(c.admin);
  EXPECT_EQ(c.pools[0].routing.algorithm, "jump");
  EXPECT_EQ(c.pools[0].client_password, "a");
  EXPECT_EQ(c.pools[0].server_password, "b");
  EXPECT_EQ(c.pools[0].servers[0].password, "px");
}

TEST(ConfigTest, UnknownKeyNamesLineAndSuggests) {
  const std::string e = error_of(
      "alpha:\n  listen: 127.0.0.1:9\n  redis: true\n  timout: 5\n  servers:\n   - "
      "127.0.0.1:1:1\n");
  EXPECT_NE(e.find("t.yml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("'timout'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'timeout'"), std::string::npos) << e;
}

TEST(ConfigTest, BadServerLinesNameTheirLine) {
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n   - 127.0.0.1:1:1\n   "
                     "- 127.0.0.1:x:1\n")
                .find("t.yml:6:"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n   - 127.0.0.1:1:0\n")
                .find("weight"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  servers:\n   - 127.0.0.1:6379\n")
                .find("'127.0.0.1:6379' has no weight: write host:port:weight [name]"),
            std::string::npos);
  // A duplicate name is refused at its own line, naming the first one's.
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n   - 127.0.0.1:1:1 s\n "
                     "  - 127.0.0.1:2:1 s\n")
                .find("t.yml:6: pool 'a': server name 's' is given twice (line 5 and line 6)"),
            std::string::npos);
}

TEST(ConfigTest, RefusesWhatIsNotSupported) {
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  distribution: random\n  "
                     "servers:\n   - 127.0.0.1:1:1\n")
                .find("random"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis_auth: x\n  servers:\n   - 127.0.0.1:1:1\n")
                .find("no AUTH"),
            std::string::npos);
  EXPECT_NE(
      error_of("a:\n  listen: 127.0.0.1:9\n  protocol: http\n  servers:\n   - 127.0.0.1:1:1\n")
          .find("unknown protocol"),
      std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  protocol: tcp\n  servers:\n   - "
                     "127.0.0.1:1:1\n")
                .find("disagree"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  balance: least-conn\n  "
                     "servers:\n   - 127.0.0.1:1:1\n")
                .find("tcp pools only"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: ip-hash\n  algorithm: "
                     "ring\n  servers:\n   - 127.0.0.1:1:1\n")
                .find("nginx-ip-hash"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: fastest\n  servers:\n "
                     "  - 127.0.0.1:1:1\n")
                .find("least-conn"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  proxy_protocol: v3\n  "
                     "servers:\n   - 127.0.0.1:1:1\n")
                .find("v1, v2"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  hash: nosuch\n  servers:\n   - "
                     "127.0.0.1:1:1\n")
                .find("t.yml:1:"),
            std::string::npos);
  EXPECT_NE(error_of("a: [1\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(
      error_of("a:\n  redis: true\n  servers:\n   - 127.0.0.1:1:1\n").find("'listen' is required"),
      std::string::npos);
}

TEST(ConfigTest, ProtocolsAndTheirDefaults) {
  // nutcracker's default is memcache (redis: false).
  const auto mc = chash::proxy::parse_config(
      "a:\n  listen: 127.0.0.1:9\n  servers:\n   - 127.0.0.1:1:1\n", "t.yml");
  EXPECT_EQ(mc.pools[0].protocol, chash::proxy::PoolProtocol::kMemcache);
  EXPECT_EQ(mc.pools[0].routing.preset, "twemproxy");
  EXPECT_EQ(mc.pools[0].max_value_bytes, std::size_t{1} << 20);
  const auto tcp = chash::proxy::parse_config(
      "a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  proxy_protocol: v2\n  idle_timeout: 5000\n"
      "  health_check_interval: 1000\n  rise: 2\n  fall: 3\n  servers:\n   - 127.0.0.1:1:1\n",
      "t.yml");
  const auto& p = tcp.pools[0];
  EXPECT_EQ(p.protocol, chash::proxy::PoolProtocol::kTcp);
  EXPECT_EQ(p.balance, chash::proxy::Balance::kHash);
  EXPECT_EQ(p.routing.preset, "nginx-hash-consistent");  // nginx `hash $remote_addr consistent`
  EXPECT_EQ(p.proxy_protocol, chash::proxy::ProxyProtocol::kV2);
  EXPECT_EQ(p.idle_timeout_ms, 5000u);
  EXPECT_EQ(p.health_check_interval_ms, 1000u);
  EXPECT_EQ(p.rise, 2u);
  EXPECT_EQ(p.server_failure_limit, 3u);
  const auto ip = chash::proxy::parse_config(
      "a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: ip-hash\n  servers:\n   - "
      "127.0.0.1:1:1\n",
      "t.yml");
  EXPECT_EQ(ip.pools[0].balance, chash::proxy::Balance::kIpHash);
  EXPECT_EQ(ip.pools[0].routing.preset, "nginx-ip-hash");
  const auto wrr = chash::proxy::parse_config(
      "a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: weighted-round-robin\n  servers:\n   "
      "- 127.0.0.1:1:3\n",
      "t.yml");
  EXPECT_EQ(wrr.pools[0].balance, chash::proxy::Balance::kWeightedRoundRobin);
}

// hash_balance_factor: HAProxy's hash-balance-factor / Envoy's hash_balance_factor (percent).
TEST(ConfigTest, HashBalanceFactorIsOffByDefaultAndKeptWhenValid) {
  const std::string servers = "  servers:\n   - 127.0.0.1:1:1\n";
  EXPECT_EQ(parse_config("a:\n  listen: 127.0.0.1:9\n  redis: true\n" + servers, "t.yml")
                .pools[0]
                .hash_balance_factor,
            0u);
  EXPECT_EQ(parse_config(
                "a:\n  listen: 127.0.0.1:9\n  redis: true\n  hash_balance_factor: 125\n" + servers,
                "t.yml")
                .pools[0]
                .hash_balance_factor,
            125u);
  EXPECT_EQ(parse_config("a:\n  listen: 127.0.0.1:9\n  hash_balance_factor: 100\n" + servers,
                         "t.yml")  // memcache
                .pools[0]
                .hash_balance_factor,
            100u);
  EXPECT_EQ(
      parse_config("a:\n  listen: 127.0.0.1:9\n  redis: true\n  hash_balance_factor: 0\n" + servers,
                   "t.yml")
          .pools[0]
          .hash_balance_factor,
      0u);
  // tcp pools: with the hash balances (hash is the default).
  EXPECT_EQ(
      parse_config(
          "a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  hash_balance_factor: 150\n" + servers,
          "t.yml")
          .pools[0]
          .hash_balance_factor,
      150u);
  EXPECT_EQ(parse_config("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: ip-hash\n  "
                         "hash_balance_factor: 200\n" +
                             servers,
                         "t.yml")
                .pools[0]
                .hash_balance_factor,
            200u);
}

TEST(ConfigTest, HashBalanceFactorBelow100IsAnErrorAtItsLine) {
  const std::string servers = "  servers:\n   - 127.0.0.1:1:1\n";
  EXPECT_EQ(
      error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  hash_balance_factor: 99\n" + servers),
      "t.yml:4: pool 'a': hash_balance_factor must be 0 (off) or at least 100 (percent of the mean "
      "load, "
      "e.g. 125), got 99");
  EXPECT_EQ(error_of("a:\n  listen: 127.0.0.1:9\n  hash_balance_factor: 1\n" + servers),
            "t.yml:3: pool 'a': hash_balance_factor must be 0 (off) or at least 100 (percent of "
            "the mean load, "
            "e.g. 125), got 1");
  EXPECT_EQ(error_of("a:\n  listen: 127.0.0.1:9\n  hash_balance_factor: 1.25\n" + servers),
            "t.yml:3: 'hash_balance_factor' must be a whole number from 0 to 1000000, got '1.25'");
  EXPECT_EQ(error_of("a:\n  listen: 127.0.0.1:9\n  hash_balance_factor: -5\n" + servers),
            "t.yml:3: 'hash_balance_factor' must be a whole number from 0 to 1000000, got '-5'");
}

TEST(ConfigTest, HashBalanceFactorIsRefusedForNonHashTcpBalances) {
  const std::string servers = "  servers:\n   - 127.0.0.1:1:1\n";
  EXPECT_EQ(error_of("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  hash_balance_factor: 125\n  "
                     "balance: round-robin\n" +
                     servers),
            "t.yml:4: pool 'a': hash_balance_factor applies to hash balancing (balance: hash or "
            "ip-hash), not "
            "balance round-robin");
  EXPECT_EQ(error_of("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: least-conn\n  "
                     "hash_balance_factor: 125\n" +
                     servers),
            "t.yml:5: pool 'a': hash_balance_factor applies to hash balancing (balance: hash or "
            "ip-hash), not "
            "balance least-conn");
  // 0 is "off", so it is accepted whatever the balance.
  EXPECT_EQ(
      parse_config("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  balance: weighted-round-robin\n"
                   "  hash_balance_factor: 0\n" +
                       servers,
                   "t.yml")
          .pools[0]
          .hash_balance_factor,
      0u);
}

// preset_options: a preset's own settings, in order, as chash route --preset-option.
TEST(ConfigTest, PresetOptionsReachTheRouter) {
  const std::string servers = "  servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:11212:1\n";
  const auto c = parse_config(
      "a:\n  listen: 127.0.0.1:9\n  preset: libmemcached-modula\n"
      "  preset_options: {ketama_weighted: true, distribution: CONSISTENT_KETAMA_SPY}\n" +
          servers,
      "t.yml");
  const auto& r = c.pools[0].routing;
  ASSERT_EQ(r.preset_settings.size(), 2u);
  EXPECT_EQ(r.preset_settings[0], (std::pair<std::string, std::string>{"ketama_weighted", "true"}));
  EXPECT_EQ(r.preset_settings[1].second, "CONSISTENT_KETAMA_SPY");
  RoutingSpec spy_spec;
  spy_spec.preset = "ketama-spy";
  const auto spy = Router::build(spy_spec, c.pools[0].nodes());
  const auto set = Router::build(r, c.pools[0].nodes());
  for (int i = 0; i < 200; ++i) {
    const std::string k = "k" + std::to_string(i);
    EXPECT_EQ(set.route(k), spy.route(k)) << k;
  }
  EXPECT_THROW(
      parse_config(
          "a:\n  listen: 127.0.0.1:9\n  preset: twemproxy\n  preset_options: {x: y}\n" + servers,
          "t.yml"),
      Error);
  EXPECT_THROW(
      parse_config("a:\n  listen: 127.0.0.1:9\n  preset_options: [1]\n" + servers, "t.yml"), Error);
}

// ring: a hand-written ring spec; one of distribution/preset/algorithm/ring; a bad spec names
// the pool and the spec's field.
TEST(ConfigTest, RingSpecPools) {
  const std::string servers = "  servers:\n   - 127.0.0.1:11211:1 a\n   - 127.0.0.1:11212:1 b\n";
  const auto c = parse_config(
      "a:\n  listen: 127.0.0.1:9\n  ring: \"points={name}#VN{i}; "
      "bare=first; vnodes=150; hash=guava-long\"\n" +
          servers,
      "t.yml");
  const auto& r = c.pools[0].routing;
  ASSERT_TRUE(r.ring);
  EXPECT_TRUE(r.preset.empty());
  RoutingSpec article;
  article.preset = "guava-treemap";
  const auto want = Router::build(article, c.pools[0].nodes());
  const auto got = Router::build(r, c.pools[0].nodes());
  for (int i = 0; i < 500; ++i) {
    const std::string k = "k" + std::to_string(i);
    EXPECT_EQ(got.route(k), want.route(k)) << k;
  }
  // vnodes 0 keeps only the servers' own points (article 000's ring without virtual nodes).
  const auto bare = parse_config(
      "a:\n  listen: 127.0.0.1:9\n  preset: guava-treemap\n  vnodes: 0\n" + servers, "t.yml");
  EXPECT_EQ(*bare.pools[0].routing.vnodes, 0u);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  ring: \"vnodes=3; hash=sha1\"\n" + servers)
                .find("ring spec: hash: unknown hash \"sha1\""),
            std::string::npos);
  EXPECT_NE(
      error_of("a:\n  listen: 127.0.0.1:9\n  ring: \"vnodes=3\"\n  preset: ketama\n" + servers)
          .find("only one of distribution, preset, algorithm and ring"),
      std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  algorithm: ring\n  vnodes: 0\n" + servers), "");
}

TEST(ConfigTest, RedisKeyspaceAndBlockingOptions) {
  const std::string servers = "  servers:\n   - 127.0.0.1:1:1\n   - 127.0.0.1:2:1\n";
  const auto def = parse_config("a:\n  listen: 127.0.0.1:9\n  redis: true\n" + servers, "t.yml");
  EXPECT_FALSE(def.pools[0].allow_flushall);
  EXPECT_FALSE(def.pools[0].allow_config_set);
  EXPECT_EQ(def.pools[0].max_blocked_clients, 1024u);
  const auto on = parse_config(
      "a:\n  listen: 127.0.0.1:9\n  redis: true\n  allow_flushall: true\n"
      "  allow_config_set: true\n  max_blocked_clients: 3\n" +
          servers,
      "t.yml");
  EXPECT_TRUE(on.pools[0].allow_flushall);
  EXPECT_TRUE(on.pools[0].allow_config_set);
  EXPECT_EQ(on.pools[0].max_blocked_clients, 3u);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  allow_flushall: true\n" + servers)
                .find("'allow_flushall' and 'allow_config_set' apply to redis pools only"),
            std::string::npos);
  EXPECT_NE(
      error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  allow_flushall: maybe\n" + servers),
      "");
  EXPECT_NE(
      error_of("a:\n  listen: 127.0.0.1:9\n  redis: true\n  max_blocked_clients: -1\n" + servers),
      "");
}

TEST(ConfigTest, ClientOutputLimit) {
  const std::string head = "a:\n  listen: 127.0.0.1:9\n  redis: true\n";
  const std::string servers = "  servers:\n   - 127.0.0.1:1:1\n";
  EXPECT_EQ(parse_config(head + servers, "t.yml").pools[0].client_output_limit,
            std::size_t{64} << 20);
  EXPECT_EQ(parse_config(head + "  client_output_limit: 0\n" + servers, "t.yml")
                .pools[0]
                .client_output_limit,
            0u);
  EXPECT_EQ(parse_config(head + "  client_output_limit: 1048576\n" + servers, "t.yml")
                .pools[0]
                .client_output_limit,
            1048576u);
  EXPECT_NE(error_of(head + "  client_output_limit: 4096\n" + servers)
                .find("client_output_limit must be 0 (no limit) or at least 1048576 bytes"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  client_output_limit: -1\n" + servers), "");
}

// Two members on one server would make every move between them (rebalance, warm-up, the safe
// return's sweep) delete the only copy: refused wherever membership comes from, naming both.
TEST(ConfigTest, TwoMembersOnOneServerAreRefused) {
  const std::string head = "a:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n";
  for (const char* second : {"127.0.0.1:7000:1 b", "\"[::ffff:127.0.0.1]:7000:1 b\""}) {
    try {
      (void)parse_config(head + "   - 127.0.0.1:7000:1 a\n   - " + second + "\n", "t.yml");
      ADD_FAILURE() << second << " was accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("t.yml:6"), std::string::npos) << m;  // the second one's line
      EXPECT_NE(m.find("servers 'a' and 'b' are one server (127.0.0.1:7000"), std::string::npos) << m;
    }
  }
  EXPECT_THROW((void)parse_config(head + "   - /tmp/r.sock:1 a\n   - /tmp/r.sock:1 b\n", "t.yml"),
               Error);
  // Another port, another path: fine.
  EXPECT_NO_THROW((void)parse_config(head + "   - 127.0.0.1:7000:1 a\n   - 127.0.0.1:7001:1 b\n"
                                             "   - /tmp/r.sock:1 c\n", "t.yml"));
  // An etcd servers value (and so POST /fleet/add, chash fleet): the same check.
  const ProxyConfig c = parse_config(head + "   - 127.0.0.1:7000:1 a\n", "t.yml");
  try {
    (void)servers_from_strings(c.pools[0], {"127.0.0.1:7000:1 a", "127.0.0.1:7001:1 b",
                                            "127.0.0.1:7000:1 c"});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("servers 'a' and 'c' are one server"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(same_server({}), "");
  // `chash fleet` checks its edit the same way before it writes etcd.
  EXPECT_NE(fleet::check_server_strings({"127.0.0.1:7000:1 a", "localhost:7001:1 b",
                                         "127.0.0.1:7000:2 c"})
                .find("servers 'a' and 'c' are one server"),
            std::string::npos);
  EXPECT_EQ(fleet::check_server_strings({"127.0.0.1:7000:1 a", "127.0.0.1:7001:1 b"}), "");
}

// A member that is one of the proxy's own listeners (a pool's listen, admin, stats) would send
// every request back to the proxy: refused, in the file and in an etcd value.
TEST(ConfigTest, AMemberOnTheProxysOwnListenerIsRefused) {
  auto refused = [](const std::string& y, const std::string& what) {
    try {
      (void)parse_config(y, "t.yml");
      ADD_FAILURE() << "accepted: " << y;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const std::string a = "a:\n  listen: 127.0.0.1:22121\n  redis: true\n  servers:\n";
  refused(a + "   - 127.0.0.1:6379:1 r1\n   - 127.0.0.1:22121:1 r2\n",
          "t.yml:6: pool 'a': server 'r2' (127.0.0.1:22121) is this proxy's own listener 127.0.0.1:22121");
  // Another pool's listener, the admin port, the stats port; a wildcard listener through loopback.
  refused(a + "   - 127.0.0.1:22125:1 r1\nb:\n  listen: 0.0.0.0:22125\n  servers:\n   - 127.0.0.1:11211:1\n",
          "own listener 0.0.0.0:22125");
  refused("chash_proxy:\n  admin: 127.0.0.1:22222\n" + a + "   - localhost:22222:1 r1\n",
          "own listener 127.0.0.1:22222");
  refused("chash_proxy:\n  stats: 127.0.0.1:22223\n" + a + "   - 127.0.0.1:22223:1 r1\n",
          "own listener 127.0.0.1:22223");
  // Port 0 (any free port, as tests listen) and another port are fine.
  EXPECT_NO_THROW((void)parse_config(
      "a:\n  listen: 127.0.0.1:0\n  servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:22121:1\n", "t.yml"));
  // An etcd value (POST /fleet/add, chash fleet, etcdctl) is checked the same way.
  const ProxyConfig c = parse_config(a + "   - 127.0.0.1:6379:1 r1\n", "t.yml");
  EXPECT_THROW((void)servers_from_strings(c.pools[0], {"127.0.0.1:6379:1 r1", "127.0.0.1:22121:1 r2"}),
               Error);
  EXPECT_NO_THROW((void)servers_from_strings(c.pools[0], {"127.0.0.1:6379:1 r1", "127.0.0.1:6380:1 r2"}));
}

// Replicated memcache pools: what `replicas` needs, said at its line.
TEST(ConfigTest, ReplicasAreCheckedWhereTheyCannotWork) {
  const std::string head =
      "p:\n  listen: 127.0.0.1:22121\n  protocol: memcache\n  auto_eject_hosts: true\n";
  const std::string servers =
      "  servers:\n   - /tmp/a.sock:1 a\n   - /tmp/b.sock:1 b\n   - /tmp/c.sock:1 c\n";
  const auto c = parse_config(head + "  replicas: 3\n  write_policy: all\n" + servers, "t.yml");
  EXPECT_EQ(c.pools[0].replicas, 3u);
  EXPECT_EQ(c.pools[0].write_policy, WritePolicy::kAll);
  EXPECT_EQ(parse_config(head + "  replicas: 2\n" + servers, "t.yml").pools[0].write_policy,
            WritePolicy::kMajority);
  EXPECT_NE(error_of(head + "  replicas: 4\n" + servers).find("more than the pool's 3 servers"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  write_policy: all\n" + servers).find("needs replicas: 2 or more"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  replicas: 2\n  write_policy: most\n" + servers)
                .find("unknown write_policy 'most' (all, majority, one)"),
            std::string::npos);
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:22121\n  protocol: memcache\n  replicas: 2\n" +
                     servers)
                .find("replicas needs auto_eject_hosts: true"),
            std::string::npos);
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:22121\n  redis: true\n  auto_eject_hosts: true\n"
                     "  replicas: 2\n" + servers)
                .find("t.yml:5: pool 'p': 'replicas' applies to memcache pools only"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  replicas: 9\n" + servers).find("replicas"), std::string::npos);
  EXPECT_FALSE(c.pools[0].warmup);  // warm-up's moves would delete the other homes' copies
  EXPECT_NE(error_of(head + "  replicas: 2\n  warmup: true\n" + servers).find("drop warmup"),
            std::string::npos);
}

// `failover:` (the failover route of single-owner memcache pools) and what it refuses.
TEST(ConfigTest, FailoverIsCheckedWhereItCannotWork) {
  const std::string head = "p:\n  listen: 127.0.0.1:22121\n  protocol: memcache\n";
  const std::string servers =
      "  servers:\n   - /tmp/a.sock:1 a\n   - /tmp/b.sock:1 b\n   - /tmp/c.sock:1 c\n";
  const auto c = parse_config(
      head + "  failover:\n    tries: 3\n    on_miss: true\n    return_best_on_error: true\n" +
          servers,
      "t.yml");
  EXPECT_EQ(c.pools[0].failover.tries, 3u);
  EXPECT_TRUE(c.pools[0].failover.on_miss);
  EXPECT_TRUE(c.pools[0].failover.return_best_on_error);
  const auto d = parse_config(head + "  failover: {}\n" + servers, "t.yml");
  EXPECT_EQ(d.pools[0].failover.tries, 2u);  // the owner, then the next one
  EXPECT_FALSE(d.pools[0].failover.on_miss);
  EXPECT_FALSE(d.pools[0].failover.return_best_on_error);
  EXPECT_EQ(parse_config(head + servers, "t.yml").pools[0].failover.tries, 1u);  // off
  EXPECT_NE(error_of(head + "  failover:\n    tries: 4\n" + servers)
                .find("t.yml:4: pool 'p': failover tries: 4 is more than the pool's 3 servers"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  failover:\n    tries: 0\n" + servers).find("'tries' must be"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  failover:\n    tries: 9\n" + servers).find("'tries' must be"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  failover:\n    tires: 2\n" + servers)
                .find("t.yml:5: pool 'p': failover: unknown key 'tires' (did you mean 'tries'?)"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  failover: true\n" + servers).find("failover must be a map"),
            std::string::npos);
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:22121\n  redis: true\n  failover: {}\n" + servers)
                .find("t.yml:4: pool 'p': 'failover' applies to memcache pools only"),
            std::string::npos);
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:22121\n  protocol: tcp\n  failover: {}\n" + servers)
                .find("'failover' applies to memcache pools only"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  auto_eject_hosts: true\n  replicas: 2\n  failover: {}\n" + servers)
                .find("t.yml:6: pool 'p': 'failover' is for pools with one owner per key"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  failover_invalidate: false\n  failover: {}\n" + servers)
                .find("failover needs failover_invalidate: true"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  failover:\n    return_best_on_error: true\n" + servers)
                .find("t.yml:5: pool 'p': return_best_on_error needs on_miss: true"),
            std::string::npos);
}

// The shadow route (`shadow:`): another memcache pool, a fraction of keys or a sample of
// requests, refused at its line where it cannot work.
TEST(ConfigTest, ShadowIsCheckedWhereItCannotWork) {
  const std::string canary =
      "canary:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/c1.sock:1 c1\n";
  const auto pool = [](const std::string& shadow) {
    return "p:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/a.sock:1 a\n  shadow:\n" + shadow;
  };
  // Lines: p 1, listen 2, servers 3-4, shadow 5, its first key 6.
  auto c = parse_config(pool("    pool: canary\n    fraction: 0.25\n    commands: writes\n") +
                            canary,
                        "t.yml");
  ASSERT_TRUE(c.pools[0].shadow.has_value());
  EXPECT_EQ(c.pools[0].shadow->pool, "canary");
  EXPECT_EQ(c.pools[0].shadow->from, 0);
  EXPECT_EQ(c.pools[0].shadow->to, 0.25);
  EXPECT_EQ(c.pools[0].shadow->sample, 0);
  EXPECT_EQ(c.pools[0].shadow->commands, ShadowCommands::kWrites);
  EXPECT_FALSE(c.pools[1].shadow.has_value());
  // The defaults: every key, every command.
  c = parse_config(pool("    pool: canary\n") + canary, "t.yml");
  EXPECT_EQ(c.pools[0].shadow->from, 0);
  EXPECT_EQ(c.pools[0].shadow->to, 1);
  EXPECT_EQ(c.pools[0].shadow->commands, ShadowCommands::kAll);
  // A key range (mcrouter's key_fraction_range) and a sample; a pool named later than p.
  c = parse_config(pool("    pool: canary\n    fraction: [0.5, 0.75]\n") + canary, "t.yml");
  EXPECT_EQ(c.pools[0].shadow->from, 0.5);
  EXPECT_EQ(c.pools[0].shadow->to, 0.75);
  c = parse_config(canary + pool("    pool: canary\n    sample: 0.01\n    commands: reads\n"),
                   "t.yml");
  EXPECT_EQ(c.pools[1].shadow->sample, 0.01);
  EXPECT_EQ(c.pools[1].shadow->commands, ShadowCommands::kReads);
  // The point a key falls at: xxh3_64 with the shadow's seed, top 53 bits.
  EXPECT_EQ(shadow_key_point("user:42"),
            static_cast<double>(chash::hash::xxh3_64("user:42", 0x73686164) >> 11) * 0x1p-53);

  const auto refused = [&](const std::string& shadow, const std::string& rest,
                           const std::string& want) {
    const std::string e = error_of(pool(shadow) + rest);
    EXPECT_NE(e.find(want), std::string::npos) << "got: " << e;
  };
  refused("    pool: nosuch\n", canary,
          "t.yml:6: pool 'p': shadow pool 'nosuch' is not a pool of this config");
  refused("    pool: canry\n", canary, "(did you mean 'canary'?)");
  refused("    pool: p\n", canary, "t.yml:6: pool 'p': shadow pool is the pool itself");
  refused("    pool: canary\n",
          "canary:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n   - /tmp/c1.sock:1 c1\n",
          "t.yml:6: pool 'p': shadow pool 'canary' is a redis pool");
  refused("    pool: canary\n",
          "canary:\n  listen: 127.0.0.1:0\n  protocol: tcp\n  servers:\n   - /tmp/c1.sock:1 c1\n",
          "shadow pool 'canary' is a tcp pool");
  refused("    pool: canary\n    fraction: 0\n", canary,
          "t.yml:7: pool 'p': shadow fraction must be a number above 0 up to 1, got '0'");
  refused("    pool: canary\n    fraction: 1.5\n", canary, "t.yml:7: pool 'p': shadow fraction");
  refused("    pool: canary\n    fraction: half\n", canary, "got 'half'");
  refused("    pool: canary\n    fraction: [0.5, 0.25]\n", canary, "t.yml:7: pool 'p': shadow "
          "fraction range [from, to] needs from below to");
  refused("    pool: canary\n    fraction: [0.5]\n", canary, "two numbers");
  refused("    pool: canary\n    sample: -0.1\n", canary, "t.yml:7: pool 'p': shadow sample");
  refused("    pool: canary\n    fraction: 0.5\n    sample: 0.1\n", canary,
          "t.yml:8: pool 'p': shadow takes 'fraction' (of keys) or 'sample' (of requests), not "
          "both");
  refused("    pool: canary\n    commands: gets\n", canary,
          "t.yml:7: pool 'p': unknown shadow commands 'gets' (all, reads, writes)");
  refused("    pool: canary\n    fracton: 0.5\n", canary,
          "t.yml:7: pool 'p': unknown shadow key 'fracton' (did you mean 'fraction'?)");
  refused("    fraction: 0.5\n", canary, "pool 'p': shadow needs 'pool'");
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/a.sock:1 a\n  shadow: "
                     "canary\n" + canary)
                .find("t.yml:5: pool 'p': 'shadow' must be a map"),
            std::string::npos);
  // Only a memcache pool's requests are copied.
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n   - /tmp/a.sock:1 "
                     "a\n  shadow:\n    pool: canary\n" + canary)
                .find("t.yml:6: pool 'p': 'shadow' applies to memcache pools only (this one is "
                      "redis)"),
            std::string::npos);
}

// Prefix routes (`prefix_routes:`): a map of key prefix to another memcache pool that routes no
// prefixes itself, kept in the config's order; refused at its line where it cannot work.
TEST(ConfigTest, PrefixRoutesAreCheckedWhereTheyCannotWork) {
  const std::string users = "users:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/u.sock:1 u\n";
  const std::string vip = "vip:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/v.sock:1 v\n";
  const auto pool = [](const std::string& routes) {
    return "p:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/a.sock:1 a\n  prefix_routes:\n" +
           routes;
  };
  ProxyConfig c = parse_config(pool("    \"u:\": users\n    u:vip:: vip\n") + users + vip, "t.yml");
  ASSERT_EQ(c.pools[0].prefix_routes.size(), 2u);
  EXPECT_EQ(c.pools[0].prefix_routes[0].prefix, "u:");
  EXPECT_EQ(c.pools[0].prefix_routes[0].pool, "users");
  EXPECT_EQ(c.pools[0].prefix_routes[0].line, 6);
  EXPECT_EQ(c.pools[0].prefix_routes[1].prefix, "u:vip:");
  EXPECT_EQ(c.pools[0].prefix_routes[1].pool, "vip");
  EXPECT_TRUE(c.pools[1].prefix_routes.empty());

  const auto refused = [&](const std::string& routes, const std::string& rest,
                           const std::string& want) {
    const std::string e = error_of(pool(routes) + rest);
    EXPECT_NE(e.find(want), std::string::npos) << "got: " << e;
  };
  refused("    \"u:\": nosuch\n", users,
          "t.yml:6: pool 'p': prefix_routes pool 'nosuch' is not a pool of this config");
  refused("    \"u:\": usres\n", users, "(did you mean 'users'?)");
  refused("    \"u:\": p\n", users, "t.yml:6: pool 'p': prefix_routes pool is the pool itself");
  refused("    \"u:\": users\n",
          "users:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n   - /tmp/u.sock:1 u\n",
          "t.yml:6: pool 'p': prefix_routes pool 'users' is a redis pool");
  refused("    \"u:\": users\n",
          "users:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/u.sock:1 u\n  prefix_routes:\n"
          "    \"x\": vip\n" + vip,
          "t.yml:6: pool 'p': prefix_routes pool 'users' has prefix_routes of its own");
  refused("    \"u:\": users\n    \"u:\": vip\n", users + vip, "t.yml:7: pool 'p': prefix_routes");
  refused("    \"u :\": users\n", users,
          "t.yml:6: pool 'p': prefix_routes prefix 'u :' has a space or control character");
  refused("    \"\": users\n", users, "t.yml:6: pool 'p': a prefix_routes prefix must be a non-empty");
  refused("    \"u:\": \"\"\n", users, "prefix_routes prefix 'u:' needs a pool name");
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:0\n  servers:\n   - /tmp/a.sock:1 a\n  "
                     "prefix_routes: users\n" + users)
                .find("t.yml:5: pool 'p': 'prefix_routes' must be a map of key prefix to memcache "
                      "pool"),
            std::string::npos);
  EXPECT_NE(error_of("p:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n   - /tmp/a.sock:1 "
                     "a\n  prefix_routes:\n    \"u:\": users\n" + users)
                .find("t.yml:6: pool 'p': 'prefix_routes' applies to memcache pools only (this one "
                      "is redis)"),
            std::string::npos);
}

}  // namespace
}  // namespace chash::proxy
