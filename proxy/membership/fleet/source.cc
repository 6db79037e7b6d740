// SPDX-License-Identifier: Apache-2.0
#include "membership/fleet/source.h"

#include <vector>

#include "base/text.h"

namespace chash::proxy::fleet {

namespace {

// The value of `name` in "a=1&b=2" ("" when absent).
std::string param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    const std::size_t eq = kv.find('=');
    if (eq != std::string_view::npos && kv.substr(0, eq) == name) {
      return std::string(kv.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace

EtcdSource::~EtcdSource() {
  std::lock_guard lock(mu_);
  agents_.clear();
}

void EtcdSource::start() {
  std::lock_guard lock(mu_);
  started_ = true;
  for (auto& [key, a] : agents_) a->start();
}

void EtcdSource::sync(const ProxyConfig& config) {
  std::map<std::string, std::pair<std::shared_ptr<const EtcdMembership>, std::vector<PoolConfig>>>
      wanted;
  for (const auto& pc : config.pools) {
    if (pc.etcd == nullptr) continue;
    auto& w = wanted[pc.etcd->connection_key()];
    if (w.first == nullptr) w.first = pc.etcd;
    w.second.push_back(pc);
  }
  std::vector<std::unique_ptr<Agent>> gone;
  std::vector<Agent*> fresh;
  bool started = false;
  {
    std::lock_guard lock(mu_);
    started = started_;
    for (auto it = agents_.begin(); it != agents_.end();) {
      if (wanted.count(it->first) == 0) {
        gone.push_back(std::move(it->second));
        it = agents_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [key, w] : wanted) {
      if (const auto it = agents_.find(key); it != agents_.end()) {
        it->second->set_pools(w.second);
        continue;
      }
      Agent::Host host = host_;
      if (!w.first->id.empty()) host.id = w.first->id;
      auto agent = std::make_unique<Agent>(w.first, w.second, std::move(host));
      fresh.push_back(agent.get());
      agents_.emplace(key, std::move(agent));
    }
  }
  gone.clear();  // joined outside mu_ (their threads may be rendering /status)
  for (Agent* a : fresh) {
    a->discover_now();
    if (started) a->start();
  }
}

Agent* EtcdSource::agent_locked(const std::string& pool) const {
  for (const auto& [key, a] : agents_) {
    if (a->serves(pool)) return a.get();
  }
  return nullptr;
}

bool EtcdSource::serves(const std::string& pool) const {
  std::lock_guard lock(mu_);
  return agent_locked(pool) != nullptr;
}

void EtcdSource::rebalanced(const std::string& pool, bool complete) {
  std::lock_guard lock(mu_);
  if (Agent* a = agent_locked(pool)) a->rebalanced(pool, complete);
}

bool EtcdSource::flush(const std::string& pool, const std::string& backend, std::string& message) {
  std::lock_guard lock(mu_);
  Agent* a = agent_locked(pool);
  return a != nullptr && a->flush(pool, backend, message);
}

std::string EtcdSource::fleet_json() const {
  std::string out = "{\"fleet\":[";
  std::lock_guard lock(mu_);
  bool first = true;
  for (const auto& [key, a] : agents_) {
    const std::string s = a->status_json();
    if (s.empty()) continue;
    out += (first ? "" : ",") + s;
    first = false;
  }
  return out + "]}\n";
}

std::string EtcdSource::status_json() const {
  const std::string f = fleet_json();  // {"fleet":[...]}\n
  if (f == "{\"fleet\":[]}\n") return {};
  return f.substr(1, f.size() - 3);
}

namespace {

// The fleet's families (Agent::metrics), in this order.
struct FleetFamily {
  const char* name;
  const char* help;
  const char* type;
};
constexpr FleetFamily kFleetFamilies[] = {
    {"chash_proxy_etcd_up", "1 while etcd answers this proxy (its lease is kept alive).", "gauge"},
    {"chash_proxy_membership_revision",
     "The pool's servers-key revision in etcd that this proxy routes by.", "gauge"},
    {"chash_proxy_fleet_epoch", "The pool's fleet state epoch this proxy routes by.", "gauge"},
    {"chash_proxy_fleet_members", "Live proxies serving the pool (registered under a lease).",
     "gauge"},
    {"chash_proxy_fleet_member_lag",
     "Epochs a proxy of the fleet is behind the pool's state (0: it routes by the newest).",
     "gauge"},
    {"chash_proxy_fleet_ejected",
     "1 for each server the fleet has ejected (a quorum sees it down).", "gauge"},
    {"chash_proxy_fleet_leader", "1 while this proxy runs the fleet's rebalances and flushes.",
     "gauge"},
    {"chash_proxy_fleet_transitions_total", "Fleet state changes this proxy wrote.", "counter"},
    {"chash_proxy_fleet_refused_total",
     "Values in etcd refused (not JSON, bad server strings, an empty list, a state naming a "
     "non-member); the last good one stays.",
     "counter"},
};

// The families with their samples (lines after the name: "{labels} value").
std::string render_fleet_metrics(const std::map<std::string, std::vector<std::string>>& samples) {
  std::string o;
  for (const FleetFamily& f : kFleetFamilies) {
    const auto it = samples.find(f.name);
    if (it == samples.end() || it->second.empty()) continue;
    prometheus_family(o, f.name, f.help, f.type);
    for (const auto& line : it->second) o += std::string(f.name) + line + "\n";
  }
  return o;
}

}  // namespace

std::string EtcdSource::prometheus() const {
  Agent::MetricLines lines;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, a] : agents_) a->metrics(lines);
  }
  return render_fleet_metrics(lines);
}

bool EtcdSource::edit(std::string_view action, std::string_view query, std::string& message) {
  const std::string pool = param(query, "pool");
  std::lock_guard lock(mu_);  // the control thread's: an edit holds no other lock
  Agent* a = agent_locked(pool);
  if (a == nullptr) {
    message = pool.empty() ? "POST /fleet/<add|remove|drain|set>?pool=NAME&server=..."
                           : "pool '" + pool + "' does not take its servers from etcd";
    return false;
  }
  if (!a->etcd_up()) {
    message =
        "membership change refused: etcd is unreachable from this proxy; serving the last "
        "applied membership (see GET /fleet)";
    return false;
  }
  return a->edit(action, query, message);
}

}  // namespace chash::proxy::fleet
