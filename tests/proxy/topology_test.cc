// SPDX-License-Identifier: Apache-2.0
// Pool routing (proxy/membership/topology.h): the library router's failover and bounded loads over
// the backends' shared state — a down backend's keys move to their next choice and nobody else's, a
// backend with more than its share of requests in flight passes keys on, for any pool size.
#include "membership/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "membership/discovery.h"

namespace chash::proxy {
namespace {

std::shared_ptr<const Pool> pool_of(const std::string& extra, int servers) {
  std::string y =
      "a:\n  listen: 127.0.0.1:0\n  redis: true\n  algorithm: ring\n" + extra + "  servers:\n";
  for (int i = 0; i < servers; ++i) {
    y += "   - 127.0.0.1:" + std::to_string(7000 + i) + ":1 r" + std::to_string(i) + "\n";
  }
  const ProxyConfig cfg = parse_config(y, "t.yml");
  return build_topology(cfg, nullptr, 1)->pools.at(0);
}

std::vector<std::string> keys(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("user:" + std::to_string(i));
  return v;
}

TEST(PoolRouteTest, ADownBackendsKeysMoveToTheirNextChoiceOnly) {
  const auto pool = pool_of("  auto_eject_hosts: true\n", 5);
  std::vector<NodeId> before;
  for (const auto& k : keys(500)) before.push_back(pool->route(k));
  pool->states[2]->down = true;
  DownSet down(5);
  down.set(2, true);
  int moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const std::string k = keys(500)[i];
    const NodeId now = pool->route(k);
    EXPECT_NE(now, 2u);
    EXPECT_EQ(now, pool->router.route(k, down));
    if (before[i] != 2) {
      EXPECT_EQ(now, before[i]) << k;
    } else {
      ++moved;
    }
  }
  EXPECT_GT(moved, 50);
  pool->states[2]->down = false;
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(pool->route(keys(500)[i]), before[i]);
}

TEST(PoolRouteTest, JumpBackAlgorithmsRouteAsTheLibrary) {
  // `algorithm: jumpback` and `memento-jumpback` reach the library router by name.
  for (const char* algo : {"jumpback", "memento-jumpback"}) {
    std::string y = "a:\n  listen: 127.0.0.1:0\n  redis: true\n  algorithm: " + std::string(algo) +
                    "\n  servers:\n";
    std::vector<Node> nodes;
    for (int i = 0; i < 6; ++i) {
      y += "   - 127.0.0.1:" + std::to_string(7000 + i) + ":1 r" + std::to_string(i) + "\n";
      nodes.push_back({"r" + std::to_string(i), 1});
    }
    const auto pool = build_topology(parse_config(y, "t.yml"), nullptr, 1)->pools.at(0);
    RoutingSpec spec;
    spec.algorithm = algo;
    const Router expected = Router::build(spec, nodes);
    for (const auto& k : keys(300))
      EXPECT_EQ(pool->route(k), expected.route(k)) << algo << " " << k;
  }
}

TEST(PoolRouteTest, WithoutAutoEjectADownBackendIsStillReturned) {
  const auto pool = pool_of("", 4);
  const NodeId owner = pool->route("k");
  pool->states[owner]->down = true;
  EXPECT_EQ(pool->route("k"), owner);  // the session fails it fast
}

TEST(PoolRouteTest, FailoverPastManyDownBackends) {
  const auto pool = pool_of("  auto_eject_hosts: true\n", 40);
  for (int i = 0; i < 39; ++i) pool->states[i]->down = true;
  for (const auto& k : keys(50)) EXPECT_EQ(pool->route(k), 39u) << k;
  pool->states[39]->down = true;
  EXPECT_EQ(pool->route("k"), kNoNode);
}

TEST(PoolRouteTest, HashBalanceFactorPassesKeysOnFromABusyBackend) {
  const auto pool = pool_of("  auto_eject_hosts: true\n  hash_balance_factor: 125\n", 4);
  EXPECT_EQ(pool->router.balance_factor(), 125u);
  // Even load: every key stays on its owner.
  for (auto& s : pool->states) s->inflight = 10;
  for (const auto& k : keys(200)) EXPECT_EQ(pool->route(k), pool->router.route(k)) << k;
  // r's owner is far over 1.25x the mean: its keys go to their next choice, the others stay.
  const NodeId busy = pool->router.route("k");
  pool->states[busy]->inflight = 100;
  NodeId prefs[4];
  for (const auto& k : keys(200)) {
    const NodeId owner = pool->router.route(k);
    if (owner != busy) {
      EXPECT_EQ(pool->route(k), owner) << k;
    } else {
      ASSERT_EQ(pool->router.route_n(k, prefs), 4u);
      EXPECT_EQ(pool->route(k), prefs[1]) << k;
    }
  }
  // A down backend is skipped before loads are looked at.
  pool->states[busy]->inflight = 10;
  pool->states[busy]->down = true;
  EXPECT_NE(pool->route("k"), busy);
}

// A pool fed by etcd (the fleet's routing is given to build_topology as Discovered), and its
// servers r0..r(n-1) on 127.0.0.1:7000.. as the fleet's state would list them.
constexpr const char* kFleetPoolYaml =
    "chash_proxy:\n  membership:\n    etcd: [127.0.0.1:2379]\n"
    "a:\n  listen: 127.0.0.1:0\n  redis: true\n  algorithm: ring\n  auto_eject_hosts: true\n"
    "  servers:\n   - 127.0.0.1:7000:1 r0\n";

std::vector<ServerConfig> fleet_servers(const ProxyConfig& cfg, int n) {
  std::vector<std::string> specs;
  for (int i = 0; i < n; ++i)
    specs.push_back("127.0.0.1:" + std::to_string(7000 + i) + ":1 r" + std::to_string(i));
  return servers_from_strings(cfg.pools[0], specs);
}

// A fleet pool in a return's prepare (docs/FLEET.md "Return"): routed with r1 ejected, read
// through the routing with r1 in. A key of r1's is written to its fallback now, and read at r1
// once the fleet commits: r1 must be among its previous owners (a write deletes its copy there, a
// miss reads it) although the route has it out — and although this proxy's own probes may not
// have seen it back yet (then the request fails on it rather than skip it).
TEST(PoolRouteTest, AReturningServerIsAPreviousOwnerInItsPrepare) {
  const ProxyConfig cfg = parse_config(kFleetPoolYaml, "t.yml");
  const auto servers = fleet_servers(cfg, 3);
  auto fleet = std::make_shared<FleetPool>();
  fleet->epoch = 7;
  fleet->phase = "prepare";
  fleet->route = {servers, {"r1"}};
  fleet->reads.push_back({servers, {}});
  Discovered d;
  d.set_fleet("a", fleet);
  const auto pool = build_topology(cfg, nullptr, 1, &d)->pools.at(0);
  ASSERT_EQ(pool->nodes, 3u);
  ASSERT_EQ(pool->servers[1].name, "r1");
  ASSERT_TRUE(pool->warming());
  for (const bool lagging : {false, true}) {
    pool->states[1]->down = lagging;  // this proxy's own view of r1
    int returning = 0;
    for (const auto& k : keys(300)) {
      const NodeId owner = pool->route(k);
      ASSERT_NE(owner, 1u) << k;  // still routed around r1
      NodeId olds[kMaxPreviousRoutings];
      const std::size_t n = pool->previous_owners(k, owner, steady_ms(), olds);
      if (pool->previous[0].owner(k) == 1) {
        ++returning;
        ASSERT_EQ(n, 1u) << k << (lagging ? " (own probes: down)" : "");
        EXPECT_EQ(olds[0], 1u) << k;
      } else {
        EXPECT_EQ(n, 0u) << k;  // the other keys did not move
      }
    }
    EXPECT_GT(returning, 50);
  }
}

// A fleet pool with r1 out since before r3 was added (its home: r0..r2): a write of a key r1
// owned then is noted in r1's absence log wherever it goes now — a fallback write, or one the
// add gave r3 — so r1's return sweeps the older copy it holds. Other keys are not noted.
TEST(PoolRouteTest, AWriteOfAKeyAnOutServerHeldBeforeAChangeIsNoted) {
  const ProxyConfig cfg = parse_config(kFleetPoolYaml, "t.yml");
  const auto servers = fleet_servers(cfg, 4);
  const std::vector<ServerConfig> before(servers.begin(), servers.begin() + 3);
  auto fleet = std::make_shared<FleetPool>();
  fleet->epoch = 9;
  fleet->phase = "stable";
  fleet->route = {servers, {"r1"}};
  fleet->homes.push_back({"r1", {before, {}}});
  Discovered d;
  d.set_fleet("a", fleet);
  const auto pool = build_topology(cfg, nullptr, 1, &d)->pools.at(0);
  ASSERT_EQ(pool->homes.size(), 1u);
  ASSERT_EQ(pool->homes[0].member, 1u);
  const chash::Router home = chash::Router::build(cfg.pools[0].routing, routing_nodes(before));
  AbsenceLog& log = pool->states[1]->absence;
  int moved = 0, fallback = 0, others = 0;
  for (const auto& k : keys(600)) {
    const NodeId node = pool->route(k);
    ASSERT_NE(node, 1u);
    const bool was_r1s = home.route(k) == 1, is_r1s = pool->router.route(k) == 1;
    const bool fell_back = note_fallback_write(*pool, k, node);
    EXPECT_EQ(fell_back, is_r1s) << k;  // only a fallback write caps a TTL
    EXPECT_EQ(log.contains(k), was_r1s || is_r1s) << k;
    moved += was_r1s && !is_r1s;
    fallback += is_r1s;
    others += !was_r1s && !is_r1s;
  }
  EXPECT_GT(moved, 10);  // keys the add gave r3 that r1 held
  EXPECT_GT(fallback, 50);
  EXPECT_GT(others, 200);
}

// Where this proxy decides health (no fleet), a previous owner it sees down is still left out:
// its copy cannot be read, and a miss is what a resize's warm-up gives then.
TEST(PoolRouteTest, ADownPreviousOwnerIsSkippedWithoutAFleet) {
  const std::string head = "a:\n  listen: 127.0.0.1:0\n  redis: true\n  algorithm: ring\n  servers:\n";
  const ProxyConfig before = parse_config(head + "   - 127.0.0.1:7000:1 r0\n   - 127.0.0.1:7001:1 r1\n", "t.yml");
  const ProxyConfig after = parse_config(head + "   - 127.0.0.1:7000:1 r0\n   - 127.0.0.1:7001:1 r1\n"
                                                "   - 127.0.0.1:7002:1 r2\n", "t.yml");
  const auto t0 = build_topology(before, nullptr, 1);
  const auto t1 = build_topology(after, t0.get(), 2);
  const auto& pool = t1->pools.at(0);
  ASSERT_TRUE(pool->warming());
  int moved = 0;
  for (const auto& k : keys(300)) {
    const NodeId owner = pool->route(k);
    NodeId olds[kMaxPreviousRoutings];
    pool->states[0]->down = false;
    pool->states[1]->down = false;
    const std::size_t n = pool->previous_owners(k, owner, steady_ms(), olds);
    if (n == 0) continue;
    ++moved;
    pool->states[olds[0]]->down = true;
    EXPECT_EQ(pool->previous_owners(k, owner, steady_ms(), olds), 0u) << k;
  }
  EXPECT_GT(moved, 30);
}

}  // namespace
}  // namespace chash::proxy
