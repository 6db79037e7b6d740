// SPDX-License-Identifier: Apache-2.0
// The real chash-proxy binary with nutcracker's command lines (docs/PROXY.md "Drop-in for
// nutcracker"): -t, -v, -o with log rotation, -p, -d, -V, -D, -s/-a, usage errors, and the
// systemd notify messages around start, reload and stop. And `chash route --nutcracker FILE
// --pool P` against a real nutcracker: every key where nutcracker put it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "chash/version.h"
#include "e2e_util.h"
#include "redis_util.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string slurp(const fs::path& p) {
  std::stringstream ss;
  ss << std::ifstream(p).rdbuf();
  return ss.str();
}

struct Outcome {
  int status = -1;
  std::string output;  // stdout and stderr
};

Outcome run(const std::string& args) {
  Outcome r;
  FILE* p = ::popen((std::string(CHASH_PROXY_PATH) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[512];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

bool alive(pid_t pid) {  // not gone and not a zombie
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t rp = line.rfind(')');
  return rp != std::string::npos && rp + 2 < line.size() && line[rp + 2] != 'Z';
}

pid_t read_pid(const fs::path& p) {
  pid_t pid = -1;
  std::ifstream(p) >> pid;
  return pid;
}

class NutcrackerCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_test_dir("chash-cli");
    conf_ = dir_ / "nutcracker.yml";
    // One redis pool whose server is never contacted: these tests only need the process.
    std::ofstream(conf_) << "alpha:\n  listen: 127.0.0.1:" << port_
                         << "\n  redis: true\n  servers:\n    - 127.0.0.1:1:1 r1\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  bool listening() const {
    const int fd = testing::dial_tcp(port_);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  }
  // Starts the binary with `extra` flags after -c; ready once it accepts on the pool's port.
  bool start(std::vector<std::string> extra) {
    std::vector<std::string> argv = {CHASH_PROXY_PATH, "-c", conf_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return process_.start(argv, [this] { return listening(); });
  }
  bool log_has(const fs::path& log, const std::string& what) {
    return testing::eventually([&] { return slurp(log).find(what) != std::string::npos; });
  }

  fs::path dir_, conf_;
  const std::uint16_t port_ = testing::free_port();
  testing::ChildProcess process_;
};

TEST_F(NutcrackerCli, TestConfExitCodes) {
  Outcome r = run("--conf-file=" + conf_.string() + " -t");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ok (1 pool)"), std::string::npos) << r.output;
  std::ofstream(dir_ / "bad.yml") << "alpha:\n  listen: 127.0.0.1:0\n  hash: nope\n  servers:\n"
                                     "    - 127.0.0.1:1:1\n";
  r = run("--test-conf --conf-file " + (dir_ / "bad.yml").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("unknown hash \"nope\""), std::string::npos) << r.output;
  EXPECT_EQ(run("-tc " + (dir_ / "missing.yml").string()).status, 1);
}

// -t catches what would fail the start: two listeners on one address — here the admin port on
// the stats port's default (0.0.0.0:22222), as docs/FLEET.md's quick start once had it.
TEST_F(NutcrackerCli, TestConfCatchesAListenerClash) {
  std::ofstream(dir_ / "clash.yml") << "chash_proxy:\n  admin: 127.0.0.1:22222\nalpha:\n  listen: 127.0.0.1:"
                                    << port_ << "\n  redis: true\n  servers:\n    - 127.0.0.1:1:1 r1\n";
  Outcome r = run("-t -c " + (dir_ / "clash.yml").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("admin (127.0.0.1:22222) and stats (0.0.0.0:22222) are one address"),
            std::string::npos)
      << r.output;
  r = run("-t --no-stats -c " + (dir_ / "clash.yml").string());
  EXPECT_EQ(r.status, 0) << r.output;
  r = run("-t -s 22223 -c " + (dir_ / "clash.yml").string());
  EXPECT_EQ(r.status, 0) << r.output;
}

// The example config Debian's nutcracker package ships passes -t as nutcracker's own does — its
// pool omega weighs a server 100000, past chash's own tables' 65,536 (the twemproxy presets take
// nutcracker's weights as they are: tests/compat/vectors/twemproxy*__large_weights.tsv).
TEST_F(NutcrackerCli, DebiansExampleConfigPasses) {
  const std::string example = "/usr/share/doc/nutcracker/examples/nutcracker.yml";
  ASSERT_TRUE(fs::exists(example)) << "scripts/bootstrap.sh installs nutcracker";
  const Outcome r = run("-t -c " + example);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ok (5 pools)"), std::string::npos) << r.output;
  // A weight past 65,536 in a pool routed by chash's own ring is refused, naming the server.
  std::ofstream(dir_ / "ring.yml") << "alpha:\n  listen: 127.0.0.1:" << port_
                                   << "\n  algorithm: ring\n  servers:\n    - 127.0.0.1:1:100000 r1\n";
  const Outcome ring = run("-t -c " + (dir_ / "ring.yml").string());
  EXPECT_EQ(ring.status, 1) << ring.output;
  EXPECT_NE(ring.output.find("has weight 100000 (at most 65536)"), std::string::npos)
      << ring.output;
}

TEST_F(NutcrackerCli, VersionAndDescribeStats) {
  Outcome r = run("-V");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "This is nutcracker-0.5.0-compatible chash-proxy-" CHASH_VERSION_STRING "\n");
  r = run("--version");  // the same, as nutcracker's --version and -V are
  EXPECT_EQ(r.output, "This is nutcracker-0.5.0-compatible chash-proxy-" CHASH_VERSION_STRING "\n");
  r = run("-D");
  EXPECT_EQ(r.status, 0);
  for (const char* want : {"pool stats:", "server stats:", "client_connections",
                           "server_ejected_at", "out_queue_bytes"}) {
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;
  }
  r = run("-h");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("--stats-port"), std::string::npos);
}

// Every long flag is in --help and in docs/REFERENCE.md.
TEST_F(NutcrackerCli, HelpAndDocsNameEveryFlag) {
  const std::string help = run("--help").output, docs = slurp(fs::path(CHASH_PROXY_DOCS).parent_path() / "REFERENCE.md");
  for (const char* flag :
       {"--conf-file",      "--config",          "--test-conf", "--check",    "--daemonize",
        "--describe-stats", "--verbose",         "--output",    "--pid-file", "--stats-port",
        "--stats-addr",     "--stats-interval",  "--mbuf-size", "--no-stats", "--workers",
        "--log-level",      "--handover-socket", "--takeover",  "--version",  "--help"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
    EXPECT_NE(docs.find(flag), std::string::npos) << flag;
  }
}

TEST_F(NutcrackerCli, UsageErrorsExit2WithAMessage) {
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {"--bogus", "unknown option --bogus"},
           {"-c " + conf_.string() + " -v loud", "-v/--verbose takes a number 0-11"},
           {"-c " + conf_.string() + " -s 99999", "-s/--stats-port takes a port"},
           {"-c " + conf_.string() + " -p", "-p/--pid-file needs a value"},
           {"-v 6", "-c/--conf-file CONFIG is required"},
       }) {
    const Outcome r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.output.find(want), std::string::npos) << args << "\n" << r.output;
  }
}

TEST_F(NutcrackerCli, VerbosityZeroAndEleven) {
  const fs::path quiet = dir_ / "quiet.log", loud = dir_ / "loud.log";
  ASSERT_TRUE(start({"-v", "0", "-o", quiet.string(), "--no-stats"}));
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
  EXPECT_EQ(slurp(quiet), "");  // error only, and nothing went wrong
  ASSERT_TRUE(start({"-v11", "-o", loud.string(), "--no-stats"}));
  EXPECT_TRUE(log_has(loud, "msg=started"));
  ASSERT_EQ(::kill(process_.pid(), SIGTTOU), 0);  // nutcracker's "down logging level"
  EXPECT_TRUE(log_has(loud, "msg=\"log level down\" level=info"));
  ASSERT_EQ(::kill(process_.pid(), SIGTTIN), 0);
  EXPECT_TRUE(log_has(loud, "msg=\"log level up\" level=debug"));
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
}

// logrotate's way: move the file, SIGHUP (or SIGUSR1); the next lines go to a new file.
TEST_F(NutcrackerCli, OutputFileIsReopenedAfterRotation) {
  const fs::path log = dir_ / "proxy.log";
  ASSERT_TRUE(start({"--output=" + log.string(), "--no-stats"}));
  EXPECT_TRUE(log_has(log, "msg=started"));
  fs::rename(log, dir_ / "proxy.log.1");
  ASSERT_EQ(::kill(process_.pid(), SIGHUP), 0);
  EXPECT_TRUE(log_has(log, "msg=reloaded"));  // SIGHUP also reloads, into the new file
  EXPECT_NE(slurp(log).find("msg=\"log file reopened\""), std::string::npos);
  fs::rename(log, dir_ / "proxy.log.2");
  ASSERT_EQ(::kill(process_.pid(), SIGUSR2), 0);  // nothing, as nutcracker (not a kill)
  ASSERT_EQ(::kill(process_.pid(), SIGUSR1), 0);  // reopen only
  EXPECT_TRUE(log_has(log, "msg=\"log file reopened\""));
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
  const std::string first = slurp(dir_ / "proxy.log.1"), last = slurp(log);
  EXPECT_NE(first.find("msg=started"), std::string::npos);
  EXPECT_EQ(first.find("msg=reloaded"), std::string::npos) << first;
  EXPECT_EQ(slurp(dir_ / "proxy.log.2").find("msg=stopping"), std::string::npos);
  EXPECT_NE(last.find("msg=stopping"), std::string::npos) << last;
  EXPECT_EQ(last.find("msg=reloaded"), std::string::npos) << last;  // SIGUSR1 does not reload
}

TEST_F(NutcrackerCli, PidFileWrittenOnceListeningAndRemovedOnExit) {
  const fs::path pid = dir_ / "proxy.pid";
  // The port accepts from the moment it is bound; the pid file is written once the whole
  // proxy is up, a little later (ThreadSanitizer makes that "little" long): wait for it.
  const auto written = [&] {
    return testing::eventually([&] { return slurp(pid) == std::to_string(process_.pid()) + "\n"; });
  };
  ASSERT_TRUE(start({"-p", pid.string(), "--no-stats"}));
  EXPECT_TRUE(written()) << slurp(pid);
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
  EXPECT_FALSE(fs::exists(pid));
  // A pid file that a successor (binary hand-over) rewrote is its: left in place.
  ASSERT_TRUE(start({"-p", pid.string(), "--no-stats"}));
  ASSERT_TRUE(written()) << slurp(pid);
  std::ofstream(pid, std::ios::trunc) << "1\n";
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
  EXPECT_EQ(slurp(pid), "1\n");
}

TEST_F(NutcrackerCli, DaemonizeServesAndStopsOnSigterm) {
  const fs::path pid_file = dir_ / "d.pid", log = dir_ / "d.log";
  // Returns once the daemon listens: no polling needed before the first connect.
  const Outcome r = run("-d -c " + conf_.string() + " -p " + pid_file.string() + " -o " +
                        log.string() + " -s 0 -a 127.0.0.1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");
  EXPECT_TRUE(listening());
  const pid_t pid = read_pid(pid_file);
  ASSERT_GT(pid, 1);
  EXPECT_TRUE(alive(pid));
  EXPECT_NE(::getsid(pid), ::getsid(0));  // its own session, no terminal
  EXPECT_NE(::getsid(pid), pid);          // and not its leader: it can never get one back
  EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd"), "/");
  EXPECT_TRUE(log_has(log, "msg=started"));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_TRUE(testing::eventually([&] { return !alive(pid); }));
  EXPECT_FALSE(fs::exists(pid_file));
  EXPECT_NE(slurp(log).find("msg=stopped"), std::string::npos);
}

// A daemon that cannot start says why on the terminal and the foreground exits 1.
TEST_F(NutcrackerCli, DaemonizeReportsAFailedStart) {
  ASSERT_TRUE(start({"--no-stats"}));  // holds the port
  const Outcome r = run("-d --no-stats -c " + conf_.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("Address already in use"), std::string::npos) << r.output;
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
}

// -s 0 -a 127.0.0.1: the stats port on loopback, any free port; the started line names it.
TEST_F(NutcrackerCli, StatsPortFlags) {
  const fs::path log = dir_ / "stats.log";
  ASSERT_TRUE(start({"-s", "0", "-a", "127.0.0.1", "-i", "1000", "-o", log.string()}));
  ASSERT_TRUE(log_has(log, "msg=started"));
  const std::string text = slurp(log);
  const std::size_t at = text.find(" stats=127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << text;
  const int port = std::atoi(text.c_str() + at + std::strlen(" stats=127.0.0.1:"));
  if (port != 0) {  // the stats port serves (once core/stats_port lands): one JSON document
    const int fd = testing::dial_tcp(static_cast<std::uint16_t>(port));
    ASSERT_GE(fd, 0);
    const std::string doc = testing::recv_until(fd, [](const std::string&) { return false; });
    ::close(fd);
    EXPECT_EQ(doc.substr(0, 1), "{") << doc;
  }
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
}

// Type=notify: READY=1 once serving, RELOADING=1 then READY=1 around SIGHUP, STOPPING=1.
TEST_F(NutcrackerCli, SystemdNotifyAroundStartReloadStop) {
  const std::string name = (dir_ / "notify.sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, name.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  testing::set_timeouts(fd, 5);
  auto next = [&] {
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("(nothing)");
  };
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  const bool started = start({"--no-stats"});
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_TRUE(started);
  std::string m = next();
  EXPECT_EQ(m.rfind("READY=1\nMAINPID=" + std::to_string(process_.pid()) + "\n", 0), 0u) << m;
  ASSERT_EQ(::kill(process_.pid(), SIGHUP), 0);
  m = next();
  EXPECT_EQ(m.rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << m;
  m = next();
  EXPECT_EQ(m.rfind("READY=1\n", 0), 0u) << m;
  EXPECT_NE(m.find("STATUS=serving; reloaded to version 2"), std::string::npos) << m;
  ASSERT_EQ(::kill(process_.pid(), SIGTERM), 0);
  m = next();
  EXPECT_EQ(m.rfind("STOPPING=1\n", 0), 0u) << m;
  EXPECT_EQ(process_.terminate(SIGTERM), 0);
  ::close(fd);
}

#ifdef CHASH_CLI_PATH
// `chash route --nutcracker FILE --pool P` names, for every key, the server real nutcracker
// (Debian's package) stored it on, for a ketama pool with names, weights and a hash tag and a
// modula pool without names; the file's other settings and errors are refused clearly.
TEST_F(NutcrackerCli, ChashRouteReadsANutcrackerPoolAsNutcrackerRoutes) {
  ASSERT_TRUE(testing::have_program("nutcracker") && testing::have_program("redis-server"))
      << "nutcracker or redis-server missing: scripts/bootstrap.sh installs them";
  std::vector<std::unique_ptr<testing::ChildProcess>> redis;
  std::vector<std::uint16_t> ports;
  auto accepts = [](std::uint16_t port) {
    return [port] {
      const int fd = testing::dial_tcp(port);
      if (fd < 0) return false;
      ::close(fd);
      return true;
    };
  };
  for (int i = 1; i <= 3; ++i) {
    const std::uint16_t port = testing::free_port();
    redis.push_back(std::make_unique<testing::ChildProcess>());
    ASSERT_TRUE(
        redis.back()->start({"redis-server", "--bind", "127.0.0.1", "--port", std::to_string(port),
                             "--save", "", "--appendonly", "no", "--dir", dir_.string(),
                             "--logfile", (dir_ / ("r" + std::to_string(i) + ".log")).string()},
                            accepts(port)));
    ports.push_back(port);
  }
  auto server = [&](int i, const std::string& tail) {
    return "   - 127.0.0.1:" + std::to_string(ports[static_cast<std::size_t>(i)]) + tail + "\n";
  };
  const std::uint16_t alpha = testing::free_port(), beta = testing::free_port();
  const fs::path yml = dir_ / "pools.yml";
  std::ofstream(yml) << "alpha:\n  listen: 127.0.0.1:" << alpha
                     << "\n  hash: fnv1a_64\n  hash_tag: \"{}\"\n  distribution: ketama\n"
                        "  redis: true\n  servers:\n"
                     << server(0, ":1 r1") << server(1, ":2 r2") << server(2, ":5 r3")
                     << "beta:\n  listen: 127.0.0.1:" << beta
                     << "\n  hash: md5\n  distribution: modula\n  redis: true\n  servers:\n"
                     << server(0, ":1") << server(1, ":1") << server(2, ":1");
  testing::ChildProcess nutcracker;
  ASSERT_TRUE(nutcracker.start(
      {"nutcracker", "-c", yml.string(), "-s", std::to_string(testing::free_port()), "-a",
       "127.0.0.1", "-o", (dir_ / "nutcracker.log").string()},
      accepts(beta)))
      << slurp(dir_ / "nutcracker.log");
  // Which server holds each key nutcracker stored, by port.
  auto stored = [&](std::uint16_t port, const std::vector<std::string>& keys) {
    std::map<std::string, std::uint16_t> where;
    testing::RespClient c(testing::RespClient::dial_tcp(port));
    for (const std::string& k : keys) {
      const std::string r = c.call({"SET", k, "v"});
      EXPECT_EQ(r, "+OK\r\n") << k;
    }
    for (std::size_t i = 0; i < ports.size(); ++i) {
      testing::RespClient s(testing::RespClient::dial_tcp(ports[i]));
      for (const std::string& k : keys) {
        if (s.call({"EXISTS", k}) == ":1\r\n") where[k] = ports[i];
      }
    }
    return where;
  };
  std::vector<std::string> alpha_keys, beta_keys;
  for (int i = 0; i < 400; ++i) {
    // Every 4th key shares its hash tag with the next such key ({user:0}.k0, {user:0}.k4).
    alpha_keys.push_back(i % 4 == 0 ? "{user:" + std::to_string(i / 8) + "}.k" + std::to_string(i)
                                    : "a:" + std::to_string(i));
    beta_keys.push_back("b:" + std::to_string(i));
  }
  const auto alpha_where = stored(alpha, alpha_keys);
  const auto beta_where = stored(beta, beta_keys);
  ASSERT_EQ(alpha_where.size(), alpha_keys.size());
  ASSERT_EQ(beta_where.size(), beta_keys.size());
  // chash route, keys on stdin, one server name a line.
  auto route = [&](const std::string& args, const std::vector<std::string>& keys) {
    std::ofstream in(dir_ / "keys.txt", std::ios::trunc);
    for (const std::string& k : keys) in << k << "\n";
    in.close();
    Outcome r;
    FILE* p = ::popen((std::string(CHASH_CLI_PATH) + " route " + args + " <" +
                       (dir_ / "keys.txt").string() + " 2>" + (dir_ / "route.err").string())
                          .c_str(),
                      "r");
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (r.status != 0) r.output += slurp(dir_ / "route.err");
    return r;
  };
  const std::map<std::string, std::uint16_t> alpha_names = {
      {"r1", ports[0]}, {"r2", ports[1]}, {"r3", ports[2]}};
  const Outcome a = route("--nutcracker " + yml.string() + " --pool alpha", alpha_keys);
  ASSERT_EQ(a.status, 0) << a.output;
  std::istringstream alines(a.output);
  std::string name;
  std::set<std::string> used;
  for (const std::string& k : alpha_keys) {
    ASSERT_TRUE(std::getline(alines, name)) << k;
    ASSERT_TRUE(alpha_names.contains(name)) << name;
    EXPECT_EQ(alpha_names.at(name), alpha_where.at(k)) << k << " -> " << name;
    used.insert(name);
  }
  EXPECT_EQ(used.size(), 3u);
  const Outcome b = route("--nutcracker " + yml.string() + " --pool beta", beta_keys);
  ASSERT_EQ(b.status, 0) << b.output;
  std::istringstream blines(b.output);
  for (const std::string& k : beta_keys) {
    ASSERT_TRUE(std::getline(blines, name)) << k;
    EXPECT_EQ(name, "127.0.0.1:" + std::to_string(beta_where.at(k))) << k;
  }
  // The file's own errors, and usage errors, each clear.
  Outcome e = route("--nutcracker " + yml.string(), {"k"});
  EXPECT_EQ(e.status, 1);
  EXPECT_NE(e.output.find("has 2 pools: name one with --pool (alpha, beta)"), std::string::npos)
      << e.output;
  e = route("--nutcracker " + yml.string() + " --pool gamma", {"k"});
  EXPECT_EQ(e.status, 1);
  EXPECT_NE(e.output.find("has no pool 'gamma' (its pools: alpha, beta)"), std::string::npos)
      << e.output;
  e = route("--nutcracker " + yml.string() + " --pool alpha --preset ketama --nodes a,b", {"k"});
  EXPECT_EQ(e.status, 2) << e.output;
  e = route("--nutcracker " + (dir_ / "missing.yml").string(), {"k"});
  EXPECT_EQ(e.status, 1) << e.output;
  e = route("--pool alpha --preset ketama --nodes a,b", {"k"});
  EXPECT_EQ(e.status, 2) << e.output;
  // Debian's example nutcracker.yml, as shipped.
  const std::string example = "/usr/share/doc/nutcracker/examples/nutcracker.yml";
  if (fs::exists(example)) {
    e = route("--nutcracker " + example + " --pool beta", {"k1", "{k}2", "k3"});
    EXPECT_EQ(e.status, 0) << e.output;
    EXPECT_EQ(std::count(e.output.begin(), e.output.end(), '\n'), 3) << e.output;
  }
}
#endif

}  // namespace
}  // namespace chash::proxy
