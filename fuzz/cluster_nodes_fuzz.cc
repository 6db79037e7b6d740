// SPDX-License-Identifier: Apache-2.0
// A cluster node's CLUSTER NODES reply and every RESP value the control threads read
// (membership/control_client.h) come from the network: the parsers must accept or refuse any bytes,
// and an accepted map must be coherent (every owner a master of the map, counts that add up).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "membership/control_client.h"
#include "proto/redis/cluster_nodes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  chash::proxy::redis::ClusterMap map;
  std::string error;
  if (chash::proxy::redis::parse_cluster_nodes(in, "127.0.0.1:7000", map, error)) {
    std::uint32_t covered = 0, sum = 0;
    for (const auto owner : *map.owner) {
      if (owner == chash::kNoNode) continue;
      if (owner >= map.masters.size()) std::abort();
      ++covered;
    }
    for (const auto& m : map.masters) sum += m.slots;
    for (const auto& r : map.replicas) {
      if (r.master >= map.masters.size()) std::abort();
    }
    if (covered != map.covered || sum != covered) std::abort();
    for (std::size_t i = 0; i < map.masters.size(); ++i) (void)map.ranges(i);
  } else if (error.empty()) {
    std::abort();  // a refusal always says why
  }
  std::size_t pos = 0;
  for (int i = 0; i < 64 && pos < in.size(); ++i) {
    chash::proxy::RespValue v;
    const std::size_t before = pos;
    const int r = chash::proxy::parse_resp(in, pos, v);
    if (r <= 0) break;
    if (pos <= before || pos > in.size()) std::abort();
  }
  return 0;
}
