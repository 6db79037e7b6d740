// SPDX-License-Identifier: Apache-2.0
// `membership:` (config/membership_parser.cc): where a pool's servers come from — the top-level
// default, per-pool overrides and opt-outs, and the refusals, each naming its line.
#include <gtest/gtest.h>

#include "chash/error.h"
#include "config/config.h"

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

const std::string kPool =
    "cache:\n  listen: 127.0.0.1:22121\n  redis: true\n  servers:\n    - 127.0.0.1:6379:1 r1\n";

TEST(MembershipConfigTest, TopLevelIsEveryPlainPoolsDefault) {
  const ProxyConfig c = parse_config(
      kPool +
          "chash_proxy:\n  membership:\n    etcd: [127.0.0.1:2379, http://10.0.0.2:2379]\n"
          "    prefix: /fleet/\n    id: edge-1\n    lease_ttl: 3000\n    quorum: 2\n"
          "    auth: {user: chash, password: s3cret}\n    tls: {ca: /etc/ca.pem}\n"
          "    rebalance_rate: 500\n"
          "own:\n  listen: 127.0.0.1:22122\n  membership: file\n  servers:\n    - "
          "127.0.0.1:11211:1\n",
      "t.yml");
  ASSERT_EQ(c.pools.size(), 2u);
  const auto& m = c.pools[0].etcd;  // the process section was read first, wherever it is
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->endpoints, (std::vector<std::string>{"127.0.0.1:2379", "10.0.0.2:2379"}));
  EXPECT_EQ(m->prefix, "/fleet");
  EXPECT_EQ(m->id, "edge-1");
  EXPECT_EQ(m->lease_ttl_ms, 3000u);
  EXPECT_EQ(m->quorum, 2u);
  EXPECT_EQ(m->user, "chash");
  EXPECT_TRUE(m->tls);
  EXPECT_EQ(m->ca, "/etc/ca.pem");
  EXPECT_EQ(m->rebalance_rate, 500);
  EXPECT_EQ(c.pools[1].etcd, nullptr);  // membership: file
  EXPECT_EQ(c.membership, m);
}

TEST(MembershipConfigTest, APoolsMapOverridesTheDefaultKeyByKey) {
  const ProxyConfig c =
      parse_config("chash_proxy:\n  membership:\n    etcd: [127.0.0.1:2379]\n    quorum: 2\n" +
                       kPool + "  membership:\n    prefix: /other\n",
                   "t.yml");
  const auto& m = *c.pools[0].etcd;
  EXPECT_EQ(m.prefix, "/other");
  EXPECT_EQ(m.quorum, 2u);  // from the default
  EXPECT_NE(m.connection_key(), c.membership->connection_key());
  // Without a default: a pool's own map.
  const ProxyConfig d = parse_config(kPool + "  membership: {etcd: 127.0.0.1:2379}\n", "t.yml");
  ASSERT_NE(d.pools[0].etcd, nullptr);
  EXPECT_EQ(d.pools[0].etcd->prefix, "/chash");
  EXPECT_EQ(d.membership, nullptr);
}

TEST(MembershipConfigTest, BadMembershipIsRefusedAtItsLine) {
  EXPECT_EQ(
      error_of(kPool + "  membership: etcd\n"),
      "t.yml:6: pool 'cache': 'membership: etcd' needs chash_proxy: membership: {etcd: [...]}");
  EXPECT_EQ(error_of(kPool + "  membership: [1]\n"),
            "t.yml:6: pool 'cache': 'membership' must be file, etcd or a map {etcd: ...}");
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    prefix: /x\n" + kPool)
                .find("'etcd' (its endpoints) is required"),
            std::string::npos);
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [localhost]\n" + kPool)
                .find("etcd endpoint 'localhost' is not host:port"),
            std::string::npos);
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [h:99999]\n" + kPool)
                .find("is not host:port"),
            std::string::npos);
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [h:1]\n    prefix: chash\n" + kPool)
                .find("'prefix' must be a key path like /chash"),
            std::string::npos);
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [h:1]\n    id: a/b\n" + kPool)
                .find("'id' names this proxy"),
            std::string::npos);
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [h:1]\n    lease_ttl: 100\n" + kPool)
                .find("'lease_ttl' must be a whole number from 2000"),
            std::string::npos);
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [h:1]\n    quorm: 2\n" + kPool)
                .find("unknown key 'quorm' (did you mean 'quorum'?)"),
            std::string::npos);
  EXPECT_NE(
      error_of("chash_proxy:\n  membership:\n    etcd: [h:1]\n    tls: {cert: c.pem}\n" + kPool)
          .find("give both cert and key"),
      std::string::npos);
  EXPECT_NE(
      error_of("chash_proxy:\n  membership:\n    etcd: [h:1]\n    auth: {password: x}\n" + kPool)
          .find("auth: 'user' is required"),
      std::string::npos);
}

TEST(MembershipConfigTest, SourcesOfTheirOwnStayTheirs) {
  // A Redis Cluster pool keeps its cluster as its source, even under a top-level default...
  const ProxyConfig c = parse_config(
      "chash_proxy:\n  membership:\n    etcd: [127.0.0.1:2379]\n"
      "c:\n  listen: 127.0.0.1:22121\n  redis: true\n  cluster: [127.0.0.1:7000]\n",
      "t.yml");
  EXPECT_EQ(c.pools[0].etcd, nullptr);
  // ... and says so when asked for etcd.
  EXPECT_NE(error_of("chash_proxy:\n  membership:\n    etcd: [127.0.0.1:2379]\n"
                     "c:\n  listen: 127.0.0.1:22121\n  redis: true\n  cluster: [127.0.0.1:7000]\n"
                     "  membership: etcd\n")
                .find("not taken from etcd"),
            std::string::npos);
}

TEST(MembershipConfigTest, ServerStringsParseAsThePoolsServers) {
  const ProxyConfig c = parse_config(kPool, "t.yml");
  const auto s = servers_from_strings(c.pools[0], {"127.0.0.1:6379:2 a", "/tmp/r.sock:1 b"});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].weight, 2u);
  EXPECT_EQ(s[1].address.unix_path, "/tmp/r.sock");
  EXPECT_EQ(server_name("127.0.0.1:6379:1"), "127.0.0.1:6379");
  auto refused = [&](const std::vector<std::string>& v) {
    try {
      (void)servers_from_strings(c.pools[0], v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refused({}), "no servers (a pool needs at least one)");
  EXPECT_NE(
      refused({"127.0.0.1:1:1 a", "127.0.0.1:2:1 a"}).find("server 2: the name 'a' is given twice"),
      std::string::npos);
  EXPECT_NE(refused({"127.0.0.1:1:0 a"}).find("server 1: server: weight '0'"), std::string::npos);
  EXPECT_NE(refused({"nonsense"}).find("expected 'host:port:weight [name]'"), std::string::npos);
}

}  // namespace
}  // namespace chash::proxy
