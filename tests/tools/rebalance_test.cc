// SPDX-License-Identifier: Apache-2.0
// chash rebalance against live servers: real redis-server and memcached processes on 127.0.0.1
// (live_servers.h), filled with keys placed by a preset, then a node added: afterwards every key
// is on exactly its new owner per the router, with its value, type, flags and TTL; the number
// moved is the router's count of changed owners; a dry run moves nothing; an interrupted run
// resumed from its state file loses nothing.
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "chash/chash.h"
#include "cli_run.h"
#include "live_servers.h"

namespace chash {
namespace {

using namespace std::chrono_literals;
using namespace chash::testing;
using Json = nlohmann::json;

// ---- A minimal blocking client (RESP and memcached lines) ------------------------------------------

struct Reply {
  char type = 0;
  std::string s;
  long long i = 0;
  std::vector<Reply> a;
};

class Client {
 public:
  explicit Client(std::uint16_t port) : fd_(dial(port)) {}
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  bool ok() const { return fd_ >= 0; }

  void send(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<std::size_t>(n);
    }
  }
  std::string line() {
    for (;;) {
      const auto nl = buf_.find("\r\n");
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 2);
        return l;
      }
      fill();
    }
  }
  std::string block(std::size_t n) {
    while (buf_.size() < n + 2) fill();
    std::string b = buf_.substr(0, n);
    buf_.erase(0, n + 2);
    return b;
  }
  Reply reply() {
    const std::string l = line();
    Reply r;
    r.type = l.at(0);
    if (r.type == '$') {
      const long long n = std::stoll(l.substr(1));
      if (n >= 0) r.s = block(static_cast<std::size_t>(n));
    } else if (r.type == '*') {
      const long long n = std::stoll(l.substr(1));
      for (long long k = 0; k < n; ++k) r.a.push_back(reply());
    } else if (r.type == ':') {
      r.i = std::stoll(l.substr(1));
    } else {
      r.s = l.substr(1);
    }
    return r;
  }
  Reply command(const std::vector<std::string>& argv) {
    send(resp(argv));
    return reply();
  }
  static std::string resp(const std::vector<std::string>& argv) {
    std::string out = "*" + std::to_string(argv.size()) + "\r\n";
    for (const auto& a : argv) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return out;
  }

 private:
  void fill() {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) throw std::runtime_error("recv failed or timed out");
    buf_.append(buf, static_cast<std::size_t>(n));
  }
  int fd_;
  std::string buf_;
};

// Values with NULs, CRLF and high bytes; every 500th is 200 KB.
std::string value_of(int i) {
  const std::size_t len = i % 500 == 3 ? 200000 : static_cast<std::size_t>(i % 61) * 7 + 1;
  std::string v(len, '\0');
  for (std::size_t j = 0; j < len; ++j) v[j] = static_cast<char>((j * 31 + i) & 0xff);
  if (len > 4) v.replace(len / 2, 2, "\r\n");
  return v;
}

std::vector<std::string> names(std::size_t n) {
  std::vector<std::string> v;
  for (std::size_t i = 1; i <= n; ++i) v.push_back("cache-" + std::to_string(i));
  return v;
}

RoutingSpec twemproxy() {
  RoutingSpec s;
  s.preset = "twemproxy";
  return s;
}

class Rebalance : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_TRUE(have_program("redis-server"))
        << "redis-server not installed (scripts/bootstrap.sh)";
    ASSERT_TRUE(have_program("memcached")) << "memcached not installed (scripts/bootstrap.sh)";
  }

  // The rebalance arguments for 4 nodes -> 5 (cache-5 added), addresses of all five.
  std::vector<std::string> args(const std::vector<std::unique_ptr<Server>>& servers, bool redis) {
    std::vector<std::string> a = {
        "rebalance", "--preset", "twemproxy", "--nodes", "cache-1,cache-2,cache-3,cache-4",
        "--add",     "cache-5",  "--format",  "json"};
    const auto n = names(servers.size());
    for (std::size_t i = 0; i < servers.size(); ++i) {
      a.insert(a.end(), {redis ? "--redis" : "--memcached", n[i] + "=" + servers[i]->address()});
    }
    return a;
  }

  // How many keys change owner from 4 to 5 nodes, per the router.
  static std::size_t router_moves(const std::vector<std::string>& keys) {
    const Router before = Router::build(twemproxy(), make_nodes(names(4)));
    const Router after = Router::build(twemproxy(), make_nodes(names(5)));
    std::size_t moved = 0;
    for (const auto& k : keys) {
      moved += before.name(before.route(k)) != after.name(after.route(k));
    }
    return moved;
  }
};

// ---- Redis -----------------------------------------------------------------------------------------

struct RedisFixture {
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<std::string> keys;           // every key
  std::map<std::string, std::string> str;  // string keys -> value
  std::set<std::string> ttl;               // keys with a 100 s TTL
  std::chrono::steady_clock::time_point filled;
};

std::set<std::string> redis_keys(std::uint16_t port) {
  Client c(port);
  std::set<std::string> out;
  for (const auto& r : c.command({"KEYS", "*"}).a) out.insert(r.s);
  return out;
}

void fill_redis(RedisFixture& f, const std::filesystem::path& dir, int n) {
  for (int i = 0; i < 5; ++i) {
    f.servers.push_back(start_redis(dir));
    ASSERT_TRUE(f.servers.back()->ready()) << "redis-server did not start";
  }
  const Router r = Router::build(twemproxy(), make_nodes(names(4)));
  std::vector<std::string> batch(4);
  std::vector<std::size_t> count(4, 0);
  for (int i = 0; i < n; ++i) {
    std::string key = "user:" + std::to_string(i);
    if (i % 97 == 5) key += std::string("\0\xff bin", 6);  // binary keys
    std::vector<std::string> cmd;
    if (i % 50 == 1) {
      cmd = {"HSET", key, "a", value_of(i), "b", "2"};
    } else if (i % 50 == 2) {
      cmd = {"RPUSH", key, "x", value_of(i), "z"};
    } else {
      cmd = {"SET", key, value_of(i)};
      f.str[key] = value_of(i);
      if (i % 10 == 3) {
        cmd.insert(cmd.end(), {"PX", "100000"});
        f.ttl.insert(key);
      }
    }
    const NodeId id = r.route(key);
    batch[id] += Client::resp(cmd);
    ++count[id];
    f.keys.push_back(key);
  }
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(exchange(f.servers[i]->port(), batch[i], count[i])) << "filling server " << i;
  }
  f.filled = std::chrono::steady_clock::now();
}

// Every key on exactly the node the 5-node router names, with its value and TTL; no other key.
void expect_redis_placed_by_five(const RedisFixture& f) {
  const Router after = Router::build(twemproxy(), make_nodes(names(5)));
  std::map<std::string, std::size_t> where;
  std::size_t total = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    for (const auto& k : redis_keys(f.servers[i]->port())) {
      EXPECT_EQ(after.route(k), i) << "key " << k << " on cache-" << i + 1;
      where[k] = i;
      ++total;
    }
  }
  EXPECT_EQ(total, f.keys.size()) << "keys lost or duplicated";
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - f.filled)
                              .count();
  std::vector<std::unique_ptr<Client>> cs;
  for (const auto& s : f.servers) cs.push_back(std::make_unique<Client>(s->port()));
  for (std::size_t i = 0; i < f.keys.size(); ++i) {
    const auto& k = f.keys[i];
    const auto w = where.find(k);
    ASSERT_NE(w, where.end()) << "key lost: " << k;
    Client& c = *cs[w->second];
    if (const auto s = f.str.find(k); s != f.str.end()) {
      EXPECT_EQ(c.command({"GET", k}).s, s->second) << k;
      const long long pttl = c.command({"PTTL", k}).i;
      if (f.ttl.count(k)) {
        EXPECT_LE(pttl, 100000) << k;
        EXPECT_GE(pttl, 100000 - elapsed_ms - 1000) << k;
      } else {
        EXPECT_EQ(pttl, -1) << k;
      }
    } else if (c.command({"TYPE", k}).s == "hash") {
      const Reply h = c.command({"HGET", k, "b"});
      EXPECT_EQ(h.s, "2") << k;
    } else {
      const Reply l = c.command({"LRANGE", k, "0", "-1"});
      ASSERT_EQ(l.a.size(), 3u) << k;
      EXPECT_EQ(l.a[2].s, "z") << k;
    }
  }
}

// 4 -> 5 Redis nodes: the dry run reports the router's count and moves nothing; a run stopped
// after 600 keys and resumed from its state file then completes; every key ends on its owner
// with value, type and TTL.
TEST_F(Rebalance, RedisAddNodeMovesExactlyTheChangedKeysAndResumes) {
  RedisFixture f;
  fill_redis(f, dir_, 3000);
  if (HasFatalFailure()) return;
  const std::size_t expected = router_moves(f.keys);
  ASSERT_GT(expected, 300u);

  auto a = args(f.servers, true);
  auto dry = a;
  dry.push_back("--dry-run");
  const auto d = run(dry);
  ASSERT_EQ(d.code, 0) << d.err;
  const Json dj = Json::parse(d.out);
  EXPECT_EQ(dj["scanned"].get<std::size_t>(), f.keys.size());
  EXPECT_EQ(dj["moved"].get<std::size_t>(), expected);
  EXPECT_TRUE(redis_keys(f.servers[4]->port()).empty()) << "the dry run moved keys";

  const std::string state = (dir_ / "state").string();
  a.insert(a.end(), {"--state", state, "--batch", "50"});
  auto first = a;
  first.insert(first.end(), {"--stop-after", "600"});
  const auto r1 = run(first);
  EXPECT_EQ(r1.code, 1) << r1.err;  // stopped: not complete
  const Json j1 = Json::parse(r1.out);
  EXPECT_FALSE(j1["complete"].get<bool>());
  EXPECT_GE(j1["scanned"].get<std::size_t>(), 600u);
  EXPECT_LT(j1["scanned"].get<std::size_t>(), f.keys.size());

  const auto r2 = run(a);
  ASSERT_EQ(r2.code, 0) << r2.err << r2.out;
  const Json j2 = Json::parse(r2.out);
  EXPECT_TRUE(j2["complete"].get<bool>());
  EXPECT_EQ(j2["failed"].get<int>(), 0);
  EXPECT_EQ(j1["moved"].get<std::size_t>() + j2["moved"].get<std::size_t>(), expected);
  std::size_t to_new = 0;
  for (const auto& m : j2["moves"]) {
    EXPECT_EQ(m["to"], "cache-5");  // adding a node to a ring moves keys only to it
    to_new += m["keys"].get<std::size_t>();
  }
  EXPECT_EQ(to_new, j2["moved"].get<std::size_t>());
  expect_redis_placed_by_five(f);

  // Done: a second run finds nothing to move (the state says every node is done; without it,
  // a full scan moves nothing either).
  a.erase(a.end() - 4, a.end());
  const auto again = run(a);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out)["moved"].get<int>(), 0);
}

// Draining: --remove moves the removed node's keys to their next owners before it leaves; the
// table report names the pairs.
TEST_F(Rebalance, RedisRemoveDrainsTheNode) {
  RedisFixture f;
  fill_redis(f, dir_, 1000);
  if (HasFatalFailure()) return;
  std::vector<std::string> a = {
      "rebalance", "--preset", "twemproxy", "--nodes", "cache-1,cache-2,cache-3,cache-4",
      "--remove",  "cache-2"};
  for (std::size_t i = 0; i < 4; ++i) {
    a.insert(a.end(), {"--redis", names(4)[i] + "=" + f.servers[i]->address()});
  }
  const auto on_2 = redis_keys(f.servers[1]->port()).size();
  ASSERT_GT(on_2, 0u);
  const auto r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("moved    " + std::to_string(on_2) + " keys"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cache-2  cache-"), std::string::npos) << r.out;
  EXPECT_TRUE(redis_keys(f.servers[1]->port()).empty());
  const Router after = Router::build(
      twemproxy(), make_nodes(std::vector<std::string>{"cache-1", "cache-3", "cache-4"}));
  std::size_t total = 0;
  for (std::size_t i : {0u, 2u, 3u}) {
    for (const auto& k : redis_keys(f.servers[i]->port())) {
      EXPECT_EQ(after.name(after.route(k)), names(4)[i]) << k;
      ++total;
    }
  }
  EXPECT_EQ(total, f.keys.size());
}

// ---- memcached --------------------------------------------------------------------------------

struct McItem {
  std::string value;
  std::uint32_t flags = 0;
  bool ttl = false;  // 1000 s
};

// 4 -> 5 memcached nodes: flags, values and TTLs preserved, exactly the changed keys moved, a run
// stopped part-way and run again completes.
TEST_F(Rebalance, MemcachedAddNodePreservesFlagsAndTtlAndResumes) {
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < 5; ++i) {
    servers.push_back(start_memcached());
    ASSERT_TRUE(servers.back()->ready()) << "memcached did not start";
  }
  const Router before = Router::build(twemproxy(), make_nodes(names(4)));
  std::map<std::string, McItem> items;
  std::vector<std::string> keys, batch(4);
  std::vector<std::size_t> count(4, 0);
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "obj:" + std::to_string(i) + (i % 31 == 0 ? "%caf\xc3\xa9" : "");
    McItem it{value_of(i), static_cast<std::uint32_t>(i * 2654435761u), i % 4 == 1};
    const NodeId id = before.route(key);
    batch[id] += "set " + key + " " + std::to_string(it.flags) + " " + (it.ttl ? "1000" : "0") +
                 " " + std::to_string(it.value.size()) + "\r\n" + it.value + "\r\n";
    ++count[id];
    items[key] = it;
    keys.push_back(key);
  }
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(exchange(servers[i]->port(), batch[i], count[i])) << "filling server " << i;
  }
  const std::size_t expected = router_moves(keys);

  auto a = args(servers, false);
  a.insert(a.end(), {"--state", (dir_ / "state").string(), "--batch", "64"});
  auto first = a;
  first.insert(first.end(), {"--stop-after", "300"});
  const auto r1 = run(first);
  EXPECT_EQ(r1.code, 1) << r1.err;
  EXPECT_FALSE(Json::parse(r1.out)["complete"].get<bool>());
  const auto r2 = run(a);
  ASSERT_EQ(r2.code, 0) << r2.err << r2.out;
  const Json j2 = Json::parse(r2.out);
  EXPECT_EQ(j2["failed"].get<int>(), 0);
  EXPECT_EQ(Json::parse(r1.out)["moved"].get<std::size_t>() + j2["moved"].get<std::size_t>(),
            expected);

  const Router after = Router::build(twemproxy(), make_nodes(names(5)));
  std::vector<std::unique_ptr<Client>> cs;
  for (const auto& s : servers) cs.push_back(std::make_unique<Client>(s->port()));
  for (const auto& [key, it] : items) {
    const NodeId owner = after.route(key);
    for (std::size_t i = 0; i < 5; ++i) {
      Client& c = *cs[i];
      c.send("mg " + key + " v f t\r\n");
      const std::string head = c.line();
      if (i != owner) {
        EXPECT_EQ(head, "EN") << key << " also on cache-" << i + 1;
        continue;
      }
      ASSERT_EQ(head.substr(0, 3), "VA ") << key << " not on its owner cache-" << i + 1;
      std::istringstream in(head.substr(3));
      std::size_t len = 0;
      std::string f, t;
      in >> len >> f >> t;
      EXPECT_EQ(c.block(len), it.value) << key;
      EXPECT_EQ(f, "f" + std::to_string(it.flags)) << key;
      if (it.ttl) {
        const int left = std::stoi(t.substr(1));
        EXPECT_GE(left, 990) << key;
        EXPECT_LE(left, 1000) << key;
      } else {
        EXPECT_EQ(t, "t-1") << key;
      }
    }
  }
}

// ---- Errors -----------------------------------------------------------------------------------------

// A node that does not answer is an error naming its address before anything moves; a node
// without an address is a usage error naming it.
TEST_F(Rebalance, UnreachableOrMissingNodeIsAnErrorNamingIt) {
  auto redis = start_redis(dir_);
  ASSERT_TRUE(redis->ready());
  Client(redis->port()).command({"SET", "k", "v"});
  const std::string closed = "127.0.0.1:" + std::to_string(free_port());
  const auto r = run({"rebalance", "--preset", "twemproxy", "--nodes", "a", "--add", "b", "--redis",
                      "a=" + redis->address(), "--redis", "b=" + closed});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("redis " + closed + ": cannot connect"), std::string::npos) << r.err;
  EXPECT_EQ(Client(redis->port()).command({"EXISTS", "k"}).i, 1);

  const auto m = run({"rebalance", "--preset", "twemproxy", "--nodes", "a", "--add", "b", "--redis",
                      "a=" + redis->address()});
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.err.find("node \"b\" has no address"), std::string::npos) << m.err;
}

}  // namespace
}  // namespace chash
