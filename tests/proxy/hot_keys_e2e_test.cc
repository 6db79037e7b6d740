// SPDX-License-Identifier: Apache-2.0
// Hot keys end to end (proxy/hotkeys/, docs/HOTKEYS.md) against real redis-server and memcached:
// found and shown in /status, /metrics and the log; hot_cache answering hot GETs without the
// backend and never stale after a write through the proxy; hot_reads spreading a hot key's reads
// over its replica; the config's errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "chash/error.h"
#include "cluster_util.h"
#include "config/config.h"
#include "base/log.h"
#include "memcache_util.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

using namespace std::chrono_literals;

std::string config_error(const std::string& yaml) {
  try {
    parse_config(yaml, "t.yml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// GET calls a redis-server has answered (INFO commandstats).
long gets_of(const std::string& socket) {
  RespClient c(RespClient::dial_unix(socket));
  const std::string r = c.call({"INFO", "commandstats"});
  const std::size_t at = r.find("cmdstat_get:calls=");
  return at == std::string::npos ? 0L : std::stol(r.substr(at + 18));
}

class HotKeysE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_redis()) GTEST_SKIP() << "redis-server missing: scripts/bootstrap.sh installs it";
    dir = make_test_dir("chash-hotkeys");
  }
  void TearDown() override {
    proxy.stop();
    servers.clear();
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
  void start_redis(int n) {
    for (int i = 0; i < n; ++i) {
      servers.push_back(std::make_unique<RedisServer>(dir, "r" + std::to_string(i + 1)));
      ASSERT_TRUE(servers.back()->start());
    }
  }
  std::string pool_yaml(const std::string& extra) const {
    std::string y =
        "p:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 2000\n" + extra + "  servers:\n";
    for (std::size_t i = 0; i < servers.size(); ++i) {
      y += "    - " + servers[i]->socket() + ":1 r" + std::to_string(i + 1) + "\n";
    }
    return y;
  }
  std::uint16_t port() { return proxy->port(std::size_t{0}); }
  // The server `key` routes to, by the proxy's own routing.
  std::size_t owner(std::string_view key) {
    const auto& pool = *proxy->topology()->pools[0];
    return pool.route(key);
  }
  // Sends `n` GETs of `key` (pipelined in batches) and reads the replies.
  void hammer(RespClient& c, const std::string& key, int n) {
    for (int i = 0; i < n; i += 50) {
      std::string batch;
      for (int j = 0; j < 50 && i + j < n; ++j) {
        redis::append_command(batch, std::vector<std::string_view>{"GET", key});
      }
      c.send_raw(batch);
      for (int j = 0; j < 50 && i + j < n; ++j) c.read_reply();
    }
  }
  // Until /status lists `shown` first among p's hot keys.
  bool hot_in_status(RespClient& c, const std::string& key, const std::string& shown) {
    return within(8s, [&] {
      hammer(c, key, 200);
      const std::string s = proxy->status_json();
      // The pool's 300 ms window (as measured: the rotation runs on a 100 ms tick), not the
      // default 10 s.
      static const std::regex window("\"hot_keys\":\\{\"window_ms\":([0-9]+)");
      std::smatch m;
      if (!std::regex_search(s, m, window)) return false;
      const int ms = std::stoi(m[1]);
      return ms >= 300 && ms < 1000 &&
             s.find("\"top\":[{\"key\":\"" + shown + "\"") != std::string::npos;
    });
  }

  fs::path dir;
  std::vector<std::unique_ptr<RedisServer>> servers;
  ProxyRunner proxy;
};

constexpr const char* kFast =
    "  hot_keys: {window: 300ms, sample: 1, min_rate: 10, log_rate: 100}\n";

TEST_F(HotKeysE2E, TheHottestKeyIsShownWithItsRateAndOwnerAndLogged) {
  start_redis(3);
  const fs::path log_path = dir / "proxy.log";
  std::string error;
  ASSERT_TRUE(set_log_file(log_path.string(), error)) << error;
  proxy.start(dir, pool_yaml(kFast));
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_EQ(c.call({"SET", "user:42", "v"}), "+OK\r\n");
  for (int i = 0; i < 30; ++i) c.call({"GET", "other:" + std::to_string(i)});
  ASSERT_TRUE(hot_in_status(c, "user:42", "user:42")) << proxy->status_json();
  const std::string s = proxy->status_json();
  const std::string owner_name = "r" + std::to_string(owner("user:42") + 1);
  EXPECT_NE(s.find("\"owner\":\"" + owner_name + "\""), std::string::npos) << s;
  const std::string m = proxy->prometheus();
  EXPECT_NE(m.find("chash_proxy_hot_key_requests_per_second{pool=\"p\",rank=\"1\",key=\"user:42\""
                   ",owner=\"" +
                   owner_name + "\"} "),
            std::string::npos)
      << m.substr(0, 4000);
  EXPECT_NE(m.find("# TYPE chash_proxy_hot_key_requests_per_second gauge"), std::string::npos);
  proxy.stop();
  ASSERT_TRUE(set_log_file("", error));
  std::stringstream text;
  text << std::ifstream(log_path).rdbuf();
  EXPECT_NE(text.str().find("hot key"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("user:42"), std::string::npos) << text.str();
}

// The status page lists only keys at or above min_rate: under even traffic over many keys the
// sketch holds keys at a few req/s, and the page says no key is hot instead of listing them;
// one key read over and over is listed, with its owner.
TEST_F(HotKeysE2E, ThePageShowsOnlyKeysAboveMinRate) {
  start_redis(2);
  proxy.start(dir,
              pool_yaml("  hot_keys: {window: 300ms, sample: 1, min_rate: 2000, log_rate: 0}\n"));
  RespClient c(RespClient::dial_tcp(port()));
  // Even traffic: 300 keys, each read a few times a window.
  auto even = [&] {
    for (int i = 0; i < 300; ++i) c.call({"GET", "even:" + std::to_string(i)});
  };
  ASSERT_TRUE(within(8s, [&] {
    even();
    const std::string s = proxy->status_json();
    return s.find("\"key\":\"even:") != std::string::npos &&
           s.find("\"hot\":false") != std::string::npos;
  })) << proxy->status_json();
  std::string page = proxy->status_page();
  EXPECT_NE(page.find("no key above 2000 req/s (min_rate)"), std::string::npos)
      << page.substr(page.find("Hot keys"), 300);
  EXPECT_EQ(page.find("<td>even:"), std::string::npos) << "noise listed as hot keys";
  // One key far above min_rate (pipelined, thousands a second): listed with its owner.
  ASSERT_TRUE(within(8s, [&] {
    hammer(c, "user:hot", 2000);
    return proxy->status_json().find("\"key\":\"user:hot\",\"rate\"") != std::string::npos &&
           proxy->status_page().find("<td>user:hot</td>") != std::string::npos;
  })) << proxy->status_json();
  page = proxy->status_page();
  const std::string owner_name = "r" + std::to_string(owner("user:hot") + 1);
  const std::size_t row = page.find("<td>user:hot</td>");
  EXPECT_NE(page.substr(row, 200).find("<td>" + owner_name + "</td>"), std::string::npos)
      << page.substr(row, 200);
  EXPECT_EQ(page.find("<td>even:"), std::string::npos);
}

// A server added by a reload, serving the hottest key, shows its request rate on the status page
// at once — from the moment it came — not "–" until someone loads the page twice.
TEST_F(HotKeysE2E, AJustAddedServerServingTheHotKeyShowsItsRate) {
  start_redis(2);  // r2 joins the pool later
  const std::string one =
      "p:\n  listen: 127.0.0.1:0\n  redis: true\n  warmup: false\n  servers:\n    - " +
      servers[0]->socket() + ":1 r1\n";
  proxy.start(dir, one);
  RespClient c(RespClient::dial_tcp(port()));
  hammer(c, "warm", 200);
  // A key that r2 owns once it is in: found from the two-server routing.
  std::string key;
  {
    const auto two = build_topology(
        parse_config(one + "    - " + servers[1]->socket() + ":1 r2\n", "t.yml"), nullptr, 1);
    for (int i = 0; key.empty(); ++i) {
      const std::string k = "hot:" + std::to_string(i);
      if (two->pools[0]->servers[two->pools[0]->route(k)].name == "r2") key = k;
    }
  }
  std::this_thread::sleep_for(1500ms);  // the page's history has samples without r2
  proxy.rewrite(one + "    - " + servers[1]->socket() + ":1 r2\n");
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(eventually([&] { return reload_applied(*proxy); }));
  hammer(c, key, 2000);
  const std::string page = proxy->status_page();
  const std::size_t at = page.find("data-server=\"r2\"");
  ASSERT_NE(at, std::string::npos);
  const std::string row = page.substr(at, page.find("</tr>", at) - at);
  // The requests/s cell (the sixth) is a number, not "–".
  std::vector<std::string> cells;
  for (std::size_t td = row.find("<td"); td != std::string::npos; td = row.find("<td", td + 1)) {
    const std::size_t open = row.find('>', td) + 1;
    cells.push_back(row.substr(open, row.find("</td>", open) - open));
  }
  ASSERT_GE(cells.size(), 6u) << row;
  EXPECT_NE(cells[5], "–") << row;
  EXPECT_GT(std::stod(cells[5]), 0.0) << row;
}

// Keys are bytes: a binary hot key leaves /status valid JSON and /metrics valid UTF-8, its bytes
// outside UTF-8 shown as \xNN (control/utf8.h).
TEST_F(HotKeysE2E, ABinaryHotKeyLeavesStatusValidJson) {
  start_redis(2);
  proxy.start(dir, pool_yaml(kFast));
  RespClient c(RespClient::dial_tcp(port()));
  const std::string key = "bin\xff\xfe\x1b";
  ASSERT_TRUE(hot_in_status(c, key, "bin\\\\xff\\\\xfe\\u001b")) << proxy->status_json();
  nlohmann::json status;
  ASSERT_NO_THROW(status = nlohmann::json::parse(proxy->status_json()));
  ASSERT_NO_THROW((void)status.dump());
  bool found = false;
  for (const auto& pool : status["pools"]) {
    for (const auto& k : pool["hot_keys"]["top"]) found = found || k["key"] == "bin\\xff\\xfe\x1b";
  }
  EXPECT_TRUE(found) << proxy->status_json();
  EXPECT_NE(proxy->prometheus().find("key=\"bin\\\\xff\\\\xfe\\\\x1b\""), std::string::npos);
}

TEST_F(HotKeysE2E, HashKeysShowsAnHmacAndNeverTheKey) {
  start_redis(2);
  proxy.start(dir, pool_yaml("  hot_keys: {window: 300ms, sample: 1, min_rate: 10, hash_keys: "
                             "true, log_rate: 0}\n"));
  RespClient c(RespClient::dial_tcp(port()));
  const std::string digest = hotkeys::HotKeys::hmac("session:secret-token");
  ASSERT_TRUE(hot_in_status(c, "session:secret-token", digest)) << proxy->status_json();
  EXPECT_EQ(proxy->status_json().find("secret-token"), std::string::npos);
  EXPECT_EQ(proxy->prometheus().find("secret-token"), std::string::npos);
}

TEST_F(HotKeysE2E, HotCacheAnswersHotGetsAndAWriteIsNeverMissed) {
  start_redis(3);
  proxy.start(dir, pool_yaml(std::string(kFast) +
                             "  hot_cache: {ttl: 10s, max_keys: 100, max_bytes: 1mb}\n"));
  RespClient c(RespClient::dial_tcp(port()));
  RespClient other(RespClient::dial_tcp(port()));  // likely another worker: its own copies
  ASSERT_EQ(c.call({"SET", "hot", "v0"}), "+OK\r\n");
  ASSERT_TRUE(hot_in_status(c, "hot", "hot"));
  const std::string& sock = servers[owner("hot")]->socket();
  hammer(c, "hot", 10);
  hammer(other, "hot", 10);
  const long before = gets_of(sock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(c.call({"GET", "hot"}), bulk("v0"));
    ASSERT_EQ(other.call({"GET", "hot"}), bulk("v0"));
  }
  EXPECT_LE(gets_of(sock) - before, 4) << "200 GETs of a cached hot key reached the backend";
  EXPECT_EQ(c.call({"MGET", "hot", "cold"}), "*2\r\n" + bulk("v0") + "$-1\r\n");
  // Every kind of write through the proxy, from either connection, is seen by the next read.
  for (int i = 1; i <= 30; ++i) {
    RespClient& w = i % 2 ? c : other;
    RespClient& r = i % 2 ? other : c;
    ASSERT_EQ(w.call({"SET", "hot", "v" + std::to_string(i)}), "+OK\r\n");
    ASSERT_EQ(r.call({"GET", "hot"}), bulk("v" + std::to_string(i))) << i;
    ASSERT_EQ(w.call({"GET", "hot"}), bulk("v" + std::to_string(i))) << i;
  }
  ASSERT_EQ(c.call({"APPEND", "hot", "+"}), ":4\r\n");
  EXPECT_EQ(other.call({"GET", "hot"}), bulk("v30+"));
  ASSERT_EQ(c.call({"MSET", "hot", "m", "cold", "c"}), "+OK\r\n");
  EXPECT_EQ(other.call({"MGET", "cold", "hot"}), "*2\r\n" + bulk("c") + bulk("m"));
  ASSERT_EQ(c.call({"MULTI"}), "+OK\r\n");
  ASSERT_EQ(c.call({"SET", "hot", "tx"}), "+QUEUED\r\n");
  ASSERT_EQ(other.call({"GET", "hot"}), bulk("m"));  // read (and cached) between queue and EXEC
  ASSERT_EQ(c.call({"EXEC"}), "*1\r\n+OK\r\n");
  EXPECT_EQ(other.call({"GET", "hot"}), bulk("tx"));
  ASSERT_EQ(c.call({"EVAL", "return redis.call('SET', KEYS[1], 'lua')", "1", "hot"}), "+OK\r\n");
  EXPECT_EQ(other.call({"GET", "hot"}), bulk("lua"));
  ASSERT_EQ(c.call({"DEL", "hot"}), ":1\r\n");
  EXPECT_EQ(other.call({"GET", "hot"}), "$-1\r\n");
  EXPECT_EQ(c.call({"GET", "hot"}), "$-1\r\n");
  // A write from outside the proxy is seen once the copy's ttl has passed (docs/HOTKEYS.md);
  // the counters show the cache at work.
  const std::string m = proxy->prometheus();
  EXPECT_NE(m.find("chash_proxy_hot_cache_hits_total{pool=\"p\"} "), std::string::npos);
  EXPECT_EQ(m.find("chash_proxy_hot_cache_hits_total{pool=\"p\"} 0\n"), std::string::npos);
}

TEST_F(HotKeysE2E, AClientWithItsOwnConnectionIsNotServedCopies) {
  start_redis(2);
  proxy.start(dir, pool_yaml(std::string(kFast) + "  hot_cache: {ttl: 10s}\n"));
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_EQ(c.call({"SET", "hot", "db0"}), "+OK\r\n");
  ASSERT_TRUE(hot_in_status(c, "hot", "hot"));
  hammer(c, "hot", 20);
  // Database 1 has no "hot": the copy of database 0's must not answer.
  RespClient db1(RespClient::dial_tcp(port()));
  ASSERT_EQ(db1.call({"SELECT", "1"}), "+OK\r\n");
  EXPECT_EQ(db1.call({"GET", "hot"}), "$-1\r\n");
  EXPECT_EQ(c.call({"GET", "hot"}), bulk("db0"));
}

TEST_F(HotKeysE2E, HotReadsGoToTheReplicaToo) {
  TcpRedisServer master, replica;
  ASSERT_TRUE(master.start(dir, "master"));
  ASSERT_TRUE(replica.start(dir, "replica", master.port()));
  const std::uint16_t mp = master.port(), rp = replica.port();
  proxy.start(dir, "p:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 2000\n" +
                       std::string(kFast) + "  hot_reads: replicas\n  servers:\n" +
                       "    - {server: \"127.0.0.1:" + std::to_string(mp) +
                       ":1 shard\", replicas: [127.0.0.1:" + std::to_string(rp) + "]}\n");
  ASSERT_TRUE(within(10s, [&] {
    return !proxy->topology()->pools[0]->states[1]->down.load() &&
           call_port(rp, {"INFO", "replication"}).find("master_link_status:up") !=
               std::string::npos;
  })) << proxy->status_json();
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_EQ(c.call({"SET", "hot", "v"}), "+OK\r\n");
  ASSERT_TRUE(within(5s, [&] { return call_port(rp, {"GET", "hot"}) == bulk("v"); }));
  ASSERT_TRUE(hot_in_status(c, "hot", "hot"));
  const long m0 = master.gets(), r0 = replica.gets();
  for (int i = 0; i < 200; ++i) ASSERT_EQ(c.call({"GET", "hot"}), bulk("v"));
  const long to_master = master.gets() - m0, to_replica = replica.gets() - r0;
  EXPECT_GT(to_replica, 50) << "master " << to_master;
  EXPECT_GT(to_master, 50) << "replica " << to_replica;
  // A cold key stays with its owner (read_policy master).
  const long r1 = replica.gets();
  for (int i = 0; i < 20; ++i) c.call({"GET", "cold"});
  EXPECT_EQ(replica.gets(), r1);
}

TEST_F(HotKeysE2E, MemcacheHotGetIsCachedAndWritesInvalidate) {
  if (!have_program("memcached")) GTEST_SKIP() << "memcached missing: scripts/bootstrap.sh";
  std::vector<std::unique_ptr<MemcachedServer>> mc;
  std::string y = "m:\n  listen: 127.0.0.1:0\n  timeout: 2000\n" + std::string(kFast) +
                  "  hot_cache: {ttl: 10s}\n  servers:\n";
  for (int i = 0; i < 2; ++i) {
    mc.push_back(std::make_unique<MemcachedServer>(dir, "m" + std::to_string(i + 1)));
    ASSERT_TRUE(mc.back()->start());
    y += "    - " + mc.back()->socket() + ":1 m" + std::to_string(i + 1) + "\n";
  }
  proxy.start(dir, y);
  McClient c(dial_tcp(port()));
  McClient other(dial_tcp(port()));
  ASSERT_EQ(c.call(set("hot", "v0")), "STORED\r\n");
  ASSERT_TRUE(within(8s, [&] {
    for (int i = 0; i < 200; ++i) c.call("get hot\r\n");
    return proxy->status_json().find("\"top\":[{\"key\":\"hot\"") != std::string::npos;
  }));
  const auto& owner_sock = mc[owner("hot")]->socket();
  const auto hits = [&] {
    McClient s = McClient(dial_unix(owner_sock));
    const std::string st = s.call("stats\r\n");
    const std::size_t at = st.find("STAT cmd_get ");
    return at == std::string::npos ? 0L : std::stol(st.substr(at + 13));
  };
  for (int i = 0; i < 5; ++i) c.call("get hot\r\n"), other.call("get hot\r\n");
  const long before = hits();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(c.call("get hot\r\n"), value("hot", "v0") + "END\r\n");
  EXPECT_LE(hits() - before, 2);
  EXPECT_EQ(other.call("get cold hot\r\n"), value("hot", "v0") + "END\r\n");
  for (int i = 1; i <= 20; ++i) {
    ASSERT_EQ(c.call(set("hot", "v" + std::to_string(i))), "STORED\r\n");
    ASSERT_EQ(other.call("get hot\r\n"), value("hot", "v" + std::to_string(i)) + "END\r\n");
  }
  ASSERT_EQ(other.call("delete hot\r\n"), "DELETED\r\n");
  EXPECT_EQ(c.call("get hot\r\n"), "END\r\n");
}

TEST(HotKeysConfig, ErrorsNameTheKeyAndTheForm) {
  const std::string base =
      "p:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n"
      "    - 127.0.0.1:6379:1\n";
  EXPECT_NE(config_error(base + "  hot_keys: {window: 10 parsecs}\n")
                .find("'window' must be a duration from 100ms to 3600s"),
            std::string::npos);
  EXPECT_NE(config_error(base + "  hot_keys: {topp: 3}\n").find("did you mean 'top'"),
            std::string::npos);
  EXPECT_NE(config_error(base + "  hot_cache: {max_bytes: 12parsecs}\n")
                .find("'max_bytes' must be a size"),
            std::string::npos);
  EXPECT_NE(config_error(base + "  hot_reads: everywhere\n").find("unknown hot_reads"),
            std::string::npos);
  EXPECT_NE(config_error("t:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  hot_cache: {ttl: 1s}\n"
                         "  servers:\n    - 127.0.0.1:6379:1\n")
                .find("hot_cache applies to redis and memcache pools"),
            std::string::npos);
  const auto c = parse_config(base +
                                  "  hot_keys: {top: 5, window: 2s, sample: 4}\n"
                                  "  hot_cache: {ttl: 250ms, max_keys: 10, max_bytes: 2mb}\n",
                              "t.yml");
  EXPECT_EQ(c.pools[0].hot_keys.top, 5u);
  EXPECT_EQ(c.pools[0].hot_keys.window_ms, 2000u);
  EXPECT_EQ(c.pools[0].hot_keys.sample, 4u);
  EXPECT_TRUE(c.pools[0].hot_cache.enabled);
  EXPECT_EQ(c.pools[0].hot_cache.ttl_ms, 250u);
  EXPECT_EQ(c.pools[0].hot_cache.max_bytes, 2u << 20);
  EXPECT_FALSE(parse_config(base, "t.yml").pools[0].hot_cache.enabled);
  EXPECT_EQ(parse_config(base + "  hot_cache: {ttl_ms: 750}\n", "t.yml").pools[0].hot_cache.ttl_ms,
            750u);
  EXPECT_NE(config_error(base + "  hot_cache: {ttl_ms: 1s}\n").find("'ttl_ms'"),
            std::string::npos);
  EXPECT_TRUE(parse_config(base, "t.yml").pools[0].hot_keys.enabled);
}

}  // namespace
}  // namespace chash::proxy::testing
