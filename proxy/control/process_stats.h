// SPDX-License-Identifier: Apache-2.0
// chash-proxy — this process's resource figures for /metrics, named as the Prometheus client
// libraries name them (process_resident_memory_bytes, process_cpu_seconds_total, ...), read
// from /proc/self (Linux). A figure that cannot be read is left at -1 and not shown.
#pragma once

#include <cstdint>

namespace chash::proxy {

struct ProcessStats {
  double cpu_seconds = -1;         // user + system (/proc/self/stat utime + stime)
  double start_time_seconds = -1;  // since the epoch (stat starttime + /proc/stat btime)
  std::int64_t resident_memory_bytes = -1;
  std::int64_t virtual_memory_bytes = -1;
  std::int64_t open_fds = -1;  // entries of /proc/self/fd
  std::int64_t max_fds = -1;   // RLIMIT_NOFILE's soft limit
};

// A few small reads of /proc: called per /metrics request, on the control thread.
ProcessStats read_process_stats();

}  // namespace chash::proxy
