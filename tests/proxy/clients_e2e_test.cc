// SPDX-License-Identifier: Apache-2.0
// Real client libraries driving chash-proxy, as applications use them: redis-py and pymemcache
// (Debian's python3-redis, python3-pymemcache) and the npm clients ioredis and node-redis
// (tests/clients/node, installed by scripts/bootstrap.sh with `npm ci`). Each script
// (tests/clients/{python,node}/) runs its client's handshake, pipelines, MGET/MSET across three
// backends, transactions on hash-tagged keys (WATCH conflicts included) and, halfway, asks
// the test to restart the proxy (SYNC_DIR/restart-me): the proxy stops, closing every client
// connection, and starts again on the same ports; the client must carry on. ClientsTlsCluster:
// redis-py and ioredis over TLS to a pool in front of a Redis Cluster.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "cluster_util.h"
#include "control/proxy.h"
#include "e2e_util.h"
#include "redis_util.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::RedisServer;
using testing::run;

// The source tree (CHASH_PROXY_DOCS is <source>/docs/PROXY.md).
fs::path source_dir() { return fs::path(CHASH_PROXY_DOCS).parent_path().parent_path(); }

class ClientsE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::have_redis()) << "redis-server not installed (scripts/bootstrap.sh)";
    ASSERT_TRUE(testing::have_program("memcached")) << "memcached not installed";
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("chash-clients-e2e");
    fs::create_directories(dir_ / "sync");
    for (int i = 1; i <= 3; ++i) {
      redis_.push_back(std::make_unique<RedisServer>(dir_, "r" + std::to_string(i)));
      ASSERT_TRUE(redis_.back()->start()) << "redis-server r" << i << " did not start";
    }
    redis_port_ = testing::free_port();
    memcache_port_ = testing::free_port();
    std::string y = "alpha:\n  listen: 127.0.0.1:" + std::to_string(redis_port_) +
                    "\n  redis: true\n  hash_tag: \"{}\"\n  servers:\n";
    for (int i = 1; i <= 3; ++i) {
      y += "    - " + redis_[i - 1]->socket() + ":1 r" + std::to_string(i) + "\n";
    }
    y += "beta:\n  listen: 127.0.0.1:" + std::to_string(memcache_port_) + "\n  servers:\n";
    for (int i = 1; i <= 3; ++i) {
      const std::string sock = (dir_ / ("m" + std::to_string(i) + ".sock")).string();
      memcached_.push_back(std::make_unique<testing::UnixSocketServer>(sock));
      std::vector<std::string> args = {"memcached", "-s", sock, "-U", "0", "-t", "1", "-m", "16"};
      if (::geteuid() == 0) args.insert(args.end(), {"-u", "root"});
      ASSERT_TRUE(memcached_.back()->start(args)) << "memcached m" << i << " did not start";
      y += "    - " + sock + ":1 m" + std::to_string(i) + "\n";
    }
    yaml_ = y;
    proxy_.start(dir_, yaml_, 2);
  }
  void TearDown() override {
    proxy_.stop();
    redis_.clear();
    memcached_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs `command PORT SYNC_DIR`, restarting the proxy when the script asks; the script's
  // output and exit status.
  std::pair<std::string, int> drive(const std::string& command, std::uint16_t port) {
    const fs::path sync = dir_ / "sync";
    fs::remove(sync / "restart-me");
    fs::remove(sync / "restarted");
    auto script = std::async(std::launch::async, [&] {
      return run(command + " " + std::to_string(port) + " " + sync.string());
    });
    bool asked = false;
    for (int i = 0; i < 3000 && !asked; ++i) {  // 30 s at most
      if (script.wait_for(10ms) == std::future_status::ready) break;
      asked = fs::exists(sync / "restart-me");
    }
    if (asked) {
      proxy_.stop();  // every client connection closes
      proxy_.start(dir_, yaml_, 2);
      std::ofstream(sync / "restarted").flush();
    }
    auto result = script.get();
    EXPECT_TRUE(asked) << "the script never asked for the restart";
    return result;
  }
  static std::string node_script(const std::string& name) {
    const fs::path dir = source_dir() / "tests" / "clients" / "node";
    EXPECT_TRUE(fs::exists(dir / "node_modules"))
        << "run scripts/bootstrap.sh (npm ci --prefix tests/clients/node)";
    return "node " + (dir / name).string();
  }
  static std::string python_script(const std::string& name) {
    return "/usr/bin/python3 " + (source_dir() / "tests" / "clients" / "python" / name).string();
  }

  fs::path dir_;
  std::vector<std::unique_ptr<RedisServer>> redis_;
  std::vector<std::unique_ptr<testing::UnixSocketServer>> memcached_;
  std::uint16_t redis_port_ = 0, memcache_port_ = 0;
  std::string yaml_;
  testing::ProxyRunner proxy_;
};

TEST_F(ClientsE2E, RedisPy) {
  auto [out, rc] = drive(python_script("redis_py_client.py"), redis_port_);
  EXPECT_EQ(rc, 0) << out << "(scripts/bootstrap.sh installs python3-redis)";
  EXPECT_NE(out.find("ok watch retried after a conflict\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

// redis-py's Pub/Sub API and its client-side caching (CLIENT TRACKING REDIRECT to a listener
// subscribed to __redis__:invalidate) through three backends (docs/REDIS.md "Pub/Sub",
// "Client-side caching").
TEST_F(ClientsE2E, RedisPyPubSubAndClientSideCaching) {
  for (const auto& s : redis_) {
    testing::RespClient c(testing::RespClient::dial_unix(s->socket()));
    ASSERT_EQ(c.call({"CONFIG", "SET", "notify-keyspace-events", "K$"}), "+OK\r\n");
  }
  auto [out, rc] = run(python_script("redis_py_pubsub.py") + " " + std::to_string(redis_port_));
  EXPECT_EQ(rc, 0) << out << "(scripts/bootstrap.sh installs python3-redis)";
  EXPECT_NE(out.find("ok invalidations\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

TEST_F(ClientsE2E, Pymemcache) {
  auto [out, rc] = drive(python_script("pymemcache_client.py"), memcache_port_);
  EXPECT_EQ(rc, 0) << out << "(scripts/bootstrap.sh installs python3-pymemcache)";
  EXPECT_NE(out.find("ok get_many after restart\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

TEST_F(ClientsE2E, Ioredis) {
  auto [out, rc] = drive(node_script("ioredis_client.js"), redis_port_);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok exec after conflict\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

TEST_F(ClientsE2E, NodeRedis) {
  auto [out, rc] = drive(node_script("node_redis_client.js"), redis_port_);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok exec after conflict\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

// redis-py and ioredis over TLS (verifying the proxy's certificate) to a pool in front of a
// 3-master Redis Cluster: the clients are plain, not cluster-aware.
class ClientsTlsCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_test_dir("chash-clients-tls");
    const auto ok = [&](const std::string& cmd) {
      const auto [out, rc] = run(cmd);
      EXPECT_EQ(rc, 0) << cmd << ": " << out;
      return rc == 0;
    };
    const std::string d = dir_.string(),
                      ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::ofstream(dir_ / "s.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    ASSERT_TRUE(ok("openssl req -x509" + ec + " -keyout " + d + "/ca.key -out " + d +
                   "/ca.crt -days 2 -subj /CN=test-ca") &&
                ok("openssl req -new" + ec + " -keyout " + d + "/s.key -out " + d +
                   "/s.csr -subj /CN=localhost") &&
                ok("openssl x509 -req -in " + d + "/s.csr -CA " + d + "/ca.crt -CAkey " + d +
                   "/ca.key -CAcreateserial -days 2 -extfile " + d + "/s.ext -out " + d +
                   "/s.crt"));
    cluster_ = std::make_unique<testing::RedisCluster>(dir_, 3);
    ASSERT_TRUE(cluster_->start());
    port_ = testing::free_port();
    proxy_.start(dir_, "c:\n  listen: 127.0.0.1:" + std::to_string(port_) +
                           "\n  redis: true\n  timeout: 2000\n  cluster: [" + cluster_->seed(0) +
                           "]\n  tls: {cert: " + d + "/s.crt, key: " + d + "/s.key}\n");
    ASSERT_TRUE(testing::eventually([&] {
      const auto t = proxy_->topology();
      return t->pools[0]->cluster != nullptr && t->pools[0]->cluster->covered == 16384;
    }));
  }
  void TearDown() override {
    proxy_.stop();
    cluster_.reset();
    std::error_code e;
    fs::remove_all(dir_, e);
  }
  std::string ca() const { return (dir_ / "ca.crt").string(); }
  fs::path dir_;
  std::unique_ptr<testing::RedisCluster> cluster_;
  std::uint16_t port_ = 0;
  testing::ProxyRunner proxy_;
};

TEST_F(ClientsTlsCluster, RedisPy) {
  const auto [out, rc] =
      run("/usr/bin/python3 " +
          (source_dir() / "tests/clients/python/redis_py_tls_cluster.py").string() + " " +
          std::to_string(port_) + " " + ca());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok crossslot\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

TEST_F(ClientsTlsCluster, Ioredis) {
  const fs::path dir = source_dir() / "tests" / "clients" / "node";
  const auto [out, rc] = run("node " + (dir / "ioredis_tls_cluster.js").string() + " " +
                             std::to_string(port_) + " " + ca());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok multi/exec on one slot\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndone\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace chash::proxy
