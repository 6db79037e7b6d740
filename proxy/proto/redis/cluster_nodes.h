// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a Redis Cluster's topology as one of its nodes reports it (CLUSTER NODES).
//
// One line per node (Redis 7.0, cluster.c clusterGenNodeDescription):
//   <id> <ip:port@cport[,hostname]> <flags> <master-id|-> <ping-sent> <pong-recv> <epoch>
//   <link-state> <slot-or-range> ... [<slot>->-<id>] [<slot>-<-<id>]
// e.g. "07c3... 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460". flags: myself,
// master, slave, fail?, fail, handshake, noaddr, nofailover, noflags. A node that does not know
// its own address yet prints ":port": the address queried (`from`) is it. Nodes in handshake
// or without an address are left out; a failed master keeps its slots (until the cluster
// promotes a replica, requests for them fail with an error, as a client of the cluster sees).
// Bracketed entries are slots being migrated: their owner is still the node that lists them
// as a range, and a moved key answers -ASK (followed by the proxy).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chash/node.h"
#include "chash/redis_slots.h"

namespace chash::proxy::redis {

struct ClusterNodeInfo {
  std::string id;
  std::string address;                 // "ip:port", the clients' port
  bool failed = false;                 // flags "fail" (the cluster agrees it is down)
  std::uint32_t slots = 0;             // masters: how many slots it serves
  std::uint32_t master = 0xFFFFFFFFu;  // replicas: index of their master in `masters`
};

struct ClusterMap {
  std::vector<ClusterNodeInfo> masters;   // by address; a member's NodeId in the pool
  std::vector<ClusterNodeInfo> replicas;  // by address
  // slot -> index in `masters` (kNoNode: no node serves it)
  std::shared_ptr<const std::array<NodeId, kRedisSlots>> owner;
  std::uint32_t covered = 0;    // slots with an owner
  std::uint32_t migrating = 0;  // slots reported migrating or importing
  std::string source;           // the node that answered

  // Same nodes, roles and slot owners (what routing depends on).
  bool same_topology(const ClusterMap& other) const noexcept;
  // "127.0.0.1:30001 0-5460,5470 | ..." — each master's slot ranges, for /status and logs.
  std::vector<std::string> ranges(std::size_t master) const;
};

// Parses a CLUSTER NODES reply (the bulk string's contents) that node `from` ("ip:port") gave.
// False, with `error`, when a line is malformed or names no usable address for `from`'s view.
bool parse_cluster_nodes(std::string_view text, const std::string& from, ClusterMap& out,
                         std::string& error);

}  // namespace chash::proxy::redis
