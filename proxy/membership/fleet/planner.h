// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what the fleet does next, decided from what etcd holds (membership/fleet/state.h
// for the states and phases). Pure: the agent (agent.h) gives it the keys it last saw and does
// what it says — each state write a transaction on the mod_revision it was planned from, so of
// the proxies that plan the same step at once exactly one succeeds and the rest see it done.
//
// Per pool, in this order, at most one state write per plan:
//   1. no servers key: seed it from the file's servers (a create: the first proxy wins);
//   2. no state: create it, stable, from the servers key;
//   3. a newer servers key: validate it (a bad value is refused, logged once, the last good
//      membership stays) and start the change (prepare);
//   4. health (auto_eject_hosts, fleet health on): a server a quorum of live proxies cannot
//      reach is ejected; an ejected server a quorum reaches again begins its return (sweep);
//   5. the phase moves on once every live proxy serving the pool has acknowledged it: sweep ->
//      prepare (after the server was emptied if some writer's log is lost or overflowed),
//      prepare -> commit; commit -> stable once the leader's rebalance has moved every key (or
//      the warm-up window has passed, or the pool has no warm-up).
// The leader (the proxy holding <prefix>/leader) also runs the rebalance and the flushes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "membership/etcd/json.h"
#include "membership/fleet/state.h"

namespace chash::proxy::fleet {

// What the planner knows of one pool from the config.
struct PoolPolicy {
  std::string name;
  std::vector<std::string> seed;    // the file's servers, as strings
  bool auto_eject = false;          // auto_eject_hosts
  bool health = true;               // the fleet's ejections (membership: health)
  bool warmup = true;               // read-through on a change (else commit goes straight on)
  bool overflow_flush = true;       // failover_overflow: flush (else keep_ejected: held)
  std::uint32_t quorum = 0;         // 0: a majority of the live proxies serving the pool
  std::int64_t window_ms = 600000;  // warmup_window: commit ends after this at the latest
  // Checks a servers list as the pool would route it; "" when good (and `names` filled), else
  // why it is refused.
  std::function<std::string(const std::vector<std::string>& servers,
                            std::vector<std::string>& names)>
      validate;
};

// What the leader has done, that the plan depends on.
struct LeaderProgress {
  std::map<std::string, std::uint64_t> rebalanced;  // pool -> epoch whose rebalance moved all
  std::map<std::string, std::uint64_t> flushed;     // pool -> epoch whose returning was emptied
};

struct Plan {
  struct Write {
    std::string key, value;
    std::int64_t mod_revision = 0;  // the key's when planned; 0: it must not exist
    std::string why;                // for the log ("pool cache: prepare 4 -> 5 servers")
  };
  std::vector<Write> writes;
  // Bad values seen (key, mod_revision, why): logged once each by the agent.
  struct Refusal {
    std::string key;
    std::int64_t mod_revision = 0;
    std::string why;
  };
  std::vector<Refusal> refused;
  // Leader work.
  struct Work {
    std::string pool, server;  // server: the flush's
    std::uint64_t epoch = 0;
  };
  std::vector<Work> rebalance;     // start (or keep) a rebalance of the pool for this epoch
  std::vector<Work> flush;         // empty `server` before its return goes on
  std::vector<std::string> clear;  // key prefixes to delete (absence markers of a done return)
  bool claim_leader = false;       // nobody leads: try to
};

// The live proxies' registrations (those that parse; the rest are refusals).
std::map<std::string, Registration> registrations(const std::map<std::string, etcd::KeyValue>& kvs,
                                                  const Layout& layout,
                                                  std::vector<Plan::Refusal>* refused = nullptr);

Plan plan(const std::map<std::string, etcd::KeyValue>& kvs, const Layout& layout,
          const std::vector<PoolPolicy>& pools, bool leader, const LeaderProgress& progress,
          std::int64_t now_ms);

}  // namespace chash::proxy::fleet
