// SPDX-License-Identifier: Apache-2.0
// chash-proxy — how a tcp pool picks the backend for a new connection (`balance:`).
//
// hash / ip-hash: the pool's router (preset or algorithm; the same chash::Router as `chash route`)
//   on the client key (client_key below); on a failed connect the connection tries the key's
//   next choice, in the router's preference order (its failover), as nginx's
//   proxy_next_upstream continues the hash sequence. With hash_balance_factor, a backend whose
//   open relays exceed the factor times the weighted average is passed over for the key's next
//   choice (HAProxy's hash-balance-factor).
// round-robin: nginx's round robin, i.e. smooth weighted round robin with every weight 1.
// weighted-round-robin: nginx's smooth weighted round robin (ngx_http_upstream_get_peer):
//   each pick adds every eligible peer's effective weight to its current weight, takes the
//   largest current weight (the first in list order on ties) and subtracts the total from it.
//   Check value: weights 5,1,1 pick a a b a c a a, then repeat. A failed connect lowers the
//   peer's effective weight by weight / server_failure_limit; each later pick that considers it
//   raises it by 1 up to its weight (nginx's max_fails recovery).
// least-conn: the peer with the fewest open relays per weight (BackendState::active, counted
//   across workers), compared as nginx does with cross products, conns_a * weight_b <
//   conns_b * weight_a; peers tied on that ratio are picked among by the smooth weighted round
//   robin above (ngx_stream_upstream_get_least_conn_peer), so equal idle backends alternate.
// Every policy skips backends that are down and backends this connection already tried.
// Round-robin state is per worker (as in nginx), so N workers interleave N sequences.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/worker.h"
#include "membership/topology.h"

namespace chash::proxy::tcp {

// The routing key of a client (hash, ip-hash): its IP as text, as nginx's $remote_addr
// (IPv4-mapped IPv6 as IPv4). A unix-socket client has no address: "unix:" for hash (nginx's
// $remote_addr there) and the all-zero address "0.0.0.0" for ip-hash (nginx's pseudo address),
// so every unix-socket client of a hash pool lands on the same backend, as with nginx.
std::string client_key(const sockaddr_storage& peer, Balance balance);

// nginx's smooth weighted round robin over a fixed peer list.
class SmoothWrr {
 public:
  SmoothWrr() = default;
  explicit SmoothWrr(std::span<const std::uint32_t> weights);

  // The next peer among those with eligible(i) true; kNoNode when none is.
  template <class Eligible>
  NodeId pick(Eligible&& eligible) {
    std::int64_t total = 0;
    NodeId best = kNoNode;
    for (NodeId i = 0; i < peers_.size(); ++i) {
      if (!eligible(i)) continue;
      Peer& p = peers_[i];
      p.current += p.effective;
      total += p.effective;
      if (p.effective < p.weight) ++p.effective;
      if (best == kNoNode || p.current > peers_[best].current) best = i;
    }
    if (best != kNoNode) peers_[best].current -= total;
    return best;
  }
  // A connect to `peer` failed: nginx's effective_weight -= weight / max_fails.
  void failed(NodeId peer, std::uint32_t max_fails) noexcept;
  std::size_t size() const noexcept { return peers_.size(); }

 private:
  struct Peer {
    std::int64_t weight = 1, effective = 1, current = 0;
  };
  std::vector<Peer> peers_;
};

// A worker's state for one tcp pool (Worker::pool_state), for the servers it was made for.
struct TcpPoolState final : PoolState {
  explicit TcpPoolState(const PoolConfig& c);
  bool fits(const PoolConfig& c) const noexcept;
  std::vector<std::string> names;
  SmoothWrr round_robin;  // every weight 1
  SmoothWrr weighted;     // the servers' weights (weighted-round-robin, least-conn ties)
};

// The backends one client connection tries, in order: next() gives the next candidate that is
// up and not tried yet, by the pool's policy, or kNoNode when every backend has been tried.
class Chooser {
 public:
  Chooser(const Pool& pool, std::string key);
  NodeId next(const Pool& pool, TcpPoolState& state);
  // The connect to `node` (returned by next()) failed.
  void failed(const Pool& pool, TcpPoolState& state, NodeId node);

 private:
  std::string key_;
  std::vector<char> tried_;
};

}  // namespace chash::proxy::tcp
