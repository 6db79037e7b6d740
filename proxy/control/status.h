// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what the admin port shows: /metrics (Prometheus text format 0.0.4) and
// /status (JSON), rendered from the process counters and one topology snapshot.
//
// Pure functions of their arguments (the admin server and the tests call them alike).
// Example: with one redis pool "alpha" whose backend r1 is down,
//   chash_proxy_backend_up{pool="alpha",backend="r1"} 0
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"  // the escapes every render uses
#include "core/metrics.h"
#include "membership/topology.h"

namespace chash::proxy {

// Every counter, the latency histogram (cumulative buckets in seconds, then _sum and _count)
// and the per-backend series labelled {pool,backend}, each family with # HELP and # TYPE.
std::string render_prometheus(const Metrics& metrics, const Topology& topology);

// {"version":V,"applied_version":A,"workers":W,"requests":R,"clients":C,"pools":[...]}\n
std::string render_status_json(const Metrics& metrics, const Topology& topology,
                               std::uint64_t applied_version, unsigned workers);

// Member `id`'s state in a word, as /status ("state") and the status page (control/ui.h) show it:
// "retired" (out of the routing, read through by the warm-up), "ejected" (down and skipped:
// auto_eject_hosts, a replica, or the fleet's word), "down" (down but still routed to: without
// auto_eject_hosts its requests fail fast), "warming" (a routed node the newest previous routing
// did not have, while its warm-up window is open: misses read through from the previous owner),
// else "up".
const char* server_state(const Pool& pool, NodeId id, std::int64_t now_ms) noexcept;

}  // namespace chash::proxy
