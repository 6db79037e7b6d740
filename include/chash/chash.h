// chash — umbrella header: key hashing, every placement algorithm, membership and routing.
//
// Example:
//   #include "chash/chash.h"
//   std::vector<chash::Node> nodes = {{"cache-a", 1}, {"cache-b", 1}, {"cache-c", 2}};
//   chash::Router router(chash::Cluster(chash::Algorithm::kRing, nodes));
//   chash::Router::Reader reader(router);             // one per thread
//   chash::NodeId id = reader.pick(chash::hash::xxh3_64("user:42"));
//   std::string_view owner = reader.current().name(id);
//   router.mark_down("cache-b");                       // only cache-b's keys move
#pragma once

#include "chash/bounded_load.h"
#include "chash/cluster.h"
#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ip_hash.h"
#include "chash/jump.h"
#include "chash/maglev.h"
#include "chash/memento.h"
#include "chash/modulo.h"
#include "chash/multiprobe.h"
#include "chash/node.h"
#include "chash/placement.h"
#include "chash/redis_slots.h"
#include "chash/rendezvous.h"
#include "chash/ring.h"
#include "chash/table.h"
