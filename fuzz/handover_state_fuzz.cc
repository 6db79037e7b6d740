// SPDX-License-Identifier: Apache-2.0
// A binary hand-over's STATE answer (proxy/control/handover_state.h) comes from another process
// over a unix socket: adopting any bytes must end in an applied state or an error, within the
// key limits of the pools it lands in, and what encode writes must adopt without an error.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config.h"
#include "control/handover_state.h"

namespace proxy = chash::proxy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const proxy::ProxyConfig config = proxy::parse_config(
      "alpha:\n  listen: 127.0.0.1:0\n  redis: true\n  failover_track_keys: 64\n  servers:\n"
      "   - 127.0.0.1:7001:1 a\n   - 127.0.0.1:7002:1 b\n",
      "fuzz.yml");
  const auto t = proxy::build_topology(config, nullptr, 1);
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)proxy::adopt_backend_state(*t, in);
  // What the adopted topology says now must itself adopt cleanly into a fresh one.
  const std::string again = proxy::encode_backend_state(*t);
  const auto fresh = proxy::build_topology(config, nullptr, 1);
  if (!proxy::adopt_backend_state(*fresh, again).error.empty()) std::abort();
  return 0;
}
