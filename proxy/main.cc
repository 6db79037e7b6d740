// SPDX-License-Identifier: Apache-2.0
// chash-proxy — shard Redis keys across servers as nutcracker does, with reload, health checks
// and metrics. Takes nutcracker's command line (control/command_line.h). See docs/PROXY.md.
#include <signal.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "chash/version.h"
#include "config/config.h"
#include "control/command_line.h"
#include "control/daemon.h"
#include "base/log.h"
#include "control/proxy.h"
#include "control/signals.h"
#include "control/stats_port.h"

namespace {

// -V / --version (and -D's first line).
constexpr const char* kVersionLine =
    "This is nutcracker-0.5.0-compatible chash-proxy-" CHASH_VERSION_STRING;

constexpr const char* kUsage =
    "usage: chash-proxy -c CONFIG [-t] [-d] [-v N] [-o LOG] [-p PIDFILE] [-s PORT] [-a ADDR]\n"
    "                   [-i MS] [--no-stats] [-w N] [-hVD]\n"
    "\n"
    "nutcracker's flags, with nutcracker's meaning (docs/NUTCRACKER.md):\n"
    "  -c, --conf-file=FILE     nutcracker.yml-compatible pools (also --config)\n"
    "  -t, --test-conf          validate the config (parse + build every router) and exit\n"
    "                           (also --check; exit 0 ok, 1 bad)\n"
    "  -d, --daemonize          run in the background; returns once listening (exit 0) or\n"
    "                           failed (exit 1, the reason on stderr)\n"
    "  -v, --verbose=N          nutcracker's log level 0-11: 0-3 error, 4 warn, 5-6 info\n"
    "                           (default 5), 7-11 debug; or a name (debug, info, warn, error)\n"
    "  -o, --output=FILE        append the log to FILE (default stderr); reopened on SIGHUP and\n"
    "                           SIGUSR1\n"
    "  -p, --pid-file=FILE      write the pid once listening; removed on exit\n"
    "  -s, --stats-port=N       nutcracker's stats port (default 22222; 0: any free port)\n"
    "  -a, --stats-addr=ADDR    its address (default 0.0.0.0)\n"
    "  -i, --stats-interval=MS  stats aggregation interval (default 30000)\n"
    "  -D, --describe-stats     print what the stats port's fields mean and exit\n"
    "  -V, --version            print \"This is nutcracker-0.5.0-compatible chash-proxy-VERSION\"\n"
    "  -m, --mbuf-size=N        accepted and ignored (no mbufs here)\n"
    "  -h, --help               this text\n"
    "chash-proxy's own:\n"
    "      --no-stats           no stats port (overrides chash_proxy.stats)\n"
    "  -w, --workers=N          worker threads (default: chash_proxy.workers, else one per core)\n"
    "      --log-level=LEVEL    debug, info (default), warn, error (or 0-11 as -v)\n"
    "      --handover-socket=PATH  serve PATH, from which a newer chash-proxy takes the\n"
    "                           listening sockets (zero-downtime binary upgrade)\n"
    "      --takeover           start by taking the sockets from --handover-socket's proxy\n"
    "\n"
    "Signals: SIGHUP reopens the log file and reloads the config; SIGUSR1 reopens the log file;\n"
    "SIGTTIN/SIGTTOU log more/less; SIGINT/SIGTERM drain (chash_proxy.drain_timeout) and stop,\n"
    "a second one stops at once. Under systemd (Type=notify) it reports\n"
    "READY/RELOADING/STOPPING. Exit codes: 0 ok, 1 bad config or cannot start, 2 usage error.\n";

// -d changes to "/": the files named on the command line keep meaning what they meant.
std::string absolute(const std::string& path) {
  return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace

int main(int argc, char** argv) {
  using chash::proxy::CommandLine;
  using chash::proxy::LogLevel;
  CommandLine cl;
  std::string error;
  if (!chash::proxy::parse_command_line(argc, argv, cl, error)) {
    std::fprintf(stderr, "chash-proxy: %s (chash-proxy -h for help)\n", error.c_str());
    return 2;
  }
  switch (cl.action) {
    case CommandLine::Action::kHelp:
      std::fputs(kUsage, stdout);
      return 0;
    case CommandLine::Action::kVersion:
    case CommandLine::Action::kNutcrackerVersion:
      // nutcracker's form, so that scripts which strip "This is nutcracker-" (twemproxy's own
      // tests, init scripts, config managers) read "0.5.0-compatible chash-proxy-X.Y.Z": a
      // version that starts with the nutcracker release whose behaviour is matched.
      std::puts(kVersionLine);
      return 0;
    case CommandLine::Action::kDescribeStats:
      std::fputs(kVersionLine, stdout);
      std::fputs("\n\n", stdout);
      std::fputs(chash::proxy::describe_stats().c_str(), stdout);
      return 0;
    case CommandLine::Action::kCheck:
    case CommandLine::Action::kRun:
      break;
  }
  for (const auto& w : cl.warnings) std::fprintf(stderr, "chash-proxy: warning: %s\n", w.c_str());
  if (cl.log_level) chash::proxy::set_log_level(*cl.log_level);

  chash::proxy::ProxyConfig config;
  try {
    config = chash::proxy::load_config(cl.config_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chash-proxy: %s\n", e.what());
    return 1;
  }
  // The stats port as the flags set it (nutcracker's 0.0.0.0:22222 by default): checked with
  // the rest, by --check too, so that a config that checks also starts.
  chash::proxy::apply_stats_flags(cl, config);
  try {
    chash::proxy::check_own_listeners(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chash-proxy: %s\n", e.what());
    return 1;
  }
  if (const std::string clash = chash::proxy::listener_clash(config); !clash.empty()) {
    std::fprintf(stderr, "chash-proxy: %s: %s%s\n", cl.config_path.c_str(), clash.c_str(),
                 clash.find("stats (") != std::string::npos
                     ? " (the stats port: -s/-a, --no-stats, or chash_proxy: stats:)"
                     : "");
    return 1;
  }
  if (cl.action == CommandLine::Action::kCheck) {
    std::printf("chash-proxy: %s: ok (%zu pool%s)\n", cl.config_path.c_str(), config.pools.size(),
                config.pools.size() == 1 ? "" : "s");
    return 0;
  }

  ::signal(SIGPIPE, SIG_IGN);
  if (cl.daemonize) {
    cl.config_path = absolute(cl.config_path);
    cl.log_file = absolute(cl.log_file);
    cl.pid_file = absolute(cl.pid_file);
  }
  if (!chash::proxy::set_log_file(cl.log_file, error)) {
    std::fprintf(stderr, "chash-proxy: %s\n", error.c_str());
    return 1;
  }
  chash::proxy::Daemon daemon;
  if (cl.daemonize && !daemon.detach(cl.log_file, error)) {
    std::fprintf(stderr, "chash-proxy: cannot daemonize: %s\n", error.c_str());
    return 1;
  }
  // From here on stderr may be /dev/null: failures go to the log, and to the terminal -d left.
  auto fail = [&](const std::string& what) {
    chash::proxy::log(LogLevel::kError, "cannot start", {{"error", what}});
    daemon.failed(what);
    return 1;
  };
  // Before the listening sockets open and any thread starts (control/signals.h).
  chash::proxy::block_handled_signals();
  try {
    chash::proxy::ProxyOptions options;
    options.config_path = cl.config_path;
    options.handle_signals = true;
    options.workers = cl.workers;
    options.handover_socket = cl.handover_socket;
    options.takeover = cl.takeover;
    chash::proxy::Proxy proxy(std::move(config), std::move(options));
    chash::proxy::PidFile pid_file;
    if (!cl.pid_file.empty() && !pid_file.write(cl.pid_file, error)) return fail(error);
    daemon.ready();
    proxy.run();
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  chash::proxy::log(LogLevel::kInfo, "stopped");
  return 0;
}
