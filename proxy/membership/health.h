// SPDX-License-Identifier: Apache-2.0
// chash-proxy — health probing, on the control thread.
//
// Every 50 ms the checker looks at each backend of the current topology: a down backend is
// probed once server_retry_timeout has passed since it went down (or since its last probe);
// with health_check_interval set, a backend that is up is probed that often too. A probe is a
// fresh connection plus the protocol's cheapest question (membership/probe_check.h), bounded by the
// pool's timeout (1 s when none). A down backend returns after `rise` successes in a row; a
// failed probe of an up backend counts like a failed request (record_failure), so `fall`
// (server_failure_limit) of them take it down before clients see errors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "config/config.h"
#include "membership/topology.h"
#include "net/event_loop.h"

namespace chash::proxy {

class Resolver;

// Whether `s` (a member with `role`) should be probed at steady-clock ms `now` (and no probe of
// it is in flight). Replicas that reads may go to are probed every second at least; a server the
// fleet has ejected (`fleet_out`) every server_retry_timeout, even while this proxy thinks it up.
bool probe_due(const BackendState& s, const PoolConfig& pool, std::int64_t now,
               ServerRole role = ServerRole::kNode, bool fleet_out = false) noexcept;

// Applies one probe's outcome. `was_down`: the backend was down when the probe started.
// Up backend: success clears its failure count, failure is record_failure("health check: why")
// (a replica's: down at once, it is lagging or loading). Down backend: success counts toward
// `rise` (then it is up); failure restarts the count and the retry wait.
// `hold`: called when a down backend has passed `rise` probes, before it is let in; true when
// the caller takes its return over (membership/failback.h: it stays down meanwhile).
void apply_probe_result(BackendState& s, const PoolConfig& pool, bool was_down, bool ok,
                        std::string_view why, ServerRole role = ServerRole::kNode,
                        const std::function<bool()>& hold = nullptr);

class HealthChecker {
 public:
  using TopologySource = std::function<std::shared_ptr<const Topology>()>;
  // A down backend passed its probes: true when its return is taken over (safe failover).
  using ReturnHook = std::function<bool(const Pool& pool, NodeId node)>;
  void set_return_hook(ReturnHook hook) { return_hook_ = std::move(hook); }
  // Probes run on `loop` (the control loop), which must outlive the checker. With a resolver,
  // the names of backends that are down are looked up again before each probe.
  HealthChecker(net::EventLoop& loop, TopologySource topology, Resolver* resolver = nullptr);
  // Frees the probes still under way (a stop while one waits on a backend): with the loop no
  // longer running, nothing else would (LeakSanitizer found one in a CI proof).
  ~HealthChecker();
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  // Starts the 50 ms tick (on the loop's thread, or before the loop runs).
  void start();
  // Starts every probe that is due now (one tick, without rescheduling).
  void tick();

 private:
  class Probe;
  net::EventLoop& loop_;
  TopologySource topology_;
  Resolver* resolver_;
  ReturnHook return_hook_;
  std::unordered_set<Probe*> probes_;  // under way; each leaves it when it finishes
};

}  // namespace chash::proxy
