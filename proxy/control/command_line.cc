// SPDX-License-Identifier: Apache-2.0
#include "control/command_line.h"

#include <getopt.h>

#include <cstring>

namespace chash::proxy {

namespace {

// Long-only flags: codes past any character.
enum : int {
  kOptVersion = 256,  // --version: chash's one-line form (-V is nutcracker's)
  kOptLogLevel,
  kOptNoStats,
  kOptHandoverSocket,
  kOptTakeover,
};

constexpr const char kShort[] = ":hVtdDv:o:c:s:i:a:p:m:w:";

const option kLong[] = {
    {"help", no_argument, nullptr, 'h'},
    {"version", no_argument, nullptr, kOptVersion},
    {"test-conf", no_argument, nullptr, 't'},
    {"check", no_argument, nullptr, 't'},
    {"daemonize", no_argument, nullptr, 'd'},
    {"describe-stats", no_argument, nullptr, 'D'},
    {"verbose", required_argument, nullptr, 'v'},
    {"log-level", required_argument, nullptr, kOptLogLevel},
    {"output", required_argument, nullptr, 'o'},
    {"conf-file", required_argument, nullptr, 'c'},
    {"config", required_argument, nullptr, 'c'},
    {"stats-port", required_argument, nullptr, 's'},
    {"stats-interval", required_argument, nullptr, 'i'},
    {"stats-addr", required_argument, nullptr, 'a'},
    {"no-stats", no_argument, nullptr, kOptNoStats},
    {"pid-file", required_argument, nullptr, 'p'},
    {"mbuf-size", required_argument, nullptr, 'm'},
    {"workers", required_argument, nullptr, 'w'},
    {"handover-socket", required_argument, nullptr, kOptHandoverSocket},
    {"takeover", no_argument, nullptr, kOptTakeover},
    {nullptr, 0, nullptr, 0},
};

// Digits only (as nutcracker's nc_atoi: no sign, no spaces), at most `max`.
bool parse_number(const char* s, unsigned long max, unsigned long& out) {
  if (*s == '\0') return false;
  unsigned long v = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + static_cast<unsigned long>(*s - '0');
    if (v > max) return false;
  }
  out = v;
  return true;
}

bool parse_level(const char* s, LogLevel& out) {
  unsigned long n = 0;
  // nutcracker clamps -v to 0..11; any longer number is as verbose as 11.
  if (parse_number(s, 1000000, n)) {
    out = log_level_for_verbosity(static_cast<int>(n));
    return true;
  }
  for (const LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (std::strcmp(s, log_level_name(l)) == 0) {
      out = l;
      return true;
    }
  }
  return false;
}

// The flag's names for messages ("-v/--verbose", "--log-level"); what the user typed when
// getopt knows no such flag.
std::string flag_name(int code, char** argv) {
  for (const option* o = kLong; code != 0 && o->name != nullptr; ++o) {
    if (o->val != code) continue;
    return code < 256 ? std::string("-") + static_cast<char>(code) + "/--" + o->name
                      : std::string("--") + o->name;
  }
  const char* arg = argv[optind - 1];
  const char* eq = std::strchr(arg, '=');
  return eq != nullptr ? std::string(arg, eq) : std::string(arg);
}

}  // namespace

bool parse_command_line(int argc, char** argv, CommandLine& out, std::string& error) {
  out = CommandLine{};
  bool help = false, version = false, nc_version = false, describe = false, check = false;
  optind = 0;  // glibc: a full re-initialization, so this can be called again (tests)
  opterr = 0;  // the messages are ours
  for (;;) {
    const int c = getopt_long(argc, argv, kShort, kLong, nullptr);
    if (c == -1) break;
    const std::string arg = optarg != nullptr ? optarg : "";
    auto bad = [&](const std::string& what) {
      error = "option " + flag_name(c, argv) + " " + what + ", got '" + arg + "'";
      return false;
    };
    unsigned long n = 0;
    switch (c) {
      case 'h':
        help = true;
        break;
      case kOptVersion:
        version = true;
        break;
      case 'V':
        nc_version = true;
        break;
      case 'D':
        describe = true;
        break;
      case 't':
        check = true;
        break;
      case 'd':
        out.daemonize = true;
        break;
      case 'v':
      case kOptLogLevel: {
        LogLevel l{};
        if (!parse_level(arg.c_str(), l)) {
          return bad("takes a number 0-11 (nutcracker's verbosity) or debug, info, warn, error");
        }
        out.log_level = l;
        break;
      }
      case 'o':
        if (arg.empty()) return bad("needs a file name");
        out.log_file = arg;
        break;
      case 'c':
        if (arg.empty()) return bad("needs a file name");
        out.config_path = arg;
        break;
      case 'p':
        if (arg.empty()) return bad("needs a file name");
        out.pid_file = arg;
        break;
      case 's':
        if (!parse_number(arg.c_str(), 65535, n)) return bad("takes a port 0-65535 (0: any)");
        out.stats_port = static_cast<std::uint16_t>(n);
        break;
      case 'a':
        if (arg.empty() || arg.front() == '/') return bad("takes an IP address or host name");
        out.stats_addr = arg;
        break;
      case 'i':
        if (!parse_number(arg.c_str(), 3600ul * 1000ul, n) || n == 0) {
          return bad("takes milliseconds 1-3600000");
        }
        out.stats_interval_ms = static_cast<std::uint32_t>(n);
        break;
      case kOptNoStats:
        out.no_stats = true;
        break;
      case 'm':
        // nutcracker's mbuf chunk size (512 B - 16 MiB): chash-proxy's buffers grow as needed.
        if (!parse_number(arg.c_str(), 16ul << 20, n) || n < 512) {
          return bad("takes bytes 512-16777216");
        }
        out.warnings.push_back(
            "-m/--mbuf-size is accepted for nutcracker's sake and ignored: "
            "chash-proxy's buffers grow as needed");
        break;
      case 'w':
        if (!parse_number(arg.c_str(), 1024, n) || n == 0) return bad("takes 1-1024");
        out.workers = static_cast<unsigned>(n);
        break;
      case kOptHandoverSocket:
        if (arg.empty()) return bad("needs a socket path");
        out.handover_socket = arg;
        break;
      case kOptTakeover:
        out.takeover = true;
        break;
      case ':':
        error = "option " + flag_name(optopt, argv) + " needs a value";
        return false;
      default:                // '?'
        if (optopt == '?') {  // nutcracker's usage line lists -? beside -h
          help = true;
          break;
        }
        error = optopt > 0 && optopt < 256
                    ? std::string("unknown option -") + static_cast<char>(optopt)
                    : "unknown option " + flag_name(0, argv);
        return false;
    }
  }
  if (optind < argc) {
    error = std::string("unexpected argument '") + argv[optind] + "'";
    return false;
  }
  if (out.no_stats && (out.stats_port || out.stats_addr)) {
    error = "--no-stats and -s/-a contradict each other";
    return false;
  }
  if (out.takeover && out.handover_socket.empty()) {
    error = "--takeover needs --handover-socket PATH (the running proxy's)";
    return false;
  }
  using A = CommandLine::Action;
  out.action = help         ? A::kHelp
               : version    ? A::kVersion
               : nc_version ? A::kNutcrackerVersion
               : describe   ? A::kDescribeStats
               : check      ? A::kCheck
                            : A::kRun;
  if ((out.action == A::kRun || out.action == A::kCheck) && out.config_path.empty()) {
    error = "-c/--conf-file CONFIG is required";
    return false;
  }
  return true;
}

void apply_stats_flags(const CommandLine& cl, ProxyConfig& config) {
  if (cl.stats_interval_ms) config.stats_interval_ms = *cl.stats_interval_ms;
  if (cl.no_stats) {
    config.stats.reset();
    return;
  }
  Address a;
  if (config.stats) {
    a = *config.stats;
  } else {
    a.host = kDefaultStatsAddr;
    a.port = kDefaultStatsPort;
  }
  if (cl.stats_addr || cl.stats_port) {
    if (!a.unix_path.empty()) {  // the config's unix socket gives way to a TCP flag
      a = Address{};
      a.host = kDefaultStatsAddr;
      a.port = kDefaultStatsPort;
    }
    if (cl.stats_addr) {
      std::string h = *cl.stats_addr;
      if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
      a.host = h;
    }
    if (cl.stats_port) a.port = *cl.stats_port;
  }
  config.stats = a;
}

}  // namespace chash::proxy
