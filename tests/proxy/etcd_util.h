// SPDX-License-Identifier: Apache-2.0
// Test helpers for the fleet (membership/fleet/): real etcd members (Debian etcd-server) on free
// loopback ports, started by the tests and killed after, and a TCP forwarder that can cut one
// proxy's path to one backend.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"
#include "membership/etcd/client.h"

namespace chash::proxy::testing {

inline bool have_etcd() { return have_program("etcd"); }

// One etcd member of a cluster of `peers` (all on 127.0.0.1), its data in `dir`/<name>.
class EtcdMember {
 public:
  EtcdMember(fs::path dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {
    client_port_ = free_port();
    peer_port_ = free_port();
  }
  const std::string& name() const { return name_; }
  std::uint16_t client_port() const { return client_port_; }
  std::uint16_t peer_port() const { return peer_port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  std::string peer_url() const { return "http://127.0.0.1:" + std::to_string(peer_port_); }
  pid_t pid() const { return process_.pid(); }
  bool running() const { return process_.running(); }

  // `cluster`: "n1=http://127.0.0.1:P1,n2=..." (every member's peer URL). Ready once it answers
  // a range (a member of a new cluster answers once the cluster has a leader).
  bool start(const std::string& cluster, bool wait = true) {
    const std::string client = "http://" + endpoint();
    std::vector<std::string> argv = {"etcd",
                                     "--name",
                                     name_,
                                     "--data-dir",
                                     (dir_ / name_).string(),
                                     "--listen-client-urls",
                                     client,
                                     "--advertise-client-urls",
                                     client,
                                     "--listen-peer-urls",
                                     peer_url(),
                                     "--initial-advertise-peer-urls",
                                     peer_url(),
                                     "--initial-cluster",
                                     cluster,
                                     "--initial-cluster-state",
                                     "new",
                                     "--initial-cluster-token",
                                     "chash-test",
                                     "--logger",
                                     "zap",
                                     "--log-outputs",
                                     (dir_ / (name_ + ".log")).string(),
                                     "--heartbeat-interval",
                                     "50",
                                     "--election-timeout",
                                     "500"};
    return process_.start(argv, [&] { return !wait || answers(); });
  }
  bool answers() const {
    try {
      etcd::ClientOptions o;
      o.endpoints = {{"127.0.0.1", client_port_}};
      o.timeout = std::chrono::milliseconds(300);
      etcd::Client c(o);
      c.get("/ready");
      return true;
    } catch (const etcd::EtcdError&) {
      return false;
    }
  }
  void kill() { process_.stop(); }

 private:
  fs::path dir_;
  std::string name_;
  std::uint16_t client_port_ = 0, peer_port_ = 0;
  ChildProcess process_;
};

// `n` members on 127.0.0.1 (1: a single-node etcd).
class EtcdCluster {
 public:
  EtcdCluster(const fs::path& dir, int n) {
    for (int i = 0; i < n; ++i)
      members_.push_back(std::make_unique<EtcdMember>(dir, "e" + std::to_string(i + 1)));
    for (const auto& m : members_)
      cluster_ += (cluster_.empty() ? "" : ",") + m->name() + "=" + m->peer_url();
  }
  bool start() {
    // Every member first (a member waits for its peers), then wait for each to answer.
    for (auto& m : members_) {
      if (!m->start(cluster_, false)) return false;
    }
    for (auto& m : members_) {
      if (!eventually([&] { return m->answers(); })) return false;
    }
    return true;
  }
  // Starts member i again on its data directory (after kill()).
  bool restart(std::size_t i) { return members_[i]->start(cluster_, true); }
  EtcdMember& operator[](std::size_t i) { return *members_[i]; }
  std::size_t size() const { return members_.size(); }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const auto& m : members_) out.push_back(m->endpoint());
    return out;
  }
  // A YAML flow list of the endpoints: [127.0.0.1:1, ...]
  std::string yaml_endpoints() const {
    std::string out = "[";
    for (const auto& e : endpoints()) out += (out.size() > 1 ? ", " : "") + e;
    return out + "]";
  }
  etcd::Client client() const {
    etcd::ClientOptions o;
    for (const auto& m : members_) o.endpoints.push_back({"127.0.0.1", m->client_port()});
    o.timeout = std::chrono::milliseconds(1000);
    return etcd::Client(o);
  }

 private:
  std::vector<std::unique_ptr<EtcdMember>> members_;
  std::string cluster_;
};

// A TCP forwarder on 127.0.0.1 to a unix socket (a redis-server's): cut() closes every relayed
// connection and refuses new ones (accepted and closed at once, as a reset path would look to
// the proxy), restore() forwards again.
class Forwarder {
 public:
  explicit Forwarder(std::string target) : target_(std::move(target)) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 64);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Forwarder() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
    for (auto& [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
  }
  std::uint16_t port() const { return port_; }
  void cut() { cut_ = true; }
  void restore() { cut_ = false; }

 private:
  void run() {
    char buf[65536];
    while (!stop_) {
      std::vector<pollfd> fds = {{listen_, POLLIN, 0}};
      {
        std::lock_guard lock(mu_);
        if (cut_) {
          for (auto& [a, b] : pairs_) {
            ::close(a);
            ::close(b);
          }
          pairs_.clear();
        }
        for (auto& [a, b] : pairs_) {
          fds.push_back({a, POLLIN, 0});
          fds.push_back({b, POLLIN, 0});
        }
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0 && cut_) {
          ::close(c);
        } else if (c >= 0) {
          const int s = dial_unix(target_);
          if (s < 0) {
            ::close(c);
          } else {
            std::lock_guard lock(mu_);
            pairs_.emplace_back(c, s);
          }
        }
      }
      std::lock_guard lock(mu_);
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const std::size_t p = (i - 1) / 2;
        if (p >= pairs_.size()) continue;
        auto& [a, b] = pairs_[p];
        if (a < 0) continue;
        const int from = fds[i].fd, to = from == a ? b : a;
        const ssize_t n = ::recv(from, buf, sizeof buf, 0);
        if (n <= 0 || !send_all(to, {buf, static_cast<std::size_t>(n)})) {
          ::close(a);
          ::close(b);
          a = b = -1;
        }
      }
      std::erase_if(pairs_, [](const auto& pr) { return pr.first < 0; });
    }
  }

  std::string target_;
  int listen_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false}, cut_{false};
  std::mutex mu_;
  std::vector<std::pair<int, int>> pairs_;
  std::thread thread_;
};

}  // namespace chash::proxy::testing
