// SPDX-License-Identifier: Apache-2.0
// The fleet's states and planner (membership/fleet/state.h, planner.h), without etcd: what each
// phase routes by, how changes, ejections and returns move through the phases, and what the
// planner writes for a given set of keys.
#include <gtest/gtest.h>

#include "membership/fleet/planner.h"
#include "membership/fleet/state.h"

namespace chash::proxy::fleet {
namespace {

const std::string kA = "127.0.0.1:7001:1 a", kB = "127.0.0.1:7002:1 b", kC = "127.0.0.1:7003:1 c";

PoolState stable(std::vector<std::string> servers) {
  PoolState s;
  s.epoch = 1;
  s.revision = 5;
  s.target.servers = std::move(servers);
  return s;
}

std::vector<std::string> names(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) out.push_back(s.substr(s.rfind(' ') + 1));
  return out;
}

TEST(FleetStateTest, EachPhaseRoutesByTheOwnerThatIsTheTruthThen) {
  const PoolState s0 = stable({kA, kB});
  PoolState p = change_membership(s0, {kA, kB, kC}, names({kA, kB, kC}), 9, 100);
  EXPECT_EQ(p.phase, Phase::kPrepare);
  EXPECT_EQ(p.epoch, 2u);
  EXPECT_EQ(p.revision, 9);
  View v = view_of(p);
  EXPECT_EQ(v.route.servers, (std::vector<std::string>{kA, kB}));  // the old owners
  ASSERT_EQ(v.reads.size(), 1u);
  EXPECT_EQ(v.reads[0].servers, (std::vector<std::string>{kA, kB, kC}));  // the new, on a miss
  const PoolState c = advance(p, 200);
  EXPECT_EQ(c.phase, Phase::kCommit);
  v = view_of(c);
  EXPECT_EQ(v.route.servers, (std::vector<std::string>{kA, kB, kC}));
  ASSERT_EQ(v.reads.size(), 1u);
  EXPECT_EQ(v.reads[0].servers, (std::vector<std::string>{kA, kB}));
  const PoolState st = advance(c, 300);
  EXPECT_EQ(st.phase, Phase::kStable);
  EXPECT_TRUE(view_of(st).reads.empty());
  EXPECT_EQ(st.epoch, 4u);
}

TEST(FleetStateTest, AChangeDuringAChangeKeepsBothRoutingsReadable) {
  const PoolState p1 = change_membership(stable({kA, kB}), {kA, kB, kC}, names({kA, kB, kC}), 9, 0);
  // Another change before the first committed: still routed by {a, b}, both targets read.
  const PoolState p2 = change_membership(p1, {kA, kC}, names({kA, kC}), 10, 0);
  EXPECT_EQ(p2.phase, Phase::kPrepare);
  const View v = view_of(p2);
  EXPECT_EQ(v.route.servers, (std::vector<std::string>{kA, kB}));
  ASSERT_EQ(v.reads.size(), 2u);
  EXPECT_EQ(v.reads[0].servers, (std::vector<std::string>{kA, kC}));
  EXPECT_EQ(v.reads[1].servers, (std::vector<std::string>{kA, kB, kC}));
  // Undone before it committed: back to where everyone routes, no phase needed.
  const PoolState back = change_membership(p1, {kA, kB}, names({kA, kB}), 11, 0);
  EXPECT_EQ(back.phase, Phase::kCommit);  // {a,b} is routed by all; {a,b,c} still read
  EXPECT_EQ(view_of(back).route.servers, (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(view_of(advance(back, 0)).reads.size(), 0u);
}

TEST(FleetStateTest, EjectionAppliesToEveryRoutingAtOnce) {
  const PoolState p = change_membership(stable({kA, kB}), {kA, kB, kC}, names({kA, kB, kC}), 9, 0);
  const PoolState e = eject(p, "b", 50);
  EXPECT_EQ(e.phase, Phase::kPrepare);  // no phase of its own
  EXPECT_EQ(e.epoch, p.epoch + 1);
  EXPECT_EQ(e.target.ejected, std::vector<std::string>{"b"});
  EXPECT_EQ(e.previous[0].ejected, std::vector<std::string>{"b"});
  EXPECT_EQ(e.ejected_at.at("b"), e.epoch);
  EXPECT_EQ(eject(e, "b", 60), e);   // already out
  EXPECT_EQ(eject(e, "zz", 60), e);  // not a member
}

TEST(FleetStateTest, AReturnSweepsThenPreparesThenCommits) {
  const PoolState out = eject(stable({kA, kB, kC}), "b", 10);
  const PoolState sweep = begin_return(out, "b", 20);
  EXPECT_EQ(sweep.phase, Phase::kSweep);
  EXPECT_EQ(sweep.returning, "b");
  EXPECT_EQ(sweep.returning_since, out.ejected_at.at("b"));
  EXPECT_TRUE(sweep.target.ejected.empty());
  View v = view_of(sweep);
  EXPECT_EQ(v.route.ejected, std::vector<std::string>{"b"});  // still out while sweeping
  EXPECT_TRUE(v.reads.empty());  // and not read from: it may hold stale values
  const PoolState prep = advance(sweep, 30);
  v = view_of(prep);
  EXPECT_EQ(v.route.ejected, std::vector<std::string>{"b"});
  ASSERT_EQ(v.reads.size(), 1u);
  EXPECT_TRUE(v.reads[0].ejected.empty());  // swept: read through on a miss
  const PoolState com = advance(prep, 40);
  v = view_of(com);
  EXPECT_TRUE(v.route.ejected.empty());
  ASSERT_EQ(v.reads.size(), 1u);
  EXPECT_EQ(v.reads[0].ejected, std::vector<std::string>{"b"});  // the fallbacks, on a miss
  EXPECT_EQ(com.returning, "b");
  const PoolState done = advance(com, 50);
  EXPECT_EQ(done.phase, Phase::kStable);
  EXPECT_TRUE(done.returning.empty());
  // Out again during its return: the return is over, a new absence begins.
  const PoolState again = eject(prep, "b", 60);
  EXPECT_TRUE(again.returning.empty());
  EXPECT_EQ(again.target.ejected, std::vector<std::string>{"b"});
  EXPECT_EQ(again.ejected_at.at("b"), again.epoch);
}

// A server added while another is out (chaos kill-change): the absent one holds keys of the
// routing it was last in, some of which the add gave the new server. That routing is kept as its
// home: noted against while it is out, not read in its sweep (unswept copies may be older), read
// through in prepare and commit (its keys' one copy may be there), forgotten once it is back.
TEST(FleetStateTest, AServerOutDuringAChangeIsReadThroughTheRoutingItWasLastIn) {
  const PoolState out = eject(stable({kA, kB}), "a", 10);
  EXPECT_TRUE(out.homes.empty());  // nothing moved yet: its routing is the target's
  PoolState added = change_membership(out, {kA, kB, kC}, names({kA, kB, kC}), 9, 20);
  ASSERT_EQ(added.homes.count("a"), 1u);
  const Routing home = added.homes.at("a");
  EXPECT_EQ(home.servers, (std::vector<std::string>{kA, kB}));
  EXPECT_TRUE(home.ejected.empty());  // with it in
  EXPECT_EQ(view_of(added).homes.count("a"), 1u);  // noted against while out
  EXPECT_EQ(decode_state(encode_state(added)), added);
  // A second change during the same absence keeps the first home (where its keys are).
  const PoolState st = advance(advance(added, 30), 40);
  ASSERT_EQ(st.phase, Phase::kStable);
  const PoolState again = change_membership(st, {kA, kB, kC, "127.0.0.1:7004:1 d"},
                                            {"a", "b", "c", "d"}, 10, 45);
  EXPECT_EQ(again.homes.at("a"), home);
  // Another server out meanwhile is out in the home too: a's return reads nothing from it.
  EXPECT_EQ(eject(st, "b", 46).homes.at("a").ejected, std::vector<std::string>{"b"});

  const PoolState sweep = begin_return(st, "a", 50);
  View v = view_of(sweep);
  EXPECT_EQ(v.route.ejected, std::vector<std::string>{"a"});
  for (const Routing& r : v.reads) EXPECT_NE(r, home);  // not swept yet: never read
  EXPECT_EQ(v.homes.count("a"), 1u);  // still noted against
  ASSERT_FALSE(sweep.previous.empty());
  EXPECT_EQ(sweep.previous.back(), home);
  const PoolState prep = advance(sweep, 60);
  v = view_of(prep);
  ASSERT_EQ(v.reads.size(), 2u);
  EXPECT_EQ(v.reads[0].servers, (std::vector<std::string>{kA, kB, kC}));  // the target, a in
  EXPECT_EQ(v.reads[1], home);
  const PoolState com = advance(prep, 70);
  v = view_of(com);
  EXPECT_TRUE(v.route.ejected.empty());
  EXPECT_TRUE(v.homes.empty());  // routed to: no longer noted against
  ASSERT_EQ(v.reads.size(), 2u);
  EXPECT_EQ(v.reads[1], home);  // a's keys the add moved: read at a on a miss, moved home
  const PoolState done = advance(com, 80);
  EXPECT_TRUE(done.homes.empty());
  // Removed while out: nothing of it is kept.
  EXPECT_TRUE(change_membership(st, {kB, kC}, names({kB, kC}), 11, 90).homes.empty());
}

TEST(FleetStateTest, ValuesRoundTripAndBadOnesAreRefused) {
  PoolState s = begin_return(eject(stable({kA, kB}), "a", 1), "a", 2);
  s.held = true;
  EXPECT_EQ(decode_state(encode_state(s)), s);
  // A returning_since with no returning server is dropped, so the value round-trips (the
  // etcd_json fuzzer found it: anyone with access to the prefix may write such a value).
  const PoolState odd = decode_state("{\"target\":{\"servers\":[\"" + std::string(kA) +
                                     "\"]},\"returning_since\":3}");
  EXPECT_EQ(odd.returning_since, 0u);
  EXPECT_EQ(decode_state(encode_state(odd)), odd);
  Registration r;
  r.id = "p1";
  r.lease = 42;
  r.pools["cache"].epoch = 7;
  r.pools["cache"].phase = Phase::kSweep;
  r.pools["cache"].swept = true;
  r.pools["cache"].down["b"] = "Connection refused";
  r.pools["cache"].up = {"a"};
  const Registration back = decode_registration(encode_registration(r));
  EXPECT_EQ(back.pools.at("cache").down.at("b"), "Connection refused");
  EXPECT_TRUE(acked(back, "cache", 7, Phase::kSweep));
  EXPECT_FALSE(acked(back, "cache", 8, Phase::kSweep));
  EXPECT_TRUE(acked(back, "other", 1, Phase::kPrepare));  // does not serve it
  EXPECT_EQ(decode_servers(encode_servers({kA})), std::vector<std::string>{kA});
  for (const char* bad : {"", "not json", "[]", "{}", "[1]", "[\"\"]", "\"a\""}) {
    EXPECT_THROW(decode_servers(bad), std::invalid_argument) << bad;
  }
  for (const char* bad :
       {"[]", "{\"phase\":\"sideways\",\"target\":{\"servers\":[]}}",
        "{\"target\":{\"servers\":[1]}}", "{\"epoch\":-1,\"target\":{\"servers\":[]}}", "{}",
        "{\"target\":{\"servers\":[]},\"phase\":\"sweep\"}"}) {
    EXPECT_THROW(decode_state(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(quorum_of(3, 0), 2u);
  EXPECT_EQ(quorum_of(4, 0), 3u);
  EXPECT_EQ(quorum_of(1, 0), 1u);
  EXPECT_EQ(quorum_of(5, 2), 2u);
  EXPECT_EQ(normalize_prefix("/chash/"), "/chash");
  EXPECT_THROW(normalize_prefix("chash"), std::invalid_argument);
  EXPECT_TRUE(valid_segment("cache-1"));
  EXPECT_FALSE(valid_segment("a/b"));
}

// ---- The planner ------------------------------------------------------------------------------

struct Keys {
  Layout layout;
  std::map<std::string, etcd::KeyValue> kvs;
  std::int64_t rev = 10;
  void put(const std::string& key, const std::string& value, std::int64_t lease = 0) {
    etcd::KeyValue kv;
    kv.key = key;
    kv.value = value;
    kv.mod_revision = ++rev;
    kv.lease = lease;
    kvs[key] = kv;
  }
  void reg(const std::string& id, std::int64_t lease, std::uint64_t epoch, Phase phase,
           std::map<std::string, std::string> down = {}, std::vector<std::string> up = {},
           bool swept = false) {
    Registration r;
    r.id = id;
    r.lease = lease;
    PoolReport& p = r.pools["cache"];
    p.epoch = epoch;
    p.phase = phase;
    p.down = std::move(down);
    p.up = std::move(up);
    p.swept = swept;
    put(layout.proxy(id), encode_registration(r), lease);
  }
};

PoolPolicy policy() {
  PoolPolicy p;
  p.name = "cache";
  p.seed = {kA, kB};
  p.auto_eject = true;
  p.validate = [](const std::vector<std::string>& servers, std::vector<std::string>& out) {
    for (const auto& s : servers) {
      if (s.find(' ') == std::string::npos) return std::string("no name in '" + s + "'");
      out.push_back(s.substr(s.rfind(' ') + 1));
    }
    return std::string();
  };
  return p;
}

PoolState written_state(const Plan& p) {
  EXPECT_EQ(p.writes.size(), 1u);
  return p.writes.empty() ? PoolState{} : decode_state(p.writes[0].value);
}

TEST(FleetPlannerTest, SeedsThenCreatesThenFollowsTheServersKey) {
  Keys k;
  Plan p = plan(k.kvs, k.layout, {policy()}, false, {}, 1000);
  ASSERT_EQ(p.writes.size(), 1u);
  EXPECT_EQ(p.writes[0].key, "/chash/pools/cache/servers");
  EXPECT_EQ(p.writes[0].mod_revision, 0);  // a create: the first proxy wins
  EXPECT_TRUE(p.claim_leader);
  k.put(k.layout.servers("cache"), encode_servers({kA, kB}));
  p = plan(k.kvs, k.layout, {policy()}, false, {}, 1000);
  PoolState s = written_state(p);
  EXPECT_EQ(s.phase, Phase::kStable);
  EXPECT_EQ(s.revision, k.rev);
  k.put(k.layout.state("cache"), encode_state(s));
  EXPECT_TRUE(plan(k.kvs, k.layout, {policy()}, false, {}, 1000).writes.empty());
  k.put(k.layout.servers("cache"), encode_servers({kA, kB, kC}));
  p = plan(k.kvs, k.layout, {policy()}, false, {}, 1000);
  s = written_state(p);
  EXPECT_EQ(s.phase, Phase::kPrepare);
  EXPECT_EQ(p.writes[0].mod_revision, k.kvs[k.layout.state("cache")].mod_revision);
  // A bad servers value is refused, nothing written (p1 has not acked prepare: no phase moves).
  k.put(k.layout.state("cache"), encode_state(s));
  k.reg("p1", 1, s.epoch - 1, Phase::kStable);
  k.put(k.layout.servers("cache"), "[\"nameless\"]");
  p = plan(k.kvs, k.layout, {policy()}, false, {}, 1000);
  EXPECT_TRUE(p.writes.empty());
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].why.find("no name"), std::string::npos);
}

TEST(FleetPlannerTest, PhasesWaitForEveryLiveProxy) {
  Keys k;
  k.put(k.layout.servers("cache"), encode_servers({kA, kB, kC}));
  PoolState s = change_membership(stable({kA, kB}), {kA, kB, kC}, names({kA, kB, kC}), k.rev, 0);
  k.put(k.layout.state("cache"), encode_state(s));
  k.reg("p1", 1, s.epoch, Phase::kPrepare);
  k.reg("p2", 2, s.epoch - 1, Phase::kStable);  // behind
  EXPECT_TRUE(plan(k.kvs, k.layout, {policy()}, false, {}, 0).writes.empty());
  k.reg("p2", 2, s.epoch, Phase::kPrepare);
  s = written_state(plan(k.kvs, k.layout, {policy()}, false, {}, 0));
  EXPECT_EQ(s.phase, Phase::kCommit);
  k.put(k.layout.state("cache"), encode_state(s));
  k.reg("p1", 1, s.epoch, Phase::kCommit);
  k.reg("p2", 2, s.epoch, Phase::kCommit);
  // Committed: the leader rebalances; once it reports every key home, stable.
  Plan p = plan(k.kvs, k.layout, {policy()}, true, {}, 0);
  EXPECT_TRUE(p.writes.empty());
  ASSERT_EQ(p.rebalance.size(), 1u);
  EXPECT_EQ(p.rebalance[0].epoch, s.epoch);
  EXPECT_TRUE(plan(k.kvs, k.layout, {policy()}, false, {}, 0).rebalance.empty());  // not leader
  LeaderProgress done;
  done.rebalanced["cache"] = s.epoch;
  EXPECT_EQ(written_state(plan(k.kvs, k.layout, {policy()}, true, done, 0)).phase, Phase::kStable);
  // Or the window passes.
  EXPECT_EQ(written_state(plan(k.kvs, k.layout, {policy()}, false, {}, s.since_ms + 600000)).phase,
            Phase::kStable);
  // A proxy gone (its registration expired with its lease) no longer holds anyone back.
  k.kvs.erase(k.layout.proxy("p2"));
  EXPECT_TRUE(plan(k.kvs, k.layout, {policy()}, true, {}, 0).writes.empty());
}

TEST(FleetPlannerTest, AQuorumEjectsAndReturns) {
  Keys k;
  k.put(k.layout.servers("cache"), encode_servers({kA, kB, kC}));
  PoolState s = stable({kA, kB, kC});
  s.revision = k.rev;
  k.put(k.layout.state("cache"), encode_state(s));
  k.reg("p1", 1, s.epoch, Phase::kStable, {{"b", "Connection refused"}}, {"a", "c"});
  k.reg("p2", 2, s.epoch, Phase::kStable, {}, {"a", "b", "c"});
  k.reg("p3", 3, s.epoch, Phase::kStable, {}, {"a", "b", "c"});
  EXPECT_TRUE(plan(k.kvs, k.layout, {policy()}, false, {}, 0).writes.empty());  // 1 of 3
  k.reg("p2", 2, s.epoch, Phase::kStable, {{"b", "timeout"}}, {"a", "c"});
  const Plan p = plan(k.kvs, k.layout, {policy()}, false, {}, 0);
  s = written_state(p);
  EXPECT_EQ(s.target.ejected, std::vector<std::string>{"b"});
  EXPECT_NE(p.writes[0].why.find("2 of 3"), std::string::npos);
  k.put(k.layout.state("cache"), encode_state(s));
  // Only one proxy reaches it again: it stays out; two: its return begins.
  k.reg("p1", 1, s.epoch, Phase::kStable, {}, {"a", "b", "c"});
  k.reg("p2", 2, s.epoch, Phase::kStable, {{"b", "timeout"}}, {"a", "c"});
  k.reg("p3", 3, s.epoch, Phase::kStable, {{"b", "timeout"}}, {"a", "c"});
  EXPECT_TRUE(plan(k.kvs, k.layout, {policy()}, false, {}, 0).writes.empty());
  k.reg("p2", 2, s.epoch, Phase::kStable, {}, {"a", "b", "c"});
  s = written_state(plan(k.kvs, k.layout, {policy()}, false, {}, 0));
  EXPECT_EQ(s.phase, Phase::kSweep);
  EXPECT_EQ(s.returning, "b");
  // auto_eject_hosts off: the fleet never ejects.
  PoolPolicy keep = policy();
  keep.auto_eject = false;
  Keys k2 = k;
  PoolState st = stable({kA, kB, kC});
  st.revision = k2.kvs[k2.layout.servers("cache")].mod_revision;
  k2.put(k2.layout.state("cache"), encode_state(st));
  k2.reg("p1", 1, 1, Phase::kStable, {{"b", "x"}});
  k2.reg("p2", 2, 1, Phase::kStable, {{"b", "x"}});
  k2.reg("p3", 3, 1, Phase::kStable, {{"b", "x"}});
  EXPECT_TRUE(plan(k2.kvs, k2.layout, {keep}, false, {}, 0).writes.empty());
}

TEST(FleetPlannerTest, AReturnWhoseWritersAreUnknownIsFlushedOrHeld) {
  Keys k;
  k.put(k.layout.servers("cache"), encode_servers({kA, kB}));
  PoolState s = begin_return(eject(stable({kA, kB}), "b", 0), "b", 0);
  s.revision = k.rev;
  k.put(k.layout.state("cache"), encode_state(s));
  k.reg("p1", 1, s.epoch, Phase::kSweep, {}, {"a", "b"}, true);
  // p1 swept; p9 wrote during the absence and is gone (its marker outlived it).
  k.put(k.layout.absence("cache", "b", "p1"), encode_marker({1, s.returning_since}));
  k.put(k.layout.absence("cache", "b", "p9"), encode_marker({9, s.returning_since}));
  Plan p = plan(k.kvs, k.layout, {policy()}, true, {}, 0);
  EXPECT_TRUE(p.writes.empty());
  ASSERT_EQ(p.flush.size(), 1u);
  EXPECT_EQ(p.flush[0].server, "b");
  LeaderProgress flushed;
  flushed.flushed["cache"] = s.epoch;
  PoolState f = written_state(plan(k.kvs, k.layout, {policy()}, true, flushed, 0));
  EXPECT_TRUE(f.flushed);
  EXPECT_EQ(f.epoch, s.epoch);  // a flag, not a new epoch: the acks stand
  k.put(k.layout.state("cache"), encode_state(f));
  EXPECT_EQ(written_state(plan(k.kvs, k.layout, {policy()}, false, {}, 0)).phase, Phase::kPrepare);
  // keep_ejected: held instead, until an operator flushes.
  PoolPolicy hold = policy();
  hold.overflow_flush = false;
  k.put(k.layout.state("cache"), encode_state(s));
  const PoolState h = written_state(plan(k.kvs, k.layout, {hold}, true, {}, 0));
  EXPECT_TRUE(h.held);
  // Markers of an older absence do not count.
  k.put(k.layout.absence("cache", "b", "p9"), encode_marker({9, s.returning_since - 1}));
  EXPECT_EQ(written_state(plan(k.kvs, k.layout, {policy()}, false, {}, 0)).phase, Phase::kPrepare);
}

}  // namespace
}  // namespace chash::proxy::fleet
