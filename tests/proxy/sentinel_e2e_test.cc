// SPDX-License-Identifier: Apache-2.0
// Sentinel-managed shards end to end: real redis-server and redis-sentinel processes on
// 127.0.0.1 (one master, one replica, three Sentinels) and a forced failover under load through
// the proxy; and fake Sentinels (in this file) that disagree, vanish, or were never there.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "control/proxy.h"
#include "e2e_util.h"
#include "membership/sentinel.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A redis-server (or redis-sentinel, with a config file) on a TCP port of 127.0.0.1.
class TcpServer {
 public:
  bool start(std::vector<std::string> argv) {
    return process_.start(std::move(argv), [this] {
      const int fd = dial_tcp(port_);
      if (fd < 0) return false;
      ::close(fd);
      return true;
    });
  }
  bool redis(const fs::path& dir, const std::string& name, std::vector<std::string> extra = {}) {
    port_ = free_port();
    std::vector<std::string> argv = {"redis-server",
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     // Replicas sync at once: diskless sync waits 5 s for more
                                     // replicas by default, as long as eventually() waits (a
                                     // replica came up after it under TSan's shards).
                                     "--repl-diskless-sync-delay",
                                     "0",
                                     "--dir",
                                     dir.string(),
                                     "--logfile",
                                     (dir / (name + ".log")).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return start(argv);
  }
  bool sentinel(const fs::path& dir, const std::string& name, std::uint16_t master) {
    port_ = free_port();
    const fs::path conf = dir / (name + ".conf");
    std::ofstream(conf) << "port " << port_ << "\nbind 127.0.0.1\nprotected-mode no\ndir "
                        << dir.string() << "\nlogfile " << (dir / (name + ".log")).string()
                        << "\nsentinel monitor mymaster 127.0.0.1 " << master
                        << " 2\nsentinel down-after-milliseconds mymaster 1000\n"
                           "sentinel failover-timeout mymaster 3000\n";
    return start({"redis-sentinel", conf.string()});
  }
  void stop() { process_.stop(); }
  pid_t pid() const { return process_.pid(); }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::uint16_t port_ = 0;
  ChildProcess process_;
};

std::string call(std::uint16_t port, const std::vector<std::string>& argv) {
  RespClient c(RespClient::dial_tcp(port));
  return c.ok() ? c.call(argv) : "";
}

// Whether one replica of the master at `port` has everything written there so far. WAIT counts
// replicas that acked the offset of *its own connection's* last write, so the connection writes
// first: on a fresh one WAIT answers at once, whatever the replica holds (and after a diskless
// sync the master streams nothing until the replica's first REPLCONF ACK, up to 1 s later — a
// failover in that second lost the test's keys).
bool replicated(std::uint16_t port) {
  RespClient c(RespClient::dial_tcp(port));
  return c.ok() && c.call({"SET", "replicated-marker", "1"}) == "+OK\r\n" &&
         c.call({"WAIT", "1", "5000"}) == ":1\r\n";
}

// A field of INFO ("role", "master_link_status", ...) from a server.
std::string info_field(std::uint16_t port, const std::string& section, const std::string& field) {
  const std::string r = call(port, {"INFO", section});
  const std::size_t at = r.find(field + ":");
  if (at == std::string::npos) return "";
  const std::size_t end = r.find("\r\n", at);
  return r.substr(at + field.size() + 1, end - at - field.size() - 1);
}

// A Sentinel stand-in: answers get-master-addr-by-name with what the test sets ("" = nil),
// SENTINEL replicas with none, and SUBSCRIBE; publish_switch() sends +switch-master.
class FakeSentinel {
 public:
  explicit FakeSentinel(std::uint16_t port) : port_(port) {}
  ~FakeSentinel() { stop(); }
  void set_master(std::string m) {
    std::lock_guard lock(mu_);
    master_ = std::move(m);
  }
  void start() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listen_fd_, 16), 0);
    stop_ = false;
    thread_ = std::thread([this] { run(); });
  }
  // Closes the listener and every connection: the Sentinel is unreachable.
  void stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
    for (auto& [fd, c] : conns_) ::close(fd);
    conns_.clear();
  }
  void publish_switch() { publish_ = true; }
  std::uint16_t port() const { return port_; }

 private:
  struct Conn {
    std::string in;
    bool subscribed = false;
  };
  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& [fd, c] : conns_) fds.push_back({fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 10);
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
        if (fd >= 0) conns_[fd] = Conn{};
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const int fd = fds[i].fd;
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
          ::close(fd);
          conns_.erase(fd);
          continue;
        }
        Conn& c = conns_[fd];
        c.in.append(buf, static_cast<std::size_t>(n));
        std::size_t pos = 0;
        std::string out;
        for (;;) {
          RespValue v;
          std::size_t at = pos;
          if (parse_resp(c.in, at, v) != 1) break;
          pos = at;
          out += answer(v, c);
        }
        c.in.erase(0, pos);
        (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      }
      if (publish_.exchange(false)) {
        const std::string msg = "*3\r\n" + bulk("message") + bulk("+switch-master") +
                                bulk("mymaster 127.0.0.1 1 127.0.0.1 2");
        for (auto& [fd, c] : conns_) {
          if (c.subscribed) (void)!::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
        }
      }
    }
  }
  std::string answer(const RespValue& v, Conn& c) {
    if (v.type != '*' || v.items.empty()) return "-ERR bad\r\n";
    const std::string cmd = v.items[0].str;
    if (cmd == "SUBSCRIBE" && v.items.size() == 2) {
      c.subscribed = true;
      return "*3\r\n" + bulk("subscribe") + bulk(v.items[1].str) + ":1\r\n";
    }
    if (cmd == "SENTINEL" && v.items.size() == 3 && v.items[1].str == "replicas") return "*0\r\n";
    if (cmd == "SENTINEL" && v.items.size() == 3 && v.items[1].str == "get-master-addr-by-name") {
      std::lock_guard lock(mu_);
      if (master_.empty()) return "*-1\r\n";
      const std::size_t colon = master_.rfind(':');
      return "*2\r\n" + bulk(master_.substr(0, colon)) + bulk(master_.substr(colon + 1));
    }
    return "-ERR unknown\r\n";
  }

  std::uint16_t port_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false}, publish_{false};
  std::map<int, Conn> conns_;  // the server thread's
  std::mutex mu_;
  std::string master_;
  std::thread thread_;
};

std::string pool_yaml(const std::vector<std::uint16_t>& sentinels, const std::string& extra) {
  std::string y = "alpha:\n  listen: 127.0.0.1:0\n  redis: true\n  timeout: 1000\n  sentinels: [";
  for (std::size_t i = 0; i < sentinels.size(); ++i)
    y += (i ? ", 127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinels[i]);
  return y + "]\n  servers:\n    - {name: shard-a, sentinel_master: mymaster, weight: 1}\n" + extra;
}

// The master the proxy follows for shard-a, from /status ("" when none).
std::string followed_master(Proxy& proxy) {
  const std::string s = proxy.status_json();
  const std::size_t at = s.find("\"master\":\"");
  if (at == std::string::npos) return "";
  return s.substr(at + 10, s.find('"', at + 10) - at - 10);
}

// SET key value through the proxy, then GET from `port` directly: the write landed there.
bool write_lands_on(std::uint16_t proxy_port, std::uint16_t port, const std::string& key) {
  static std::atomic<int> n{0};
  const std::string value = "v" + std::to_string(++n);
  if (call(proxy_port, {"SET", key, value}) != "+OK\r\n") return false;
  return call(port, {"GET", key}) == bulk(value);
}

TEST(SentinelE2E, FailoverUnderLoadFollowsTheNewMaster) {
  ASSERT_TRUE(have_redis() && have_program("redis-sentinel"))
      << "redis-server and redis-sentinel are needed (scripts/bootstrap.sh installs them)";
  const ScopedTestDir scoped_dir("chash-sentinel");
  const fs::path& dir = scoped_dir.path();
  TcpServer master, replica, other;
  ASSERT_TRUE(master.redis(dir, "master"));
  ASSERT_TRUE(
      replica.redis(dir, "replica", {"--replicaof", "127.0.0.1", std::to_string(master.port())}));
  ASSERT_TRUE(other.redis(dir, "other"));  // shard-b: a plain address
  ASSERT_TRUE(eventually(
      [&] { return info_field(replica.port(), "replication", "master_link_status") == "up"; }));
  TcpServer s1, s2, s3;
  ASSERT_TRUE(s1.sentinel(dir, "s1", master.port()));
  ASSERT_TRUE(s2.sentinel(dir, "s2", master.port()));
  ASSERT_TRUE(s3.sentinel(dir, "s3", master.port()));

  ProxyRunner proxy;
  proxy.start(dir, pool_yaml({s1.port(), s2.port(), s3.port()},
                             "    - " + other.address() + ":1 shard-b\n"));
  const std::uint16_t port = proxy->port(std::size_t{0});
  EXPECT_EQ(followed_master(*proxy), master.address());

  // Keys written before the failover, and the shard each one is on.
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(call(port, {"SET", "key:" + std::to_string(i), "x"}), "+OK\r\n");
  ASSERT_TRUE(replicated(master.port()));
  std::set<std::string> on_b;
  {
    RespClient c(RespClient::dial_tcp(other.port()));
    const std::string keys = c.call({"KEYS", "key:*"});
    for (int i = 0; i < 200; ++i) {
      if (keys.find(bulk("key:" + std::to_string(i))) != std::string::npos)
        on_b.insert("key:" + std::to_string(i));
    }
  }
  ASSERT_GT(on_b.size(), 20u);
  ASSERT_LT(on_b.size(), 180u);
  // The replica must be known to the Sentinels before a failover can pick it.
  ASSERT_TRUE(eventually(
      [&] { return proxy->status_json().find(replica.address()) != std::string::npos; }));

  std::string probe;  // a key of shard-a's
  for (int i = 0; probe.empty(); ++i) {
    if (!on_b.count("key:" + std::to_string(i))) probe = "key:" + std::to_string(i);
  }
  // Light load: one client writing in a loop, counting failed and unanswered requests.
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, hung{0};
  std::thread load;
  // Stops and joins the load on every way out (a failed ASSERT returns early).
  struct Join {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{stop, load};
  load = std::thread([&] {
    RespClient c(RespClient::dial_tcp(port));
    for (int i = 0; !stop; ++i) {
      const std::string r = c.call({"SET", "load:" + std::to_string(i % 500), "v"});
      if (r == "+OK\r\n") ++ok;
      else if (r.empty()) ++hung;  // no reply within 5 s
      else ++failed;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });

  // Our own subscription: when Sentinel announced the switch.
  RespClient sub(RespClient::dial_tcp(s1.port()));
  ASSERT_NE(sub.call({"SUBSCRIBE", "+switch-master"}).find("subscribe"), std::string::npos);
  std::string answer;
  for (int i = 0; i < 100; ++i) {  // -NOGOODSLAVE until the Sentinels have seen the replica
    answer = call(s1.port(), {"SENTINEL", "FAILOVER", "mymaster"});
    if (answer == "+OK\r\n") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(answer, "+OK\r\n");
  const std::string msg = sub.read_reply();  // within 5 s
  ASSERT_NE(msg.find("mymaster 127.0.0.1 " + std::to_string(master.port())), std::string::npos)
      << msg;
  const auto switched = Clock::now();
  bool followed = false;
  while (Clock::now() - switched < 10s && !followed) {
    followed = write_lands_on(port, replica.port(), probe);
    if (!followed) std::this_thread::sleep_for(10ms);
  }
  const auto follow_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - switched).count();
  ASSERT_TRUE(followed) << "writes never reached the promoted replica";
  std::this_thread::sleep_for(300ms);  // the load runs on the new master for a while
  stop = true;
  if (load.joinable()) load.join();
  std::printf(
      "[sentinel] +switch-master -> proxy writes to the new master: %lld ms; load: %d ok, "
      "%d failed, %d unanswered\n",
      static_cast<long long>(follow_ms), ok.load(), failed.load(), hung.load());
  EXPECT_LE(follow_ms, 2000);
  EXPECT_EQ(hung.load(), 0);
  EXPECT_GT(ok.load(), 100);
  EXPECT_LE(failed.load(), 100);  // -READONLY from the demoted master until the switch

  // Keys kept their shards: shard-b's are where they were; shard-a's are on the new master.
  for (int i = 0; i < 200; ++i) {
    const std::string k = "key:" + std::to_string(i);
    EXPECT_EQ(call(on_b.count(k) ? other.port() : replica.port(), {"EXISTS", k}), ":1\r\n") << k;
    if (k != probe) {
      EXPECT_EQ(call(port, {"GET", k}), bulk("x")) << k;
    }
  }
  const std::string status = proxy->status_json();
  EXPECT_NE(status.find("\"master\":\"" + replica.address() + "\""), std::string::npos) << status;
  EXPECT_NE(status.find("\"switches\":1"), std::string::npos) << status;
  EXPECT_NE(proxy->prometheus().find(
                "chash_proxy_sentinel_switches_total{pool=\"alpha\",backend=\"shard-a\"} 1"),
            std::string::npos);
  // The proxy's connections to the old master are gone (Sentinels only PING/INFO/PUBLISH it).
  EXPECT_TRUE(eventually([&] {
    const std::string clients = call(master.port(), {"CLIENT", "LIST"});
    return clients.find("cmd=set") == std::string::npos &&
           clients.find("cmd=get") == std::string::npos;
  })) << call(master.port(), {"CLIENT", "LIST"});
}

// read_policy with Sentinel: the replicas the Sentinels report take the reads once probed;
// the replica killed, its reads (those in flight too) go to the master.
TEST(SentinelE2E, ReadsGoToTheReplicasTheSentinelsReport) {
  const ScopedTestDir scoped_dir("chash-sentinel");
  const fs::path& dir = scoped_dir.path();
  TcpServer master, replica;
  ASSERT_TRUE(master.redis(dir, "master"));
  ASSERT_TRUE(
      replica.redis(dir, "replica", {"--replicaof", "127.0.0.1", std::to_string(master.port())}));
  ASSERT_TRUE(eventually(
      [&] { return info_field(replica.port(), "replication", "master_link_status") == "up"; }));
  TcpServer s1, s2, s3;
  ASSERT_TRUE(s1.sentinel(dir, "s1", master.port()));
  ASSERT_TRUE(s2.sentinel(dir, "s2", master.port()));
  ASSERT_TRUE(s3.sentinel(dir, "s3", master.port()));
  ProxyRunner proxy;
  proxy.start(dir,
              pool_yaml({s1.port(), s2.port(), s3.port()}, "") + "  read_policy: prefer_replica\n");
  const std::uint16_t port = proxy->port(std::size_t{0});
  // The Sentinels learn the replica from the master's INFO; then our probe finds it usable.
  ASSERT_TRUE(eventually([&] {
    const auto t = proxy->topology();
    return t->pools[0]->servers.size() == 2 && !t->pools[0]->states[1]->down.load();
  })) << proxy->status_json();
  EXPECT_EQ(proxy->topology()->pools[0]->servers[1].name, "shard-a/" + replica.address());
  RespClient c(RespClient::dial_tcp(port));
  ASSERT_EQ(c.call({"SET", "k", "v"}), "+OK\r\n");
  ASSERT_TRUE(replicated(master.port()));
  const auto gets = [](std::uint16_t p) {
    const std::string r = call(p, {"INFO", "commandstats"});
    const std::size_t at = r.find("cmdstat_get:calls=");
    return at == std::string::npos ? 0L : std::stol(r.substr(at + 18));
  };
  const long on_master = gets(master.port());
  for (int i = 0; i < 50; ++i) ASSERT_EQ(c.call({"GET", "k"}), bulk("v"));
  EXPECT_GE(gets(replica.port()), 50);
  EXPECT_EQ(gets(master.port()), on_master);
  replica.stop();
  int failed = 0;
  for (int i = 0; i < 100; ++i) failed += c.call({"GET", "k"}) == bulk("v") ? 0 : 1;
  EXPECT_EQ(failed, 0);
  EXPECT_GE(gets(master.port()), on_master + 100);
}

TEST(SentinelE2E, DisagreeingUnreachableAndLateSentinels) {
  ASSERT_TRUE(have_redis());
  const ScopedTestDir scoped_dir("chash-sentinel");
  const fs::path& dir = scoped_dir.path();
  TcpServer a, b;
  ASSERT_TRUE(a.redis(dir, "a"));
  ASSERT_TRUE(b.redis(dir, "b"));
  FakeSentinel f1(free_port()), f2(free_port()), f3(free_port());
  // No Sentinel reachable at start: the proxy starts and answers with an error at once.
  ProxyRunner proxy;
  proxy.start(dir, pool_yaml({f1.port(), f2.port(), f3.port()}, ""));
  const std::uint16_t port = proxy->port(std::size_t{0});
  const auto t0 = Clock::now();
  const std::string early = call(port, {"SET", "k", "v"});
  EXPECT_NE(early.find("no master known yet"), std::string::npos) << early;
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_NE(proxy->status_json().find("no sentinel reachable"), std::string::npos);

  // They come up; two of three name a.
  f1.set_master(a.address());
  f2.set_master(a.address());
  f3.set_master(b.address());
  f1.start();
  f2.start();
  f3.start();
  ASSERT_TRUE(eventually([&] { return followed_master(*proxy) == a.address(); }));
  EXPECT_TRUE(write_lands_on(port, a.port(), "k"));

  // Each names another master: no majority, the last one is kept.
  f2.set_master(b.address());
  f3.set_master("127.0.0.1:1");
  f1.publish_switch();
  ASSERT_TRUE(eventually(
      [&] { return proxy->status_json().find("sentinels disagree") != std::string::npos; }));
  EXPECT_EQ(followed_master(*proxy), a.address());
  EXPECT_TRUE(write_lands_on(port, a.port(), "k"));

  // One Sentinel claims b alone against two for a: still a.
  f3.set_master(a.address());
  f2.set_master(a.address());
  f1.set_master(b.address());
  f1.publish_switch();
  std::this_thread::sleep_for(300ms);  // several fast checks (every 100 ms after a hint)
  EXPECT_EQ(followed_master(*proxy), a.address());

  // f1 unreachable; the two others now agree on b: followed.
  f1.stop();
  f2.set_master(b.address());
  f3.set_master(b.address());
  f2.publish_switch();
  ASSERT_TRUE(eventually([&] { return followed_master(*proxy) == b.address(); }));
  EXPECT_TRUE(write_lands_on(port, b.port(), "k"));

  // None reachable: the last master keeps serving.
  f2.stop();
  f3.stop();
  ASSERT_TRUE(eventually(
      [&] { return proxy->status_json().find("no sentinel reachable") != std::string::npos; }));
  EXPECT_TRUE(write_lands_on(port, b.port(), "k"));
}

// A "master" that is a replica answers -READONLY: the proxy passes the error on and asks the
// Sentinels again at once (not at its next one-second check).
// A "master" that answers -READONLY (a replica now): the proxy asks the Sentinels at once and
// sends the write once more to the master they then name; when they keep naming the replica,
// the -READONLY answers after the wait.
// A shard whose two (fake) Sentinels name r, a replica of a, as its master, and the proxy in
// front of it following r.
struct ReplicaNamedMaster {
  const ScopedTestDir scoped_dir{"chash-sentinel"};
  const fs::path& dir = scoped_dir.path();
  TcpServer a, r;
  FakeSentinel f1{free_port()}, f2{free_port()};
  ProxyRunner proxy;
  std::uint16_t port = 0;

  // `timeout`: the pool's request timeout (ms).
  bool start(int timeout = 1000) {
    if (!a.redis(dir, "a") ||
        !r.redis(dir, "r", {"--replicaof", "127.0.0.1", std::to_string(a.port())})) {
      return false;
    }
    name(r);
    f1.start();
    f2.start();
    std::string yaml = pool_yaml({f1.port(), f2.port()}, "");
    const std::string dflt = "timeout: 1000";
    yaml.replace(yaml.find(dflt), dflt.size(), "timeout: " + std::to_string(timeout));
    proxy.start(dir, yaml);
    port = proxy->port(std::size_t{0});
    return followed_master(*proxy) == r.address();
  }
  void name(const TcpServer& master) {
    f1.set_master(master.address());
    f2.set_master(master.address());
  }
};

TEST(SentinelE2E, ReadonlyReplyTriggersRediscovery) {
  ASSERT_TRUE(have_redis());
  ReplicaNamedMaster shard;
  ASSERT_TRUE(shard.start());
  const TcpServer& a = shard.a;
  const std::uint16_t port = shard.port;
  // The Sentinels go on naming the replica: the write waits for a new master, then fails.
  auto t0 = Clock::now();
  const std::string readonly = call(port, {"SET", "k", "v"});
  EXPECT_TRUE(readonly.starts_with("-READONLY")) << readonly;
  EXPECT_GE(Clock::now() - t0, 1900ms);
  // They name the real master: the write refused by the replica is sent there.
  shard.name(a);
  t0 = Clock::now();
  EXPECT_EQ(call(port, {"SET", "k", "w"}), "+OK\r\n");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(ms, 500);  // the periodic check comes every 1000 ms
  EXPECT_EQ(followed_master(*shard.proxy), a.address());
  EXPECT_EQ(call(a.port(), {"GET", "k"}), bulk("w"));
  EXPECT_TRUE(write_lands_on(port, a.port(), "k"));
}

// The master moves while a write the old one refuses is on its way back (the periodic check
// ran first): the write goes on to the new master at once. The move is judged against the
// address the write was sent to, not the one known when the refusal arrived (that failed the
// write after waiting for a further move that never came).
TEST(SentinelE2E, ReadonlyArrivingAfterTheMoveGoesToTheNewMaster) {
  ASSERT_TRUE(have_redis());
  ReplicaNamedMaster shard;
  ASSERT_TRUE(shard.start(5000));  // the write waits on r for the move (the check is every 1 s)
  const TcpServer &a = shard.a, &r = shard.r;
  RespClient c(RespClient::dial_tcp(shard.port));
  ASSERT_EQ(c.call({"GET", "k"}), "$-1\r\n");  // the proxy's connection to r is open
  // r stops with the write in flight; the Sentinels name a and the proxy follows meanwhile.
  ASSERT_EQ(::kill(r.pid(), SIGSTOP), 0);
  c.send({"SET", "k", "w"});
  shard.name(a);
  const bool followed = eventually([&] { return followed_master(*shard.proxy) == a.address(); });
  ASSERT_EQ(::kill(r.pid(), SIGCONT), 0);
  ASSERT_TRUE(followed);
  EXPECT_EQ(c.read_reply(), "+OK\r\n");  // r's -READONLY was not the answer
  EXPECT_EQ(call(a.port(), {"GET", "k"}), bulk("w"));
}

}  // namespace
}  // namespace chash::proxy::testing
