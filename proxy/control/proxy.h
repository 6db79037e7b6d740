// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the process: listeners, worker threads, and the control thread; start, stop
// and reload.
//
// The control thread (the one that calls run()) owns everything that is not on the hot path:
// signals (control/signals.h: SIGHUP reloads, SIGINT/SIGTERM stop), health probes
// (membership/health.h), reloads (here), and the admin HTTP port (control/admin.h, showing
// control/status.h's renderings). Workers only route and relay.
//
// Example (what main.cc does):
//   chash::proxy::Proxy proxy(chash::proxy::load_config("nutcracker.yml"), {.config_path = ...});
//   proxy.run();  // until SIGTERM
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "control/admin.h"
#include "control/handover.h"
#include "control/signals.h"
#include "control/stats_port.h"
#include "control/ui.h"
#include "core/metrics.h"
#include "core/worker.h"
#include "membership/cluster.h"
#include "membership/failback.h"
#include "membership/file_source.h"
#include "membership/fleet/source.h"
#include "membership/health.h"
#include "membership/rebalance.h"
#include "membership/resolver.h"
#include "membership/sentinel.h"
#include "membership/topology.h"
#include "net/event_loop.h"

namespace chash::proxy {

struct ProxyOptions {
  std::string config_path;      // re-read on SIGHUP / POST /reload ("" = reload disabled)
  bool handle_signals = false;  // main: true; tests that embed a Proxy: false
  unsigned workers = 0;         // overrides the config when non-zero
  // Binary hand-over (docs/RUNNING.md "Graceful stop and binary upgrade"): serve this unix socket, from which
  // a newer chash-proxy takes the listening sockets ("" = off).
  std::string handover_socket;
  // Start by taking the listening sockets from the chash-proxy serving handover_socket, which
  // then stops accepting, drains and exits.
  bool takeover = false;
  // How backend host names are looked up (membership/resolver.h); tests inject slow or failing
  // ones.
  Lookup lookup = system_lookup;
};

class Proxy {
 public:
  // Binds every listener (and the admin port); throws std::runtime_error naming the address.
  Proxy(ProxyConfig config, ProxyOptions options = {});
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts the workers and runs the control loop until stop(). Call once.
  void run();
  // Thread-safe: stop now (open connections are closed).
  void stop();
  // Thread-safe: graceful stop (SIGTERM): stop accepting, let every client's requests finish
  // (each connection closes between requests), then stop once no client is left or
  // drain_timeout has passed. A second call stops at once.
  void drain();
  // Blocks until run() has started the workers (tests).
  void wait_running();

  // Thread-safe: parse + build off the hot path, then swap. False (and `message` says why) when
  // the new config is refused; the old one stays.
  bool reload(const ProxyConfig& config, std::string& message);
  bool reload_from_file(std::string& message);
  // Thread-safe: publishes a topology of the running config with what the watchers discovered
  // since (a cluster's new map, a shard's replicas); the version stays.
  void republish();
  // Thread-safe: returns once every worker has finished the event it was handling.
  void quiesce_workers();
  // POST /flush?pool=P&backend=B: empty a backend kept out after its absence log overflowed
  // (membership/failback.h) and let it in.
  bool flush_backend(std::string_view query, std::string& message);
  // POST /rebalance?pool=P[&rate=N]: move the keys a reload moved (membership/rebalance.h).
  bool start_rebalance(std::string_view query, std::string& message);
  const Rebalancer& rebalancer() const noexcept { return *rebalancer_; }
  // The pools whose servers come from etcd (membership/fleet/source.h).
  const fleet::EtcdSource& etcd() const noexcept { return *etcd_; }

  std::uint16_t port(std::size_t pool) const;  // TCP port of pool i (0 for unix sockets)
  // TCP port the pool named `name` listens on (0: unix socket or no such pool).
  std::uint16_t port(const std::string& name) const;
  std::uint16_t admin_port() const;
  std::uint16_t stats_port() const;  // nutcracker's stats port (0 when not configured)
  std::shared_ptr<const Topology> topology() const;
  // The oldest topology version a worker still routes with; equal to topology()->version once
  // every worker has applied the last reload (workers swap between events, on their threads).
  std::uint64_t applied_version() const;
  const Metrics& metrics() const noexcept { return metrics_; }
  unsigned worker_count() const noexcept { return worker_count_; }

  std::string prometheus() const;
  std::string status_json() const;
  // The admin port's status page (control/ui.h): its rates are over the time since the newest
  // page shown at least a second ago (to anyone: two browsers still see useful intervals).
  std::string status_page() const;
  const Resolver& resolver() const noexcept { return *resolver_; }
  // The stats port's live header (control/stats_port.h).
  StatsHeader stats_header() const;

 private:
  // The listening socket for `key`: the predecessor's (hand-over) or a new one.
  int take_or_listen(const std::string& key, const Address& address, int backlog,
                     std::string& error);
  // The pool listeners `config` needs, reusing open ones by address; false (and `error`) when
  // one cannot be bound.
  bool open_listeners(const ProxyConfig& config,
                      std::map<std::string, std::shared_ptr<ListenSocket>>& out,
                      std::string& error);
  Listeners listeners_for(const Topology& t) const;
  HandoverSockets handover_sockets() const;
  // --takeover: the old process's backend health (control/handover_state.h) onto topology_;
  // false when it gave none.
  bool adopt_predecessor_state();
  // chash_proxy.state_file: read at start (load_state_file), written by state_file_tick when the
  // backends' health changed; not by a process that has handed over (its successor writes it).
  void load_state_file();
  void state_file_tick();
  void write_state_file();
  void serve_handover();
  bool reload_locked(const ProxyConfig& config, std::string& message);  // holds mu_
  void begin_drain(std::string_view why);
  void check_drained();
  // Hot keys (proxy/hotkeys/hot_keys.h): every 100 ms on the control loop, each pool's tracker
  // takes the settings of a new topology, and a pool whose window has passed rotates.
  void hot_keys_tick();
  void ui_tick();  // the status page's sample, every kUiSampleMs (control/ui.h UiHistory)
  std::shared_ptr<const Topology> hot_configured_;  // the topology the trackers were set for

  ProxyConfig config_;
  ProxyOptions options_;
  unsigned worker_count_ = 1;
  Metrics metrics_;
  std::unique_ptr<Resolver> resolver_;
  std::unique_ptr<HandoverClient> predecessor_;  // --takeover: until released
  std::string state_file_;           // chash_proxy.state_file, as at start ("" = none)
  std::string state_fingerprint_;    // what the last write of it reflected
  std::string state_file_error_;     // the last failure logged (each new one is logged once)
  bool state_file_handed_ = false;   // handed over: the successor writes the state file
  // Pool listening sockets by address (as configured); workers hold them too.
  std::map<std::string, std::shared_ptr<ListenSocket>> listen_;
  int admin_fd_ = -1;
  int stats_fd_ = -1;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  net::EventLoop control_;  // declared before what registers on it: destroyed after them
  std::unique_ptr<HandoverServer> handover_;
  std::unique_ptr<AdminServer> admin_;
  std::unique_ptr<StatsPort> stats_;
  std::unique_ptr<SignalHandler> signals_;
  std::unique_ptr<HealthChecker> health_;
  Discovered discovered_;  // before the watchers that write it
  std::unique_ptr<SentinelWatcher> sentinel_;
  std::unique_ptr<ClusterWatcher> cluster_;
  std::unique_ptr<FailbackSweeper> failback_;
  std::unique_ptr<Rebalancer> rebalancer_;
  // The membership sources (membership/source.h), in the order /status shows them.
  std::unique_ptr<FileSource> file_;
  std::unique_ptr<fleet::EtcdSource> etcd_;
  std::vector<MembershipSource*> sources_;
  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::mutex mu_;  // topology_, config_ across threads; serializes reloads
  std::shared_ptr<const Topology> topology_;
  std::uint64_t version_ = 1;
  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool running_ = false;
  mutable std::mutex ui_mu_;  // ui_history_
  UiHistory ui_history_;      // the status page's samples, one a second (ui_tick)
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> draining_{false};
  net::Clock::time_point drain_deadline_{};
};

}  // namespace chash::proxy
