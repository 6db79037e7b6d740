// SPDX-License-Identifier: Apache-2.0
// etcd's v3 JSON (membership/etcd/json.h): the request bodies, replies as etcd 3.4's gateway
// sends them (captured from etcd-server 3.4.23), the watch stream's framing, and refusals.
#include <gtest/gtest.h>

#include "membership/etcd/client.h"
#include "membership/etcd/json.h"

namespace chash::proxy::etcd {
namespace {

TEST(EtcdJsonTest, Base64AsGoStdEncoding) {
  EXPECT_EQ(base64_encode("/chash/x"), "L2NoYXNoL3g=");
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode(std::string("\0\xff", 2)), "AP8=");
  for (const std::string s : {"", "a", "ab", "abc", "abcd", "/chash/pools/p/servers"}) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  for (const char* bad : {"a", "abc", "ab!=", "a=bc", "====", "ab=c"}) {
    EXPECT_THROW(base64_decode(bad), EtcdError) << bad;
  }
}

TEST(EtcdJsonTest, PrefixEndIsEtcdctlsPrefixRange) {
  EXPECT_EQ(prefix_end("/chash/"), "/chash0");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff", 1)), std::string(1, '\0'));
}

TEST(EtcdJsonTest, ReadsTheGatewaysReplies) {
  const RangeReply r = parse_range(
      R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952","revision":"2","raft_term":"2"},"kvs":[{"key":"L2NoYXNoL3g=","create_revision":"2","mod_revision":"2","version":"1","value":"WyJhIl0="}],"count":"1"})");
  EXPECT_EQ(r.revision, 2);
  ASSERT_EQ(r.kvs.size(), 1u);
  EXPECT_EQ(r.kvs[0].key, "/chash/x");
  EXPECT_EQ(r.kvs[0].value, "[\"a\"]");
  EXPECT_EQ(r.kvs[0].mod_revision, 2);
  EXPECT_EQ(r.kvs[0].lease, 0);
  const TxnReply t = parse_txn(
      R"({"header":{"revision":"5"},"responses":[{"response_range":{"header":{"revision":"5"},"kvs":[{"key":"L2NoYXNoL3g=","create_revision":"2","mod_revision":"5","version":"2","value":"bmV3"}],"count":"1"}}]})");
  EXPECT_FALSE(t.succeeded);  // omitted: proto3's default
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.ranges[0].kvs[0].value, "new");
  EXPECT_TRUE(
      parse_txn(
          R"({"header":{"revision":"5"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"5"}}}]})")
          .succeeded);
  std::int64_t ttl = 0;
  EXPECT_EQ(parse_lease_grant(R"({"header":{},"ID":"2324035780084680711","TTL":"5"})", &ttl),
            2324035780084680711);
  EXPECT_EQ(ttl, 5);
  EXPECT_EQ(parse_lease_keepalive(R"({"result":{"header":{},"ID":"1","TTL":"5"}})"), 5);
  EXPECT_EQ(parse_lease_keepalive(R"({"result":{"header":{},"ID":"1"}})"), 0);  // expired
  const auto e = parse_error(
      R"({"error":"illegal base64 data at input byte 9","message":"illegal base64 data at input byte 9","code":3})");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, 3);
  EXPECT_EQ(e->message, "illegal base64 data at input byte 9");
  EXPECT_FALSE(parse_error("{\"header\":{}}").has_value());
}

TEST(EtcdJsonTest, WatchMessagesAndCompaction) {
  const WatchReply created =
      parse_watch(R"({"result":{"header":{"revision":"2","raft_term":"2"},"created":true}})");
  EXPECT_TRUE(created.created);
  EXPECT_TRUE(created.events.empty());
  const WatchReply put = parse_watch(
      R"({"result":{"header":{"revision":"3"},"events":[{"kv":{"key":"L2NoYXNoL3k=","create_revision":"3","mod_revision":"3","version":"1","value":"aGk="}},{"type":"DELETE","kv":{"key":"L2NoYXNoL3k=","mod_revision":"4"}}]}})");
  ASSERT_EQ(put.events.size(), 2u);
  EXPECT_FALSE(put.events[0].deleted);
  EXPECT_EQ(put.events[0].kv.value, "hi");
  EXPECT_TRUE(put.events[1].deleted);
  EXPECT_EQ(put.events[1].kv.mod_revision, 4);
  const WatchReply compacted = parse_watch(
      R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"4"}})");
  EXPECT_TRUE(compacted.canceled);
  EXPECT_EQ(compacted.compact_revision, 4);
  EXPECT_THROW(parse_watch(R"({"error":{"grpc_code":14,"message":"etcdserver: no leader"}})"),
               EtcdError);
  EXPECT_THROW(parse_watch(R"({"result":{"events":[{"type":"EXPLODE","kv":{}}]}})"), EtcdError);
}

TEST(EtcdJsonTest, RefusesWhatEtcdDoesNotSend) {
  for (const char* bad :
       {"", "[", "[]", "null", "{\"kvs\":{}}", "{\"kvs\":[1]}", "{\"kvs\":[{\"key\":\"!!\"}]}",
        "{\"header\":{\"revision\":\"x\"}}", "{\"header\":{\"revision\":\"99999999999999999999\"}}",
        "{\"header\":{\"revision\":true}}"}) {
    EXPECT_THROW(parse_range(bad), EtcdError) << bad;
  }
  EXPECT_THROW(parse_lease_grant("{\"TTL\":\"5\"}"), EtcdError);
  EXPECT_THROW(parse_authenticate("{}"), EtcdError);
}

TEST(EtcdJsonTest, WatchStreamSplitsLinesAcrossReads) {
  WatchStream s(64);
  EXPECT_TRUE(s.feed("{\"a\":").empty());
  EXPECT_EQ(s.feed("1}\n{\"b\""), std::vector<std::string>{"{\"a\":1}"});
  EXPECT_EQ(s.feed(":2}\r\n\n{\"c\":3}\n"), (std::vector<std::string>{"{\"b\":2}", "{\"c\":3}"}));
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_THROW(s.feed(std::string(100, 'x')), EtcdError);  // past the bound, no newline
  EXPECT_EQ(s.pending(), 0u);
}

TEST(EtcdJsonTest, RequestBodiesAreTheGatewaysJson) {
  EXPECT_EQ(range_request("/a", "/b"), R"({"key":"L2E=","range_end":"L2I="})");
  EXPECT_EQ(put_request("/a", "v", 7), R"({"key":"L2E=","lease":"7","value":"dg=="})");
  Compare c;
  c.key = "/a";
  c.target = Compare::Target::kCreate;
  c.number = 0;
  EXPECT_EQ(
      txn_request({c}, {Op::put("/a", "v")}, {}),
      R"({"compare":[{"create_revision":"0","key":"L2E=","result":"EQUAL","target":"CREATE"}],"failure":[],"success":[{"request_put":{"key":"L2E=","value":"dg=="}}]})");
  EXPECT_EQ(
      watch_request("/a", "/b", 5),
      R"({"create_request":{"key":"L2E=","progress_notify":true,"range_end":"L2I=","start_revision":"5"}})");
}

TEST(EtcdJsonTest, EndpointsParse) {
  EXPECT_EQ(parse_endpoint("127.0.0.1:2379").text(), "127.0.0.1:2379");
  EXPECT_EQ(parse_endpoint("http://10.0.0.1:12379/").text(), "10.0.0.1:12379");
  EXPECT_EQ(parse_endpoint("etcd-1").text(), "etcd-1:2379");
  for (const char* bad : {"", ":2379", "h:0", "h:70000", "h:x", "a b:1"}) {
    EXPECT_THROW(parse_endpoint(bad), EtcdError) << bad;
  }
}

TEST(EtcdClientTest, AnUnreachableEndpointSaysWhy) {
  ClientOptions o;
  o.endpoints = {{"127.0.0.1", 1}};
  o.timeout = std::chrono::milliseconds(300);
  Client c(o);
  try {
    c.get("/x");
    FAIL() << "no etcd on port 1";
  } catch (const EtcdError& e) {
    EXPECT_NE(std::string(e.what()).find("etcd 127.0.0.1:1: Connection refused"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace chash::proxy::etcd
