// SPDX-License-Identifier: Apache-2.0
// Test helpers for Redis Cluster pools: a real cluster of redis-server processes on 127.0.0.1
// (made with `redis-cli --cluster create`), and a scripted RESP server that plays a cluster
// node which misbehaves.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"
#include "membership/control_client.h"
#include "redis_util.h"

namespace chash::proxy::testing {

inline std::string call_port(std::uint16_t port, const std::vector<std::string>& argv) {
  RespClient c(RespClient::dial_tcp(port));
  return c.ok() ? c.call(argv) : "";
}

// A bulk reply's contents ("" for anything else).
inline std::string bulk_text(const std::string& reply) {
  if (reply.empty() || reply[0] != '$') return "";
  const std::size_t nl = reply.find("\r\n");
  if (nl == std::string::npos || reply.size() < nl + 4) return "";
  return reply.substr(nl + 2, reply.size() - nl - 4);
}

// A free port whose cluster bus port (+10000) is free too.
inline std::uint16_t cluster_port() {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const std::uint16_t p = free_port();
    if (p > 55000 || p < 1024) continue;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(p + 10000));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return p;
  }
  return 0;
}

// `masters` masters (and `replicas` replicas each) made into one cluster by redis-cli.
class RedisCluster {
 public:
  RedisCluster(fs::path dir, int masters, int replicas = 0, std::vector<std::string> extra = {})
      : dir_(std::move(dir)), masters_(masters), replicas_(replicas), extra_(std::move(extra)) {}
  ~RedisCluster() { stop(); }

  // Ports picked now (so a proxy can be pointed at them before the cluster exists).
  void pick_ports() {
    const int n = masters_ * (1 + replicas_);
    while (static_cast<int>(ports_.size()) < n) ports_.push_back(cluster_port());
  }
  bool start() {
    pick_ports();
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      if (!start_node(i)) return false;
    }
    std::string cmd = "redis-cli --cluster create";
    for (const auto p : ports_) cmd += " 127.0.0.1:" + std::to_string(p);
    cmd += " --cluster-replicas " + std::to_string(replicas_) + " --cluster-yes";
    const auto [out, rc] = run(cmd);
    if (rc != 0) {
      ADD_FAILURE() << cmd << ": " << out;
      return false;
    }
    // `--cluster create` returns before every replica has turned one: wait_ok() alone let a
    // test start while a node still reported itself a master (its proxy saw 6 masters).
    const std::size_t want = ports_.size() / (replicas_ + 1) * replicas_;
    return wait_ok() && eventually([&] {
             std::size_t n = 0;
             for (const auto p : ports_) {
               if (call_port(p, {"INFO", "replication"}).find("role:slave") != std::string::npos)
                 ++n;
             }
             return n == want;
           }) &&
           wait_ok();
  }
  // Every node says cluster_state:ok, every replica is linked to its master, and redis-cli's
  // check passes (all agree on the map).
  // Up to 20 s: a cluster's gossip converges in ~2 s here, in over 5 s on a loaded machine (a CI
  // proof beside a chaos run failed NoSeedAtStartThenTheClusterComes on eventually()'s 5 s).
  bool wait_ok() {
    return within(std::chrono::seconds(20), [&] {
      for (std::size_t i = 0; i < ports_.size(); ++i) {
        if (!alive_[i]) continue;
        if (call_port(ports_[i], {"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos)
          return false;
        const std::string repl = call_port(ports_[i], {"INFO", "replication"});
        if (repl.find("role:slave") != std::string::npos &&
            repl.find("master_link_status:up") == std::string::npos)
          return false;
      }
      return run("redis-cli --cluster check 127.0.0.1:" + std::to_string(live_port()))
                 .second == 0;
    });
  }
  void stop() {
    for (auto& p : nodes_) {
      if (p) p->stop();
    }
  }
  void kill(std::size_t i) {
    nodes_[i]->stop();
    alive_[i] = false;
  }
  const std::vector<std::uint16_t>& ports() const { return ports_; }
  std::string seed(std::size_t i = 0) const { return "127.0.0.1:" + std::to_string(ports_[i]); }
  std::string id(std::size_t i) const {
    return bulk_text(call_port(ports_[i], {"CLUSTER", "MYID"}));
  }
  bool is_master(std::size_t i) const {
    return call_port(ports_[i], {"ROLE"}).find("master") != std::string::npos &&
           call_port(ports_[i], {"ROLE"}).find("slave") == std::string::npos;
  }
  // Calls of `command` a node has served (INFO commandstats).
  long calls(std::size_t i, const std::string& command) const {
    const std::string r = call_port(ports_[i], {"INFO", "commandstats"});
    const std::string key = "cmdstat_" + command + ":calls=";
    const std::size_t at = r.find(key);
    return at == std::string::npos ? 0 : std::stol(r.substr(at + key.size()));
  }
  // The index of the node that serves `key` (as its master), -1 if none answers.
  int owner(const std::string& key) const {
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      if (!alive_[i]) continue;
      const std::string r = call_port(ports_[i], {"EXISTS", key});
      if (r == ":1\r\n" || r == ":0\r\n") return static_cast<int>(i);  // not MOVED: it is here
    }
    return -1;
  }
  // redis-cli --cluster reshard of `slots` slots from node `from` to node `to`.
  std::pair<std::string, int> reshard(std::size_t from, std::size_t to, int slots) const {
    return run("redis-cli --cluster reshard " + seed(from) + " --cluster-from " + id(from) +
                       " --cluster-to " + id(to) + " --cluster-slots " + std::to_string(slots) +
                       " --cluster-yes --cluster-pipeline 10");
  }

 private:
  bool start_node(std::size_t i) {
    const std::string port = std::to_string(ports_[i]);
    std::vector<std::string> argv = {
        "redis-server", "--port", port, "--bind", "127.0.0.1", "--cluster-enabled", "yes",
        "--cluster-config-file", (dir_ / ("nodes-" + port + ".conf")).string(),
        "--cluster-node-timeout", "1000",
        // Replicas sync at once (diskless sync waits 5 s by default).
        "--repl-diskless-sync-delay", "0", "--save", "", "--appendonly", "no", "--dir",
        dir_.string(), "--logfile", (dir_ / ("node-" + port + ".log")).string()};
    argv.insert(argv.end(), extra_.begin(), extra_.end());
    auto p = std::make_unique<ChildProcess>();
    const std::uint16_t port_n = ports_[i];
    if (!p->start(argv, [port_n] {
          const int fd = dial_tcp(port_n);
          if (fd < 0) return false;
          ::close(fd);
          return true;
        })) {
      return false;
    }
    nodes_.push_back(std::move(p));
    alive_.push_back(true);
    return true;
  }
  std::uint16_t live_port() const {
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      if (alive_[i]) return ports_[i];
    }
    return 0;
  }

  fs::path dir_;
  int masters_, replicas_;
  std::vector<std::string> extra_;
  std::vector<std::uint16_t> ports_;
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
  std::vector<bool> alive_;
};

// A RESP server on 127.0.0.1 whose every reply `handler` makes from the request's arguments:
// a cluster node that points in circles, says TRYAGAIN, or is down.
class ScriptedRedis {
 public:
  using Handler = std::function<std::string(const std::vector<std::string>& argv)>;
  explicit ScriptedRedis(Handler h) : handler_(std::move(h)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~ScriptedRedis() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
    for (auto& [fd, in] : conns_) ::close(fd);
  }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& [fd, in] : conns_) fds.push_back({fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 10);
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
        if (fd >= 0) conns_[fd] = "";
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
        std::string& in = conns_[fd];
        in.append(buf, static_cast<std::size_t>(n));
        std::size_t pos = 0;
        std::string out;
        for (;;) {
          RespValue v;
          std::size_t at = pos;
          if (parse_resp(in, at, v) != 1) break;
          pos = at;
          std::vector<std::string> argv;
          for (const auto& item : v.items) argv.push_back(item.str);
          ++requests_;
          out += handler_(argv);
        }
        in.erase(0, pos);
        (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      }
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::map<int, std::string> conns_;
  std::thread thread_;
};

// CLUSTER NODES for one master at `address` serving every slot (a one-node cluster's view).
inline std::string one_node_map(const std::string& address) {
  return bulk("0000000000000000000000000000000000000001 " + address + "@1 myself,master - 0 0 1 " +
              "connected 0-16383\n");
}

}  // namespace chash::proxy::testing
