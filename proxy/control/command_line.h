// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the command line: nutcracker's flags with nutcracker's meaning, plus chash's own
// (docs/NUTCRACKER.md "Drop-in for nutcracker"). Parsed with getopt_long as nutcracker parses its own,
// so every form nutcracker accepts works: -v6, -v 6, --verbose=6, --verbose 6, clustered -dt.
//
//   CommandLine cl;
//   std::string error;
//   if (!parse_command_line(argc, argv, cl, error)) { /* usage error: exit 2 */ }
//   ProxyConfig config = load_config(cl.config_path);
//   apply_stats_flags(cl, config);  // -s/-a/-i/--no-stats; nutcracker's 0.0.0.0:22222 default
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "base/log.h"

namespace chash::proxy {

struct CommandLine {
  // What to do, first match wins (as nutcracker: -h, -V and -D answer before -t is looked at).
  enum class Action { kRun, kHelp, kVersion, kNutcrackerVersion, kDescribeStats, kCheck };
  Action action = Action::kRun;
  std::string config_path;                         // -c, --conf-file, --config
  unsigned workers = 0;                            // -w, --workers (0: the config's)
  std::optional<LogLevel> log_level;               // -v N | -v NAME, --verbose, --log-level
  std::string log_file;                            // -o, --output ("" = stderr)
  std::string pid_file;                            // -p, --pid-file ("" = none)
  bool daemonize = false;                          // -d, --daemonize
  std::optional<std::uint16_t> stats_port;         // -s, --stats-port (0: any free port)
  std::optional<std::string> stats_addr;           // -a, --stats-addr
  std::optional<std::uint32_t> stats_interval_ms;  // -i, --stats-interval
  bool no_stats = false;                           // --no-stats
  std::string handover_socket;                     // --handover-socket
  bool takeover = false;                           // --takeover
  // Flags accepted for nutcracker's sake that do nothing here (-m), one message each.
  std::vector<std::string> warnings;
};

// nutcracker's stats port default (its STATS_ADDR / STATS_PORT).
inline constexpr const char* kDefaultStatsAddr = "0.0.0.0";
inline constexpr std::uint16_t kDefaultStatsPort = 22222;

// False and `error` (one line, naming the flag) on a usage error: unknown flag, missing or bad
// value, stray argument, no -c when running. Uses getopt_long's globals: not thread-safe.
bool parse_command_line(int argc, char** argv, CommandLine& out, std::string& error);

// The stats port as nutcracker sets it: -s/-a override the config's `chash_proxy: stats:` part
// by part; with neither, nutcracker's 0.0.0.0:22222; --no-stats turns it off. -i sets
// stats_interval.
void apply_stats_flags(const CommandLine& cl, ProxyConfig& config);

}  // namespace chash::proxy
