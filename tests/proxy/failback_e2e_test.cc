// SPDX-License-Identifier: Apache-2.0
// Safe failover and return against real servers (membership/failback.h): a backend stopped
// (SIGSTOP: it keeps its memory, so it comes back holding old values) is ejected; the writes and
// deletes of its keys meanwhile go to their next choice, get failover_ttl at most, and are noted;
// when it answers again it is swept before it takes traffic, so no read returns a value older than
// one written while it was away. Without failover_invalidate the same run reads stale values.
// An absence log that overflows flushes the backend, or keeps it out until POST /flush.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

constexpr const char* kHealth =
    "  timeout: 300\n  auto_eject_hosts: true\n  server_failure_limit: 1\n"
    "  server_retry_timeout: 200\n";

class FailbackE2E : public ::testing::Test {
 protected:
  void SetUp() override { dir = make_test_dir("chash-failback"); }
  void TearDown() override {
    for (const pid_t p : stopped) ::kill(p, SIGCONT);
    proxy.stop();
    redis.clear();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void start_redis(const std::string& extra, const std::string& head = "") {
    std::string y =
        head + "p:\n  listen: 127.0.0.1:0\n  redis: true\n" + kHealth + extra + "  servers:\n";
    for (int i = 1; i <= 3; ++i) {
      redis.push_back(std::make_unique<RedisServer>(dir, "n" + std::to_string(i)));
      ASSERT_TRUE(redis.back()->start());
      y += "    - " + redis.back()->socket() + ":1 n" + std::to_string(i) + "\n";
    }
    proxy.start(dir, y);
  }
  std::uint16_t port() { return proxy->port(std::size_t{0}); }
  const Pool& pool() {
    topology = proxy->topology();
    return *topology->pools[0];
  }
  bool down(int i) { return pool().states[static_cast<std::size_t>(i)]->down.load(); }
  std::vector<std::string> keys_of(int node, int n) {
    std::vector<std::string> out;
    for (int i = 0; static_cast<int>(out.size()) < n; ++i) {
      const std::string k = "key:" + std::to_string(i);
      if (pool().router.route(k) == static_cast<NodeId>(node)) out.push_back(k);
    }
    return out;
  }
  void pause(pid_t p) {
    ::kill(p, SIGSTOP);
    stopped.push_back(p);
  }
  void resume(pid_t p) {
    ::kill(p, SIGCONT);
    std::erase(stopped, p);
  }
  // As if a write of `key` (one of n2's) had gone elsewhere just before n2 was let back in: n2
  // holds "stale" for it, and the key is still noted (kFlipped).
  bool stale_and_noted(const std::string& key) {
    RespClient direct(RespClient::dial_unix(redis[1]->socket()));
    if (direct.call({"SET", key, "stale"}) != "+OK\r\n") return false;
    AbsenceLog& absence = pool().states[1]->absence;
    absence.note(key, 1000);
    absence.set_phase(AbsenceLog::Phase::kFlipped);
    return true;
  }
  // SIGSTOPs n2 and waits until a request for `key` (one of n2's) has got it ejected.
  bool pause_until_ejected(RespClient& c, const std::string& key) {
    pause(redis[1]->pid());
    return eventually([&] {
      c.call({"GET", key});  // a request must fail on it first
      return down(1);
    });
  }
  // Runs the fail-and-return story on n2; returns (stale reads, misses, fresh reads) of its keys.
  std::tuple<int, int, int> fail_and_return(int writes) {
    RespClient c(RespClient::dial_tcp(port()));
    const auto k2 = keys_of(1, 40);
    for (const auto& k : k2) EXPECT_EQ(c.call({"SET", k, "old"}), "+OK\r\n");
    EXPECT_TRUE(pause_until_ejected(c, k2[0]));
    for (int i = 0; i < writes && i < static_cast<int>(k2.size()); ++i) {
      EXPECT_EQ(c.call({"SET", k2[static_cast<std::size_t>(i)], "new"}), "+OK\r\n");
    }
    EXPECT_EQ(c.call({"DEL", k2.back()}), ":0\r\n");  // its next choice has none: nothing there
    resume(redis[1]->pid());
    EXPECT_TRUE(eventually([&] { return !down(1); }));
    int stale = 0, miss = 0, fresh = 0;
    for (std::size_t i = 0; i < k2.size(); ++i) {
      const std::string r = c.call({"GET", k2[i]});
      const bool written = static_cast<int>(i) < writes || i + 1 == k2.size();
      if (r == "$-1\r\n") ++miss;
      else if (r == bulk("new")) ++fresh;
      else if (written) ++stale;  // "old" after a newer write (or a delete): a stale read
    }
    return {stale, miss, fresh};
  }

  fs::path dir;
  std::vector<std::unique_ptr<RedisServer>> redis;
  std::vector<pid_t> stopped;
  std::shared_ptr<const Topology> topology;
  ProxyRunner proxy;
};

TEST_F(FailbackE2E, ReturningRedisServesNoStaleValue) {
  start_redis("  failover_ttl: 60000\n");
  const auto [stale, miss, fresh] = fail_and_return(20);
  EXPECT_EQ(stale, 0);
  // The 20 rewritten keys were swept from n2 and are read through the fallbacks that hold them
  // (a write made while it was out is not lost); the one deleted meanwhile is a miss.
  EXPECT_EQ(miss, 1);
  EXPECT_EQ(fresh, 20);
  EXPECT_GE(pool().states[1]->absence.swept(), 21u);
  // The fallbacks' copies were capped at failover_ttl, and the TTL moved home with each value.
  RespClient d(RespClient::dial_unix(redis[1]->socket()));
  int capped = 0;
  for (const auto& k : keys_of(1, 20)) {
    const std::string ttl = d.call({"PTTL", k});
    std::int64_t v = 0;
    ASSERT_TRUE(redis::parse_int(ttl.substr(1, ttl.size() - 3), v)) << ttl;
    EXPECT_GT(v, 0) << k;
    EXPECT_LE(v, 60000) << k;
    capped += v > 0 && v <= 60000 ? 1 : 0;
  }
  EXPECT_EQ(capped, 20);
}

// Once a returned server is in, the pool's rebalance moves what its fallbacks took meanwhile
// home at once: until then only this process's warm-up routing could read those values, and a
// restart of the proxy lost them (tests/chaos, mixed, seed 3: 81 acknowledged writes).
TEST_F(FailbackE2E, AReturnMovesTheFallbacksValuesHome) {
  start_redis("");
  RespClient c(RespClient::dial_tcp(port()));
  const auto k2 = keys_of(1, 20);
  for (const auto& k : k2) ASSERT_EQ(c.call({"SET", k, "old"}), "+OK\r\n");
  ASSERT_TRUE(pause_until_ejected(c, k2[0]));
  for (const auto& k : k2) ASSERT_EQ(c.call({"SET", k, "new"}), "+OK\r\n");
  resume(redis[1]->pid());
  ASSERT_TRUE(eventually([&] { return !down(1); }));
  // No client reads them: the rebalance alone brings each home, and the window ends.
  RespClient d(RespClient::dial_unix(redis[1]->socket()));
  ASSERT_TRUE(eventually([&] {
    for (const auto& k : k2) {
      if (d.call({"GET", k}) != bulk("new")) return false;
    }
    return true;
  })) << proxy->status_json();
  for (const int other : {0, 2}) {
    RespClient o(RespClient::dial_unix(redis[static_cast<std::size_t>(other)]->socket()));
    for (const auto& k : k2)
      EXPECT_EQ(o.call({"EXISTS", k}), ":0\r\n") << k << " left at n" << other + 1;
  }
  EXPECT_TRUE(eventually([&] { return !pool().warming(); }));
}

// A transaction's writes while the owner is out land on the fallback and are noted as any write
// is (at EXEC, not at queue time: a DISCARDed one sweeps nothing), so the returning server's older
// copies are swept — they were not, and every key written so was read back stale after the return.
TEST_F(FailbackE2E, ATransactionsWritesWhileTheOwnerIsOutAreSwept) {
  start_redis("");
  RespClient c(RespClient::dial_tcp(port()));
  const auto k2 = keys_of(1, 12);
  for (const auto& k : k2) ASSERT_EQ(c.call({"SET", k, "old"}), "+OK\r\n");
  ASSERT_TRUE(pause_until_ejected(c, k2[0]));
  for (std::size_t i = 0; i < 10; ++i) {
    ASSERT_EQ(c.call({"MULTI"}), "+OK\r\n");
    ASSERT_EQ(c.call({"SET", k2[i], "new"}), "+QUEUED\r\n");
    ASSERT_EQ(c.call({"EXEC"}), "*1\r\n+OK\r\n") << k2[i];
  }
  // Queued and discarded: nothing written, nothing to sweep (the value at n2 is the only one).
  ASSERT_EQ(c.call({"MULTI"}), "+OK\r\n");
  ASSERT_EQ(c.call({"SET", k2[10], "never"}), "+QUEUED\r\n");
  ASSERT_EQ(c.call({"DISCARD"}), "+OK\r\n");
  resume(redis[1]->pid());
  ASSERT_TRUE(eventually([&] { return !down(1); }));
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(c.call({"GET", k2[i]}), bulk("new")) << k2[i];
  EXPECT_EQ(c.call({"GET", k2[10]}), bulk("old"));
  EXPECT_EQ(c.call({"GET", k2[11]}), bulk("old"));
}

// A return leaves the keys noted just before the flip to be deleted on first use (the phase stays
// kFlipped until the last is taken). A server that fails again meanwhile must still come back —
// its new absence's sweep deletes those keys with the rest — and serve no stale value.
TEST_F(FailbackE2E, AServerThatFailsAgainBeforeItsLastNotedKeyIsUsedReturnsAgain) {
  start_redis("  failover_ttl: 60000\n");
  {
    const auto [stale, miss, fresh] = fail_and_return(20);
    EXPECT_EQ(stale, 0);
  }
  // The first return is over first: its sweeper's thread sets kNormal after the flip when the
  // log is empty, then starts the return's rebalance. Noting the key below while that thread was
  // still at it (CI, a loaded machine) left the phase kNormal, and the rebalance, which leaves
  // only a kFlipped owner's noted keys alone, copied the stale value to the fallback, whence the
  // second return's warm-up read it back.
  ASSERT_TRUE(eventually([&] {
    return pool().states[1]->absence.phase() == AbsenceLog::Phase::kNormal && !pool().warming();
  }));
  // As if a write had gone elsewhere just before the flip and its key was never asked for since.
  const std::string k = keys_of(1, 41).back();
  AbsenceLog& absence = pool().states[1]->absence;
  ASSERT_TRUE(stale_and_noted(k));
  RespClient c(RespClient::dial_tcp(port()));
  ASSERT_TRUE(pause_until_ejected(c, keys_of(1, 1)[0]));
  resume(redis[1]->pid());
  ASSERT_TRUE(eventually([&] { return !down(1); })) << "kept out after its second absence";
  EXPECT_EQ(c.call({"GET", k}), "$-1\r\n");  // swept with the second absence's keys
  // Normal once every worker is past the flip (the sweeper's thread sets it after quiescing).
  EXPECT_TRUE(eventually([&] { return absence.phase() == AbsenceLog::Phase::kNormal; }));
}

// A returned server's noted key is deleted there before the next request for it (kFlipped); when
// that delete fails — the server hangs again — the key stays noted, so the value the server kept
// is swept at its next return, not served (regression: the failed DEL dropped the note, and the
// value was read back once the server answered again).
TEST_F(FailbackE2E, ADeleteOfANotedKeyThatFailsLeavesItNoted) {
  start_redis("");
  const std::string k = keys_of(1, 1)[0];
  AbsenceLog& absence = pool().states[1]->absence;
  ASSERT_TRUE(stale_and_noted(k));
  RespClient c(RespClient::dial_tcp(port()));
  pause(redis[1]->pid());
  // The DEL sent first and the GET both time out; n2 is ejected.
  EXPECT_EQ(c.call({"GET", k}).rfind("-", 0), 0u);
  EXPECT_TRUE(absence.contains(k)) << "its DEL failed: the key must stay noted";
  resume(redis[1]->pid());
  ASSERT_TRUE(eventually([&] { return !down(1); }));
  EXPECT_EQ(c.call({"GET", k}), "$-1\r\n");  // swept at the return, not served
}

// A noted key (kFlipped) is deleted at the returned server before any request reads it there:
// a multi-key command on one server, a script's keys, a transaction's, a blocking command's
// (regression: these were sent without the delete, and read the server's stale values).
TEST_F(FailbackE2E, EveryRequestShapeDeletesANotedKeyFirst) {
  start_redis("");
  const std::vector<std::string> ks = keys_of(1, 4);
  RespClient direct(RespClient::dial_unix(redis[1]->socket()));
  ASSERT_EQ(direct.call({"SADD", ks[0], "stale"}), ":1\r\n");
  ASSERT_EQ(direct.call({"SADD", ks[1], "other"}), ":1\r\n");
  ASSERT_EQ(direct.call({"SET", ks[2], "stale"}), "+OK\r\n");
  ASSERT_EQ(direct.call({"SET", ks[3], "stale"}), "+OK\r\n");
  const std::string list = keys_of(1, 5).back();
  ASSERT_EQ(direct.call({"RPUSH", list, "stale"}), ":1\r\n");
  AbsenceLog& absence = pool().states[1]->absence;
  for (const std::string& k : {ks[0], ks[2], ks[3], list}) absence.note(k, 1000);
  absence.set_phase(AbsenceLog::Phase::kFlipped);
  RespClient c(RespClient::dial_tcp(port()));
  EXPECT_EQ(c.call({"SUNION", ks[0], ks[1]}), "*1\r\n$5\r\nother\r\n");
  EXPECT_EQ(c.call({"EVAL", "return redis.call('GET', KEYS[1])", "1", ks[2]}), "$-1\r\n");
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"GET", ks[3]}), "+QUEUED\r\n");
  EXPECT_EQ(c.call({"EXEC"}), "*1\r\n$-1\r\n");
  EXPECT_EQ(c.call({"BLPOP", list, "0.1"}), "*-1\r\n");  // a blocking command: times out
  for (const std::string& k : {ks[0], ks[2], ks[3], list}) {
    EXPECT_FALSE(absence.contains(k)) << k;
    EXPECT_EQ(direct.call({"EXISTS", k}), ":0\r\n") << k;
  }
}

TEST_F(FailbackE2E, WithoutInvalidationTheReturningServerIsStale) {
  start_redis("  failover_invalidate: false\n");
  const auto [stale, miss, fresh] = fail_and_return(20);
  EXPECT_EQ(stale, 21);  // what nutcracker does: n2 serves the values it had before
}

TEST_F(FailbackE2E, OverflowFlushesTheServer) {
  start_redis("  failover_track_keys: 5\n");
  const auto [stale, miss, fresh] = fail_and_return(20);
  EXPECT_EQ(stale, 0);
  // Flushed: the 20 keys written meanwhile are read through their fallbacks, the 20 others are
  // misses; none is stale.
  EXPECT_EQ(miss, 20);
  EXPECT_EQ(fresh, 20);
}

// failover_overflow: keep_ejected: the server stays out after it answers again, until an
// operator flushes it through the admin port.
TEST_F(FailbackE2E, OverflowKeepsTheServerOutUntilFlushed) {
  const auto admin = free_port();
  start_redis("  failover_track_keys: 5\n  failover_overflow: keep_ejected\n",
              "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) + "\n");
  RespClient c(RespClient::dial_tcp(port()));
  const auto k2 = keys_of(1, 20);
  for (const auto& k : k2) ASSERT_EQ(c.call({"SET", k, "old"}), "+OK\r\n");
  ASSERT_TRUE(pause_until_ejected(c, k2[0]));
  for (const auto& k : k2) ASSERT_EQ(c.call({"SET", k, "new"}), "+OK\r\n");
  resume(redis[1]->pid());
  ASSERT_TRUE(
      eventually([&] { return pool().states[1]->absence.phase() == AbsenceLog::Phase::kHeld; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // probes pass; it stays out
  EXPECT_TRUE(down(1));
  for (const auto& k : k2) EXPECT_EQ(c.call({"GET", k}), bulk("new")) << k;  // the fallbacks'
  const std::string r = http(admin, "POST /flush?pool=p&backend=n2 HTTP/1.1\r\n\r\n");
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_NE(http(admin, "POST /flush?pool=p&backend=zz HTTP/1.1\r\n\r\n").find("409"),
            std::string::npos);
  ASSERT_TRUE(eventually([&] { return !down(1); }));
  // Flushed, and what was written while it was out is read through the fallbacks.
  for (const auto& k : k2) EXPECT_EQ(c.call({"GET", k}), bulk("new")) << k;
}

// memcached: the same story with a stopped memcached; exptimes capped by failover_ttl.
TEST_F(FailbackE2E, ReturningMemcachedServesNoStaleValue) {
  std::vector<std::unique_ptr<MemcachedServer>> mc;
  std::string y = std::string("m:\n  listen: 127.0.0.1:0\n  protocol: memcache\n") + kHealth +
                  "  failover_ttl: 30000\n  servers:\n";
  for (int i = 1; i <= 3; ++i) {
    mc.push_back(std::make_unique<MemcachedServer>(dir, "m" + std::to_string(i)));
    ASSERT_TRUE(mc.back()->start());
    y += "    - " + mc.back()->socket() + ":1 m" + std::to_string(i) + "\n";
  }
  proxy.start(dir, y);
  McClient c(dial_tcp(port()));
  const auto k2 = keys_of(1, 30);
  for (const auto& k : k2) ASSERT_EQ(c.call(set(k, "old")), "STORED\r\n");
  pause(mc[1]->pid());
  ASSERT_TRUE(eventually([&] {
    c.call("get " + k2[0] + "\r\n");
    return down(1);
  }));
  for (std::size_t i = 0; i < 20; ++i) ASSERT_EQ(c.call(set(k2[i], "new")), "STORED\r\n");
  EXPECT_EQ(c.call("delete " + k2[20] + "\r\n"), "NOT_FOUND\r\n");
  // On its next choice, the copy expires within failover_ttl (30 s).
  for (int s : {0, 2}) {
    const std::string meta =
        mc[static_cast<std::size_t>(s)]->client().call("mg " + k2[0] + " t\r\n");
    if (meta == "EN\r\n") continue;
    ASSERT_TRUE(meta.starts_with("HD t")) << meta;
    const int ttl = std::stoi(meta.substr(4));
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 30);
  }
  resume(mc[1]->pid());
  ASSERT_TRUE(eventually([&] { return !down(1); }));
  int stale = 0;
  for (std::size_t i = 0; i < k2.size(); ++i) {
    const std::string r = c.call("get " + k2[i] + "\r\n");
    if (i <= 20 && r == value(k2[i], "old") + "END\r\n") ++stale;
  }
  EXPECT_EQ(stale, 0);
  EXPECT_EQ(c.call("get " + k2[25] + "\r\n"), value(k2[25], "old") + "END\r\n");  // untouched
  proxy.stop();
}

// The same through a binary-protocol client (proto/memcache/session_binary.cc): its stores on
// the fallback are noted and capped at failover_ttl, so the returning server serves none of its
// old values to binary gets.
TEST_F(FailbackE2E, ReturningMemcachedServesNoStaleValueToBinaryClients) {
  namespace op = memcache::binary::op;
  std::vector<std::unique_ptr<MemcachedServer>> mc;
  std::string y = std::string("m:\n  listen: 127.0.0.1:0\n  protocol: memcache\n") + kHealth +
                  "  failover_ttl: 30000\n  servers:\n";
  for (int i = 1; i <= 3; ++i) {
    mc.push_back(std::make_unique<MemcachedServer>(dir, "m" + std::to_string(i)));
    ASSERT_TRUE(mc.back()->start());
    y += "    - " + mc.back()->socket() + ":1 m" + std::to_string(i) + "\n";
  }
  proxy.start(dir, y);
  BinClient c(dial_tcp(port()));
  const auto k2 = keys_of(1, 30);
  for (const auto& k : k2) ASSERT_EQ(c.call(store(op::kSet, k, "old")).status, 0) << k;
  pause(mc[1]->pid());
  ASSERT_TRUE(eventually([&] {
    c.call(packet(op::kGet, k2[0]));
    return down(1);
  }));
  for (std::size_t i = 0; i < 20; ++i) {
    ASSERT_EQ(c.call(store(op::kSet, k2[i], "new", 0, 0)).status, 0) << k2[i];
  }
  EXPECT_EQ(c.call(packet(op::kDelete, k2[20])).status, memcache::binary::status::kKeyNotFound);
  // On its next choice, the copy (stored without an exptime) expires within failover_ttl.
  int found = 0;
  for (int s : {0, 2}) {
    const std::string meta =
        mc[static_cast<std::size_t>(s)]->client().call("mg " + k2[0] + " t\r\n");
    if (meta == "EN\r\n") continue;
    ++found;
    ASSERT_TRUE(meta.starts_with("HD t")) << meta;
    const int ttl = std::stoi(meta.substr(4));
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 30);
  }
  EXPECT_EQ(found, 1);
  resume(mc[1]->pid());
  ASSERT_TRUE(eventually([&] { return !down(1); }));
  int stale = 0;
  for (std::size_t i = 0; i < k2.size(); ++i) {
    const BinResp r = c.call(packet(op::kGet, k2[i]));
    if (i <= 20 && r.value == "old") ++stale;
  }
  EXPECT_EQ(stale, 0);
  EXPECT_EQ(c.call(packet(op::kGet, k2[25])).value, "old");  // untouched
  proxy.stop();
}

}  // namespace
}  // namespace chash::proxy::testing
