// SPDX-License-Identifier: Apache-2.0
// chash detect against live servers: real redis-server and memcached processes on 127.0.0.1
// (free ports, started here and killed after; scripts/bootstrap.sh installs both — without them
// these tests fail, they are never skipped), keys written to the node a preset picks, then
// detect --redis/--memcached must name the preset. Every wait is bounded.
#include <chrono>
#include <nlohmann/json.hpp>

#include "chash/chash.h"
#include "cli_run.h"
#include "live_servers.h"

namespace chash {
namespace {

using namespace std::chrono_literals;
using namespace chash::testing;
using Json = nlohmann::json;

std::string resp_set(const std::string& key) {
  return "*3\r\n$3\r\nSET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$1\r\nv\r\n";
}

std::string memcached_set(const std::string& key) { return "set " + key + " 0 0 1\r\nv\r\n"; }

RoutingSpec preset(const char* name) {
  RoutingSpec s;
  s.preset = name;
  return s;
}

class DetectLive : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_TRUE(have_program("redis-server"))
        << "redis-server not installed (scripts/bootstrap.sh)";
    ASSERT_TRUE(have_program("memcached")) << "memcached not installed (scripts/bootstrap.sh)";
  }

  // Writes each key to the server `spec` routes it to over `names` (servers[i] holds names[i]).
  void place(const RoutingSpec& spec, const std::vector<std::string>& names,
             const std::vector<std::unique_ptr<Server>>& servers,
             const std::vector<std::string>& keys, bool redis) {
    const Router r = Router::build(spec, make_nodes(names));
    std::vector<std::string> batch(servers.size());
    std::vector<std::size_t> count(servers.size(), 0);
    for (const auto& k : keys) {
      const NodeId id = r.route(k);
      batch[id] += redis ? resp_set(k) : memcached_set(k);
      ++count[id];
    }
    for (std::size_t i = 0; i < servers.size(); ++i) {
      ASSERT_TRUE(exchange(servers[i]->port(), batch[i], count[i])) << "writing to server " << i;
    }
  }
};

std::vector<std::string> keys(std::size_t n, const std::string& prefix) {
  std::vector<std::string> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i * 104729 % 999983));
  return v;
}

// Three Redis nodes filled by Jedis' sharding (more than one SCAN batch each): detect scans them
// and names jedis.
TEST_F(DetectLive, RedisScanNamesThePreset) {
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(start_redis(dir_));
    ASSERT_TRUE(servers.back()->ready()) << "redis-server did not start";
  }
  const std::vector<std::string> names = {"shard-1", "shard-2", "shard-3"};
  place(preset("jedis"), names, servers, keys(6000, "session:"), true);
  std::vector<std::string> args = {"detect", "--format", "json", "--nodes",
                                   "shard-1,shard-2,shard-3"};
  for (std::size_t i = 0; i < 3; ++i) {
    args.insert(args.end(), {"--redis", names[i] + "=" + servers[i]->address()});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run(args);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  ASSERT_EQ(r.code, 0) << r.err;
  const Json list = Json::parse(r.out);
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list[0]["route_args"], Json::array({"--preset", "jedis"})) << r.out;
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
  EXPECT_EQ(list[0]["keys"].get<int>(), 6000);  // every key, found over several SCAN batches

  // --max-keys bounds what is read, split over the servers.
  args.insert(args.end(), {"--max-keys", "300"});
  const auto bounded = run(args);
  ASSERT_EQ(bounded.code, 0) << bounded.err;
  EXPECT_EQ(Json::parse(bounded.out)[0]["keys"].get<int>(), 300);
  args.erase(args.begin() + 1, args.begin() + 3);  // the table says so
  const auto table = run(args);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("read at most 100 keys per server (--max-keys 300 split over the "
                           "servers); some servers hold more"),
            std::string::npos)
      << table.out;
}

// Three memcached nodes named by address (no NAME=) filled by ketama, keys that memcached's
// metadump URI-encodes among them: detect names ketama, the node order guessed.
TEST_F(DetectLive, MemcachedMetadumpNamesThePreset) {
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(start_memcached());
    ASSERT_TRUE(servers.back()->ready()) << "memcached did not start";
    names.push_back(servers.back()->address());
  }
  auto ks = keys(3000, "obj:");
  for (int i = 0; i < 50; ++i) ks.push_back("caf\xc3\xa9%" + std::to_string(i) + "=\x01");
  place(preset("ketama"), names, servers, ks, false);
  std::vector<std::string> args = {"detect"};
  for (const auto& s : servers) args.insert(args.end(), {"--memcached", s->address()});
  const auto r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("detect: 3,050 observations on 3 nodes"), std::string::npos) << r.out;
  const auto out = testing::split_lines(r.out);
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out[3].substr(0, 16), "--preset ketama ") << r.out;
  EXPECT_NE(out[3].find("100.00% of 3,050 keys"), std::string::npos) << r.out;
}

// Redis and memcached in one run; a server that accepts but never answers is a timeout error
// naming its address, within the timeout; a closed port is an error naming it.
TEST_F(DetectLive, UnresponsiveAndUnreachableServersAreErrorsNamingThem) {
  // A listening socket nobody accepts on: connect succeeds (the backlog), SCAN gets no reply.
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(silent, 8), 0);
  socklen_t len = sizeof a;
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string addr = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));

  auto t0 = std::chrono::steady_clock::now();
  auto r = run({"detect", "--redis", "r=" + addr, "--timeout", "1"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("redis " + addr + ": no reply within 1 s"), std::string::npos) << r.err;
  t0 = std::chrono::steady_clock::now();
  r = run({"detect", "--memcached", addr, "--timeout", "1"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("memcached " + addr + ": no reply within 1 s"), std::string::npos) << r.err;
  ::close(silent);

  const std::string closed = "127.0.0.1:" + std::to_string(free_port());
  r = run({"detect", "--redis", closed});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("redis " + closed + ": cannot connect"), std::string::npos) << r.err;

  // A Redis port given as memcached: the reply is not a metadump.
  auto redis = start_redis(dir_);
  ASSERT_TRUE(redis->ready());
  r = run({"detect", "--memcached", redis->address()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("memcached " + redis->address() + ": lru_crawler metadump answered"),
            std::string::npos)
      << r.err;
  // Empty servers: nothing to detect.
  r = run({"detect", "--redis", redis->address()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no keys on the scanned servers"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace chash
