// SPDX-License-Identifier: Apache-2.0
// The fleet (membership/fleet/, docs/FLEET.md) against real etcd and redis-server/memcached:
// several chash-proxies fed by one etcd keep one mapping through membership changes, ejections
// and returns, a proxy killed or restarted in the middle, etcd going away, and bad values.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "certs_util.h"
#include "base/log.h"
#include "etcd_util.h"
#include "membership/fleet/state.h"
#include "memcache_util.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

using namespace std::chrono_literals;

std::string metric(const std::string& text, const std::string& sample) {
  const std::size_t at = text.find(sample + " ");
  if (at == std::string::npos) return "";
  const std::size_t end = text.find('\n', at);
  return text.substr(at + sample.size() + 1, end - at - sample.size() - 1);
}

class FleetE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_etcd() || !have_redis()) {
      GTEST_SKIP() << "etcd or redis-server missing: scripts/bootstrap.sh installs them";
    }
    dir = make_test_dir("chash-fleet");
    etcd = std::make_unique<EtcdCluster>(dir, members);
    ASSERT_TRUE(etcd->start()) << "etcd did not start (see " << dir << "/e1.log)";
  }
  void TearDown() override {
    proxies.clear();
    redis.clear();
    etcd.reset();
    if (!dir.empty()) fs::remove_all(dir);
  }

  void start_redis(int n) {
    for (int i = 0; i < n; ++i) {
      redis.push_back(std::make_unique<RedisServer>(dir, "r" + std::to_string(i + 1)));
      ASSERT_TRUE(redis.back()->start());
    }
  }
  std::string spec(int i) const {
    return redis[static_cast<std::size_t>(i)]->socket() + ":1 r" + std::to_string(i + 1);
  }
  std::string servers_yaml(int n) const {
    std::string out;
    for (int i = 0; i < n; ++i) out += "    - " + spec(i) + "\n";
    return out;
  }
  std::string yaml(const std::string& id, std::uint16_t admin, const std::string& servers,
                   const std::string& pool_extra = "", const std::string& membership_extra = "") {
    return "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) +
           "\n  membership:\n    etcd: " + etcd->yaml_endpoints() +
           "\n    prefix: /t\n    id: " + id +
           "\n    lease_ttl: 2000\n    start_timeout: 3000\n    timeout: 500\n" + membership_extra +
           "cache:\n  listen: 127.0.0.1:0\n  redis: true\n  distribution: ketama\n"
           "  auto_eject_hosts: true\n  server_retry_timeout: 300\n  server_failure_limit: 1\n"
           "  timeout: 1000\n" +
           pool_extra + "  servers:\n" + servers;
  }
  // Proxy i (p1, p2, ...), in-process, started from `text`.
  ProxyRunner& start_proxy(int i, const std::string& text, ProxyOptions options = {}) {
    while (proxies.size() <= static_cast<std::size_t>(i)) {
      proxies.push_back(std::make_unique<ProxyRunner>());
      admins.push_back(free_port());
    }
    const fs::path d = dir / ("p" + std::to_string(i + 1));
    fs::create_directories(d);
    proxies[static_cast<std::size_t>(i)]->start(d, text, 1, std::move(options));
    return *proxies[static_cast<std::size_t>(i)];
  }
  ProxyRunner& start_default_proxy(int i, int servers, const std::string& pool_extra = "",
                                   const std::string& membership_extra = "") {
    while (admins.size() <= static_cast<std::size_t>(i)) admins.push_back(free_port());
    return start_proxy(i, yaml("p" + std::to_string(i + 1), admins[static_cast<std::size_t>(i)],
                               servers_yaml(servers), pool_extra, membership_extra));
  }
  ProxyRunner& p(int i) { return *proxies[static_cast<std::size_t>(i)]; }
  // The pool as proxy `i` routes now: held, so a topology published meanwhile cannot free it.
  std::shared_ptr<const Pool> pool(int i) { return p(i)->topology()->pools[0]; }
  std::uint16_t port(int i) { return p(i)->port(0); }

  fleet::PoolState state() {
    auto c = etcd->client();
    const auto r = c.get("/t/pools/cache/state");
    if (r.kvs.empty()) return {};
    return fleet::decode_state(r.kvs.front().value);
  }
  void put_servers(const std::vector<std::string>& servers) {
    auto c = etcd->client();
    c.put("/t/pools/cache/servers", fleet::encode_servers(servers));
  }
  // Every running proxy routes by the state's epoch, and the state is stable.
  // `also`: a condition on that same state (two reads could straddle a change).
  bool settled(const std::function<bool(const fleet::PoolState&)>& also = nullptr) {
    const fleet::PoolState s = state();
    if (s.epoch == 0 || s.phase != fleet::Phase::kStable) return false;
    if (also && !also(s)) return false;
    for (auto& r : proxies) {
      if (!*r) continue;
      if ((*r)->topology()->pools[0]->fleet_epoch != s.epoch) return false;
    }
    return true;
  }
  // SIGSTOPs r2, then asks each proxy for one of r2's keys (keys[0], keys[1]) until `ejected`
  // holds: each proxy's failures are its votes.
  bool stop_r2_until(RespClient& c1, RespClient& c2, const std::vector<std::string>& keys,
                     const std::function<bool()>& ejected) {
    ::kill(redis[1]->pid(), SIGSTOP);
    return within(10s, [&] {
      c1.call({"GET", keys[0]});
      c2.call({"GET", keys[1]});
      return ejected();
    });
  }
  // A key the pool of proxy `i` routes to server `name`, the `n`th such.
  std::string key_on(int i, const std::string& name, int n = 0) {
    const auto pl = pool(i);
    for (int k = 0;; ++k) {
      const std::string key = "k:" + std::to_string(k);
      const NodeId id = pl->route(key);
      if (id != kNoNode && pl->servers[id].name == name && n-- == 0) return key;
    }
  }
  // Which redis servers hold `key`, as "r1", "r1,r3", "".
  std::string holders(const std::string& key) {
    std::string out;
    for (std::size_t i = 0; i < redis.size(); ++i) {
      RespClient c(RespClient::dial_unix(redis[i]->socket()));
      if (c.call({"EXISTS", key}) == ":1\r\n")
        out += (out.empty() ? "r" : ",r") + std::to_string(i + 1);
    }
    return out;
  }

  int members = 1;
  fs::path dir;
  std::unique_ptr<EtcdCluster> etcd;
  std::vector<std::unique_ptr<RedisServer>> redis;
  std::vector<std::unique_ptr<ProxyRunner>> proxies;
  std::vector<std::uint16_t> admins;
};

// Three proxies, one etcd: a server added by writing the servers key is applied by every
// proxy (prepare, commit, rebalance, stable) with no SIGHUP; every key is read back through
// each proxy, and each lives on its owner only.
TEST_F(FleetE2E, ChangeWrittenToEtcdIsAppliedByEveryProxy) {
  start_redis(3);
  for (int i = 0; i < 3; ++i) start_default_proxy(i, 2);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  EXPECT_EQ(state().target.servers, (std::vector<std::string>{spec(0), spec(1)}));  // seeded
  RespClient c(RespClient::dial_tcp(port(0)));
  for (int k = 0; k < 300; ++k) {
    ASSERT_EQ(c.call({"SET", "key:" + std::to_string(k), "v" + std::to_string(k)}), "+OK\r\n");
  }
  const std::uint64_t before = state().epoch;
  put_servers({spec(0), spec(1), spec(2)});
  ASSERT_TRUE(within(
      10s, [&] { return settled([&](const fleet::PoolState& st) { return st.epoch > before; }); }));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pool(i)->nodes, 3u) << "p" << i + 1;
    RespClient r(RespClient::dial_tcp(port(i)));
    int hits = 0;
    for (int k = 0; k < 300; ++k) {
      hits += r.call({"GET", "key:" + std::to_string(k)}) == bulk("v" + std::to_string(k)) ? 1 : 0;
    }
    EXPECT_EQ(hits, 300) << "p" << i + 1;
  }
  // The rebalance left each key on its owner alone.
  int moved = 0;
  for (int k = 0; k < 300; ++k) {
    const std::string key = "key:" + std::to_string(k);
    const NodeId owner = pool(1)->route(key);
    EXPECT_EQ(holders(key), pool(1)->servers[owner].name) << key;
    moved += pool(1)->servers[owner].name == "r3" ? 1 : 0;
  }
  EXPECT_GT(moved, 50);
  // Each proxy reports the revision it applied, and GET /fleet shows the members.
  const std::string fleet = http(admins[2], "GET /fleet HTTP/1.1\r\n\r\n");
  for (const char* id : {"\"p1\"", "\"p2\"", "\"p3\""})
    EXPECT_NE(fleet.find(id), std::string::npos);
  const std::string m = http(admins[0], "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(metric(m, "chash_proxy_etcd_up{prefix=\"/t\"}"), "1");
  EXPECT_EQ(metric(m, "chash_proxy_fleet_members{pool=\"cache\"}"), "3");
  EXPECT_EQ(metric(m, "chash_proxy_membership_revision{pool=\"cache\"}"),
            std::to_string(state().revision));
}

// The admin port's edits write etcd (a transaction on the revision read); bad ones are refused.
TEST_F(FleetE2E, AdminEditsGoThroughEtcd) {
  start_redis(3);
  start_default_proxy(0, 2);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  auto post = [&](const std::string& q) {
    return http(admins[0], "POST /fleet/" + q + " HTTP/1.1\r\n\r\n");
  };
  std::string enc = spec(2);
  for (std::size_t at; (at = enc.find(' ')) != std::string::npos;) enc.replace(at, 1, "%20");
  const std::string added = post("add?pool=cache&server=" + enc);
  EXPECT_NE(added.find("200 OK"), std::string::npos) << added;
  ASSERT_TRUE(within(10s, [&] { return settled() && pool(0)->nodes == 3; }));
  EXPECT_NE(post("add?pool=cache&server=" + enc).find("already has a server named 'r3'"),
            std::string::npos);
  EXPECT_NE(post("add?pool=cache&server=nonsense").find("409"), std::string::npos);
  // etcd holds the list as JSON: a name that is not UTF-8 is refused, never half-written.
  EXPECT_NE(post("add?pool=cache&server=127.0.0.1:6390:1%20bad%FF")
                .find("server '127.0.0.1:6390:1 bad\\xff' is not UTF-8 text"),
            std::string::npos);
  EXPECT_NE(post("remove?pool=cache&server=r9").find("no server named 'r9'"), std::string::npos);
  EXPECT_NE(post("add?pool=nope&server=" + enc).find("does not take its servers from etcd"),
            std::string::npos);
  EXPECT_NE(post("drain?pool=cache&server=r1").find("200 OK"), std::string::npos);
  ASSERT_TRUE(within(10s, [&] { return settled() && pool(0)->nodes == 2; }));
  EXPECT_EQ(pool(0)->servers[0].name, "r2");
}

// A proxy that does not acknowledge (stopped: a chash-proxy process under SIGSTOP) holds the
// change in prepare — where every proxy still routes by the old membership, so mixing cannot
// serve a stale value — until its lease expires once it is killed; then the fleet commits.
TEST_F(FleetE2E, PrepareWaitsForEveryLiveProxyAndAKilledOneDropsOut) {
  start_redis(3);
  start_default_proxy(0, 2);
  start_default_proxy(1, 2);
  // The third: the real binary, to be stopped and killed.
  const fs::path d = dir / "p3";
  fs::create_directories(d);
  const std::uint16_t admin3 = free_port();
  std::ofstream(d / "proxy.yml") << yaml("p3", admin3, servers_yaml(2));
  ChildProcess p3;
  ASSERT_TRUE(p3.start(
      {CHASH_PROXY_PATH, "-c", (d / "proxy.yml").string(), "-s", "0", "-o", (d / "log").string()},
      [&] { return http(admin3, "GET /status HTTP/1.1\r\n\r\n").find("200") == 9; }));
  ASSERT_TRUE(within(5s, [&] {
    return settled() &&
           http(admin3, "GET /fleet HTTP/1.1\r\n\r\n").find("\"p3\"") != std::string::npos;
  }));
  const std::string k = key_on(0, "r1", 3);
  RespClient c1(RespClient::dial_tcp(port(0))), c2(RespClient::dial_tcp(port(1)));
  ASSERT_EQ(c1.call({"SET", k, "v1"}), "+OK\r\n");
  ASSERT_TRUE(stop_process(p3.pid()));  // every thread, its fleet watcher too
  const std::uint64_t before = state().epoch;
  put_servers({spec(0), spec(1), spec(2)});
  ASSERT_TRUE(within(5s, [&] { return state().phase == fleet::Phase::kPrepare; }));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(state().phase, fleet::Phase::kPrepare);  // p3 has not acked
  EXPECT_EQ(state().epoch, before + 1);
  // In prepare the old owners stay the truth: a write through one proxy is read through another.
  ASSERT_EQ(c2.call({"SET", k, "v2"}), "+OK\r\n");
  EXPECT_EQ(c1.call({"GET", k}), bulk("v2"));
  EXPECT_EQ(pool(0)->fleet_epoch, before + 1);
  ::kill(p3.pid(), SIGKILL);  // its lease (2 s) expires; the fleet goes on without it
  ASSERT_TRUE(within(10s, [&] { return settled(); }));
  EXPECT_EQ(c1.call({"GET", k}), bulk("v2"));
  EXPECT_EQ(c2.call({"GET", k}), bulk("v2"));
  EXPECT_EQ(pool(0)->nodes, 3u);
}

// A proxy restarted in the middle of a change (commit, rebalance still to come) learns the
// previous routing from etcd and reads moved keys through it: no miss for a key not yet moved.
TEST_F(FleetE2E, ProxyRestartedMidChangeServesWarmUp) {
  start_redis(3);
  // A rebalance of 1 key/s: the commit phase lasts while the test looks.
  const std::string slow = "    rebalance_rate: 1\n";
  start_default_proxy(0, 2, "", slow);
  start_default_proxy(1, 2, "", slow);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  RespClient c(RespClient::dial_tcp(port(0)));
  for (int k = 0; k < 200; ++k)
    ASSERT_EQ(c.call({"SET", "w:" + std::to_string(k), "x"}), "+OK\r\n");
  put_servers({spec(0), spec(1), spec(2)});
  ASSERT_TRUE(within(5s, [&] { return state().phase == fleet::Phase::kCommit; }));
  p(1).stop();
  start_default_proxy(1, 2, "", slow);      // the file still says 2 servers
  EXPECT_EQ(pool(1)->nodes, 3u);            // etcd's membership, before the first client
  EXPECT_FALSE(pool(1)->previous.empty());  // and the previous routing to read through
  RespClient r(RespClient::dial_tcp(port(1)));
  int hits = 0, on_r3 = 0;
  for (int k = 0; k < 200; ++k) {
    const std::string key = "w:" + std::to_string(k);
    on_r3 += pool(1)->servers[pool(1)->route(key)].name == "r3" ? 1 : 0;
    hits += r.call({"GET", key}) == bulk("x") ? 1 : 0;
  }
  EXPECT_GT(on_r3, 30);
  EXPECT_EQ(hits, 200);
  EXPECT_GT(pool(1)->shared->warmup_reads.load(), 0u);
}

// etcd stopped: traffic goes on with the last applied membership, changes are refused with the
// reason, /metrics says so; etcd back: the proxies catch up and apply a change made then.
TEST_F(FleetE2E, EtcdAwayStopsNoTrafficAndTheFleetCatchesUp) {
  start_redis(3);
  for (int i = 0; i < 2; ++i) start_default_proxy(i, 2);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  (*etcd)[0].kill();
  RespClient c(RespClient::dial_tcp(port(0)));
  for (int k = 0; k < 50; ++k) ASSERT_EQ(c.call({"SET", "e:" + std::to_string(k), "1"}), "+OK\r\n");
  ASSERT_TRUE(within(5s, [&] {
    return metric(http(admins[0], "GET /metrics HTTP/1.1\r\n\r\n"),
                  "chash_proxy_etcd_up{prefix=\"/t\"}") == "0";
  }));
  std::string enc = spec(2);
  for (std::size_t at; (at = enc.find(' ')) != std::string::npos;) enc.replace(at, 1, "%20");
  const std::string refused =
      http(admins[0], "POST /fleet/add?pool=cache&server=" + enc + " HTTP/1.1\r\n\r\n");
  EXPECT_NE(refused.find("409"), std::string::npos) << refused;
  EXPECT_NE(refused.find("etcd is unreachable"), std::string::npos) << refused;
  EXPECT_NE(http(admins[0], "GET /status HTTP/1.1\r\n\r\n").find("\"up\":false"),
            std::string::npos);
  RespClient c2(RespClient::dial_tcp(port(1)));
  for (int k = 0; k < 50; ++k) EXPECT_EQ(c2.call({"GET", "e:" + std::to_string(k)}), bulk("1"));
  ASSERT_TRUE(etcd->restart(0));
  ASSERT_TRUE(within(10s, [&] {
    return metric(http(admins[0], "GET /metrics HTTP/1.1\r\n\r\n"),
                  "chash_proxy_etcd_up{prefix=\"/t\"}") == "1";
  }));
  put_servers({spec(0), spec(1), spec(2)});
  ASSERT_TRUE(within(10s, [&] { return settled() && pool(0)->nodes == 3 && pool(1)->nodes == 3; }));
  for (int k = 0; k < 50; ++k) EXPECT_EQ(c2.call({"GET", "e:" + std::to_string(k)}), bulk("1"));
}

// A server every proxy sees down is ejected by the fleet (a quorum of 2 of 2), its keys go to
// their next choice at every proxy; when it comes back with values older than what was written
// meanwhile, each proxy sweeps what it wrote, and reads through any proxy see no stale value
// and no miss for what was written while it was out.
TEST_F(FleetE2E, QuorumEjectsAndTheReturnServesNoStaleValue) {
  start_redis(3);
  for (int i = 0; i < 2; ++i) start_default_proxy(i, 3, "  failover_ttl: 60000\n");
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  std::vector<std::string> keys;
  for (int n = 0; n < 20; ++n) keys.push_back(key_on(0, "r2", n));
  RespClient c1(RespClient::dial_tcp(port(0))), c2(RespClient::dial_tcp(port(1)));
  for (const auto& k : keys) ASSERT_EQ(c1.call({"SET", k, "old"}), "+OK\r\n");
  ASSERT_TRUE(stop_r2_until(c1, c2, keys, [&] {
    const auto s = state();
    return s.target.ejected == std::vector<std::string>{"r2"} && pool(0)->fleet_epoch == s.epoch &&
           pool(1)->fleet_epoch == s.epoch;
  }));
  // Written through both proxies while r2 is out: each at the same fallback.
  for (std::size_t n = 0; n < keys.size(); ++n) {
    RespClient& c = n % 2 == 0 ? c1 : c2;
    ASSERT_EQ(c.call({"SET", keys[n], "new"}), "+OK\r\n") << keys[n];
  }
  EXPECT_EQ(c2.call({"GET", keys[0]}), bulk("new"));
  ::kill(redis[1]->pid(), SIGCONT);  // back, still holding "old" for every key
  ASSERT_TRUE(within(15s, [&] {
    return settled([](const fleet::PoolState& st) { return st.target.ejected.empty(); });
  }));
  for (int i = 0; i < 2; ++i) {
    RespClient r(RespClient::dial_tcp(port(i)));
    for (const auto& k : keys)
      EXPECT_EQ(r.call({"GET", k}), bulk("new")) << "p" << i + 1 << " " << k;
  }
  for (const auto& k : keys) EXPECT_EQ(holders(k), "r2") << k;  // home, the fallbacks' copies gone
}

// A server added while r2 is out (chaos kill-change): r2 comes back holding the keys of the
// routing it was last in, and the add gave some of them r4. Each key's newest acknowledged
// value is served after the return: one written only before r2 left (its one copy on r2, found
// through r2's home routing and moved to r4), one written while r2 was out (at its fallback,
// then r4), one written or deleted after the add (r2's older copy noted, so swept: no stale
// value comes back, no deleted key returns).
TEST_F(FleetE2E, AServerAddedWhileAnotherIsOutLosesNoneOfItsKeys) {
  start_redis(4);
  // A slow rebalance: the return's commit lasts seconds, and is read through meanwhile.
  for (int i = 0; i < 2; ++i)
    start_default_proxy(i, 3, "  failover_ttl: 60000\n", "    rebalance_rate: 20\n");
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  // r2's keys, spread over the key space (nutcracker's fnv1a_64 puts "k:10".."k:89" on one
  // arc, which r4's points may not cut).
  std::vector<std::string> keys;
  for (std::uint64_t i = 1; keys.size() < 80; ++i) {
    const std::string k = "u" + std::to_string(i * 2654435761u % 1000003u);
    if (pool(0)->servers[pool(0)->route(k)].name == "r2") keys.push_back(k);
  }
  RespClient c1(RespClient::dial_tcp(port(0))), c2(RespClient::dial_tcp(port(1)));
  for (const auto& k : keys) ASSERT_EQ(c1.call({"SET", k, "old"}), "+OK\r\n");
  ASSERT_TRUE(stop_r2_until(c1, c2, keys, [&] {
    return settled([](const fleet::PoolState& st) {
      return st.target.ejected == std::vector<std::string>{"r2"};
    });
  }));
  for (std::size_t n = 1; n < keys.size(); n += 4)
    ASSERT_EQ((n % 8 == 1 ? c1 : c2).call({"SET", keys[n], "new"}), "+OK\r\n") << keys[n];
  put_servers({spec(0), spec(1), spec(2), spec(3)});
  ASSERT_TRUE(within(10s, [&] {
    return settled([](const fleet::PoolState& st) {
      return st.target.servers.size() == 4 && st.homes.count("r2") == 1;
    });
  }));
  int moved = 0;
  for (std::size_t n = 0; n < keys.size(); ++n) {
    const NodeId owner = pool(0)->router.route(keys[n]);
    moved += n % 4 == 0 && pool(0)->servers[owner].name == "r4";
    RespClient& c = n % 8 < 4 ? c1 : c2;
    if (n % 4 == 2) {
      ASSERT_EQ(c.call({"SET", keys[n], "newer"}), "+OK\r\n") << keys[n];
    } else if (n % 4 == 3) {
      // r2's copy is out of reach: the DEL finds nothing where the key goes now.
      ASSERT_EQ(c.call({"DEL", keys[n]}).front(), ':') << keys[n];
    }
  }
  ASSERT_GT(moved, 0) << "no key written only before r2 left moved to r4: the test shows nothing";
  ::kill(redis[1]->pid(), SIGCONT);  // back, still holding "old" for every key
  const char* want[] = {"old", "new", "newer", nullptr};
  // In the return's commit, before the rebalance has moved them: a key only r2 holds is read
  // through r2 on a miss at its owner.
  ASSERT_TRUE(within(15s, [&] {
    const fleet::PoolState st = state();
    return st.phase == fleet::Phase::kCommit && st.returning == "r2" &&
           pool(1)->fleet_epoch == st.epoch;
  }));
  for (std::size_t n = 0; n < keys.size(); n += 4)
    EXPECT_EQ(c2.call({"GET", keys[n]}), bulk("old")) << "in commit: " << keys[n];
  ASSERT_TRUE(within(30s, [&] {
    return settled([](const fleet::PoolState& st) {
      return st.target.ejected.empty() && st.homes.empty();
    });
  }));
  for (int i = 0; i < 2; ++i) {
    RespClient r(RespClient::dial_tcp(port(i)));
    for (std::size_t n = 0; n < keys.size(); ++n) {
      const char* w = want[n % 4];
      EXPECT_EQ(r.call({"GET", keys[n]}), w != nullptr ? bulk(w) : "$-1\r\n")
          << "p" << i + 1 << " " << keys[n] << " (now on "
          << pool(i)->servers[pool(i)->router.route(keys[n])].name << ", held by "
          << holders(keys[n]) << ")";
    }
  }
}

// One proxy alone cannot reach r2 (its path cut by a forwarder) while the fleet can: r2 is not
// ejected, that proxy answers a clear error for r2's keys and writes nothing elsewhere, and
// once its path is back it serves what the others wrote meanwhile (nothing swept away).
TEST_F(FleetE2E, ALoneUnreachableProxyAnswersErrorsNotSplitBrain) {
  start_redis(3);
  Forwarder cut(redis[1]->socket()), direct(redis[1]->socket());
  // r2 is named "r2.fleet:<port>": p1 reaches it through `cut`, the others through `direct`.
  auto lookup_via = [](std::uint16_t port) {
    return [port](const Address& a, sockaddr_storage& out, socklen_t& len, std::string& error) {
      if (a.host != "r2.fleet") return system_lookup(a, out, len, error);
      sockaddr_in in{};
      in.sin_family = AF_INET;
      in.sin_port = htons(port);
      in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      std::memcpy(&out, &in, sizeof in);
      len = sizeof in;
      return true;
    };
  };
  const std::string servers =
      "    - " + spec(0) + "\n    - r2.fleet:6379:1 r2\n    - " + spec(2) + "\n";
  for (int i = 0; i < 3; ++i) {
    admins.push_back(free_port());
    ProxyOptions o;
    o.lookup = lookup_via(i == 0 ? cut.port() : direct.port());
    start_proxy(i, yaml("p" + std::to_string(i + 1), admins[static_cast<std::size_t>(i)], servers),
                o);
  }
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  std::vector<std::string> keys;
  for (int n = 0; n < 10; ++n) keys.push_back(key_on(0, "r2", n));
  RespClient c1(RespClient::dial_tcp(port(0))), c2(RespClient::dial_tcp(port(1)));
  for (const auto& k : keys) ASSERT_EQ(c2.call({"SET", k, "a"}), "+OK\r\n");
  cut.cut();
  ASSERT_TRUE(within(5s, [&] {
    c1.call({"GET", keys[0]});
    return pool(0)->states[1]->down.load();
  }));
  std::this_thread::sleep_for(700ms);  // votes in: 1 of 3 down is no quorum
  EXPECT_TRUE(state().target.ejected.empty());
  EXPECT_EQ(c1.call({"GET", keys[1]}),
            "-ERR backend r2 unreachable from this proxy (fleet: up)\r\n");
  EXPECT_EQ(c1.call({"SET", keys[1], "lost?"}),
            "-ERR backend r2 unreachable from this proxy (fleet: up)\r\n");
  EXPECT_GE(pool(0)->states[1]->fleet_unreachable.load(), 2u);
  // The others write r2 meanwhile; nothing of it lands elsewhere.
  for (const auto& k : keys) ASSERT_EQ(c2.call({"SET", k, "b"}), "+OK\r\n");
  for (const auto& k : keys) EXPECT_EQ(holders(k), "r2") << k;
  const std::string m = http(admins[0], "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_NE(m.find("chash_proxy_fleet_unreachable_total{pool=\"cache\",backend=\"r2\"}"),
            std::string::npos);
  cut.restore();
  ASSERT_TRUE(within(5s, [&] { return !pool(0)->states[1]->down.load(); }));
  for (const auto& k : keys) EXPECT_EQ(c1.call({"GET", k}), bulk("b")) << k;
}

// Bad values in etcd are refused with a log line; the last good membership stays.
TEST_F(FleetE2E, BadValuesAreRefusedAndTheLastGoodMembershipStays) {
  start_redis(2);
  const fs::path log_path = dir / "log";
  std::string error;
  ASSERT_TRUE(set_log_file(log_path.string(), error)) << error;
  start_default_proxy(0, 2);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  const std::uint64_t epoch = state().epoch;
  auto c = etcd->client();
  RespClient r(RespClient::dial_tcp(port(0)));
  ASSERT_EQ(r.call({"SET", "b:1", "ok"}), "+OK\r\n");
  for (const std::string& bad :
       {std::string("not json"), std::string("[\"bogus\"]"), std::string("[]"),
        std::string("{\"servers\":[]}"), "[\"" + spec(0) + "\", \"" + spec(0) + "\"]"}) {
    c.put("/t/pools/cache/servers", bad);
    ASSERT_TRUE(within(5s, [&] {
      std::ifstream in(log_path);
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      return text.find("refused a value in etcd") != std::string::npos &&
             text.rfind("revision=" +
                        std::to_string(c.get("/t/pools/cache/servers").kvs[0].mod_revision)) !=
                 std::string::npos;
    })) << bad;
    EXPECT_EQ(state().epoch, epoch) << bad;
    EXPECT_EQ(pool(0)->nodes, 2u) << bad;
    EXPECT_EQ(r.call({"GET", "b:1"}), bulk("ok")) << bad;
  }
  std::ifstream in(log_path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("not JSON"), std::string::npos);
  EXPECT_NE(text.find("an empty list"), std::string::npos);
  EXPECT_NE(text.find("given twice"), std::string::npos);
  EXPECT_NE(text.find("expected 'host:port:weight [name]'"), std::string::npos);
  const std::string m = http(admins[0], "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(metric(m, "chash_proxy_fleet_refused_total{prefix=\"/t\"}"), "5");
  // A good value after the bad ones is applied.
  put_servers({spec(1)});
  ASSERT_TRUE(within(10s, [&] { return settled() && pool(0)->nodes == 1; }));
  set_log_file("", error);
}

// A state value whose routing ejects, or returns, a server that is none of its members is
// refused: every proxy keeps routing by the last good epoch.
TEST_F(FleetE2E, AStateNamingANonMemberIsRefused) {
  start_redis(2);
  const fs::path log_path = dir / "log";
  std::string error;
  ASSERT_TRUE(set_log_file(log_path.string(), error)) << error;
  start_default_proxy(0, 2);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  const fleet::PoolState good = state();
  RespClient r(RespClient::dial_tcp(port(0)));
  ASSERT_EQ(r.call({"SET", "b:1", "ok"}), "+OK\r\n");
  auto c = etcd->client();
  fleet::PoolState ghost = good;
  ghost.epoch = good.epoch + 1;
  ghost.target.ejected = {"ghost"};
  c.put("/t/pools/cache/state", fleet::encode_state(ghost));
  fleet::PoolState back = good;
  back.epoch = good.epoch + 2;
  back.phase = fleet::Phase::kSweep;
  back.returning = "ghost";
  back.returning_since = good.epoch;
  back.previous = {good.target};
  ASSERT_TRUE(within(5s, [&] {
    std::ifstream in(log_path);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    return text.find("the state ejects 'ghost', which is none of its servers") != std::string::npos;
  }));
  EXPECT_EQ(pool(0)->fleet_epoch, good.epoch);
  c.put("/t/pools/cache/state", fleet::encode_state(back));
  ASSERT_TRUE(within(5s, [&] {
    std::ifstream in(log_path);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    return text.find("the state returns 'ghost', which is none of its servers") !=
           std::string::npos;
  }));
  EXPECT_EQ(pool(0)->fleet_epoch, good.epoch);
  EXPECT_EQ(pool(0)->nodes, 2u);
  EXPECT_EQ(r.call({"GET", "b:1"}), bulk("ok"));
  set_log_file("", error);
}

// memcached pools take their servers from etcd the same way.
TEST_F(FleetE2E, MemcachedPoolChangeIsAppliedByEveryProxy) {
  if (!have_program("memcached")) GTEST_SKIP() << "memcached missing: scripts/bootstrap.sh";
  std::vector<std::unique_ptr<MemcachedServer>> mc;
  for (int i = 0; i < 3; ++i) {
    mc.push_back(std::make_unique<MemcachedServer>(dir, "m" + std::to_string(i + 1)));
    ASSERT_TRUE(mc.back()->start());
  }
  auto mspec = [&](int i) {
    return mc[static_cast<std::size_t>(i)]->socket() + ":1 m" + std::to_string(i + 1);
  };
  for (int i = 0; i < 2; ++i) {
    admins.push_back(free_port());
    std::string text = yaml("p" + std::to_string(i + 1), admins.back(),
                            "    - " + mspec(0) + "\n    - " + mspec(1) + "\n");
    text = std::regex_replace(text, std::regex("  redis: true\n"), "");
    start_proxy(i, text);
  }
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  McClient c(dial_tcp(port(0)));
  for (int k = 0; k < 100; ++k) ASSERT_EQ(c.call(set("m:" + std::to_string(k), "x")), "STORED\r\n");
  put_servers({mspec(0), mspec(1), mspec(2)});
  ASSERT_TRUE(within(10s, [&] { return settled() && pool(0)->nodes == 3 && pool(1)->nodes == 3; }));
  McClient c2(dial_tcp(port(1)));
  int hits = 0;
  for (int k = 0; k < 100; ++k) {
    const std::string key = "m:" + std::to_string(k);
    hits += c2.call("get " + key + "\r\n") == value(key, "x") + "END\r\n" ? 1 : 0;
  }
  EXPECT_EQ(hits, 100);
}

class FleetThreeEtcdE2E : public FleetE2E {
 protected:
  void SetUp() override {
    members = 3;
    FleetE2E::SetUp();
  }
};

// A 3-member etcd that loses the member the proxies talk to keeps the fleet going: the client
// moves to the next endpoint, and a change is applied by every proxy.
TEST_F(FleetThreeEtcdE2E, LosingOneEtcdMemberKeepsTheFleetGoing) {
  start_redis(3);
  for (int i = 0; i < 2; ++i) start_default_proxy(i, 2);
  ASSERT_TRUE(within(10s, [&] { return settled(); }));
  (*etcd)[0].kill();  // the first endpoint, which every client tried first
  put_servers({spec(0), spec(1), spec(2)});
  ASSERT_TRUE(within(15s, [&] { return settled() && pool(0)->nodes == 3 && pool(1)->nodes == 3; }));
  // Each proxy says etcd is up again, its lease kept alive through the next member. (The
  // lease is tried again as soon as the watch hears from etcd, so this holds at once or within
  // a retry: once read at once, it was 0 in one CI run.)
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(within(5s, [&] {
      const std::string m = http(admins[i], "GET /metrics HTTP/1.1\r\n\r\n");
      return metric(m, "chash_proxy_etcd_up{prefix=\"/t\"}") == "1";
    })) << "proxy " << i;
  }
}

}  // namespace
}  // namespace chash::proxy::testing

namespace chash::proxy::testing {
namespace {

// `cmd`'s exit code and what it printed (certs_util.h's run()).
std::pair<int, std::string> shell(const std::string& cmd) {
  auto [out, rc] = run(cmd);
  return {rc, out};
}

#ifdef CHASH_CLI_PATH
// `chash fleet` shows the fleet and changes it as the proxies take changes; drain waits until
// the fleet has moved the server's keys off and let it go.
TEST_F(FleetE2E, ChashFleetShowsAndChangesTheFleet) {
  start_redis(3);
  start_default_proxy(0, 2);
  ASSERT_TRUE(within(5s, [&] { return settled(); }));
  RespClient c(RespClient::dial_tcp(port(0)));
  for (int k = 0; k < 100; ++k)
    ASSERT_EQ(c.call({"SET", "c:" + std::to_string(k), "v"}), "+OK\r\n");
  const std::string cli = std::string(CHASH_CLI_PATH) + " fleet ";
  const std::string conn = " --etcd " + etcd->endpoints()[0] + " --prefix /t --pool cache ";
  auto [rc, out] = shell(cli + "add" + conn + "'" + spec(2) + "' --wait");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("added"), std::string::npos) << out;
  EXPECT_NE(out.find("stable (epoch"), std::string::npos) << out;  // waited for it
  EXPECT_EQ(pool(0)->nodes, 3u);
  std::tie(rc, out) = shell(cli + "status --etcd " + etcd->endpoints()[0] + " --prefix /t");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("pool cache"), std::string::npos) << out;
  EXPECT_NE(out.find("p1"), std::string::npos) << out;
  EXPECT_NE(out.find(" r3"), std::string::npos) << out;
  std::tie(rc, out) = shell(cli + "drain" + conn + "r1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(pool(0)->nodes, 2u);
  EXPECT_EQ(pool(0)->servers[0].name, "r2");
  EXPECT_TRUE(redis[0]->keys().empty());  // every key moved off before it was let go
  for (int k = 0; k < 100; ++k) EXPECT_EQ(c.call({"GET", "c:" + std::to_string(k)}), bulk("v"));
  std::tie(rc, out) = shell(cli + "add" + conn + "nonsense");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
  // A misspelt pool is named, not taken for a new one; a server without its weight says so.
  std::tie(rc, out) = shell(cli + "add --etcd " + etcd->endpoints()[0] +
                            " --prefix /t --pool cahce '" + spec(0) + "'");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("pool 'cahce' has no servers in etcd"), std::string::npos) << out;
  EXPECT_NE(out.find("did you mean 'cache'?"), std::string::npos) << out;
  std::tie(rc, out) = shell(cli + "add" + conn + "127.0.0.1:6390");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("'127.0.0.1:6390' has no weight"), std::string::npos) << out;
  std::tie(rc, out) = shell(cli + "status --etcd 127.0.0.1:1 --timeout 0.3");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("Connection refused"), std::string::npos) << out;
}
#endif

}  // namespace
}  // namespace chash::proxy::testing
