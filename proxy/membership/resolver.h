// SPDX-License-Identifier: Apache-2.0
// chash-proxy — backend names resolved off the workers.
//
// A worker must never wait on DNS: one slow answer would stall every client of that worker. So
// workers only connect to the address a BackendState holds (BackendState::resolved()), and this
// resolver fills it: numeric addresses and unix paths at once when a topology is built (no
// lookup), host names at start-up on the main thread and afterwards on the resolver's own
// thread — for the backends a reload adds or readdresses, and again each time the health
// checker probes a backend that is down (so a name that changed in DNS is followed on
// reconnect). A name that does not resolve is logged and its backend is down; the health
// checker keeps asking for it every server_retry_timeout, and the first lookup that succeeds
// makes the backend's next probe due at once.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.h"
#include "membership/topology.h"

namespace chash::proxy {

// host + port → address; false with `error` when it does not resolve. The default is
// getaddrinfo (net::resolve); tests inject slow or failing lookups.
using Lookup = std::function<bool(const Address& address, sockaddr_storage& out, socklen_t& len,
                                  std::string& error)>;
bool system_lookup(const Address& address, sockaddr_storage& out, socklen_t& len,
                   std::string& error);

class Resolver {
 public:
  explicit Resolver(Lookup lookup = system_lookup);
  ~Resolver();  // stops and joins the thread; queued lookups are dropped
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Every backend of `t` without an address for its configured one: looked up now, on the
  // calling thread (start-up: before any worker runs).
  void resolve_now(const Topology& t);
  // The same, queued for the resolver's thread (reload): returns at once.
  void resolve_later(const Topology& t);
  // Queues a fresh lookup of one backend (a probe of a backend that is down); no-op for
  // numeric addresses and while one is already queued.
  void refresh(const std::shared_ptr<const Pool>& pool, NodeId node);

  std::uint64_t lookups() const noexcept { return lookups_.load(std::memory_order_relaxed); }

 private:
  struct Job {
    std::shared_ptr<BackendState> state;
    Address address;
    std::string pool;
  };
  void run();
  void lookup(const Job& job);
  void queue(Job job);

  Lookup lookup_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::atomic<std::uint64_t> lookups_{0};
  std::thread thread_;  // last: starts after the members it uses exist
};

}  // namespace chash::proxy
