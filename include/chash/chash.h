// SPDX-License-Identifier: Apache-2.0
// chash — umbrella header: key hashing, every placement algorithm, presets, the router,
// membership.
//
// Example:
//   #include "chash/chash.h"
//   std::vector<chash::Node> nodes = {{"cache-a", 1}, {"cache-b", 1}, {"cache-c", 2}};
//   chash::RoutingSpec spec;  spec.algorithm = "ring";
//   chash::SharedCluster cluster(chash::Cluster(spec, nodes));
//   chash::SharedCluster::Reader reader(cluster);      // one per thread
//   chash::NodeId id = reader.route("user:42");
//   std::string_view owner = reader.current().name(id);
//   cluster.mark_down("cache-b");                      // only cache-b's keys move
#pragma once

#include "chash/bounded_load.h"
#include "chash/cluster.h"
#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ip_hash.h"
#include "chash/jump.h"
#include "chash/jumpback.h"
#include "chash/maglev.h"
#include "chash/memento.h"
#include "chash/modulo.h"
#include "chash/multiprobe.h"
#include "chash/node.h"
#include "chash/placement.h"
#include "chash/preset.h"
#include "chash/redis_slots.h"
#include "chash/rendezvous.h"
#include "chash/ring.h"
#include "chash/ring_spec.h"
#include "chash/router.h"
#include "chash/table.h"
