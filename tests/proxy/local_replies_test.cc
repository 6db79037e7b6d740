// SPDX-License-Identifier: Apache-2.0
// The replies chash-proxy makes itself for client handshakes (proto/redis/local_replies.h), in
// the byte shapes a RESP2 redis-server 7 sends, and the transaction queue's rules and bounds
// (proto/redis/transaction.h).
#include "proto/redis/local_replies.h"

#include <gtest/gtest.h>

#include <string>

#include "chash/version.h"
#include "proto/redis/commands.h"
#include "proto/redis/resp.h"
#include "proto/redis/transaction.h"

namespace chash::proxy::redis {
namespace {

std::string b(std::string_view s) {
  std::string o;
  append_bulk(o, s);
  return o;
}

TEST(LocalRepliesTest, ClientNamesAsRedisValidatesThem) {
  EXPECT_TRUE(valid_client_name(""));
  EXPECT_TRUE(valid_client_name("app-1:worker/2"));
  EXPECT_TRUE(valid_client_name("~!"));
  EXPECT_FALSE(valid_client_name("a b"));
  EXPECT_FALSE(valid_client_name("a\nb"));
  EXPECT_FALSE(valid_client_name("caf\xc3\xa9"));
  EXPECT_FALSE(valid_client_name(std::string("a\0b", 3)));
}

TEST(LocalRepliesTest, HelloIsRedisMapFlattenedForResp2) {
  EXPECT_EQ(hello_reply(42), "*14\r\n" + b("server") + b("chash-proxy") + b("version") +
                                 b(CHASH_VERSION_STRING) + b("proto") + ":2\r\n" + b("id") +
                                 ":42\r\n" + b("mode") + b("standalone") + b("role") + b("master") +
                                 b("modules") + "*0\r\n");
}

TEST(LocalRepliesTest, ClientInfoLineHasRedisFieldsInOrder) {
  ClientFacts f;
  f.id = 7;
  f.addr = "127.0.0.1:5000";
  f.laddr = "127.0.0.1:6379";
  f.fd = 9;
  f.name = "w";
  f.lib_name = "ioredis";
  f.lib_ver = "5.4.1";
  f.age_s = 3;
  const std::string line = client_info_line(f);
  EXPECT_EQ(line.rfind("id=7 addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=9 name=w age=3 idle=0 "
                       "flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 ",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find(" user=default redir=-1 resp=2 lib-name=ioredis lib-ver=5.4.1\n"),
            std::string::npos)
      << line;
  f.multi = true;
  f.multi_commands = 2;
  f.user = "alice";
  const std::string in_multi = client_info_line(f);
  EXPECT_NE(in_multi.find(" flags=x "), std::string::npos);
  EXPECT_NE(in_multi.find(" multi=2 "), std::string::npos);
  EXPECT_NE(in_multi.find(" user=alice "), std::string::npos);
}

TEST(LocalRepliesTest, InfoHasTheSectionsClientsRead) {
  const std::string all = info_reply("", 3);
  for (const char* s :
       {"# Server\r\nredis_version:7.0.15\r\n", "redis_mode:standalone\r\n",
        "connected_clients:3\r\n", "loading:0\r\n", "role:master\r\n", "# Keyspace\r\n"}) {
    EXPECT_NE(all.find(s), std::string::npos) << s;
  }
  EXPECT_EQ(info_reply("default", 3), all);
  EXPECT_EQ(info_reply("ALL", 3), all);
  EXPECT_EQ(info_reply("Persistence", 1), b("# Persistence\r\nloading:0\r\n"));
  EXPECT_EQ(info_reply("commandstats", 1), b(""));  // unknown to the proxy: empty, as Redis
  // A well-formed bulk string: its announced length is its body's.
  ASSERT_EQ(all[0], '$');
  const std::size_t nl = all.find("\r\n");
  EXPECT_EQ(std::stoul(all.substr(1, nl - 1)), all.size() - nl - 4);
}

TEST(LocalRepliesTest, CommandEntriesHaveRedis7sTenFields) {
  std::string out;
  append_command_entry(out, *find_command("get"));
  EXPECT_EQ(out, "*10\r\n" + b("get") + ":2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n");
  out.clear();
  append_command_entry(out, *find_command("mset"));
  EXPECT_EQ(out,
            "*10\r\n" + b("mset") + ":-3\r\n*0\r\n:1\r\n:-1\r\n:2\r\n*0\r\n*0\r\n*0\r\n*0\r\n");
  out.clear();
  append_command_entry(out, *find_command("ping"));  // no keys: 0 0 0
  EXPECT_EQ(out, "*10\r\n" + b("ping") + ":-1\r\n*0\r\n:0\r\n:0\r\n:0\r\n*0\r\n*0\r\n*0\r\n*0\r\n");
  // COMMAND lists what the proxy serves, not what it refuses.
  EXPECT_TRUE(command_listed(*find_command("multi")));
  EXPECT_TRUE(command_listed(*find_command("client")));
  EXPECT_TRUE(command_listed(*find_command("keys")));  // exact on one server, merged on several
  EXPECT_FALSE(command_listed(*find_command("monitor")));
  EXPECT_TRUE(command_listed(*find_command("subscribe")));  // proto/redis/session_pubsub.cc
  std::size_t n = 0;
  for (const Command& c : command_table()) n += c.route != Route::kUnsupported ? 1 : 0;
  EXPECT_EQ(listed_command_count(), n);
  EXPECT_GT(n, 150u);
}

TEST(TransactionTest, KeysMustMapToOneBackend) {
  Transaction t;
  EXPECT_FALSE(t.active());
  t.begin(kNoNode, 1 << 20);
  EXPECT_TRUE(t.active());
  EXPECT_EQ(t.queue(kNoNode, "*1\r\n$4\r\nPING\r\n"), "");  // key-less: goes with the others
  EXPECT_EQ(t.node(), kNoNode);
  EXPECT_EQ(t.queue(2, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"), "");
  EXPECT_EQ(t.node(), 2u);
  EXPECT_FALSE(t.aborted());
  EXPECT_EQ(t.queue(1, "*2\r\n$3\r\nGET\r\n$1\r\nb\r\n"), kCrossBackendTransaction);
  EXPECT_TRUE(t.aborted());
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.command(0), "*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(t.command(1), "*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
  t.reset();
  EXPECT_FALSE(t.active());
  EXPECT_FALSE(t.aborted());
  EXPECT_EQ(t.size(), 0u);
  // After WATCH the watched backend is the transaction's.
  t.begin(1, 1 << 20);
  EXPECT_EQ(t.queue(0, "x"), kCrossBackendTransaction);
}

TEST(TransactionTest, QueueIsBoundedInCommandsAndBytes) {
  Transaction t;
  t.begin(kNoNode, 100);
  EXPECT_EQ(t.queue(0, std::string(60, 'a')), "");
  EXPECT_EQ(t.queue(0, std::string(40, 'b')), "");  // exactly 100
  EXPECT_NE(t.queue(0, "c"), "");
  EXPECT_TRUE(t.aborted());
  EXPECT_EQ(t.bytes(), 100u);
  t.begin(kNoNode, std::size_t{1} << 30);
  for (std::size_t i = 0; i < Transaction::kMaxCommands; ++i) ASSERT_EQ(t.queue(0, "x"), "");
  EXPECT_EQ(t.queue(0, "x"), "ERR chash-proxy: a transaction may queue at most 10000 commands");
  EXPECT_TRUE(t.aborted());
}

}  // namespace
}  // namespace chash::proxy::redis
