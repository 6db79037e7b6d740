// SPDX-License-Identifier: Apache-2.0
// chash-proxy — systemd's Type=notify protocol without libsystemd: newline-separated
// VAR=value lines in one datagram to the unix socket named by $NOTIFY_SOCKET (a path, or
// "@name" for an abstract socket), as sd_notify(3) describes. Without $NOTIFY_SOCKET (not
// started by systemd, or a Type= other than notify) every call is a no-op.
//
// The proxy sends, from its control thread (control/proxy.cc):
//   READY=1, MAINPID=<pid>, STATUS=...         once listening with the workers started
//   RELOADING=1, MONOTONIC_USEC=<CLOCK_MONOTONIC µs>   before a reload (SIGHUP, POST /reload)
//   READY=1, STATUS=...                        after it, applied or refused
//   STOPPING=1                                 when asked to stop
#pragma once

#include <string>
#include <string_view>

namespace chash::proxy {

// Sends `state` as is; false when $NOTIFY_SOCKET is unset, malformed or the send failed.
bool sd_notify(std::string_view state);

bool sd_notify_ready(std::string_view status);
bool sd_notify_reloading();
bool sd_notify_stopping();

}  // namespace chash::proxy
