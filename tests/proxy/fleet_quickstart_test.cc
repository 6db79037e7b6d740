// SPDX-License-Identifier: Apache-2.0
// The guides run as a reader runs them: docs/GETTING-STARTED.md end to end (below), and
// docs/FLEET.md's quick start. FLEET.md's quick start, as a reader follows it: its YAML and its
// commands are read from the doc (not copied here) and run against a real 3-member etcd, three
// redis-server and two chash-proxy processes (the binary), all on 127.0.0.1. Only the addresses
// change, each by a plain text substitution that must find its text in the doc (so a reworded doc
// fails here instead of passing untested):
//   10.0.0.N:2379        -> etcd member N's client endpoint (free port)
//   10.0.1.N:6379        -> redis-server N (free port)
//   127.0.0.1:22223      -> each proxy's admin port (free port)
//   0.0.0.0:22121        -> 127.0.0.1:<free port>, each proxy's listen
// and, outside the file, the stats port (default 0.0.0.0:22222, which another proxy or test on
// the machine may hold) is given as `-s PORT -a 127.0.0.1`; `etcdctl` finds the etcd through
// ETCDCTL_ENDPOINTS, as it would on a host set up for it. The same file starts two proxies (the
// doc: "Start the same file on every proxy host"); each check runs the doc's command line.
#include <gtest/gtest.h>
#include <signal.h>

#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "doc_util.h"
#include "etcd_util.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

using namespace std::chrono_literals;

// The quick start of docs/FLEET.md: its ```yaml block and the indented command lines after it.
struct QuickStart {
  std::string yaml;
  std::vector<std::string> commands;
};

QuickStart quick_start(const std::string& doc) {
  QuickStart q;
  const std::size_t at = doc.find("## Quick start");
  if (at == std::string::npos) return q;
  const std::size_t end = doc.find("\n## ", at + 1);
  const std::string section = doc.substr(at, end == std::string::npos ? end : end - at);
  const std::size_t y = section.find("```yaml\n");
  if (y == std::string::npos) return q;
  const std::size_t y_end = section.find("```", y + 8);
  q.yaml = section.substr(y + 8, y_end - y - 8);
  std::istringstream rest(section.substr(y_end + 3));
  std::string line;
  while (std::getline(rest, line)) {
    if (line.starts_with("    ") && line.find_first_not_of(' ') != std::string::npos) {
      q.commands.push_back(line.substr(4));
    }
  }
  return q;
}

// Needs the chash CLI (the doc's commands run it): compiled only in a tree that builds it.
#ifdef CHASH_CLI_PATH
TEST(FleetQuickStart, TheDocsQuickStartStartsAndRoutesAsWritten) {
  ASSERT_TRUE(have_etcd() && have_program("redis-server") && have_program("etcdctl"))
      << "etcd, etcdctl or redis-server missing: scripts/bootstrap.sh installs them";
  const fs::path docs = fs::path(CHASH_PROXY_DOCS).parent_path();
  const QuickStart q = quick_start(read_text(docs / "FLEET.md"));
  ASSERT_FALSE(q.yaml.empty()) << "docs/FLEET.md has no ```yaml block under '## Quick start'";
  ASSERT_GE(q.commands.size(), 4u) << "docs/FLEET.md's quick start lost its commands";

  const fs::path dir = make_test_dir("chash-fleet-quickstart");
  EtcdCluster etcd(dir, 3);
  ASSERT_TRUE(etcd.start()) << "etcd did not start (see " << dir << "/e1.log)";
  std::vector<std::unique_ptr<ChildProcess>> redis;
  std::vector<std::uint16_t> redis_ports;
  for (int i = 1; i <= 3; ++i) {
    const std::uint16_t port = free_port();
    auto p = std::make_unique<ChildProcess>();
    ASSERT_TRUE(p->start({"redis-server", "--bind", "127.0.0.1", "--port", std::to_string(port),
                          "--save", "", "--appendonly", "no", "--dir", dir.string(), "--logfile",
                          (dir / ("r" + std::to_string(i) + ".log")).string()},
                         [port] {
                           const int fd = dial_tcp(port);
                           if (fd < 0) return false;
                           ::close(fd);
                           return true;
                         }));
    redis.push_back(std::move(p));
    redis_ports.push_back(port);
  }
  // The substitutions every text of the quick start gets (the YAML and each command).
  auto addresses = [&](std::string text) {
    for (int i = 1; i <= 3; ++i) {
      substitute(text, "10.0.0." + std::to_string(i) + ":2379", etcd.endpoints()[i - 1]);
      substitute(text, "10.0.1." + std::to_string(i) + ":6379",
                 "127.0.0.1:" + std::to_string(redis_ports[i - 1]));
    }
    return text;
  };
  for (const char* needed :
       {"10.0.0.1:2379", "10.0.1.1:6379", "10.0.1.2:6379", "127.0.0.1:22223", "0.0.0.0:22121"}) {
    EXPECT_NE(q.yaml.find(needed), std::string::npos) << "the quick start's YAML lost " << needed;
  }

  struct Proxy {
    std::uint16_t listen = 0, admin = 0, stats = 0;
    fs::path config;
    ChildProcess process;
  };
  std::vector<std::unique_ptr<Proxy>> proxies;
  for (int i = 1; i <= 2; ++i) {
    auto p = std::make_unique<Proxy>();
    p->listen = free_port();
    p->admin = free_port();
    p->stats = free_port();
    std::string yaml = addresses(q.yaml);
    ASSERT_TRUE(substitute(yaml, "127.0.0.1:22223", "127.0.0.1:" + std::to_string(p->admin)));
    ASSERT_TRUE(substitute(yaml, "0.0.0.0:22121", "127.0.0.1:" + std::to_string(p->listen)));
    ASSERT_FALSE(std::regex_search(yaml, std::regex(R"(\b10\.0\.\d+\.\d+)")))
        << "an address the test does not substitute:\n"
        << yaml;
    p->config = dir / ("p" + std::to_string(i) + ".yml");
    std::ofstream(p->config) << yaml;
    // The doc's own check first: `chash-proxy -t` says the file is good.
    const RunResult checked = shell(std::string(CHASH_PROXY_PATH) + " -t -c " + p->config.string() +
                                        " -s " + std::to_string(p->stats),
                                    dir);
    ASSERT_EQ(checked.code, 0) << checked.out << "\n" << yaml;
    const std::string log = (dir / ("p" + std::to_string(i) + ".log")).string();
    const std::uint16_t listen = p->listen;
    ASSERT_TRUE(
        p->process.start({"sh", "-c",
                          "exec " + std::string(CHASH_PROXY_PATH) + " -c " + p->config.string() +
                              " -s " + std::to_string(p->stats) + " -a 127.0.0.1 2>" + log},
                         [listen] {
                           const int fd = dial_tcp(listen);
                           if (fd < 0) return false;
                           ::close(fd);
                           return true;
                         }))
        << read_text(log);
    proxies.push_back(std::move(p));
  }
  // Both proxies in the fleet, at one epoch of the seed's two servers.
  auto fleet = [&](const Proxy& p) {
    const std::string r = http(p.admin, "GET /fleet HTTP/1.0\r\n\r\n");
    const std::size_t body = r.find("\r\n\r\n");
    return nlohmann::json::parse(body == std::string::npos ? "" : r.substr(body + 4), nullptr,
                                 false);
  };
  // The pool's state and members as proxy `p` sees them (null until it has them).
  auto pool = [&](const Proxy& p) -> nlohmann::json {
    const auto f = fleet(p);
    if (!f.is_object() || !f["fleet"].is_array() || f["fleet"].empty()) return nullptr;
    for (const auto& pl : f["fleet"][0]["pools"]) {
      if (pl["pool"] == "cache") return pl;
    }
    return nullptr;
  };
  auto servers_of = [](const nlohmann::json& pl) {
    std::vector<std::string> out;
    if (pl.is_null() || !pl.contains("state")) return out;
    for (const auto& s : pl["state"]["target"]["servers"]) out.push_back(s);
    return out;
  };
  // Every proxy routes by the state's epoch, stable, with `want` servers.
  auto settled = [&](const std::vector<std::string>& want) {
    std::uint64_t epoch = 0;
    for (const auto& p : proxies) {
      const auto pl = pool(*p);
      if (pl.is_null() || servers_of(pl) != want || pl["state"]["phase"] != "stable" ||
          pl["members"].size() != proxies.size())
        return false;
      const std::uint64_t e = pl["state"]["epoch"];
      if (pl["applied_epoch"] != e || (epoch != 0 && e != epoch)) return false;
      epoch = e;
    }
    return true;
  };
  const std::string r1 = "127.0.0.1:" + std::to_string(redis_ports[0]) + ":1 r1";
  const std::string r2 = "127.0.0.1:" + std::to_string(redis_ports[1]) + ":1 r2";
  const std::string r3 = "127.0.0.1:" + std::to_string(redis_ports[2]) + ":1 r3";
  ASSERT_TRUE(within(20s, [&] { return settled({r1, r2}); })) << pool(*proxies[0]).dump();
  // Each of the three etcd endpoints is known up, not only the one requests go to (each is
  // read every 5 s).
  EXPECT_TRUE(within(12s, [&] {
    const auto f = fleet(*proxies[0]);
    if (!f.is_object() || f["fleet"].empty()) return false;
    const auto& endpoints = f["fleet"][0]["etcd"]["endpoint_status"];
    if (endpoints.size() != 3) return false;
    for (const auto& e : endpoints) {
      if (e["state"] != "up") return false;
    }
    return true;
  })) << fleet(*proxies[0]).dump();

  // It routes: what one proxy writes, the other reads, from the server the fleet gives the key.
  auto routes = [&](const std::string& prefix) {
    RespClient a(RespClient::dial_tcp(proxies[0]->listen));
    RespClient b(RespClient::dial_tcp(proxies[1]->listen));
    for (int k = 0; k < 100; ++k) {
      const std::string key = prefix + std::to_string(k);
      if (a.call({"SET", key, "v" + std::to_string(k)}) != "+OK\r\n") return false;
      if (b.call({"GET", key}) !=
          "$" + std::to_string(1 + std::to_string(k).size()) + "\r\nv" + std::to_string(k) + "\r\n")
        return false;
    }
    return true;
  };
  EXPECT_TRUE(routes("before:"));

  // The doc's commands, in order, each as written but for the addresses.
  const std::string env = "ETCDCTL_ENDPOINTS=" + etcd.endpoints()[0] +
                          " PATH=" + fs::path(CHASH_CLI_PATH).parent_path().string() + ":$PATH ";
  for (const std::string& command : q.commands) {
    if (!command.starts_with("chash ") && !command.starts_with("etcdctl ")) continue;  // prose
    const RunResult r = shell("export " + env + "; " + addresses(command), dir);
    EXPECT_EQ(r.code, 0) << addresses(command) << "\n" << r.out;
    if (command.starts_with("chash fleet status")) {
      EXPECT_NE(r.out.find("cache"), std::string::npos) << r.out;
    }
  }
  // Where the commands leave the pool: r1 drained and gone, r2 and r3 serving, on both proxies.
  ASSERT_TRUE(within(30s, [&] { return settled({r2, r3}); })) << pool(*proxies[0]).dump();
  EXPECT_TRUE(routes("after:"));
  // Nothing of the new keys went to r1, and r3 has its share.
  RespClient on_r1(RespClient::dial_tcp(redis_ports[0]));
  RespClient on_r3(RespClient::dial_tcp(redis_ports[2]));
  int on_r3_count = 0;
  for (int k = 0; k < 100; ++k) {
    EXPECT_EQ(on_r1.call({"EXISTS", "after:" + std::to_string(k)}), ":0\r\n") << k;
    on_r3_count += on_r3.call({"EXISTS", "after:" + std::to_string(k)}) == ":1\r\n";
  }
  EXPECT_GT(on_r3_count, 10);
  proxies.clear();
  if (!HasFailure()) fs::remove_all(dir);
}
#endif  // CHASH_CLI_PATH

// docs/GETTING-STARTED.md, every ```sh block after "## 1. Install" in one shell session (its
// `&` job and `cd` carry over, as in a reader's terminal), each ```yaml block written first to
// the file the paragraph before it names (`proxy.yml`, `fleet-a.yml`, ...). What changes: each
// port the guide uses becomes a free one (the same everywhere it appears), /tmp/chash-start the
// test's directory, and PATH starts with the build tree (`chash`, `chash-proxy`); the shell runs
// with `set -e`, so any failing step fails the test, and the answers the guide promises are
// checked in its output.
#ifdef CHASH_CLI_PATH
TEST(GettingStarted, TheGuideRunsAsWritten) {
  ASSERT_TRUE(have_etcd() && have_program("etcdctl") && have_program("redis-server") &&
              have_program("redis-cli"))
      << "etcd, etcdctl, redis-server or redis-cli missing: scripts/bootstrap.sh installs them";
  const std::string doc =
      read_text(fs::path(CHASH_PROXY_DOCS).parent_path() / "GETTING-STARTED.md");
  const std::size_t from = doc.find("## 2.");
  ASSERT_NE(from, std::string::npos) << "docs/GETTING-STARTED.md has no '## 2.' section";
  const fs::path dir = make_test_dir("chash-getting-started");
  // The guide's ports, each to a free one.
  std::map<std::string, std::string> ports;
  for (const char* p : {"6381", "6382", "6383", "22121", "22223", "22224", "22141", "22151",
                        "22243", "22244", "22253", "22254", "2389", "2390"}) {
    ports[p] = std::to_string(free_port());
  }
  auto localize = [&](std::string text) {
    substitute(text, "/tmp/chash-start", dir.string());
    // Each number is matched whole (6381 is not part of 16381), and one followed by a dot is
    // part of an address, not a port.
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
      if (std::isdigit(static_cast<unsigned char>(text[i])) &&
          (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
        std::size_t j = i;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        const std::string number = text.substr(i, j - i);
        const bool port = ports.contains(number) && (j == text.size() || text[j] != '.');
        out += port ? ports[number] : number;
        i = j;
      } else {
        out += text[i++];
      }
    }
    return out;
  };
  // The script: yaml blocks as files (named by the last `*.yml` before them), sh blocks as is.
  std::string script = "set -e\nexport PATH=" + fs::path(CHASH_CLI_PATH).parent_path().string() +
                       ":" + fs::path(CHASH_PROXY_PATH).parent_path().string() + ":$PATH\n" +
                       "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n";
  std::size_t at = from;
  std::vector<std::string> files;
  while ((at = doc.find("```", at)) != std::string::npos) {
    const std::size_t nl = doc.find('\n', at);
    const std::string lang = doc.substr(at + 3, nl - at - 3);
    const std::size_t end = doc.find("\n```", nl);
    ASSERT_NE(end, std::string::npos);
    const std::string body = doc.substr(nl + 1, end - nl);
    if (lang == "yaml") {
      const std::string before = doc.substr(from, at - from);
      std::string name;
      static const std::regex file_name("`([a-z-]+\\.yml)`");
      for (auto it = std::sregex_iterator(before.begin(), before.end(), file_name);
           it != std::sregex_iterator(); ++it) {
        name = (*it)[1];
      }
      ASSERT_FALSE(name.empty()) << "a yaml block without a file name before it";
      files.push_back(name);
      std::ofstream(dir / ("doc-" + name)) << localize(body);
      script += "cp " + (dir / ("doc-" + name)).string() + " " + name + "\n";
    } else if (lang == "sh") {
      script += localize(body);
    }
    at = end + 4;
  }
  EXPECT_EQ(files, (std::vector<std::string>{"proxy.yml", "fleet-a.yml", "fleet-b.yml"}));
  fs::create_directories(dir);
  std::ofstream(dir / "guide.sh") << "cd " << dir.string() << "\n" << script;
  const RunResult r = shell("bash -x " + (dir / "guide.sh").string(), dir, 180);
  // Whatever happened, nothing the guide started outlives the test.
  for (const char* pid : {"proxy.pid", "a.pid", "b.pid"}) {
    std::ifstream f(dir / pid);
    long n = 0;
    if (f >> n && n > 1) ::kill(static_cast<pid_t>(n), SIGKILL);
  }
  for (const char* p : {"6381", "6382", "6383"}) {
    shell("redis-cli -p " + ports[p] + " shutdown nosave", dir);
  }
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* want : {"PONG", "ok (1 pool)", "OK", "hello", "seven", "stable"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\nr[12]\\n"))) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}
#endif  // CHASH_CLI_PATH

}  // namespace
}  // namespace chash::proxy::testing
