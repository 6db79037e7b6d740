// SPDX-License-Identifier: Apache-2.0
// chash-proxy's command line, units: nutcracker's flags in every form its getopt_long accepts,
// its -v levels, the stats port defaults, and the usage errors (control/command_line.h).
#include "control/command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chash::proxy {
namespace {

using Action = CommandLine::Action;

struct Parsed {
  bool ok = false;
  CommandLine cl;
  std::string error;
};

Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "chash-proxy");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Parsed p;
  p.ok = parse_command_line(static_cast<int>(args.size()), argv.data(), p.cl, p.error);
  return p;
}

TEST(ProxyCommandLine, NutcrackerFormsOfEveryFlag) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-c", "n.yml", "-v", "6", "-o", "l.log", "-p", "p.pid", "-s", "0", "-a", "127.0.0.1",
            "-i", "1000", "-d"},
           {"-cn.yml", "-v6", "-ol.log", "-pp.pid", "-s0", "-a127.0.0.1", "-i1000", "-d"},
           {"--conf-file=n.yml", "--verbose=6", "--output=l.log", "--pid-file=p.pid",
            "--stats-port=0", "--stats-addr=127.0.0.1", "--stats-interval=1000", "--daemonize"},
           {"--conf-file", "n.yml", "--verbose", "6", "--output", "l.log", "--pid-file", "p.pid",
            "--stats-port", "0", "--stats-addr", "127.0.0.1", "--stats-interval", "1000", "-d"},
           {"-dc", "n.yml", "-v", "6", "-ol.log", "-p", "p.pid", "-s", "0", "-a", "127.0.0.1", "-i",
            "1000"},
       }) {
    const Parsed p = parse(args);
    ASSERT_TRUE(p.ok) << p.error << " " << args[0];
    EXPECT_EQ(p.cl.action, Action::kRun);
    EXPECT_EQ(p.cl.config_path, "n.yml");
    EXPECT_EQ(p.cl.log_level, LogLevel::kInfo);
    EXPECT_EQ(p.cl.log_file, "l.log");
    EXPECT_EQ(p.cl.pid_file, "p.pid");
    EXPECT_EQ(p.cl.stats_port, std::uint16_t{0});
    EXPECT_EQ(p.cl.stats_addr, "127.0.0.1");
    EXPECT_EQ(p.cl.stats_interval_ms, 1000u);
    EXPECT_TRUE(p.cl.daemonize);
  }
}

TEST(ProxyCommandLine, ChashFlagsStillWork) {
  Parsed p = parse({"--config", "x.yml", "--check", "--workers", "3", "--log-level", "warn"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.cl.action, Action::kCheck);
  EXPECT_EQ(p.cl.config_path, "x.yml");
  EXPECT_EQ(p.cl.workers, 3u);
  EXPECT_EQ(p.cl.log_level, LogLevel::kWarn);
  p = parse({"-c", "x.yml", "-t", "-w", "2", "-v", "debug"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.cl.action, Action::kCheck);
  EXPECT_EQ(p.cl.log_level, LogLevel::kDebug);
  p = parse({"-c", "x.yml", "--handover-socket=/run/h.sock", "--takeover", "--no-stats"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.cl.handover_socket, "/run/h.sock");
  EXPECT_TRUE(p.cl.takeover);
  EXPECT_TRUE(p.cl.no_stats);
  EXPECT_EQ(parse({"--version"}).cl.action, Action::kVersion);
  EXPECT_EQ(parse({"-V"}).cl.action, Action::kNutcrackerVersion);
  EXPECT_EQ(parse({"-D"}).cl.action, Action::kDescribeStats);
  EXPECT_EQ(parse({"--describe-stats"}).cl.action, Action::kDescribeStats);
  EXPECT_EQ(parse({"-h"}).cl.action, Action::kHelp);
  EXPECT_EQ(parse({"-?"}).cl.action, Action::kHelp);
  // As nutcracker: -V/-D answer before -t looks at the config.
  EXPECT_EQ(parse({"-t", "-V"}).cl.action, Action::kNutcrackerVersion);
}

// nutcracker's LOG_EMERG 0 .. LOG_PVERB 11 (nc_log.h), default LOG_NOTICE 5.
TEST(ProxyCommandLine, VerbosityMap) {
  const LogLevel want[] = {LogLevel::kError, LogLevel::kError, LogLevel::kError, LogLevel::kError,
                           LogLevel::kWarn,  LogLevel::kInfo,  LogLevel::kInfo,  LogLevel::kDebug,
                           LogLevel::kDebug, LogLevel::kDebug, LogLevel::kDebug, LogLevel::kDebug};
  for (int v = 0; v <= 11; ++v) {
    EXPECT_EQ(log_level_for_verbosity(v), want[v]) << v;
    const Parsed p = parse({"-c", "x", "-v" + std::to_string(v)});
    ASSERT_TRUE(p.ok) << p.error;
    EXPECT_EQ(p.cl.log_level, want[v]) << v;
  }
  EXPECT_EQ(parse({"-c", "x", "-v", "99"}).cl.log_level, LogLevel::kDebug);  // clamped, as nc
}

TEST(ProxyCommandLine, UsageErrorsNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "unknown option --bogus"},
      {{"-q"}, "unknown option -q"},
      {{"-c"}, "option -c/--conf-file needs a value"},
      {{"-c", "x", "--verbose"}, "option -v/--verbose needs a value"},
      {{"-c", "x", "-v", "loud"}, "option -v/--verbose takes a number 0-11"},
      {{"-c", "x", "-v", "-1"}, "option -v/--verbose takes a number 0-11"},
      {{"-c", "x", "--log-level", "6x"}, "option --log-level takes a number 0-11"},
      {{"-c", "x", "-s", "65536"}, "option -s/--stats-port takes a port 0-65535"},
      {{"-c", "x", "-s", "http"}, "option -s/--stats-port takes a port"},
      {{"-c", "x", "-i", "0"}, "option -i/--stats-interval takes milliseconds"},
      {{"-c", "x", "-m", "10"}, "option -m/--mbuf-size takes bytes 512-16777216"},
      {{"-c", "x", "-w", "0"}, "option -w/--workers takes 1-1024"},
      {{"-c", "x", "-a", ""}, "option -a/--stats-addr takes an IP address"},
      {{"-c", "x", "extra"}, "unexpected argument 'extra'"},
      {{"-c", "x", "--no-stats", "-s", "1"}, "--no-stats and -s/-a contradict"},
      {{"-c", "x", "--takeover"}, "--takeover needs --handover-socket"},
      {{"-v", "6"}, "-c/--conf-file CONFIG is required"},
      {{"-t"}, "-c/--conf-file CONFIG is required"},
  };
  for (const auto& [args, want] : cases) {
    const Parsed p = parse(args);
    EXPECT_FALSE(p.ok) << args[0];
    EXPECT_EQ(p.error.rfind(want, 0), 0u) << "got: " << p.error;
  }
}

TEST(ProxyCommandLine, MbufSizeIsAcceptedWithAWarning) {
  const Parsed p = parse({"-c", "x", "-m", "16384"});
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.cl.warnings.size(), 1u);
  EXPECT_NE(p.cl.warnings[0].find("ignored"), std::string::npos);
}

TEST(ProxyCommandLine, StatsPortAsNutcracker) {
  auto apply = [](std::vector<std::string> args, std::optional<Address> from_config) {
    args.insert(args.begin(), {"-c", "x"});
    const Parsed p = parse(args);
    EXPECT_TRUE(p.ok) << p.error;
    ProxyConfig c;
    c.stats = from_config;
    apply_stats_flags(p.cl, c);
    return c;
  };
  // Neither config nor flags: nutcracker's 0.0.0.0:22222.
  ProxyConfig c = apply({}, std::nullopt);
  ASSERT_TRUE(c.stats);
  EXPECT_EQ(c.stats->text(), "0.0.0.0:22222");
  EXPECT_EQ(c.stats_interval_ms, 30000u);
  EXPECT_EQ(apply({"-s", "0", "-a", "127.0.0.1", "-i", "500"}, std::nullopt).stats->text(),
            "127.0.0.1:0");
  EXPECT_EQ(apply({"-i", "500"}, std::nullopt).stats_interval_ms, 500u);
  EXPECT_EQ(apply({"-s", "4000"}, std::nullopt).stats->text(), "0.0.0.0:4000");
  EXPECT_EQ(apply({"-a", "::1"}, std::nullopt).stats->text(), "[::1]:22222");
  // The config's address, and flags over it part by part.
  const Address conf = parse_address("127.0.0.2:9000", "stats");
  EXPECT_EQ(apply({}, conf).stats->text(), "127.0.0.2:9000");
  EXPECT_EQ(apply({"-s", "9001"}, conf).stats->text(), "127.0.0.2:9001");
  EXPECT_EQ(apply({"-a", "127.0.0.3"}, conf).stats->text(), "127.0.0.3:9000");
  EXPECT_EQ(apply({"-s", "1"}, parse_address("/run/s.sock", "stats")).stats->text(), "0.0.0.0:1");
  EXPECT_FALSE(apply({"--no-stats"}, conf).stats);
  EXPECT_FALSE(apply({"--no-stats"}, std::nullopt).stats);
}

}  // namespace
}  // namespace chash::proxy
