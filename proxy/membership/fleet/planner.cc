// SPDX-License-Identifier: Apache-2.0
#include "membership/fleet/planner.h"

#include <algorithm>
#include <stdexcept>

#include "config/config.h"

namespace chash::proxy::fleet {

namespace {

using KVs = std::map<std::string, etcd::KeyValue>;

const etcd::KeyValue* find(const KVs& kvs, const std::string& key) {
  const auto it = kvs.find(key);
  return it == kvs.end() ? nullptr : &it->second;
}

std::vector<std::string> names_of(const std::vector<std::string>& servers) {
  std::vector<std::string> out;
  for (const auto& s : servers) {
    try {
      out.push_back(server_name(s));
    } catch (const std::exception&) {
      out.push_back(s);
    }
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class PoolPlanner {
 public:
  PoolPlanner(const KVs& kvs, const Layout& layout, const PoolPolicy& pp,
              const std::map<std::string, Registration>& regs, bool leader,
              const LeaderProgress& progress, std::int64_t now, Plan& out)
      : kvs_(kvs),
        layout_(layout),
        pp_(pp),
        regs_(regs),
        leader_(leader),
        progress_(progress),
        now_(now),
        out_(out) {
    for (const auto& [id, r] : regs_) {
      if (r.pools.count(pp_.name) != 0) live_.push_back(&r);
    }
  }

  void run() {
    const std::string skey = layout_.servers(pp_.name), tkey = layout_.state(pp_.name);
    const etcd::KeyValue* servers = find(kvs_, skey);
    if (servers == nullptr) {
      if (!pp_.seed.empty()) write(skey, encode_servers(pp_.seed), 0, "seeded from the file");
      return;
    }
    std::vector<std::string> list, names;
    std::string why;
    try {
      list = decode_servers(servers->value);
      why = pp_.validate ? pp_.validate(list, names) : std::string();
      if (!pp_.validate) names = names_of(list);
    } catch (const std::invalid_argument& e) {
      why = e.what();
    }
    const etcd::KeyValue* state_kv = find(kvs_, tkey);
    if (state_kv == nullptr) {
      if (!why.empty()) return refuse(skey, servers->mod_revision, why);
      PoolState s;
      s.epoch = 1;
      s.revision = servers->mod_revision;
      s.target.servers = list;
      s.since_ms = now_;
      write(tkey, encode_state(s), 0, "created, stable");
      return;
    }
    try {
      state_ = decode_state(state_kv->value);
    } catch (const std::invalid_argument& e) {
      return refuse(tkey, state_kv->mod_revision, e.what());
    }
    state_rev_ = state_kv->mod_revision;
    if (servers->mod_revision > state_.revision) {
      if (!why.empty()) {
        refuse(skey, servers->mod_revision, why);
      } else if (list == state_.target.servers) {
        PoolState n = state_;
        n.revision = servers->mod_revision;
        return put_state(n, "servers rewritten unchanged");
      } else {
        return put_state(change_membership(state_, list, names, servers->mod_revision, now_),
                         "membership revision " + std::to_string(servers->mod_revision));
      }
    }
    if (health()) return;
    phases();
  }

 private:
  void write(const std::string& key, std::string value, std::int64_t mod, std::string why) {
    out_.writes.push_back({key, std::move(value), mod, "pool " + pp_.name + ": " + why});
  }
  void refuse(const std::string& key, std::int64_t mod, const std::string& why) {
    out_.refused.push_back({key, mod, why});
  }
  void put_state(const PoolState& n, const std::string& why) {
    write(layout_.state(pp_.name), encode_state(n), state_rev_,
          why + " (epoch " + std::to_string(n.epoch) + ", " + phase_name(n.phase) + ")");
  }

  const PoolReport* report(const Registration& r) const {
    const auto it = r.pools.find(pp_.name);
    return it == r.pools.end() ? nullptr : &it->second;
  }

  // Ejections and returns by quorum; true when it wrote a state.
  bool health() {
    if (!pp_.auto_eject || !pp_.health || live_.empty()) return false;
    const std::size_t q = quorum_of(live_.size(), pp_.quorum);
    PoolState n = state_;
    std::string why;
    for (const std::string& name : names_of(state_.target.servers)) {
      if (contains(state_.target.ejected, name)) continue;
      std::size_t downs = 0;
      for (const Registration* r : live_) downs += report(*r)->down.count(name);
      if (downs >= q) {
        n = eject(n, name, now_);
        why += (why.empty() ? "" : ", ") + name + " ejected (" + std::to_string(downs) + " of " +
               std::to_string(live_.size()) + " proxies cannot reach it)";
      }
    }
    if (!why.empty()) {
      put_state(n, why);
      return true;
    }
    if (!state_.returning.empty() ||
        (state_.phase != Phase::kStable && state_.phase != Phase::kCommit)) {
      return false;
    }
    for (const std::string& name : state_.target.ejected) {
      std::size_t ups = 0;
      for (const Registration* r : live_) ups += contains(report(*r)->up, name) ? 1 : 0;
      if (ups >= q) {
        put_state(begin_return(state_, name, now_), name + " returns (" + std::to_string(ups) +
                                                        " of " + std::to_string(live_.size()) +
                                                        " proxies reach it)");
        return true;
      }
    }
    return false;
  }

  bool all_acked() const {
    for (const Registration* r : live_) {
      if (!acked(*r, pp_.name, state_.epoch, state_.phase)) return false;
    }
    return true;
  }

  // Markers of proxies that wrote `server`'s keys elsewhere during the absence since `since`.
  std::vector<std::pair<std::string, AbsenceMarker>> markers(const std::string& server,
                                                             std::uint64_t since) const {
    std::vector<std::pair<std::string, AbsenceMarker>> out;
    const std::string prefix = layout_.absence(pp_.name, server);
    for (auto it = kvs_.lower_bound(prefix); it != kvs_.end() && it->first.starts_with(prefix);
         ++it) {
      AbsenceMarker m;
      try {
        m = decode_marker(it->second.value);
      } catch (const std::invalid_argument&) {
        m.since = since;  // unreadable: as if a writer we cannot account for
      }
      if (m.since == since) out.emplace_back(it->first.substr(prefix.size()), m);
    }
    return out;
  }

  // Whether some proxy's writes of the returning server's keys cannot have been swept: its log
  // overflowed, or it wrote and is gone (another lease, or none).
  bool unknown_writes() const {
    for (const Registration* r : live_) {
      if (report(*r)->overflow) return true;
    }
    for (const auto& [id, m] : markers(state_.returning, state_.returning_since)) {
      const auto it = regs_.find(id);
      if (it == regs_.end() || it->second.lease != m.lease) return true;
    }
    return false;
  }

  void phases() {
    const auto flushed = progress_.flushed.find(pp_.name);
    if (state_.phase == Phase::kSweep && !state_.flushed && flushed != progress_.flushed.end() &&
        flushed->second == state_.epoch) {
      PoolState n = state_;
      n.flushed = true;
      n.held = false;
      return put_state(n, state_.returning + " emptied");
    }
    if (state_.phase == Phase::kStable || !all_acked()) return;
    switch (state_.phase) {
      case Phase::kSweep:
        if (!state_.flushed && unknown_writes()) {
          if (pp_.overflow_flush) {
            if (leader_) out_.flush.push_back({pp_.name, state_.returning, state_.epoch});
          } else if (!state_.held) {
            PoolState n = state_;
            n.held = true;
            put_state(n, state_.returning +
                             " held out: some proxy's writes during its absence are unknown "
                             "(failover_overflow: keep_ejected; POST /flush to let it back)");
          }
          return;
        }
        return put_state(advance(state_, now_), state_.returning + " swept by every proxy");
      case Phase::kPrepare:
        return put_state(advance(state_, now_), "every proxy prepared");
      case Phase::kCommit: {
        if (leader_ && !state_.returning.empty()) {
          const std::string prefix = layout_.absence(pp_.name, state_.returning);
          if (kvs_.lower_bound(prefix) != kvs_.end() &&
              kvs_.lower_bound(prefix)->first.starts_with(prefix)) {
            out_.clear.push_back(prefix);
          }
        }
        const auto done = progress_.rebalanced.find(pp_.name);
        if (!pp_.warmup) return put_state(advance(state_, now_), "committed (no warm-up)");
        if (done != progress_.rebalanced.end() && done->second == state_.epoch) {
          return put_state(advance(state_, now_), "rebalanced: every key is home");
        }
        if (now_ - state_.since_ms >= pp_.window_ms) {
          return put_state(advance(state_, now_), "the warm-up window has passed");
        }
        if (leader_) out_.rebalance.push_back({pp_.name, {}, state_.epoch});
        return;
      }
      case Phase::kStable:
        return;
    }
  }

  const KVs& kvs_;
  const Layout& layout_;
  const PoolPolicy& pp_;
  const std::map<std::string, Registration>& regs_;
  bool leader_;
  const LeaderProgress& progress_;
  std::int64_t now_;
  Plan& out_;
  std::vector<const Registration*> live_;  // registrations that serve this pool
  PoolState state_;
  std::int64_t state_rev_ = 0;
};

}  // namespace

std::map<std::string, Registration> registrations(const KVs& kvs, const Layout& layout,
                                                  std::vector<Plan::Refusal>* refused) {
  std::map<std::string, Registration> out;
  const std::string prefix = layout.proxies();
  for (auto it = kvs.lower_bound(prefix); it != kvs.end() && it->first.starts_with(prefix); ++it) {
    try {
      Registration r = decode_registration(it->second.value);
      r.id = it->first.substr(prefix.size());
      if (it->second.lease != 0) r.lease = it->second.lease;  // etcd's word over the value's
      out.emplace(r.id, std::move(r));
    } catch (const std::invalid_argument& e) {
      if (refused != nullptr) refused->push_back({it->first, it->second.mod_revision, e.what()});
    }
  }
  return out;
}

Plan plan(const KVs& kvs, const Layout& layout, const std::vector<PoolPolicy>& pools, bool leader,
          const LeaderProgress& progress, std::int64_t now_ms) {
  Plan out;
  const auto regs = registrations(kvs, layout, &out.refused);
  out.claim_leader = kvs.count(layout.leader()) == 0;
  for (const PoolPolicy& pp : pools) {
    PoolPlanner(kvs, layout, pp, regs, leader, progress, now_ms, out).run();
  }
  return out;
}

}  // namespace chash::proxy::fleet
