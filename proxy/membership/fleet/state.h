// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the fleet's shared truth in etcd: its layout, its values, and how one pool's
// routing moves from one membership to the next without a stale read (docs/FLEET.md).
//
// Layout under the prefix (default /chash), stable — other tools write it:
//   <prefix>/pools/<pool>/servers   the pool's `servers:` as a JSON array of nutcracker strings
//                                   (["127.0.0.1:6379:1 r1", ...]); written by operators
//                                   (etcdctl, `chash fleet`, the admin port). Its mod_revision
//                                   is the pool's membership revision.
//   <prefix>/pools/<pool>/state     PoolState as JSON: written only by transactions on its own
//                                   mod_revision (the proxies and `chash fleet`).
//   <prefix>/pools/<pool>/absence/<server>/<proxy>
//                                   a proxy wrote <server>'s keys elsewhere while it was ejected
//                                   (no lease: it outlives the proxy, whose bounded log does not).
//   <prefix>/proxies/<id>           Registration as JSON, under the proxy's lease.
//   <prefix>/leader                 the id of the proxy that runs the fleet's background work
//                                   (rebalance, flushes), under its lease.
//
// A pool's state is one epoch of the whole fleet: every routing change, of membership or of
// health, is a new epoch that every live proxy applies and acknowledges in its registration.
// A membership change S0 -> S1 goes through phases chosen so that any two proxies one phase
// apart never disagree on where a key's newest value is:
//   prepare  route by S0, a miss read through S1's owner, writes delete S1's copy
//            (compatible with proxies still on S0: S0's owner stays the truth);
//   commit   once every live proxy has acked prepare: route by S1, a miss read through S0's
//            owner (issue 14's warm-up), writes delete S0's copy (compatible with prepare: each
//            side reads the other's owner on a miss and deletes its copy on a write);
//   stable   once every live proxy has acked commit and the leader's rebalance has moved the
//            rest (or the warm-up window has passed): S0 is forgotten.
// An ejection (a quorum of live proxies sees a server down) applies at once to every routing of
// the state. A return goes sweep (every proxy deletes on the server what it wrote elsewhere
// meanwhile, and acks) -> prepare -> commit -> stable, like a membership change from the
// routing with the server ejected to the one without.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chash::proxy::fleet {

// ---- Keys ---------------------------------------------------------------------------------------

struct Layout {
  std::string prefix = "/chash";  // no trailing '/'
  std::string pools() const { return prefix + "/pools/"; }
  std::string servers(std::string_view pool) const;
  std::string state(std::string_view pool) const;
  std::string absence(std::string_view pool, std::string_view server = {}) const;
  std::string absence(std::string_view pool, std::string_view server, std::string_view id) const;
  std::string proxies() const { return prefix + "/proxies/"; }
  std::string proxy(std::string_view id) const { return proxies() + std::string(id); }
  std::string leader() const { return prefix + "/leader"; }
};
// A prefix as configured: "/chash", "/chash/" -> "/chash"; throws std::invalid_argument when
// it does not start with '/'.
std::string normalize_prefix(std::string_view prefix);
// Pool and server names are path segments: no '/', no control characters, not empty.
bool valid_segment(std::string_view s) noexcept;

// ---- Values -------------------------------------------------------------------------------------

// A membership (the servers key's strings) with the servers the fleet has ejected (by name).
struct Routing {
  std::vector<std::string> servers;
  std::vector<std::string> ejected;  // sorted, each the name of one of `servers`
  bool operator==(const Routing&) const = default;
};

enum class Phase : std::uint8_t { kStable, kSweep, kPrepare, kCommit };
const char* phase_name(Phase p) noexcept;
std::optional<Phase> phase_from(std::string_view s) noexcept;

inline constexpr std::size_t kMaxPrevious = 4;  // routings still read through (warm-up's bound)

struct PoolState {
  std::uint64_t epoch = 0;    // +1 on every write
  std::int64_t revision = 0;  // the servers key's mod_revision `target` was made from
  Phase phase = Phase::kStable;
  Routing target;                 // where the pool is going (stable: where it is)
  std::vector<Routing> previous;  // newest first; [0] is routed by in sweep and prepare
  std::string returning;          // sweep, prepare, commit: the server coming back
  // Per server ejected in the target: the epoch its absence began. A proxy that writes its keys
  // elsewhere leaves a marker naming that epoch (Layout::absence), so its return knows whose
  // writes it must have swept — and that a writer gone since took its log with it.
  std::map<std::string, std::uint64_t> ejected_at;
  std::uint64_t returning_since = 0;  // ejected_at of `returning`
  // Per server ejected in the target whose membership changed during its absence: the routing
  // it was last in (itself in, the others as they were then). What it holds is that routing's
  // keys, which the change may have given to others: while it is out, every proxy also notes a
  // write of such a key in its absence log (so the sweep deletes the copy, now older), and its
  // return reads them through it and moves them to their owners (a key written only before the
  // ejection has its one copy there: chaos kill-change, a server added while n1 was out — n1's
  // value of a key the add gave n5 was read by no one). Set by the first change of the absence,
  // appended to the return's read-through routings, dropped when the server is no longer out
  // or returning.
  std::map<std::string, Routing> homes;
  bool held = false;                  // sweep: kept out (failover_overflow: keep_ejected)
  bool flushed = false;               // sweep: the leader has emptied `returning`
  std::int64_t since_ms = 0;          // wall clock when the phase began
  bool operator==(const PoolState&) const = default;
};

// What a pool's workers do in a state: route by `route`, and on a miss look at `reads`' owners
// (newest first); a write removes the key's copy at those owners.
struct View {
  std::uint64_t epoch = 0;
  std::int64_t revision = 0;
  Phase phase = Phase::kStable;
  Routing route;
  std::vector<Routing> reads;
  std::map<std::string, Routing> homes;  // PoolState::homes of the servers `route` has out
};
View view_of(const PoolState& s);

// One proxy's acknowledgement and health view of one pool.
struct PoolReport {
  std::uint64_t epoch = 0;  // the epoch it routes by (0: none applied yet)
  Phase phase = Phase::kStable;
  std::int64_t revision = 0;
  bool swept = false;     // sweep phase: its writes of `returning` are deleted there
  bool overflow = false;  // sweep phase: it noted more keys than failover_track_keys
  std::map<std::string, std::string> down;  // servers it cannot reach -> last error
  std::vector<std::string> up;              // servers it can reach
};

// A proxy's marker under Layout::absence(pool, server, id).
struct AbsenceMarker {
  std::int64_t lease = 0;   // the writer's lease then: another lease is another process
  std::uint64_t since = 0;  // the absence's ejected_at
};
AbsenceMarker decode_marker(std::string_view json);
std::string encode_marker(const AbsenceMarker& m);

struct Registration {
  std::string id, address, admin, version;
  std::int64_t pid = 0, started_ms = 0, lease = 0;
  std::int64_t etcd_revision = 0;  // the last store revision it has seen
  std::map<std::string, PoolReport> pools;
};

// ---- JSON (each decode throws std::invalid_argument with a message naming what is wrong) ---------

// A servers value: a non-empty JSON array of strings, none empty. The strings themselves are
// checked by the caller (the pool's own parser).
std::vector<std::string> decode_servers(std::string_view json);
std::string encode_servers(const std::vector<std::string>& servers);
PoolState decode_state(std::string_view json);
std::string encode_state(const PoolState& s);
Registration decode_registration(std::string_view json);
std::string encode_registration(const Registration& r);

// ---- Transitions (pure: the planner calls them with what it read from etcd) ----------------------

// The routing workers use now and the ones they read through, as one list: [route, reads...].
std::vector<Routing> routings_now(const PoolState& s);

// A membership change to `servers` (already validated; `names` their names) made at revision
// `revision`: the next state, or nullopt when the routing does not change (then only
// `revision` moves: see with_revision). `same` compares two server lists as routings (weights
// and names); the caller's, as parsing is the pool's.
PoolState change_membership(const PoolState& s, std::vector<std::string> servers,
                            const std::vector<std::string>& names, std::int64_t revision,
                            std::int64_t now_ms);
// `server` ejected from every routing of the state (it is in none: unchanged).
PoolState eject(const PoolState& s, const std::string& server, std::int64_t now_ms);
// The return of `server` (ejected in the target) begins: the sweep phase.
PoolState begin_return(const PoolState& s, const std::string& server, std::int64_t now_ms);
// The next phase: sweep -> prepare -> commit -> stable.
PoolState advance(const PoolState& s, std::int64_t now_ms);
// Drops read-through routings that equal the route (a change undone), and collapses sweep and
// prepare whose target is routed already.
PoolState normalize(PoolState s);

// Whether `r` has acknowledged epoch `epoch` in phase `phase` for `pool`.
bool acked(const Registration& r, const std::string& pool, std::uint64_t epoch, Phase phase);

// A quorum of `live` proxies: `quorum` when given (>= 1), else a majority (live / 2 + 1).
std::size_t quorum_of(std::size_t live, std::uint32_t quorum) noexcept;

}  // namespace chash::proxy::fleet
