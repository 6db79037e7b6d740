// SPDX-License-Identifier: Apache-2.0
// chash-proxy — nutcracker's -d (run as a daemon) and -p (pid file).
//
// Daemon::detach() forks twice with setsid() between (no controlling terminal, not a session
// leader), chdir("/"), and points stdin and stdout at /dev/null and stderr at the log file (-o)
// or /dev/null. Unlike nutcracker, whose foreground process exits 0 at once, the foreground
// process waits until the daemon calls ready() (listening, pid file written: exit 0) or
// failed() (its message printed on the terminal: exit 1), so `chash-proxy -d` reports a port
// in use as a foreground start does. Call detach() before any thread exists.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace chash::proxy {

class Daemon {
 public:
  Daemon() = default;
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Returns in the daemon (the calling process and the intermediate one exit inside). False
  // and `error` set when a fork, setsid or /dev/null fails, in the calling process.
  // `stderr_path`: the log file to send stderr to ("" = /dev/null).
  bool detach(const std::string& stderr_path, std::string& error);
  // Tell the foreground process the outcome (no-op when not detached, or after the first call).
  void ready();
  void failed(std::string_view message);

 private:
  int report_fd_ = -1;  // write end of the pipe the foreground process reads
};

// The pid file: written (pid and a newline, 0644, truncating what was there, as nutcracker
// does: no lock, a stale file from a crash is simply replaced) once listening; removed on exit
// only if it still holds this pid, so a successor that took over (binary hand-over) keeps its
// own.
class PidFile {
 public:
  PidFile() = default;
  ~PidFile();
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  bool write(const std::string& path, std::string& error);

 private:
  std::string path_;
  pid_t pid_ = -1;
};

}  // namespace chash::proxy
