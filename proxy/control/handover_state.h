// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what a binary hand-over carries of the backends' health (control/handover.h's
// STATE): which backends the old process has ejected, and the keys written elsewhere while each
// was out (membership/failback.h's AbsenceLog), so the new process neither sends requests to a
// backend known to be down nor lets it back without deleting what it holds stale.
//
// One line per backend the old process knows anything about (down, or with keys noted), then one
// line per noted key; every field hex, so names, addresses and binary keys never break a line:
//   B <pool> <backend> <address> <down 0|1> <phase> <overflow 0|1>
//   K <key>
// The new process applies a backend line only where its own config has the same pool, backend
// name and address; anything else is skipped (the config changed across the upgrade).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "membership/topology.h"

namespace chash::proxy {

std::string encode_backend_state(const Topology& t);

struct AdoptedState {
  std::size_t down = 0;     // backends marked down
  std::size_t keys = 0;     // noted keys restored
  std::size_t skipped = 0;  // backend lines with no such pool, backend or address here
  std::string error;        // a malformed line: nothing after it was applied
};
// Applies encode_backend_state()'s text to `t`'s backends (before any worker serves `t`).
AdoptedState adopt_backend_state(const Topology& t, std::string_view text);

}  // namespace chash::proxy
