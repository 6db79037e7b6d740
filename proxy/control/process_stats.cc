// SPDX-License-Identifier: Apache-2.0
#include "control/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace chash::proxy {

namespace {

// Seconds since the epoch at boot (/proc/stat "btime"), or -1.
double boot_time() {
  std::ifstream f("/proc/stat");
  std::string key;
  while (f >> key) {
    if (key == "btime") {
      double v = -1;
      f >> v;
      return v;
    }
    f.ignore(1 << 16, '\n');
  }
  return -1;
}

}  // namespace

ProcessStats read_process_stats() {
  ProcessStats s;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const long page = ::sysconf(_SC_PAGESIZE);
  {
    std::ifstream f("/proc/self/stat");
    std::string line;
    std::getline(f, line);
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    const std::size_t close = line.rfind(')');
    if (close != std::string::npos && ticks > 0) {
      std::istringstream in(line.substr(close + 2));
      // Fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
      // utime(14) stime(15) cutime cstime priority nice threads itrealvalue starttime(22)
      // vsize(23) rss(24).
      std::string field;
      double utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
      for (int i = 3; i <= 24 && in >> field; ++i) {
        if (i == 14) utime = std::stod(field);
        if (i == 15) stime = std::stod(field);
        if (i == 22) start = std::stod(field);
        if (i == 23) vsize = std::stod(field);
        if (i == 24) rss = std::stod(field);
      }
      if (in) {
        s.cpu_seconds = (utime + stime) / ticks;
        const double btime = boot_time();
        if (btime >= 0) s.start_time_seconds = btime + start / ticks;
        s.virtual_memory_bytes = static_cast<std::int64_t>(vsize);
        s.resident_memory_bytes = static_cast<std::int64_t>(rss) * page;
      }
    }
  }
  if (DIR* d = ::opendir("/proc/self/fd")) {
    std::int64_t n = 0;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    s.open_fds = n - 1;  // not the directory's own fd
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    s.max_fds = static_cast<std::int64_t>(rl.rlim_cur);
  }
  return s;
}

}  // namespace chash::proxy
