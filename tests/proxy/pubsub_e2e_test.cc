// SPDX-License-Identifier: Apache-2.0
// chash-proxy end to end: Pub/Sub (proto/redis/session_pubsub.cc, docs/REDIS.md "Pub/Sub")
// against real redis-server processes — a pool of one server answering byte for byte as the
// server does, pools of three (channels routed like keys, patterns and keyspace notifications
// from every backend, each message once), subscribers through a resize and a backend's
// failure, and the ACL's channel rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

// The elements of a RESP array or push reply as strings (bulk payloads, integers as text, nil
// as "(nil)").
std::vector<std::string> fields(const std::string& reply) {
  std::vector<std::string> out;
  std::size_t off = reply.find("\r\n");
  if (off == std::string::npos) return out;
  off += 2;
  while (off < reply.size()) {
    const std::size_t nl = reply.find("\r\n", off);
    if (nl == std::string::npos) break;
    const char t = reply[off];
    const std::string head = reply.substr(off + 1, nl - off - 1);
    if (t == '$' && head != "-1") {
      const std::size_t len = std::stoul(head);
      out.push_back(reply.substr(nl + 2, len));
      off = nl + 2 + len + 2;
    } else {
      out.push_back(t == '$' || t == '_' ? "(nil)" : head);
      off = nl + 2;
    }
  }
  return out;
}

class PubSubE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(have_redis());
    dir = make_test_dir("chash-pubsub");
    for (int i = 1; i <= 4; ++i) {
      servers.push_back(std::make_unique<RedisServer>(dir, "n" + std::to_string(i)));
      ASSERT_TRUE(servers.back()->start());
    }
  }
  void TearDown() override {
    proxy.stop();
    servers.clear();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string yaml(const std::vector<int>& names, const std::string& extra = "") {
    std::string y =
        "p:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 2000\n" + extra + "  servers:\n";
    for (const int i : names) {
      y += "    - " + servers[static_cast<std::size_t>(i - 1)]->socket() + ":1 n" +
           std::to_string(i) + "\n";
    }
    return y;
  }
  void reload(const std::string& y) {
    proxy.rewrite(y);
    std::string message;
    ASSERT_TRUE(proxy->reload_from_file(message)) << message;
    ASSERT_TRUE(reload_applied(*proxy));
  }
  std::uint16_t port() { return proxy->port(std::size_t{0}); }
  std::unique_ptr<RespClient> client() {
    return std::make_unique<RespClient>(RespClient::dial_tcp(port()));
  }
  std::string on(int i, const std::vector<std::string>& argv) {
    RespClient c(RespClient::dial_unix(servers[static_cast<std::size_t>(i - 1)]->socket()));
    return c.call(argv);
  }
  // How many of this test's subscriptions of `channel` server n<i> holds (PUBSUB NUMSUB).
  int numsub(int i, const std::string& channel) {
    const auto f = fields(on(i, {"PUBSUB", "NUMSUB", channel}));
    return f.size() == 2 ? std::stoi(f[1]) : -1;
  }
  // The server (1-based) the pool routes `key` to now.
  int owner(const std::string& key) {
    const auto t = proxy->topology();
    const auto& pool = *t->pools[0];
    return std::stoi(pool.servers[pool.route(key)].name.substr(1));
  }
  // Everything `sub` (subscribed, RESP2) receives before the answer to a PING sent after a
  // pause long enough for any message still on its way.
  static std::vector<std::string> drain(RespClient& sub) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    sub.send({"PING"});
    std::vector<std::string> got;
    for (;;) {
      std::string r = sub.read_reply();
      if (r.empty() || r == "*2\r\n$4\r\npong\r\n$0\r\n\r\n") break;
      got.push_back(std::move(r));
    }
    return got;
  }

  fs::path dir;
  std::vector<std::unique_ptr<RedisServer>> servers;
  ProxyRunner proxy;
};

// One script of Pub/Sub exchanges between a subscriber and a publisher, RESP2 then RESP3:
// every reply, in order (HELLO's, which is the proxy's own, left out).
std::vector<std::string> script(RespClient& sub, RespClient& pub) {
  std::vector<std::string> t;
  const auto both = [&](RespClient& c, const std::vector<std::string>& argv, int replies) {
    c.send(argv);
    for (int i = 0; i < replies; ++i) t.push_back(c.read_reply());
  };
  both(sub, {"SUBSCRIBE", "ch1", "ch2", "ch1"}, 3);
  both(pub, {"PUBLISH", "ch1", "hello"}, 1);
  t.push_back(sub.read_reply());
  both(sub, {"PSUBSCRIBE", "ch*"}, 1);
  both(pub, {"PUBLISH", "ch2", "both"}, 1);
  t.push_back(sub.read_reply());  // message
  t.push_back(sub.read_reply());  // pmessage
  both(sub, {"GET", "k"}, 1);     // refused in RESP2 Pub/Sub mode
  both(sub, {"PING"}, 1);
  both(sub, {"PING", "hi"}, 1);
  both(pub, {"PUBSUB", "NUMSUB", "ch1", "ch2", "none"}, 1);
  both(pub, {"PUBSUB", "NUMPAT"}, 1);
  both(pub, {"PUBSUB", "CHANNELS", "ch1"}, 1);
  both(sub, {"UNSUBSCRIBE", "ch1", "nope"}, 2);
  both(pub, {"PUBLISH", "ch1", "gone"}, 1);  // the pattern's receiver only
  t.push_back(sub.read_reply());
  both(sub, {"UNSUBSCRIBE"}, 1);  // ch2
  both(sub, {"PUNSUBSCRIBE"}, 1);
  both(sub, {"UNSUBSCRIBE"}, 1);  // from nothing: a nil channel
  both(sub, {"SET", "k", "v"}, 1);
  both(sub, {"SSUBSCRIBE", "s1", "s2"}, 2);
  both(pub, {"SPUBLISH", "s2", "sharded"}, 1);
  t.push_back(sub.read_reply());
  both(sub, {"SUNSUBSCRIBE", "s1"}, 1);
  both(pub, {"PUBSUB", "SHARDNUMSUB", "s1", "s2"}, 1);
  both(sub, {"SUNSUBSCRIBE"}, 1);
  // RESP3: confirmations and messages are push frames, and other commands run meanwhile.
  sub.send({"HELLO", "3"});
  (void)sub.read_reply();
  both(sub, {"SUBSCRIBE", "r3"}, 1);
  both(sub, {"GET", "k"}, 1);
  both(pub, {"PUBLISH", "r3", "pushed"}, 1);
  t.push_back(sub.read_reply());
  both(sub, {"UNSUBSCRIBE"}, 1);
  both(sub, {"UNSUBSCRIBE"}, 1);
  both(sub, {"RESET"}, 1);
  both(sub, {"PSUBSCRIBE", "a*", "b*"}, 2);
  both(sub, {"RESET"}, 1);  // unsubscribes everything
  both(pub, {"PUBSUB", "NUMPAT"}, 1);
  return t;
}

// A pool of one server answers Pub/Sub exactly as the server: the same script directly and
// through the proxy gives the same bytes.
TEST_F(PubSubE2E, OneServerAnswersByteForByteAsRedis) {
  proxy.start(dir, yaml({2}), 2);
  RespClient dsub(RespClient::dial_unix(servers[0]->socket()));
  RespClient dpub(RespClient::dial_unix(servers[0]->socket()));
  const std::vector<std::string> direct = script(dsub, dpub);
  auto psub = client(), ppub = client();
  const std::vector<std::string> proxied = script(*psub, *ppub);
  ASSERT_EQ(direct.size(), proxied.size());
  for (std::size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(proxied[i], direct[i]) << "reply " << i;
  }
  // Spot checks that the script says what it should.
  EXPECT_EQ(direct[0], "*3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n");
  EXPECT_NE(std::find(direct.begin(), direct.end(),
                      ">3\r\n$7\r\nmessage\r\n$2\r\nr3\r\n$6\r\npushed\r\n"),
            direct.end());
}

// Three backends: channels spread over them and each meets its publisher; a pattern is on every
// backend and gets each message once; keyspace notifications of every backend reach it; PUBSUB
// counts are the pool's.
TEST_F(PubSubE2E, ThreeServersRouteChannelsAndMergePatterns) {
  for (int i = 1; i <= 3; ++i)
    ASSERT_EQ(on(i, {"CONFIG", "SET", "notify-keyspace-events", "K$"}), "+OK\r\n");
  // md5: nutcracker's default fnv1a_64 puts names as alike as these on one server.
  proxy.start(dir, yaml({1, 2, 3}, "  hash: md5\n"), 2);
  auto sub = client(), pub = client();
  std::vector<std::string> argv = {"SUBSCRIBE"};
  for (int i = 0; i < 40; ++i) argv.push_back("ch:" + std::to_string(i));
  sub->send(argv);
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(
        fields(sub->read_reply()),
        (std::vector<std::string>{"subscribe", "ch:" + std::to_string(i), std::to_string(i + 1)}));
  }
  ASSERT_EQ(fields(sub->call({"PSUBSCRIBE", "news.*"})),
            (std::vector<std::string>{"psubscribe", "news.*", "41"}));
  ASSERT_EQ(fields(sub->call({"PSUBSCRIBE", "__keyspace@0__:*"})),
            (std::vector<std::string>{"psubscribe", "__keyspace@0__:*", "42"}));
  // Each channel is subscribed on its owner only; they are spread over all three.
  std::set<int> owners;
  for (int i = 0; i < 40; ++i) {
    const std::string ch = "ch:" + std::to_string(i);
    owners.insert(owner(ch));
    for (int s = 1; s <= 3; ++s) EXPECT_EQ(numsub(s, ch), s == owner(ch) ? 1 : 0) << ch;
  }
  EXPECT_EQ(owners.size(), 3u);
  for (int s = 1; s <= 3; ++s) EXPECT_EQ(on(s, {"PUBSUB", "NUMPAT"}), ":2\r\n");
  // Every PUBLISH meets its subscriber: one receiver, one message.
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(pub->call({"PUBLISH", "ch:" + std::to_string(i), "m" + std::to_string(i)}), ":1\r\n");
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(pub->call({"PUBLISH", "news." + std::to_string(i), "n"}), ":1\r\n");
  }
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(pub->call({"SET", "key:" + std::to_string(i), "v"}), "+OK\r\n");
  std::multiset<std::string> messages, patterns, notified;
  for (const std::string& r : drain(*sub)) {
    const auto f = fields(r);
    ASSERT_GE(f.size(), 3u) << r;
    if (f[0] == "message") messages.insert(f[1] + "=" + f[2]);
    else if (f[0] == "pmessage" && f[1] == "news.*") patterns.insert(f[2]);
    else if (f[0] == "pmessage") notified.insert(f[2] + "=" + f[3]);
    else ADD_FAILURE() << r;
  }
  ASSERT_EQ(messages.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(messages.count("ch:" + std::to_string(i) + "=m" + std::to_string(i)), 1u);
  }
  ASSERT_EQ(patterns.size(), 20u);  // once each, though the pattern is on three backends
  EXPECT_EQ(std::set<std::string>(patterns.begin(), patterns.end()).size(), 20u);
  ASSERT_EQ(notified.size(), 30u);
  std::set<int> noted_on;
  for (int i = 0; i < 30; ++i) {
    const std::string key = "key:" + std::to_string(i);
    EXPECT_EQ(notified.count("__keyspace@0__:" + key + "=set"), 1u) << key;
    noted_on.insert(owner(key));
  }
  EXPECT_EQ(noted_on.size(), 3u);  // the notifications came from every backend
  // The pool's counts.
  EXPECT_EQ(fields(pub->call({"PUBSUB", "NUMSUB", "ch:3", "ch:7", "nobody"})),
            (std::vector<std::string>{"ch:3", "1", "ch:7", "1", "nobody", "0"}));
  EXPECT_EQ(pub->call({"PUBSUB", "NUMPAT"}), ":2\r\n");
  EXPECT_EQ(fields(pub->call({"PUBSUB", "CHANNELS", "ch:1*"})).size(), 11u);  // ch:1, ch:10..19
  // Sharded Pub/Sub routes by channel too.
  auto ssub = client();
  ASSERT_EQ(fields(ssub->call({"SSUBSCRIBE", "{s}a"})),
            (std::vector<std::string>{"ssubscribe", "{s}a", "1"}));
  EXPECT_EQ(pub->call({"SPUBLISH", "{s}a", "x"}), ":1\r\n");
  EXPECT_EQ(fields(ssub->read_reply()), (std::vector<std::string>{"smessage", "{s}a", "x"}));
  EXPECT_EQ(numsub(owner("{s}a"), "{s}a"), 0);  // a shard channel is not a classic one
  // Unsubscribing everything leaves nothing on the servers.
  sub->send({"UNSUBSCRIBE"});
  for (int i = 0; i < 40; ++i) ASSERT_EQ(fields(sub->read_reply())[0], "unsubscribe");
  sub->send({"PUNSUBSCRIBE"});
  for (int i = 0; i < 2; ++i) ASSERT_EQ(fields(sub->read_reply())[0], "punsubscribe");
  EXPECT_EQ(sub->call({"SET", "after", "1"}), "+OK\r\n");  // out of Pub/Sub mode
  for (int s = 1; s <= 3; ++s) {
    EXPECT_TRUE(eventually([&] { return on(s, {"PUBSUB", "NUMPAT"}) == ":0\r\n"; })) << s;
    EXPECT_EQ(on(s, {"PUBSUB", "CHANNELS", "ch:*"}), "*0\r\n") << s;
  }
}

// A resize moves each channel whose owner changed: subscribed on the new owner, then
// unsubscribed from the old one; afterwards every message arrives once and each channel is on
// its owner alone. The same when a backend fails and is ejected.
TEST_F(PubSubE2E, SubscribersFollowAResizeAndAFailure) {
  const std::string eject =
      "  auto_eject_hosts: true\n  server_failure_limit: 1\n"
      "  server_retry_timeout: 60000\n";
  proxy.start(dir, yaml({1, 2, 3}, eject), 2);
  auto sub = client(), pub = client();
  std::vector<std::string> argv = {"SUBSCRIBE"};
  for (int i = 0; i < 60; ++i) argv.push_back("c" + std::to_string(i));
  sub->send(argv);
  for (int i = 0; i < 60; ++i) ASSERT_EQ(fields(sub->read_reply())[0], "subscribe");
  ASSERT_EQ(fields(sub->call({"PSUBSCRIBE", "p.*"}))[2], "61");
  const auto settled = [&](const std::vector<int>& members) {
    return eventually([&] {
      for (int i = 0; i < 60; ++i) {
        const std::string ch = "c" + std::to_string(i);
        for (const int s : members) {
          if (numsub(s, ch) != (s == owner(ch) ? 1 : 0)) return false;
        }
      }
      for (const int s : members) {
        if (on(s, {"PUBSUB", "NUMPAT"}) != ":1\r\n") return false;
      }
      return true;
    });
  };
  const auto all_arrive_once = [&](const std::string& tag) {
    for (int i = 0; i < 60; ++i) {
      EXPECT_EQ(pub->call({"PUBLISH", "c" + std::to_string(i), tag}), ":1\r\n") << i;
    }
    for (int i = 0; i < 10; ++i) pub->call({"PUBLISH", "p." + std::to_string(i), tag});
    std::multiset<std::string> got;
    for (const std::string& r : drain(*sub)) {
      const auto f = fields(r);
      got.insert(f[0] == "message" ? f[1] : f[2]);
    }
    EXPECT_EQ(got.size(), 70u) << tag;
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 70u) << tag;
  };
  all_arrive_once("before");
  std::map<std::string, int> before;
  for (int i = 0; i < 60; ++i) before["c" + std::to_string(i)] = owner("c" + std::to_string(i));
  reload(yaml({1, 2, 3, 4}, eject));
  int moved = 0;
  for (const auto& [ch, o] : before) moved += owner(ch) != o;
  EXPECT_GT(moved, 5);
  ASSERT_TRUE(settled({1, 2, 3, 4}));
  all_arrive_once("grown");
  // n2 dies: its channels move to their next owner once the proxy ejects it.
  servers[1]->stop();
  ASSERT_TRUE(eventually([&] {
    // Requests put a dead backend down sooner than the health probe.
    for (int i = 0; i < 60; ++i) pub->call({"PUBLISH", "c" + std::to_string(i), "x"});
    const auto t = proxy->topology();
    return t->pools[0]->states[1]->down.load();
  }));
  (void)drain(*sub);  // whatever arrived around the failure
  ASSERT_TRUE(settled({1, 3, 4}));
  all_arrive_once("failed");
}

// The ACL's channel rules, as Redis 7.0 applies them: a user without &... may neither publish
// nor subscribe (acl-pubsub-default resetchannels); &news.* allows those channels, and the
// pattern news.* itself to PSUBSCRIBE — not a wider one.
TEST_F(PubSubE2E, AclChannelRulesAreRedisOnes) {
  proxy.start(dir,
              yaml({1, 2, 3},
                   "  acl:\n"
                   "    - user default off\n"
                   "    - user app on >pw ~* +@all\n"
                   "    - user news on >pw ~* +@all &news.*\n"
                   "    - user all on >pw ~* +@all allchannels\n"),
              2);
  const auto as = [&](const std::string& user) {
    auto c = client();
    EXPECT_EQ(c->call({"AUTH", user, "pw"}), "+OK\r\n");
    return c;
  };
  const std::string noperm =
      "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n";
  auto app = as("app");
  EXPECT_EQ(app->call({"PUBLISH", "news.1", "x"}), noperm);
  EXPECT_EQ(app->call({"SUBSCRIBE", "news.1"}), noperm);
  EXPECT_EQ(app->call({"GET", "k"}), "$-1\r\n");  // keys and commands as before
  auto news = as("news");
  EXPECT_EQ(news->call({"PUBLISH", "news.1", "x"}), ":0\r\n");
  EXPECT_EQ(news->call({"PUBLISH", "sport.1", "x"}), noperm);
  EXPECT_EQ(news->call({"SUBSCRIBE", "news.1", "sport.1"}), noperm);
  EXPECT_EQ(news->call({"PSUBSCRIBE", "*"}), noperm);
  EXPECT_EQ(fields(news->call({"PSUBSCRIBE", "news.*"})),
            (std::vector<std::string>{"psubscribe", "news.*", "1"}));
  auto all = as("all");
  EXPECT_EQ(all->call({"PUBLISH", "news.2", "y"}), ":1\r\n");
  EXPECT_EQ(fields(news->read_reply()),
            (std::vector<std::string>{"pmessage", "news.*", "news.2", "y"}));
}

// Subscriber connections are connections of the client's own: bounded by max_own_connections,
// and closed with the client.
TEST_F(PubSubE2E, SubscriberConnectionsAreBoundedAndClosedWithTheClient) {
  proxy.start(dir, yaml({1}, "  max_own_connections: 2\n"), 1);
  auto a = client(), b = client(), c = client();
  EXPECT_EQ(fields(a->call({"SUBSCRIBE", "x"}))[0], "subscribe");
  EXPECT_EQ(fields(b->call({"SUBSCRIBE", "x"}))[0], "subscribe");
  const std::string refused = c->call({"SUBSCRIBE", "x"});
  EXPECT_NE(refused.find("no room for another connection of a client's own"), std::string::npos)
      << refused;
  a.reset();
  EXPECT_TRUE(eventually([&] { return numsub(1, "x") == 1; }));
  EXPECT_EQ(fields(c->call({"SUBSCRIBE", "x"}))[0], "subscribe");
  EXPECT_EQ(client()->call({"PUBLISH", "x", "m"}), ":2\r\n");
}

}  // namespace
}  // namespace chash::proxy::testing

namespace chash::proxy::testing {
namespace {

// The keys of the invalidation pushes (RESP3 ">2 invalidate [keys]") or redirected messages
// (RESP2 "message __redis__:invalidate [keys]") in `replies`.
std::multiset<std::string> invalidated(const std::vector<std::string>& replies) {
  std::multiset<std::string> keys;
  for (const std::string& r : replies) {
    const auto f = fields(r);
    // fields() flattens the nested key array: [invalidate, 1(count), key] or
    // [message, __redis__:invalidate, 1, key].
    const std::size_t first = f.size() >= 2 && f[0] == "invalidate" ? 2 : 3;
    if (f.empty() || (f[0] != "invalidate" && f[0] != "message")) continue;
    for (std::size_t i = first; i < f.size(); ++i) keys.insert(f[i]);
  }
  return keys;
}

// Reads replies of `c` until `n` invalidated keys are in (or 5 s pass).
std::multiset<std::string> read_invalidations(RespClient& c, std::size_t n) {
  std::vector<std::string> got;
  while (invalidated(got).size() < n) {
    std::string r = c.read_reply();
    if (r.empty()) break;
    got.push_back(std::move(r));
  }
  return invalidated(got);
}

// CLIENT TRACKING through three backends: a RESP3 client gets the invalidation pushes of every
// backend its reads went to; a RESP2 client's REDIRECT reaches a client subscribed to
// __redis__:invalidate through every backend; OPTIN tracks only what CLIENT CACHING yes names.
TEST_F(PubSubE2E, ClientTrackingInvalidatesAcrossBackends) {
  proxy.start(dir, yaml({1, 2, 3}, "  hash: md5\n"), 2);
  auto writer = client();
  std::set<int> owners;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(writer->call({"SET", "t:" + std::to_string(i), "v"}), "+OK\r\n");
    owners.insert(owner("t:" + std::to_string(i)));
  }
  ASSERT_EQ(owners.size(), 3u);
  // RESP3, default mode.
  auto r3 = client();
  r3->call({"HELLO", "3"});
  ASSERT_EQ(r3->call({"CLIENT", "TRACKING", "on"}), "+OK\r\n");
  EXPECT_EQ(r3->call({"CLIENT", "GETREDIR"}), ":0\r\n");
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(r3->call({"GET", "t:" + std::to_string(i)}), "$1\r\nv\r\n");
  for (int i = 0; i < 20; ++i) writer->call({"SET", "t:" + std::to_string(i), "w"});
  auto keys = read_invalidations(*r3, 20);
  EXPECT_EQ(keys.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(keys.count("t:" + std::to_string(i)), 1u) << i;
  // RESP2 with REDIRECT to a subscriber of __redis__:invalidate.
  auto listener = client();
  const std::string id = listener->call({"CLIENT", "ID"});
  ASSERT_EQ(fields(listener->call({"SUBSCRIBE", "__redis__:invalidate"}))[2], "1");
  for (int s = 1; s <= 3; ++s) EXPECT_EQ(numsub(s, "__redis__:invalidate"), 1) << s;
  auto r2 = client();
  ASSERT_EQ(r2->call({"CLIENT", "TRACKING", "on", "REDIRECT", id.substr(1, id.size() - 3)}),
            "+OK\r\n");
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(r2->call({"GET", "t:" + std::to_string(i)}), "$1\r\nw\r\n");
  for (int i = 0; i < 20; ++i) writer->call({"DEL", "t:" + std::to_string(i)});
  keys = read_invalidations(*listener, 20);
  EXPECT_EQ(keys.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(keys.count("t:" + std::to_string(i)), 1u) << i;
  // OPTIN: only the read after CLIENT CACHING yes is tracked.
  auto opt = client();
  opt->call({"HELLO", "3"});
  ASSERT_EQ(opt->call({"CLIENT", "TRACKING", "on", "OPTIN"}), "+OK\r\n");
  EXPECT_EQ(opt->call({"GET", "t:1"}), "_\r\n");
  EXPECT_EQ(opt->call({"CLIENT", "CACHING", "yes"}), "+OK\r\n");
  EXPECT_EQ(opt->call({"GET", "t:2"}), "_\r\n");
  writer->call({"SET", "t:1", "x"});
  writer->call({"SET", "t:2", "x"});
  keys = read_invalidations(*opt, 1);
  EXPECT_EQ(keys, (std::multiset<std::string>{"t:2"}));
  EXPECT_EQ(opt->call({"PING"}), "+PONG\r\n");  // nothing else was on its way
  // Redis's refusals, in its words.
  auto e = client();
  EXPECT_EQ(e->call({"CLIENT", "TRACKING", "on", "PREFIX", "a"}),
            "-ERR PREFIX option requires BCAST mode to be enabled\r\n");
  EXPECT_EQ(e->call({"CLIENT", "TRACKING", "on", "REDIRECT", "987654"}),
            "-ERR The client ID you want redirect to does not exist\r\n");
  EXPECT_EQ(e->call({"CLIENT", "CACHING", "yes"}),
            "-ERR CLIENT CACHING can be called only when the client is in tracking mode with "
            "OPTIN or OPTOUT mode enabled\r\n");
  EXPECT_EQ(e->call({"CLIENT", "GETREDIR"}), ":-1\r\n");
  EXPECT_EQ(e->call({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "t:"}), "+OK\r\n");
  EXPECT_EQ(fields(e->call({"CLIENT", "TRACKINGINFO"})),
            (std::vector<std::string>{"flags", "2", "on", "bcast", "redirect", "0", "prefixes", "1",
                                      "t:"}));  // fields() shows a nested array's length first
  EXPECT_EQ(e->call({"CLIENT", "TRACKING", "off"}), "+OK\r\n");
}

// Through one server, tracking answers as that server does (Redis's tracking unit): an
// eviction's invalidation comes before the reply of the command that evicted, as the server sent
// them; BCAST with no PREFIX reports the empty prefix; a REDIRECT client that leaves is reported
// with a tracking-redir-broken push naming the id the client gave, and TRACKINGINFO's
// broken_redirect.
TEST_F(PubSubE2E, TrackingKeepsTheServersOrderAndStateOnOneServer) {
  proxy.start(dir, yaml({1}, "  allow_config_set: true\n"), 1);
  auto c = client();
  ASSERT_EQ(c->call({"HELLO", "3"}).substr(0, 1), "%");
  ASSERT_EQ(c->call({"CLIENT", "TRACKING", "on"}), "+OK\r\n");
  const std::string info = on(1, {"INFO", "memory"});
  const auto number = [&](const std::string& field) {
    const std::size_t at = info.find(field + ":");
    return std::stoll(info.substr(at + field.size() + 1));
  };
  const long long limit = number("used_memory") - number("mem_not_counted_for_evict") + 100 * 1024;
  ASSERT_EQ(c->call({"CONFIG", "SET", "maxmemory", std::to_string(limit)}), "+OK\r\n");
  ASSERT_EQ(c->call({"CONFIG", "SET", "maxmemory-policy", "volatile-random"}), "+OK\r\n");
  ASSERT_EQ(c->call({"SETEX", "volatile-key", "10000", "x"}), "+OK\r\n");
  ASSERT_EQ(c->call({"GET", "volatile-key"}), "$1\r\nx\r\n");
  ASSERT_EQ(c->call({"SETBIT", "big-key", "1600000", "0"}), ":0\r\n");  // ~200 KB: over
  EXPECT_EQ(c->call({"GETBIT", "big-key", "0"}),
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n$12\r\nvolatile-key\r\n");
  EXPECT_EQ(c->read_reply(), ":0\r\n");
  on(1, {"CONFIG", "SET", "maxmemory", "0"});
  on(1, {"CONFIG", "SET", "maxmemory-policy", "noeviction"});

  auto b = client();
  ASSERT_EQ(b->call({"CLIENT", "TRACKING", "on", "BCAST"}), "+OK\r\n");
  EXPECT_EQ(fields(b->call({"CLIENT", "TRACKINGINFO"})),
            (std::vector<std::string>{"flags", "2", "on", "bcast", "redirect", "0", "prefixes", "1",
                                      ""}));

  auto listener = client();
  const std::string id = listener->call({"CLIENT", "ID"});
  const std::string id_text = id.substr(1, id.size() - 3);
  ASSERT_EQ(fields(listener->call({"SUBSCRIBE", "__redis__:invalidate"}))[2], "1");
  auto t = client();
  ASSERT_EQ(t->call({"HELLO", "3"}).substr(0, 1), "%");
  ASSERT_EQ(t->call({"CLIENT", "TRACKING", "on", "REDIRECT", id_text}), "+OK\r\n");
  auto writer = client();
  writer->call({"SET", "key1", "1"});
  ASSERT_EQ(t->call({"GET", "key1"}), "$1\r\n1\r\n");
  listener.reset();  // gone: its subscriber connection with it
  ASSERT_TRUE(within(std::chrono::seconds(5), [&] { return numsub(1, "__redis__:invalidate") == 0; }));
  writer->call({"SET", "key1", "2"});
  EXPECT_EQ(t->read_reply(), ">2\r\n$21\r\ntracking-redir-broken\r\n:" + id_text + "\r\n");
  EXPECT_EQ(fields(t->call({"CLIENT", "TRACKINGINFO"})),
            (std::vector<std::string>{"flags", "2", "on", "broken_redirect", "redirect", id_text,
                                      "prefixes", "0"}));
}

}  // namespace
}  // namespace chash::proxy::testing
