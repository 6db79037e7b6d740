// SPDX-License-Identifier: Apache-2.0
// Redis transactions and client handshakes through chash-proxy, against three real
// redis-servers on unix sockets: MULTI/EXEC on hash-tagged keys on each backend, the
// cross-backend refusal (then -EXECABORT), WATCH conflicts (EXEC's null reply), DISCARD,
// nested MULTI, EXEC/DISCARD without MULTI, ACL checks on queued commands, a WATCH connection
// lost to a dead backend; and CLIENT / HELLO / SELECT / COMMAND / INFO answered locally.
#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "proto/redis/local_replies.h"
#include "redis_util.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
using testing::bulk;
using testing::RedisServer;
using testing::RespClient;

class TransactionE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::have_redis()) << "redis-server not installed (scripts/bootstrap.sh)";
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("chash-tx-e2e");
    for (int i = 1; i <= 3; ++i) {
      servers_.push_back(std::make_unique<RedisServer>(dir_, "r" + std::to_string(i)));
      ASSERT_TRUE(servers_.back()->start()) << "redis-server r" << i << " did not start";
    }
  }
  void TearDown() override {
    proxy_.stop();
    servers_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void start(const std::string& extra = "") {
    std::string y = "alpha:\n  listen: 127.0.0.1:0\n  redis: true\n  hash_tag: \"{}\"\n" + extra +
                    "  servers:\n";
    for (int i = 1; i <= 3; ++i) {
      y += "    - " + (dir_ / ("r" + std::to_string(i) + ".sock")).string() + ":1 r" +
           std::to_string(i) + "\n";
    }
    proxy_.start(dir_, y, 1);
  }
  RespClient client() { return RespClient(RespClient::dial_tcp(proxy_->port(0))); }
  NodeId node_of(const std::string& key) { return proxy_->topology()->pools[0]->route(key); }
  // One hash tag per backend ("{t3}" ...), found by asking the proxy's own router.
  std::array<std::string, 3> tag_per_backend() {
    std::array<std::string, 3> tags;
    for (int i = 0; i < 1000; ++i) {
      const std::string tag = "{t" + std::to_string(i) + "}";
      std::string& slot = tags[node_of(tag + "x")];
      if (slot.empty()) slot = tag;
    }
    return tags;
  }
  std::string direct_get(NodeId node, const std::string& key) {
    RespClient c(RespClient::dial_unix(servers_[node]->socket()));
    return c.call({"GET", key});
  }

  fs::path dir_;
  std::vector<std::unique_ptr<RedisServer>> servers_;
  testing::ProxyRunner proxy_;
};

// MULTI/EXEC on tagged keys that live on each of the three backends: every command is QUEUED,
// EXEC returns the backend's array, the writes are on the tag's backend.
TEST_F(TransactionE2E, MultiExecOnTaggedKeysOnEveryBackend) {
  start();
  const auto tags = tag_per_backend();
  auto c = client();
  for (NodeId n = 0; n < 3; ++n) {
    ASSERT_FALSE(tags[n].empty());
    const std::string a = tags[n] + "a", b = tags[n] + "b", l = tags[n] + "list";
    EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
    EXPECT_EQ(c.call({"SET", a, "1"}), "+QUEUED\r\n");
    EXPECT_EQ(c.call({"INCR", a}), "+QUEUED\r\n");
    EXPECT_EQ(c.call({"MSET", b, "x", tags[n] + "c", "y"}), "+QUEUED\r\n");  // split, one node
    EXPECT_EQ(c.call({"RPUSH", l, "p", "q"}), "+QUEUED\r\n");
    EXPECT_EQ(c.call({"PING"}), "+QUEUED\r\n");
    EXPECT_EQ(c.call({"MGET", a, b}), "+QUEUED\r\n");
    EXPECT_EQ(c.call({"EXEC"}),
              "*6\r\n+OK\r\n:2\r\n+OK\r\n:2\r\n+PONG\r\n*2\r\n" + bulk("2") + bulk("x"));
    EXPECT_EQ(direct_get(n, a), bulk("2"));
    EXPECT_EQ(direct_get(n, tags[n] + "c"), bulk("y"));
  }
  // Pipelined: the whole transaction in one write, interleaved with another client's traffic.
  auto other = client();
  const std::string k = tags[1] + "p";
  std::string burst;
  for (const auto& argv : std::vector<std::vector<std::string_view>>{
           {"MULTI"}, {"SET", k, "5"}, {"INCRBY", k, "10"}, {"EXEC"}, {"GET", k}}) {
    redis::append_command(burst, argv);
  }
  c.send_raw(burst);
  EXPECT_EQ(other.call({"SET", k, "100"}), "+OK\r\n");
  EXPECT_EQ(c.read_reply(), "+OK\r\n");
  EXPECT_EQ(c.read_reply(), "+QUEUED\r\n");
  EXPECT_EQ(c.read_reply(), "+QUEUED\r\n");
  EXPECT_EQ(c.read_reply(), "*2\r\n+OK\r\n:15\r\n");  // nothing fell between SET and INCRBY
  const std::string got = c.read_reply();
  EXPECT_TRUE(got == bulk("15") || got == bulk("100")) << got;
  // An empty transaction.
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "*0\r\n");
}

// Keys on two backends: that command is refused with the proxy's error, and EXEC answers
// -EXECABORT as Redis does after a queueing error; nothing was written.
TEST_F(TransactionE2E, CrossBackendKeysAbortTheTransaction) {
  start();
  const auto tags = tag_per_backend();
  auto c = client();
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", tags[0] + "a", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"SET", tags[1] + "a", "1"}),
            "-ERR chash-proxy: keys of a transaction must map to one backend (use a hash tag)\r\n");
  EXPECT_EQ(c.call({"MGET", tags[0] + "a", tags[2] + "a"}),
            "-ERR chash-proxy: keys of a transaction must map to one backend (use a hash tag)\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(direct_get(0, tags[0] + "a"), "$-1\r\n");
  // Unknown command and wrong arity inside MULTI abort too; a command the proxy answers itself
  // cannot be queued.
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"NOSUCHCMD"}).substr(0, 5), "-ERR ");
  EXPECT_EQ(c.call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "k"}), "-ERR wrong number of arguments for 'set' command\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"CLIENT", "ID"}).substr(0, 19), "-ERR chash-proxy: '");
  EXPECT_EQ(c.call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  // The connection is usable afterwards.
  EXPECT_EQ(c.call({"SET", tags[2] + "z", "ok"}), "+OK\r\n");
}

// Redis's answers for misuse: EXEC / DISCARD without MULTI, nested MULTI and WATCH inside MULTI
// are refused without aborting the transaction; DISCARD drops the queued commands.
TEST_F(TransactionE2E, DiscardNestingAndExecWithoutMulti) {
  start();
  const auto tags = tag_per_backend();
  auto c = client();
  EXPECT_EQ(c.call({"EXEC"}), "-ERR EXEC without MULTI\r\n");
  EXPECT_EQ(c.call({"DISCARD"}), "-ERR DISCARD without MULTI\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "-ERR MULTI calls can not be nested\r\n");
  EXPECT_EQ(c.call({"SET", tags[0] + "d", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"WATCH", tags[0] + "d"}), "-ERR WATCH inside MULTI is not allowed\r\n");
  EXPECT_EQ(c.call({"DISCARD"}), "+OK\r\n");
  EXPECT_EQ(direct_get(0, tags[0] + "d"), "$-1\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "-ERR EXEC without MULTI\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "-ERR MULTI calls can not be nested\r\n");
  EXPECT_EQ(c.call({"SET", tags[0] + "d", "2"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "*1\r\n+OK\r\n");  // the nested MULTI did not abort it
  EXPECT_EQ(direct_get(0, tags[0] + "d"), bulk("2"));
}

// The commands Redis flags no-multi (SAVE, SHUTDOWN, SYNC, PSYNC) get Redis's words inside
// MULTI, not the proxy's refusal of server commands, and abort the transaction (Redis's
// multi.tcl "MULTI with SAVE" / "MULTI with SHUTDOWN"); outside MULTI the proxy's refusal stays.
TEST_F(TransactionE2E, NoMultiCommandsAbortAsRedisWordsIt) {
  start();
  const auto tags = tag_per_backend();
  auto c = client();
  for (const char* cmd : {"SAVE", "SHUTDOWN", "SYNC", "PSYNC"}) {
    SCOPED_TRACE(cmd);
    EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
    EXPECT_EQ(c.call({"SET", tags[1] + "nm", cmd}), "+QUEUED\r\n");
    std::vector<std::string> argv{cmd};
    if (std::string(cmd) == "PSYNC") argv = {"PSYNC", "?", "-1"};
    EXPECT_EQ(c.call(argv), "-ERR Command not allowed inside a transaction\r\n");
    EXPECT_EQ(c.call({"EXEC"}),
              "-EXECABORT Transaction discarded because of previous errors.\r\n");
    EXPECT_EQ(direct_get(1, tags[1] + "nm"), "$-1\r\n");
  }
  EXPECT_EQ(c.call({"SAVE"}).rfind("-ERR unsupported command 'SAVE'", 0), 0u);
  EXPECT_EQ(c.call({"PING"}), "+PONG\r\n");
}

// WATCH: a key changed by another client between WATCH and EXEC makes EXEC answer null and run
// nothing; unchanged, it runs. Keys of a WATCH on two backends are refused.
TEST_F(TransactionE2E, WatchConflictGivesNullExec) {
  start();
  const auto tags = tag_per_backend();
  const std::string k = tags[2] + "balance";
  auto a = client();
  auto b = client();
  EXPECT_EQ(a.call({"SET", k, "10"}), "+OK\r\n");
  EXPECT_EQ(a.call({"WATCH", k, tags[2] + "other"}), "+OK\r\n");
  EXPECT_EQ(a.call({"GET", k}), bulk("10"));
  EXPECT_EQ(b.call({"SET", k, "99"}), "+OK\r\n");  // another client touches it
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(a.call({"SET", k, "11"}), "+QUEUED\r\n");
  EXPECT_EQ(a.call({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(direct_get(2, k), bulk("99"));
  // Untouched: it runs.
  EXPECT_EQ(a.call({"WATCH", k}), "+OK\r\n");
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(a.call({"INCR", k}), "+QUEUED\r\n");
  EXPECT_EQ(a.call({"EXEC"}), "*1\r\n:100\r\n");
  // A transaction after WATCH must stay on the watched backend.
  EXPECT_EQ(a.call({"WATCH", k}), "+OK\r\n");
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(a.call({"SET", tags[0] + "x", "1"}),
            "-ERR chash-proxy: keys of a transaction must map to one backend (use a hash tag)\r\n");
  EXPECT_EQ(a.call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(a.call({"WATCH", tags[0] + "x", tags[1] + "x"}),
            "-ERR chash-proxy: keys of a transaction must map to one backend (use a hash tag)\r\n");
  // UNWATCH lets the key go: a change after it does not abort.
  EXPECT_EQ(a.call({"WATCH", k}), "+OK\r\n");
  EXPECT_EQ(a.call({"UNWATCH"}), "+OK\r\n");
  EXPECT_EQ(b.call({"SET", k, "1"}), "+OK\r\n");
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(a.call({"INCR", k}), "+QUEUED\r\n");
  EXPECT_EQ(a.call({"EXEC"}), "*1\r\n:2\r\n");
  // DISCARD unwatches too.
  EXPECT_EQ(a.call({"WATCH", k}), "+OK\r\n");
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(a.call({"DISCARD"}), "+OK\r\n");
  EXPECT_EQ(b.call({"SET", k, "7"}), "+OK\r\n");
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(a.call({"INCR", k}), "+QUEUED\r\n");
  EXPECT_EQ(a.call({"EXEC"}), "*1\r\n:8\r\n");
}

// The WATCHed backend dies: the WATCH connection is gone, so EXEC answers null (the client
// retries) instead of running unchecked; the client's connection stays usable.
TEST_F(TransactionE2E, WatchConnectionLostGivesNullExec) {
  start();
  const auto tags = tag_per_backend();
  auto a = client();
  EXPECT_EQ(a.call({"WATCH", tags[1] + "k"}), "+OK\r\n");
  servers_[1]->stop();
  EXPECT_EQ(a.call({"MULTI"}), "+OK\r\n");
  // The proxy learns of the closed connection when it reads EOF: poll with PING until then.
  EXPECT_EQ(a.call({"PING"}), "+QUEUED\r\n");
  EXPECT_EQ(a.call({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(a.call({"SET", tags[0] + "k", "v"}), "+OK\r\n");
}

// ACL rules apply to queued commands: a forbidden command or key is refused with -NOPERM and
// the transaction aborts; WATCH's keys are checked too.
TEST_F(TransactionE2E, AclAppliesToQueuedCommands) {
  start(
      "  acl:\n    - \"user app on >pw ~app:* ~{app}* +@all -flushall\"\n"
      "    - \"user default off\"\n");
  auto c = client();
  EXPECT_EQ(c.call({"AUTH", "app", "pw"}), "+OK\r\n");
  EXPECT_EQ(c.call({"WATCH", "other"}),
            "-NOPERM this user has no permissions to access one of the keys used as "
            "arguments\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "{app}1", "v"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"SET", "secret", "v"}),
            "-NOPERM this user has no permissions to access one of the keys used as "
            "arguments\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(c.call({"GET", "{app}1"}), "$-1\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "{app}1", "v"}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "*1\r\n+OK\r\n");
}

// The handshake commands modern clients send, answered by the proxy in Redis's shapes.
TEST_F(TransactionE2E, HandshakeCommandsAnsweredLocally) {
  start();
  auto c = client();
  const std::string id = c.call({"CLIENT", "ID"});
  ASSERT_EQ(id[0], ':') << id;
  const std::string hello = c.call({"HELLO", "2", "SETNAME", "app-1"});
  EXPECT_EQ(hello.substr(0, 4), "*14\r");
  EXPECT_NE(hello.find(bulk("id") + id), std::string::npos) << hello;
  EXPECT_NE(hello.find(bulk("proto") + ":2\r\n"), std::string::npos) << hello;
  EXPECT_EQ(c.call({"HELLO"}).substr(0, 4), "*14\r");
  EXPECT_EQ(c.call({"HELLO", "3"}).substr(0, 4), "%7\r\n");  // RESP3 now (session_own.cc)
  EXPECT_EQ(c.call({"HELLO", "2"}).substr(0, 4), "*14\r");
  EXPECT_EQ(c.call({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(c.call({"CLIENT", "GETNAME"}), bulk("app-1"));
  EXPECT_EQ(c.call({"CLIENT", "SETNAME", "worker"}), "+OK\r\n");
  EXPECT_EQ(c.call({"CLIENT", "SETNAME", "a b"}),
            "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
  EXPECT_EQ(c.call({"CLIENT", "SETINFO", "LIB-NAME", "redis-py"}), "+OK\r\n");
  EXPECT_EQ(c.call({"CLIENT", "SETINFO", "lib-ver", "5.0.1"}), "+OK\r\n");
  EXPECT_EQ(c.call({"CLIENT", "SETINFO", "lib-color", "x"}),
            "-ERR Unrecognized option 'lib-color'\r\n");
  const std::string info = c.call({"CLIENT", "INFO"});
  EXPECT_NE(info.find("id=" + id.substr(1, id.size() - 3) + " addr=127.0.0.1:"), std::string::npos)
      << info;
  EXPECT_NE(info.find(" name=worker "), std::string::npos) << info;
  EXPECT_NE(info.find(" lib-name=redis-py lib-ver=5.0.1\n"), std::string::npos) << info;
  EXPECT_EQ(c.call({"CLIENT", "NO-EVICT", "on"}), "+OK\r\n");
  EXPECT_EQ(c.call({"CLIENT", "NO-TOUCH", "off"}), "+OK\r\n");
  EXPECT_EQ(c.call({"CLIENT", "REPLY", "ON"}), "+OK\r\n");
  // CLIENT REPLY OFF / SKIP silence replies as Redis does; ON answers again.
  c.send({"CLIENT", "REPLY", "OFF"});
  c.send({"SET", "silenced", "1"});
  EXPECT_EQ(c.call({"CLIENT", "REPLY", "ON"}), "+OK\r\n");
  EXPECT_EQ(c.call({"GET", "silenced"}), "$1\r\n1\r\n");
  c.send({"CLIENT", "REPLY", "SKIP"});
  c.send({"GET", "silenced"});
  EXPECT_EQ(c.call({"PING"}), "+PONG\r\n");
  EXPECT_EQ(c.call({"CLIENT", "KILL", "x"}).substr(0, 27), "-ERR unsupported subcommand");
  EXPECT_EQ(c.call({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SELECT", "16"}), "-ERR DB index is out of range\r\n");
  EXPECT_EQ(c.call({"SELECT", "1"}), "+OK\r\n");  // on connections of its own (session_own.cc)
  EXPECT_EQ(c.call({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SELECT", "x"}), "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(c.call({"READONLY"}), "+OK\r\n");
  EXPECT_EQ(c.call({"READWRITE"}), "+OK\r\n");
  EXPECT_EQ(c.call({"COMMAND", "COUNT"}),
            ":" + std::to_string(redis::listed_command_count()) + "\r\n");
  EXPECT_EQ(c.call({"COMMAND", "INFO", "get", "nosuch"}),
            "*2\r\n*10\r\n" + bulk("get") +
                ":2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n" + "*-1\r\n");
  EXPECT_EQ(c.call({"COMMAND", "DOCS"}), "*0\r\n");
  EXPECT_EQ(c.call({"COMMAND"}).substr(0, 1), "*");
  const std::string server_info = c.call({"INFO"});
  EXPECT_NE(server_info.find("redis_version:7.0.15\r\n"), std::string::npos) << server_info;
  EXPECT_NE(server_info.find("loading:0\r\n"), std::string::npos) << server_info;
  EXPECT_EQ(c.call({"INFO", "nosuchsection"}), bulk(""));
  // A second client gets another id.
  auto d = client();
  EXPECT_NE(d.call({"CLIENT", "ID"}), id);
  EXPECT_EQ(d.call({"CLIENT", "GETNAME"}), "$-1\r\n");
}

}  // namespace
}  // namespace chash::proxy
