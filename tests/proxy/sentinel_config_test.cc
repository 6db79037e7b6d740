// SPDX-License-Identifier: Apache-2.0
// Sentinel-managed servers: the config keys and their errors, and the pure parts of
// membership/sentinel.h (the RESP reader, the majority rule, the replica list).
#include <gtest/gtest.h>

#include "chash/error.h"
#include "config/config.h"
#include "membership/sentinel.h"

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

TEST(SentinelConfigTest, ManagedServersParse) {
  const auto c = parse_config(R"(alpha:
  listen: 127.0.0.1:22121
  redis: true
  sentinels: [127.0.0.1:26379, "127.0.0.1:26380"]
  servers:
    - {name: shard-a, sentinel_master: mymaster-a, weight: 2}
    - {sentinel_master: mymaster-b}
    - 127.0.0.1:6379:1 plain
)",
                              "t.yml");
  const PoolConfig& p = c.pools.at(0);
  ASSERT_EQ(p.sentinels.size(), 2u);
  EXPECT_EQ(p.sentinels[1].text(), "127.0.0.1:26380");
  ASSERT_EQ(p.servers.size(), 3u);
  EXPECT_EQ(p.servers[0].name, "shard-a");
  EXPECT_EQ(p.servers[0].sentinel_master, "mymaster-a");
  EXPECT_EQ(p.servers[0].weight, 2u);
  EXPECT_EQ(p.servers[0].address.text(), "sentinel/mymaster-a:0");
  EXPECT_EQ(p.servers[1].name, "mymaster-b");  // the group names the shard by default
  EXPECT_EQ(p.servers[1].weight, 1u);
  EXPECT_TRUE(p.servers[2].sentinel_master.empty());
}

TEST(SentinelConfigTest, Errors) {
  const std::string head = "alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n";
  EXPECT_NE(error_of(head + "  servers:\n    - {name: a, sentinel_master: m}\n")
                .find("names a sentinel_master but the pool lists no 'sentinels'"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: [127.0.0.1:1]\n  servers:\n    - 127.0.0.1:6379:1\n")
                .find("'sentinels' is given but no server names a 'sentinel_master'"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: [127.0.0.1:1]\n  servers:\n"
                            "    - {server: 127.0.0.1:6379:1, sentinel_master: m}\n")
                .find("either 'server' (an address) or 'sentinel_master'"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: [127.0.0.1:1]\n  servers:\n"
                            "    - {sentinel_master: \"two words\"}\n")
                .find("one printable word"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: 127.0.0.1:1\n  servers:\n    - {sentinel_master: m}\n")
                .find("'sentinels' must be a list"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: [/tmp/s.sock]\n  servers:\n    - {sentinel_master: m}\n")
                .find("a sentinel is host:port"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: [127.0.0.1:1, 127.0.0.1:1]\n  servers:\n"
                            "    - {sentinel_master: m}\n")
                .find("listed twice"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  sentinels: [127.0.0.1:1]\n  servers:\n"
                            "    - {sentinel_master: m, colour: red}\n")
                .find("unknown server key 'colour'"),
            std::string::npos);
  EXPECT_NE(error_of(head + "  servers:\n    - {server: 127.0.0.1:6379:1, weight: 3}\n")
                .find("belong in the 'server' spec"),
            std::string::npos);
  EXPECT_NE(error_of("alpha:\n  listen: 127.0.0.1:22121\n  sentinels: [127.0.0.1:1]\n"
                     "  servers:\n    - {sentinel_master: m}\n")
                .find("applies to redis pools only"),
            std::string::npos);
  // Two servers for one master group would be one backend twice.
  EXPECT_NE(error_of(head + "  sentinels: [127.0.0.1:1]\n  servers:\n"
                            "    - {name: a, sentinel_master: m}\n"
                            "    - {name: b, sentinel_master: m}\n")
                .find("master group 'm' is named by two servers"),
            std::string::npos);
}

TEST(SentinelConfigTest, RespReader) {
  const std::string in = "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6379\r\n*-1\r\n-ERR x\r\n";
  std::size_t pos = 0;
  RespValue v;
  ASSERT_EQ(parse_resp(in, pos, v), 1);
  ASSERT_EQ(v.items.size(), 2u);
  EXPECT_EQ(v.items[1].str, "6379");
  RespValue nil;
  ASSERT_EQ(parse_resp(in, pos, nil), 1);
  EXPECT_TRUE(nil.nil);
  RespValue err;
  ASSERT_EQ(parse_resp(in, pos, err), 1);
  EXPECT_EQ(err.type, '-');
  EXPECT_EQ(pos, in.size());
  // Incomplete, malformed, too deep, too large.
  std::size_t p0 = 0;
  RespValue x;
  EXPECT_EQ(parse_resp("*2\r\n$3\r\nab", p0, x), 0);
  EXPECT_EQ(p0, 0u);
  EXPECT_EQ(parse_resp("?\r\n", p0, x), -1);
  EXPECT_EQ(parse_resp("$abc\r\n", p0, x), -1);
  EXPECT_EQ(parse_resp("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", p0, x), -1);
  EXPECT_EQ(parse_resp("$99999999999\r\n", p0, x), -1);
  EXPECT_EQ(parse_resp("*99999999\r\n", p0, x), -1);
}

TEST(SentinelConfigTest, MajorityOfReachableSentinels) {
  auto said = [](bool reachable, std::string master) {
    SentinelAnswer a;
    a.reachable = reachable;
    a.master = std::move(master);
    return a;
  };
  EXPECT_EQ(agreed_master({said(true, "a:1"), said(true, "a:1"), said(true, "b:1")}), "a:1");
  // One against one (the third unreachable): no majority, keep the last master.
  EXPECT_EQ(agreed_master({said(true, "a:1"), said(false, ""), said(true, "b:1")}), "");
  EXPECT_EQ(agreed_master({said(true, "a:1"), said(true, "b:1"), said(true, "c:1")}), "");
  // A Sentinel that does not know the group counts against.
  EXPECT_EQ(agreed_master({said(true, "a:1"), said(true, "")}), "");
  // Two unreachable: the one that answers is the majority of those reachable.
  EXPECT_EQ(agreed_master({said(false, ""), said(false, ""), said(true, "b:1")}), "b:1");
  EXPECT_EQ(agreed_master({said(false, ""), said(false, "")}), "");
}

TEST(SentinelConfigTest, ReplicaList) {
  const std::string in =
      "*3\r\n"
      "*8\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$4\r\n7001\r\n"
      "$5\r\nflags\r\n$5\r\nslave\r\n$18\r\nmaster-link-status\r\n$2\r\nok\r\n"
      "*8\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$4\r\n7002\r\n"
      "$5\r\nflags\r\n$12\r\nslave,s_down\r\n$18\r\nmaster-link-status\r\n$2\r\nok\r\n"
      "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n";  // no port: skipped
  std::size_t pos = 0;
  RespValue v;
  ASSERT_EQ(parse_resp(in, pos, v), 1);
  const auto r = parse_replicas(v);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].address, "127.0.0.1:7001");
  EXPECT_TRUE(r[0].usable);
  EXPECT_FALSE(r[1].usable);
}

}  // namespace
}  // namespace chash::proxy
