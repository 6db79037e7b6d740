// SPDX-License-Identifier: Apache-2.0
#include "proto/tcp/balance.h"

#include "proto/tcp/proxy_header.h"

namespace chash::proxy::tcp {

std::string client_key(const sockaddr_storage& peer, Balance balance) {
  std::string ip = ip_text(peer);
  if (!ip.empty()) return ip;
  return balance == Balance::kIpHash ? "0.0.0.0" : "unix:";
}

SmoothWrr::SmoothWrr(std::span<const std::uint32_t> weights) {
  peers_.resize(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    peers_[i].weight = peers_[i].effective = weights[i];
  }
}

void SmoothWrr::failed(NodeId peer, std::uint32_t max_fails) noexcept {
  if (peer >= peers_.size() || max_fails == 0) return;
  Peer& p = peers_[peer];
  p.effective -= p.weight / max_fails;
  if (p.effective < 0) p.effective = 0;
}

namespace {
std::vector<std::uint32_t> weights_of(const PoolConfig& c, bool ones) {
  std::vector<std::uint32_t> w;
  for (const auto& s : c.servers) w.push_back(ones ? 1 : s.weight);
  return w;
}
}  // namespace

TcpPoolState::TcpPoolState(const PoolConfig& c)
    : round_robin(weights_of(c, true)), weighted(weights_of(c, false)) {
  for (const auto& s : c.servers) names.push_back(s.name);
}

bool TcpPoolState::fits(const PoolConfig& c) const noexcept {
  if (c.servers.size() != names.size()) return false;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (c.servers[i].name != names[i]) return false;
  }
  return true;
}

Chooser::Chooser(const Pool& pool, std::string key)
    : key_(std::move(key)), tried_(pool.states.size(), 0) {}

NodeId Chooser::next(const Pool& pool, TcpPoolState& state) {
  auto up = [&](NodeId i) {
    return tried_[i] == 0 && !pool.states[i]->down.load(std::memory_order_relaxed);
  };
  NodeId pick = kNoNode;
  switch (pool.config.balance) {
    case Balance::kHash:
    case Balance::kIpHash:
      pick = pool.route_if(key_, up);
      // A preference order shorter than the pool (a router that stops early) ends in list order.
      for (NodeId n = 0; pick == kNoNode && n < pool.states.size(); ++n) {
        if (up(n)) pick = n;
      }
      break;
    case Balance::kRoundRobin:
      pick = state.round_robin.pick(up);
      break;
    case Balance::kWeightedRoundRobin:
      pick = state.weighted.pick(up);
      break;
    case Balance::kLeastConn: {
      // Fewest relays per weight: a/wa < b/wb  <=>  a*wb < b*wa (no division, as nginx).
      NodeId best = kNoNode;
      std::int64_t best_conns = 0, best_weight = 1;
      std::vector<std::int64_t> conns(pool.states.size());
      for (NodeId i = 0; i < pool.states.size(); ++i) {
        if (!up(i)) continue;
        conns[i] = pool.states[i]->active.load(std::memory_order_relaxed);
        const std::int64_t w = pool.servers[i].weight;
        if (best == kNoNode || conns[i] * best_weight < best_conns * w) {
          best = i;
          best_conns = conns[i];
          best_weight = w;
        }
      }
      if (best == kNoNode) break;
      pick = state.weighted.pick([&](NodeId i) {
        return up(i) && conns[i] * best_weight ==
                            best_conns * static_cast<std::int64_t>(pool.servers[i].weight);
      });
      break;
    }
  }
  if (pick != kNoNode) tried_[pick] = 1;
  return pick;
}

void Chooser::failed(const Pool& pool, TcpPoolState& state, NodeId node) {
  switch (pool.config.balance) {
    case Balance::kRoundRobin:
      state.round_robin.failed(node, pool.config.server_failure_limit);
      break;
    case Balance::kWeightedRoundRobin:
    case Balance::kLeastConn:
      state.weighted.failed(node, pool.config.server_failure_limit);
      break;
    case Balance::kHash:
    case Balance::kIpHash:
      break;
  }
}

}  // namespace chash::proxy::tcp
