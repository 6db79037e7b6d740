// SPDX-License-Identifier: Apache-2.0
#include "membership/resolver.h"

#include <pthread.h>
#include <signal.h>

#include <cstring>

#include "base/log.h"
#include "net/socket.h"

namespace chash::proxy {

bool system_lookup(const Address& address, sockaddr_storage& out, socklen_t& len,
                   std::string& error) {
  return net::resolve(address, out, len, error);
}

Resolver::Resolver(Lookup lookup) : lookup_(std::move(lookup)), thread_([this] { run(); }) {
  ::pthread_setname_np(thread_.native_handle(), "resolver");
}

Resolver::~Resolver() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void Resolver::resolve_now(const Topology& t) {
  for (const auto& pool : t.pools) {
    for (NodeId i = 0; i < pool->states.size(); ++i) {
      const Address& a = pool->servers[i].address;
      // Sentinel-managed servers are membership/sentinel.h's to resolve.
      if (!pool->servers[i].sentinel_master.empty()) continue;
      if (!resolved_for(*pool->states[i], a)) lookup({pool->states[i], a, pool->config.name});
    }
  }
}

void Resolver::resolve_later(const Topology& t) {
  for (const auto& pool : t.pools) {
    for (NodeId i = 0; i < pool->states.size(); ++i) {
      const Address& a = pool->servers[i].address;
      if (!pool->servers[i].sentinel_master.empty()) continue;
      if (!resolved_for(*pool->states[i], a)) queue({pool->states[i], a, pool->config.name});
    }
  }
}

void Resolver::refresh(const std::shared_ptr<const Pool>& pool, NodeId node) {
  if (!pool->servers[node].sentinel_master.empty()) return;  // membership/sentinel.h's
  const Address& a = pool->servers[node].address;
  sockaddr_storage ss;
  socklen_t len = 0;
  if (net::resolve_numeric(a, ss, len)) return;  // nothing DNS could change
  queue({pool->states[node], a, pool->config.name});
}

void Resolver::queue(Job job) {
  if (job.state->resolving.exchange(true)) return;  // one lookup per backend at a time
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Resolver::run() {
  // Signals are the control thread's (control/signals.h reads them from a signalfd): this thread
  // may be started before they are blocked, so it blocks them itself.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    lookup(job);
    lock.lock();
  }
}

void Resolver::lookup(const Job& job) {
  auto r = std::make_shared<ResolvedAddress>();
  r->source = job.address.text();
  std::string error;
  lookups_.fetch_add(1, std::memory_order_relaxed);
  BackendState& s = *job.state;
  if (!lookup_(job.address, r->addr, r->len, error)) {
    s.resolving = false;
    // A lookup that fails after one that worked keeps the old address (a DNS outage must not
    // take down backends that still answer); a name that never resolved is down.
    if (resolved_for(s, job.address)) {
      log(LogLevel::kWarn, "cannot resolve backend, keeping its last address",
          {{"pool", job.pool}, {"backend", s.name}, {"reason", error}});
      return;
    }
    s.down_since_ms = steady_ms();
    if (!s.down.exchange(true)) s.ejections.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::kWarn, "cannot resolve backend; it is down until it does",
        {{"pool", job.pool}, {"backend", s.name}, {"reason", error}});
    return;
  }
  const auto before = s.resolved();
  const bool changed = before == nullptr || before->source != r->source || before->len != r->len ||
                       std::memcmp(&before->addr, &r->addr, r->len) != 0;
  s.set_resolved(std::move(r));
  s.resolving = false;
  if (changed && before != nullptr && before->source == job.address.text()) {
    log(LogLevel::kInfo, "backend address changed", {{"pool", job.pool}, {"backend", s.name}});
  }
  // Down for want of an address (or with an address that changed): probe it at once.
  if (changed && s.down.load()) s.down_since_ms = 0;
}

}  // namespace chash::proxy
