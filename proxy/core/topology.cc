// SPDX-License-Identifier: Apache-2.0
#include "core/topology.h"

#include <cstdio>
#include <map>

#include "core/log.h"
#include "net/socket.h"

namespace chash::proxy {

std::int64_t steady_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_failure(BackendState& s, const PoolConfig& pool, std::string_view why) {
  const std::uint32_t n = s.failures.fetch_add(1, std::memory_order_relaxed) + 1;
  s.errors.fetch_add(1, std::memory_order_relaxed);
  if (n < pool.server_failure_limit || s.down.load(std::memory_order_relaxed)) return;
  s.down_since_ms.store(steady_ms(), std::memory_order_relaxed);
  if (s.down.exchange(true)) return;
  s.ejections.fetch_add(1, std::memory_order_relaxed);
  s.ejected_at_us.store(std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count(),
                        std::memory_order_relaxed);
  const std::string failures = std::to_string(n);
  log(LogLevel::kWarn, pool.auto_eject_hosts ? "backend ejected" : "backend down",
      {{"pool", pool.name}, {"backend", s.name}, {"failures", failures}, {"reason", why}});
}

bool resolved_for(const BackendState& state, const Address& address) {
  const auto a = state.resolved();
  return a != nullptr && a->source == address.text();
}

Pool::Pool(const PoolConfig& c, std::vector<std::shared_ptr<BackendState>> s,
           std::shared_ptr<PoolShared> sh, std::size_t slot_)
    : config(c),
      slot(slot_),
      router(chash::Router::build(c.routing, c.nodes())),
      states(std::move(s)),
      shared(std::move(sh)) {}

std::shared_ptr<const Topology> build_topology(const ProxyConfig& config, const Topology* previous,
                                               std::uint64_t version) {
  auto t = std::make_shared<Topology>();
  t->version = version;
  t->slots = previous != nullptr ? previous->slots : 0;
  for (const auto& pc : config.pools) {
    std::map<std::string, std::shared_ptr<BackendState>, std::less<>> old;
    auto shared = std::make_shared<PoolShared>();
    std::size_t slot = t->slots;
    if (previous != nullptr) {
      for (const auto& p : previous->pools) {
        if (p->config.name != pc.name) continue;
        shared = p->shared;
        slot = p->slot;
        for (const auto& s : p->states) old.emplace(s->name, s);
      }
    }
    if (slot == t->slots) ++t->slots;
    std::vector<std::shared_ptr<BackendState>> states;
    for (const auto& s : pc.servers) {
      const auto it = old.find(s.name);
      states.push_back(it != old.end() ? it->second : std::make_shared<BackendState>(s.name));
      // Numeric addresses and unix paths need no lookup; names are core/resolver.h's.
      if (!resolved_for(*states.back(), s.address)) {
        auto r = std::make_shared<ResolvedAddress>();
        r->source = s.address.text();
        if (net::resolve_numeric(s.address, r->addr, r->len)) states.back()->set_resolved(r);
      }
    }
    t->pools.push_back(
        std::make_shared<const Pool>(pc, std::move(states), std::move(shared), slot));
  }
  return t;
}

std::string describe_change(const Topology& before, const Topology& after) {
  std::string out;
  for (const auto& np : after.pools) {
    const Pool* op = nullptr;
    for (const auto& p : before.pools) {
      if (p->config.name == np->config.name) op = p.get();
    }
    if (op == nullptr) {
      out += "pool " + np->config.name + ": new\n";
      continue;
    }
    std::string line;
    std::map<std::string, std::uint32_t> a, b;
    for (const auto& s : op->config.servers) a[s.name] = s.weight;
    for (const auto& s : np->config.servers) b[s.name] = s.weight;
    for (const auto& [n, w] : b) {
      if (!a.count(n)) line += " +" + n;
      else if (a[n] != w)
        line += " " + n + " weight " + std::to_string(a[n]) + "->" + std::to_string(w);
    }
    for (const auto& [n, w] : a) {
      if (!b.count(n)) line += " -" + n;
    }
    if (line.empty() && op->router.describe() == np->router.describe()) continue;
    // Key-space movement, measured on synthetic keys (the routers are immutable; this runs off
    // the hot path, on the thread that reloads).
    constexpr int kSample = 20000;
    int moved = 0;
    char key[32];
    for (int i = 0; i < kSample; ++i) {
      const int len =
          std::snprintf(key, sizeof key, "key:%08x", static_cast<unsigned>(i) * 2654435761u);
      const std::string_view k(key, static_cast<std::size_t>(len));
      const NodeId x = op->router.route(k), y = np->router.route(k);
      const std::string_view nx = x == kNoNode ? "" : std::string_view(op->config.servers[x].name);
      const std::string_view ny = y == kNoNode ? "" : std::string_view(np->config.servers[y].name);
      if (nx != ny) ++moved;
    }
    char pct[64];
    std::snprintf(pct, sizeof pct, "; %.1f%% of keys move", 100.0 * moved / kSample);
    out +=
        "pool " + np->config.name + ":" + (line.empty() ? " routing changed" : line) + pct + "\n";
  }
  for (const auto& op : before.pools) {
    bool kept = false;
    for (const auto& p : after.pools) kept |= p->config.name == op->config.name;
    if (!kept) out += "pool " + op->config.name + ": removed\n";
  }
  return out;
}

}  // namespace chash::proxy
