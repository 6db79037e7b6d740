// SPDX-License-Identifier: Apache-2.0
// chash-proxy — where a pool's membership comes from: the one interface every source implements.
//
// A source learns who is in a pool (and where, and how healthy) and hands it to the one place
// that makes routing of it: it writes what it learnt into Discovered (discovery.h) or a
// BackendState, and calls the publish function it was given (Proxy::republish), which builds an
// immutable Topology (topology.h) from the config plus Discovered and posts it to every worker.
// Workers never hear from a source directly. The sources (membership/README.md):
//   file      the config file: servers and settings (SIGHUP, POST /reload)      file_source.h
//   sentinel  a Sentinel-managed shard's master and replicas                     sentinel.h
//   cluster   a Redis Cluster's nodes and slot map                               cluster.h
//   etcd      a fleet's servers, ejections and change phases (docs/FLEET.md)     fleet/source.h
#pragma once

#include <string>

namespace chash::proxy {

class MembershipSource {
 public:
  virtual ~MembershipSource() = default;
  virtual const char* kind() const noexcept = 0;
  // Learns what it can now, on the calling thread, before any worker runs (bounded by its own
  // timeouts; a source that cannot be reached is logged, never fatal).
  virtual void discover_now() = 0;
  // Starts following changes (its thread or timers).
  virtual void start() = 0;
  // Its member of /status (`"kind":...`, no braces), "" when it has nothing to show.
  virtual std::string status_json() const = 0;
  // Its families of /metrics (Prometheus text, # HELP and # TYPE included), "" when none.
  virtual std::string prometheus() const = 0;
};

}  // namespace chash::proxy
