// SPDX-License-Identifier: Apache-2.0
#include "membership/topology.h"

#include <cstdio>
#include <map>

#include "chash/error.h"
#include "base/log.h"
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
  s.set_last_error(why);
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

Pool::Pool(const PoolConfig& c, std::vector<ServerConfig> members, std::size_t routed,
           std::vector<std::shared_ptr<BackendState>> s, chash::Router r,
           std::shared_ptr<PoolShared> sh, std::size_t slot_,
           std::shared_ptr<const redis::ClusterMap> cluster_map,
           std::vector<PreviousRouting> previous_routings)
    : config(c),
      slot(slot_),
      servers(std::move(members)),
      nodes(routed),
      replicas(routed),
      router(std::move(r)),
      states(std::move(s)),
      shared(std::move(sh)),
      cluster(std::move(cluster_map)),
      previous(std::move(previous_routings)) {
  for (NodeId i = static_cast<NodeId>(nodes); i < servers.size(); ++i) {
    if (servers[i].role == ServerRole::kReplica && servers[i].replica_of < nodes)
      replicas[servers[i].replica_of].push_back(i);
  }
}

Pool::Pool(const PoolConfig& c, std::vector<std::shared_ptr<BackendState>> s,
           std::shared_ptr<PoolShared> sh, std::size_t slot_)
    : Pool(c, c.servers, c.servers.size(), std::move(s), chash::Router::build(c.routing, c.nodes()),
           std::move(sh), slot_) {}

NodeId Pool::read_member(NodeId node, std::uint32_t turn) const noexcept {
  if (node >= nodes || config.read_policy == ReadPolicy::kMaster) return node;
  const auto& reps = replicas[node];
  std::uint32_t usable = 0;
  for (const NodeId r : reps) usable += up(r) ? 1 : 0;
  // The k-th replica that is up.
  auto nth_up = [&](std::uint32_t k) {
    for (const NodeId r : reps) {
      if (up(r) && k-- == 0) return r;
    }
    return node;
  };
  switch (config.read_policy) {
    case ReadPolicy::kMaster:
      return node;
    case ReadPolicy::kPreferReplica:
      return usable == 0 ? node : nth_up(turn % usable);
    case ReadPolicy::kReplica:
      return usable == 0 ? kNoNode : nth_up(turn % usable);
    case ReadPolicy::kAny: {
      const std::uint32_t k = turn % (usable + 1);
      return k == usable ? node : nth_up(k);
    }
  }
  return node;
}

namespace {

// Whether the pool's members include its replicas: reads go to them (read_policy), or the reads
// of hot keys do (hot_reads: replicas, docs/HOTKEYS.md).
bool reads_replicas(const PoolConfig& pc) noexcept {
  return pc.read_policy != ReadPolicy::kMaster || pc.hot_reads == hotkeys::Reads::kReplicas;
}

// A member the pool learnt rather than was given (a cluster's node, a replica): it is reached
// with `like`'s credentials and TLS (a cluster's: the pool's server_user/server_auth/server_tls).
ServerConfig learnt_member(const std::string& address, const ServerConfig& like) {
  ServerConfig m;
  m.address = parse_address(address, "cluster node");
  m.name = address;
  m.weight = 1;
  m.password = like.password;
  m.user = like.user;
  m.tls = like.tls;
  return m;
}

ServerConfig pool_credentials(const PoolConfig& pc) {
  ServerConfig s;
  s.password = pc.server_password;
  s.user = pc.server_user;
  s.tls = pc.server_tls;
  return s;
}

// A map before any node answered: the seeds as slotless masters (so /status shows whom the
// proxy asks), every slot unserved.
const std::shared_ptr<const std::array<NodeId, kRedisSlots>>& no_slots() {
  static const auto none = [] {
    auto a = std::make_shared<std::array<NodeId, kRedisSlots>>();
    a->fill(kNoNode);
    return std::shared_ptr<const std::array<NodeId, kRedisSlots>>(std::move(a));
  }();
  return none;
}

struct Members {
  std::vector<ServerConfig> servers;
  std::size_t nodes = 0;
  std::shared_ptr<const redis::ClusterMap> cluster;
};

Members members_of(const PoolConfig& pc, const Discovered* discovered) {
  Members m;
  if (pc.is_cluster()) {
    const ServerConfig creds = pool_credentials(pc);
    m.cluster = discovered != nullptr ? discovered->cluster(pc.name) : nullptr;
    if (m.cluster != nullptr) {
      for (const auto& n : m.cluster->masters) m.servers.push_back(learnt_member(n.address, creds));
    } else {
      for (const auto& a : pc.cluster_seeds) m.servers.push_back(learnt_member(a.text(), creds));
    }
    m.nodes = m.servers.size();
    if (m.cluster != nullptr && reads_replicas(pc)) {
      for (const auto& r : m.cluster->replicas) {
        ServerConfig s = learnt_member(r.address, creds);
        s.role = ServerRole::kReplica;
        s.replica_of = r.master;
        m.servers.push_back(std::move(s));
      }
    }
    return m;
  }
  m.servers = pc.servers;
  m.nodes = m.servers.size();
  if (!reads_replicas(pc)) return m;
  for (std::size_t i = 0; i < m.nodes; ++i) {
    const ServerConfig& node = m.servers[i];
    std::vector<std::string> addresses;
    for (const auto& a : node.replicas) addresses.push_back(a.text());
    if (!node.sentinel_master.empty() && discovered != nullptr)
      addresses = discovered->replicas(pc.name, node.name);
    for (const auto& a : addresses) {
      ServerConfig s;
      try {
        s = learnt_member(a, node);
      } catch (const Error&) {
        continue;  // a Sentinel's address we cannot parse: not a member
      }
      s.name = node.name + "/" + a;
      s.role = ServerRole::kReplica;
      s.replica_of = static_cast<std::uint32_t>(i);
      m.servers.push_back(std::move(s));
    }
  }
  return m;
}

// Whether `a` and `b` route alike: the same routed servers and weights, and the same routing.
bool same_routing(const Pool& a, const PoolConfig& b_config, const chash::Router& b_router) {
  if (a.nodes != b_config.servers.size()) return false;
  for (std::size_t i = 0; i < a.nodes; ++i) {
    if (a.servers[i].name != b_config.servers[i].name ||
        a.servers[i].weight != b_config.servers[i].weight)
      return false;
  }
  return a.router.describe() == b_router.describe();
}

// Gives each previous routing's nodes their members in `m` by name: a routed one, else a retired
// member (reached as `known` lists it), appended to `m`.
void link_members(std::vector<PreviousRouting>& out, Members& m,
                  const std::vector<ServerConfig>& known) {
  for (PreviousRouting& p : out) {
    p.member.assign(p.names.size(), kNoNode);
    for (std::size_t i = 0; i < p.names.size(); ++i) {
      for (NodeId k = 0; k < m.servers.size(); ++k) {
        if (m.servers[k].name == p.names[i] && m.servers[k].role != ServerRole::kReplica) {
          p.member[i] = k;
          break;
        }
      }
      if (p.member[i] != kNoNode) continue;
      for (const ServerConfig& s : known) {
        if (s.name != p.names[i] || s.role == ServerRole::kReplica) continue;
        ServerConfig r = s;
        r.role = ServerRole::kRetired;
        p.member[i] = static_cast<NodeId>(m.servers.size());
        m.servers.push_back(std::move(r));
        break;
      }
    }
  }
}

// The previous routings the new pool keeps reading through (warm-up): `old`'s own still in
// their window, after the routing `old` had when it differs from the new one. Servers they name
// that the new pool does not route to stay as retired members (appended to `m`).
std::vector<PreviousRouting> previous_of(const PoolConfig& pc, const Pool* old,
                                         const chash::Router& router, Members& m) {
  std::vector<PreviousRouting> out;
  if (old == nullptr || !pc.warmup || pc.is_cluster()) return out;
  const std::int64_t now = steady_ms();
  const std::vector<std::string> returned = old->shared->take_returned();
  const bool ended = old->shared->end_warmup.exchange(false);
  if (ended) return out;
  if (!same_routing(*old, pc, router)) {
    PreviousRouting p{old->router, {}, {}, now + pc.warmup_window_ms, {}};
    for (std::size_t i = 0; i < old->nodes; ++i) p.names.push_back(old->servers[i].name);
    // Servers down at the change had their keys written at their next choice: that routing (with
    // them out) is read first, newest, so a write made during the absence is still found after
    // the change moved its key (it would be a miss, and once the server returns and is swept the
    // value would sit where no routing looks). The routing with them in follows: it holds what
    // they had before they went down, read once they are back.
    if (old->config.auto_eject_hosts) {
      PreviousRouting absent = p;
      absent.out.assign(old->nodes, 0);
      bool any = false;
      for (std::size_t i = 0; i < old->nodes; ++i) {
        if (!old->up(static_cast<NodeId>(i))) absent.out[i] = 1, any = true;
      }
      if (any) {
        if (pc.failover_ttl_ms != 0)  // the copies there expire by then
          absent.until_ms = now + std::min(pc.warmup_window_ms, pc.failover_ttl_ms);
        out.push_back(std::move(absent));
      }
    }
    out.push_back(std::move(p));
  }
  // A server back from an absence: what was written at its keys' next choice meanwhile is read
  // through there (the routing with it out) until those copies expire (failover_ttl) or the
  // window ends — so a write made while it was out is served after it returns, not a miss.
  for (const std::string& name : returned) {
    PreviousRouting p{old->router, {}, {}, now + pc.warmup_window_ms, {}};
    if (pc.failover_ttl_ms != 0)
      p.until_ms = now + std::min(pc.warmup_window_ms, pc.failover_ttl_ms);
    p.out.assign(old->nodes, 0);
    bool found = false;
    for (std::size_t i = 0; i < old->nodes; ++i) {
      p.names.push_back(old->servers[i].name);
      if (old->servers[i].name != name) continue;
      p.out[i] = 1;
      found = true;
    }
    if (found && out.size() < kMaxPreviousRoutings) out.push_back(std::move(p));
  }
  for (const PreviousRouting& p : old->previous) {
    if (p.until_ms > now && out.size() < kMaxPreviousRoutings) out.push_back(p);
  }
  link_members(out, m, old->servers);
  return out;
}

chash::Router router_of(const PoolConfig& pc, const Members& m) {
  if (!pc.is_cluster()) return chash::Router::build(pc.routing, pc.nodes());
  std::vector<chash::Node> nodes;
  for (std::size_t i = 0; i < m.nodes; ++i) nodes.push_back({m.servers[i].name, 1});
  chash::TableOptions options;
  options.slots.assignment = m.cluster != nullptr ? m.cluster->owner : no_slots();
  return chash::Router::build(chash::Algorithm::kSlots, nodes, options,
                              chash::KeyPolicy{chash::KeyHash::kRedisSlot});
}

// ---- Fleet pools (membership/fleet/): the members and routings come from etcd ------------------

// 1 for each server of `servers` named in `ejected`.
std::vector<std::uint8_t> out_mask(const std::vector<ServerConfig>& servers,
                                   const std::vector<std::string>& ejected) {
  std::vector<std::uint8_t> out(servers.size(), 0);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    for (const auto& e : ejected) {
      if (servers[i].name == e) out[i] = 1;
    }
  }
  return out;
}

// The fleet's read-through routings, each its own router over its own servers, reaching its
// servers as members of `m` (routed, or retired ones appended). Their window is etcd's to end.
std::vector<PreviousRouting> fleet_previous(const PoolConfig& pc, const FleetPool& fp, Members& m) {
  std::vector<PreviousRouting> out;
  if (!pc.warmup) return out;
  std::vector<ServerConfig> known;
  for (const FleetRouting& r : fp.reads) {
    PreviousRouting p{chash::Router::build(pc.routing, routing_nodes(r.servers)),
                      {},
                      {},
                      kNoWindowEnd,
                      out_mask(r.servers, r.ejected)};
    for (const auto& s : r.servers) {
      p.names.push_back(s.name);
      known.push_back(s);
    }
    bool any_out = false;
    for (const auto x : p.out) any_out |= x != 0;
    if (!any_out) p.out.clear();
    out.push_back(std::move(p));
    if (out.size() == kMaxPreviousRoutings) break;
  }
  link_members(out, m, known);
  return out;
}

// The fleet's homes (FleetPool::homes) of members `pool` has: routings linked to its members only
// (what a write is noted against; nothing is read from them).
std::vector<Pool::Home> fleet_homes(const PoolConfig& pc, const FleetPool& fp, const Pool& pool) {
  std::vector<Pool::Home> out;
  for (const auto& [server, r] : fp.homes) {
    NodeId member = kNoNode;
    for (NodeId i = 0; i < pool.nodes; ++i) {
      if (pool.servers[i].name == server) member = i;
    }
    if (member == kNoNode) continue;
    Pool::Home h{member,
                 {chash::Router::build(pc.routing, routing_nodes(r.servers)),
                  {},
                  std::vector<NodeId>(r.servers.size(), kNoNode),
                  kNoWindowEnd,
                  out_mask(r.servers, r.ejected)}};
    for (std::size_t i = 0; i < r.servers.size(); ++i) {
      h.routing.names.push_back(r.servers[i].name);
      if (r.servers[i].name == server) h.routing.member[i] = member;
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace

std::shared_ptr<const Topology> build_topology(const ProxyConfig& config, const Topology* previous,
                                               std::uint64_t version,
                                               const Discovered* discovered) {
  auto t = std::make_shared<Topology>();
  t->version = version;
  t->slots = previous != nullptr ? previous->slots : 0;
  for (const auto& pc : config.pools) {
    std::map<std::string, std::shared_ptr<BackendState>, std::less<>> old;
    auto shared = std::make_shared<PoolShared>();
    std::size_t slot = t->slots;
    const Pool* old_pool = nullptr;
    if (previous != nullptr) {
      for (const auto& p : previous->pools) {
        if (p->config.name != pc.name) continue;
        shared = p->shared;
        slot = p->slot;
        old_pool = p.get();
        for (const auto& s : p->states) old.emplace(s->name, s);
      }
    }
    if (slot == t->slots) ++t->slots;
    // An etcd pool routes as the fleet says once it has heard it (before: the file's servers).
    const std::shared_ptr<const FleetPool> fleet =
        pc.etcd != nullptr && discovered != nullptr ? discovered->fleet(pc.name) : nullptr;
    PoolConfig effective;
    if (fleet != nullptr) {
      effective = pc;
      effective.servers = fleet->route.servers;
    }
    const PoolConfig& config_now = fleet != nullptr ? effective : pc;
    Members m = members_of(config_now, discovered);
    chash::Router router = router_of(config_now, m);
    std::vector<PreviousRouting> prev =
        fleet != nullptr ? fleet_previous(pc, *fleet, m) : previous_of(pc, old_pool, router, m);
    std::vector<std::shared_ptr<BackendState>> states;
    for (const auto& s : m.servers) {
      const auto it = old.find(s.name);
      states.push_back(it != old.end() ? it->second : std::make_shared<BackendState>(s.name));
      if (it == old.end() && s.role == ServerRole::kReplica) {
        // Not read from until a probe has found it usable (linked, loaded, not lagging).
        states.back()->down.store(true);
        states.back()->down_since_ms.store(0);
      }
      // Numeric addresses and unix paths need no lookup; names are membership/resolver.h's.
      if (!resolved_for(*states.back(), s.address)) {
        auto r = std::make_shared<ResolvedAddress>();
        r->source = s.address.text();
        if (net::resolve_numeric(s.address, r->addr, r->len)) states.back()->set_resolved(r);
      }
    }
    const std::size_t nodes = m.nodes;
    auto pool = std::make_shared<Pool>(config_now, std::move(m.servers), nodes, std::move(states),
                                       std::move(router), std::move(shared), slot,
                                       std::move(m.cluster), std::move(prev));
    if (fleet != nullptr) {
      pool->fleet_epoch = fleet->epoch;
      pool->homes = fleet_homes(pc, *fleet, *pool);
      if (fleet->health) {
        pool->fleet_out = out_mask(fleet->route.servers, fleet->route.ejected);
        pool->fleet_out.resize(nodes, 0);
      }
    }
    t->pools.push_back(std::move(pool));
  }
  // `shadow:` names a pool by name; workers find it by slot, known once every pool has one. The
  // pools were made here (not const): setting the slot before publishing is safe.
  for (const auto& p : t->pools) {
    if (!p->config.shadow) continue;
    for (const auto& q : t->pools) {
      if (q->config.name == p->config.shadow->pool) const_cast<Pool&>(*p).shadow_slot = q->slot;
    }
  }
  // `prefix_routes:` likewise, longest prefix first (Pool::prefix_route takes the first match).
  for (const auto& p : t->pools) {
    auto& slots = const_cast<Pool&>(*p).prefix_slots;
    for (const PrefixRoute& r : p->config.prefix_routes) {
      for (const auto& q : t->pools) {
        if (q->config.name == r.pool) slots.emplace_back(r.prefix, q->slot);
      }
    }
    std::stable_sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) {
      return a.first.size() > b.first.size();
    });
  }
  return t;
}

bool note_fallback_write(const Pool& pool, std::string_view key, NodeId node) {
  const PoolConfig& pc = pool.config;
  if (!pc.auto_eject_hosts || !pc.failover_invalidate) return false;
  // A key an out member owned in the routing it was last in goes to its owner now (a change
  // during the absence moved it): not a fallback write, but the member's copy is older now.
  const NodeId owner = pool.router.route(key);
  for (const Pool::Home& h : pool.homes) {
    if (h.member == node || h.member == owner) continue;
    const NodeId old = h.routing.owner(key);
    if (old < h.routing.member.size() && h.routing.member[old] == h.member)
      pool.states[h.member]->absence.note(key, pc.failover_track_keys);
  }
  if (owner == node || owner == kNoNode || owner >= pool.nodes) return false;
  pool.states[owner]->absence.note(key, pc.failover_track_keys);
  return true;
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
      const std::string_view nx = x == kNoNode ? "" : std::string_view(op->servers[x].name);
      const std::string_view ny = y == kNoNode ? "" : std::string_view(np->servers[y].name);
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
