// SPDX-License-Identifier: Apache-2.0
// chash-proxy — etcd as a membership source: one fleet::Agent per etcd connection the config's
// pools use (pools with the same endpoints, prefix and credentials share one watch and one
// lease), kept in step with reloads, and the fleet's part of /status, /metrics and the admin
// port (GET /fleet, POST /fleet/..., POST /flush of a held return).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "membership/fleet/agent.h"
#include "membership/source.h"

namespace chash::proxy::fleet {

class EtcdSource : public MembershipSource {
 public:
  // What each agent is given; `host.id` is this proxy's name where `membership: id` is not set.
  explicit EtcdSource(Agent::Host host) : host_(std::move(host)) {}
  ~EtcdSource() override;  // the agents first: their threads publish topologies and run sweeps

  const char* kind() const noexcept override { return "etcd"; }
  void discover_now() override {}  // sync() reads etcd for each new agent
  void start() override;           // every agent's threads; later agents start at once
  // `"fleet":[...]` (each agent's view), "" without etcd pools.
  std::string status_json() const override;
  std::string prometheus() const override;

  // One agent per etcd connection of `config`'s pools: new ones read etcd now (up to their
  // start_timeout), existing ones get their pools' new settings, unused ones stop. Call without
  // the proxy's topology lock held (an agent publishes through it from its thread).
  void sync(const ProxyConfig& config);
  bool serves(const std::string& pool) const;
  // The rebalancer's report on a run over an etcd pool (Rebalancer::DoneHook).
  void rebalanced(const std::string& pool, bool complete);
  // POST /flush?pool=P&backend=B of a fleet pool's held return: false (with `message`) when the
  // pool is not the fleet's or nothing is held.
  bool flush(const std::string& pool, const std::string& backend, std::string& message);
  // GET /fleet: `{"fleet":[...]}`.
  std::string fleet_json() const;
  // POST /fleet/<action>?pool=P&...: refused at once (with the reason) when that pool's etcd is
  // known to be away.
  bool edit(std::string_view action, std::string_view query, std::string& message);

 private:
  Agent* agent_locked(const std::string& pool) const;  // mu_ held
  Agent::Host host_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Agent>> agents_;  // by EtcdMembership::connection_key
  bool started_ = false;
};

}  // namespace chash::proxy::fleet
