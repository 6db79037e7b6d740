// SPDX-License-Identifier: Apache-2.0
// chash-proxy — one proxy's member of the fleet: it keeps the pools taken from etcd routed as
// the fleet's state says (membership/fleet/state.h), reports what it applied and what it can
// reach, and moves the fleet on (membership/fleet/planner.h). docs/FLEET.md is the operator's
// view.
//
// Two threads per etcd connection (pools sharing endpoints and prefix share one Agent):
//   watch  reads the prefix (a range), then watches it from the next revision; on a broken
//          stream it watches again from the last revision it saw, and on compaction reads the
//          range afresh. It only queues what it heard.
//   main   mirrors the keys, keeps the lease alive (TTL/3), applies a pool's new state
//          (Discovered::set_fleet + Proxy::republish, then waits until every worker routes by
//          it) and acknowledges it in this proxy's registration, reports its health view, and
//          carries out the plan: the state transactions, and as leader the rebalance and the
//          flushes.
// etcd away: nothing is applied or acknowledged, the last applied routing serves on (workers
// never wait for etcd), membership edits are refused with the reason, and /status and /metrics
// say so (chash_proxy_etcd_up 0). When it answers again the agent reads the range and catches
// up; a lease that expired meanwhile is replaced and the registration written again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "membership/discovery.h"
#include "membership/etcd/client.h"
#include "membership/failback.h"
#include "membership/fleet/planner.h"
#include "membership/fleet/state.h"
#include "membership/rebalance.h"
#include "membership/topology.h"

namespace chash::proxy::fleet {

class Agent {
 public:
  // What the agent needs of the proxy it runs in.
  struct Host {
    std::function<std::shared_ptr<const Topology>()> topology;
    // Publishes a topology of the running config (with what Discovered holds now) and returns
    // once every worker routes by it.
    std::function<void()> publish;
    Discovered* discovered = nullptr;
    FailbackSweeper* sweeper = nullptr;
    Rebalancer* rebalancer = nullptr;
    std::string id;              // this proxy's name in the fleet
    std::string address, admin;  // for its registration (what `chash fleet` shows)
  };

  Agent(std::shared_ptr<const EtcdMembership> membership, std::vector<PoolConfig> pools, Host host);
  ~Agent();  // stops: threads joined, the lease revoked (the fleet sees this proxy go at once)
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Reads etcd (for at most start_timeout) and applies what it holds, on the calling thread.
  // etcd away is logged, never thrown: the pools serve the file's servers until it answers.
  void discover_now();
  // Starts the watch and main threads (once).
  void start();
  // A reload's pools on this connection: their settings (the servers stay etcd's).
  void set_pools(std::vector<PoolConfig> pools);
  bool serves(const std::string& pool) const;

  // The admin port's POST /fleet/<action>?pool=P&server=S[&server=...] (action: add, remove,
  // drain, set): a membership edit through etcd; false with `message` when refused (etcd away,
  // a bad server string, no such server).
  bool edit(std::string_view action, std::string_view query, std::string& message);
  // POST /flush?pool=P&backend=B for a pool of this agent: empties a held returning server.
  bool flush(const std::string& pool, const std::string& backend, std::string& message);
  // The rebalancer's report on a run over one of this agent's pools (Rebalancer::DoneHook).
  void rebalanced(const std::string& pool, bool complete);

  // `{"id":..,"etcd":{...},"leader":..,"pools":[...]}` for /status and GET /fleet.
  std::string status_json() const;
  // Prometheus samples by metric name ("{labels} value" each); the caller writes HELP/TYPE once
  // for every agent's samples.
  using MetricLines = std::map<std::string, std::vector<std::string>>;
  void metrics(MetricLines& out) const;
  bool etcd_up() const noexcept { return up_.load(); }

 private:
  struct Event;
  struct Inbox;
  void watch_loop();
  void main_loop();
  // One round of the main loop: mirror what was heard, keep the session, apply, plan, report.
  void step();
  bool read_range(etcd::Client& c);  // the whole prefix into the inbox; false: etcd away
  void session();                    // grant / keep alive the lease; registration on a new one
  void apply_pools();                // each pool's state, if its epoch is new
  // Routes `pc` as `st` says (Discovered, then every worker), and reports it; false when the
  // state's servers do not parse for this pool (refused, the last good routing stays).
  // `ack`: reports it in the registration at once (else acknowledge() does, later).
  bool publish(const PoolConfig& pc, const PoolState& st, bool ack = true);
  void acknowledge(const std::string& pool, const PoolState& st);
  // `final`: the sweep a return's prepare waits for; `after`: the one after its routing is
  // published, which its acknowledgement waits for.
  void start_sweep(const PoolConfig& pc, const PoolState& st, bool final, bool after);
  void on_swept(const Event& e);
  void report_health();  // this proxy's view of each pool's servers
  void run_plan();
  void leader_work(const Plan& p);
  void start_flush(const std::string& pool, const std::string& server, std::uint64_t epoch);
  // The status and metrics other threads read, made from the main thread's state.
  void publish_status();
  std::string build_status() const;
  void build_metrics(MetricLines& out) const;
  void put_registration();
  void put_markers();
  void set_down(const std::string& why);
  void set_up();
  std::shared_ptr<const FleetPool> fleet_pool(const PoolConfig& pc, const View& v,
                                              std::string& error) const;
  std::vector<PoolPolicy> policies() const;
  void note_refused(const std::string& key, std::int64_t revision, const std::string& why);

  std::shared_ptr<const EtcdMembership> m_;
  Host host_;
  Layout layout_;
  std::shared_ptr<Inbox> inbox_;
  std::unique_ptr<etcd::Client> client_;        // the main thread's
  std::unique_ptr<etcd::Client> watch_client_;  // the watch thread's
  std::unique_ptr<etcd::Client> edit_client_;   // admin edits (edit_mu_)
  std::mutex edit_mu_;
  bool stop_ = false;  // under inbox_->mu

  // Shared with the admin and status paths (other threads), under mu_.
  mutable std::mutex mu_;
  std::map<std::string, PoolConfig> pools_;  // by name, as the last reload gave them
  bool pools_changed_ = false;
  std::string status_;
  MetricLines metrics_;
  std::map<std::string, PoolState> states_;  // the pools' states as last seen

  // The main thread's own (start() runs it before the thread exists).
  std::map<std::string, PoolConfig> pools_now_;
  std::map<std::string, etcd::KeyValue> kvs_;  // the mirror of the prefix
  std::int64_t revision_ = 0;                  // the store revision the mirror is at
  bool fresh_ = false;                         // the mirror has been read since start
  std::int64_t lease_ = 0;
  std::int64_t next_keepalive_ms_ = 0;
  bool leader_ = false;
  std::string etcd_error_;
  Registration reg_;
  bool reg_dirty_ = true;
  std::map<std::string, std::uint64_t> applied_epoch_;     // pool -> epoch routed by
  std::map<std::string, std::int64_t> applied_state_rev_;  // pool -> the state key's mod_revision
  std::map<std::string, std::string> applied_phase_;
  // pool -> servers ejected in the applied route, and when (steady ms) this proxy applied that:
  // a return vote needs a probe after it.
  std::map<std::string, std::map<std::string, std::int64_t>> ejected_seen_;
  std::map<std::string, std::uint64_t> ejected_since_;     // "pool/server" -> the absence's epoch
  std::set<std::pair<std::string, std::string>> markers_;  // (pool, server) written with lease_
  struct Pending {                                         // a sweep this proxy runs for a state
    std::uint64_t epoch = 0;
    bool final = false;  // the return's prepare: published once it is done
    bool after = false;  // the return's prepare, published: acknowledged once it is done
    bool running = false, done = false;
    std::int64_t retry_ms = 0;
  };
  std::map<std::string, Pending> sweeping_;  // pool ->
  LeaderProgress progress_;
  std::map<std::string, std::uint64_t> rebalancing_;  // pool -> epoch of the run in progress
  std::map<std::string, std::int64_t> rebalance_retry_ms_;
  std::set<std::string> flushing_;                          // pools whose flush runs
  std::set<std::pair<std::string, std::int64_t>> refused_;  // (key, revision) logged
  struct Refused {
    std::string key, why;
    std::int64_t revision = 0;
  };
  std::vector<Refused> last_refused_;  // for /status (the newest few)
  std::atomic<std::uint64_t> refused_total_{0}, transitions_{0};
  std::atomic<bool> up_{false};

  std::thread watch_thread_, main_thread_;

  // With several etcd endpoints, one client per endpoint that reads the leader key every
  // kProbeMs on a thread of its own: the status shows every endpoint up or down, not only the
  // one the main and watch connections stay with. Reads only; nothing waits for it.
  static constexpr std::int64_t kProbeMs = 5000;
  void probe_loop();
  std::vector<std::unique_ptr<etcd::Client>> probe_clients_;
  std::mutex probe_mu_;
  std::condition_variable probe_cv_;
  bool probe_stop_ = false;  // under probe_mu_
  std::thread probe_thread_;
};

}  // namespace chash::proxy::fleet
