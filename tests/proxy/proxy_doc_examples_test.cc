// SPDX-License-Identifier: Apache-2.0
// The proxy docs' examples run as a reader runs them: PROXY.md's quick start (its heredoc config,
// `--check`, the proxy, redis-cli, `chash route`, curl on the admin port, nc on the stats port);
// SECURITY.md's ACL users' redis-cli lines (each answers as the line's comment says), the admin
// authentication's curl lines (plain, and over `admin_tls` to the host the doc names), and the
// TLS pool's redis-cli line against TLS-only redis-servers that hold the ACL user and client
// certificate the config names; and MEMCACHED.md's printf | nc. The commands and YAML are read
// from the docs, not copied here; only addresses and the /etc/chash-proxy/ directory change,
// each by a substitution that must find its text, and `chash`/`chash-proxy` are this build's
// (first in PATH). Real redis-server and memcached on 127.0.0.1; certificates made by openssl.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <tuple>

#include "certs_util.h"
#include "doc_util.h"
#include "e2e_util.h"

namespace chash::proxy::testing {
namespace {

#if defined(CHASH_CLI_PATH) && defined(CHASH_PROXY_PATH)

std::string doc(const char* name) {
  return read_text(fs::path(CHASH_PROXY_DOCS).parent_path() / name);
}

// PATH with this build's chash and chash-proxy first.
std::string path_env() {
  return "PATH=" + fs::path(CHASH_CLI_PATH).parent_path().string() + ":" +
         fs::path(CHASH_PROXY_PATH).parent_path().string() + ":$PATH";
}

bool dials(std::uint16_t port) {
  const int fd = dial_tcp(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// A server of the test's on 127.0.0.1 (its readiness: the port or unix socket accepts).
bool start_redis(ChildProcess& p, const fs::path& dir, const std::string& name, std::uint16_t port,
                 const std::string& aclfile = "") {
  std::vector<std::string> argv = {"redis-server", "--bind", "127.0.0.1", "--port",
                                   std::to_string(port), "--save", "", "--appendonly", "no",
                                   "--dir", dir.string(), "--logfile",
                                   (dir / (name + ".log")).string()};
  if (!aclfile.empty()) argv.insert(argv.end(), {"--aclfile", aclfile});
  return p.start(argv, [port] { return dials(port); });
}

// The doc's command `line` without its trailing "   # comment", and the comment.
std::pair<std::string, std::string> command_and_comment(const std::string& line) {
  const std::size_t hash = line.find("  #");
  if (hash == std::string::npos) return {line, ""};
  const std::size_t end = line.find_last_not_of(' ', hash);
  const std::size_t c = line.find_first_not_of(" #", hash);
  return {line.substr(0, end + 1), c == std::string::npos ? "" : line.substr(c)};
}

// A comment such as "NOPERM ... 'flushall' command" as a pattern: "..." stands for anything.
std::regex pattern_of(const std::string& comment) {
  std::string re;
  for (std::size_t i = 0; i < comment.size(); ++i) {
    if (comment.compare(i, 3, "...") == 0) {
      re += ".*";
      i += 2;
    } else if (std::string("\\^$.|?*+()[]{}").find(comment[i]) != std::string::npos) {
      re += std::string("\\") + comment[i];
    } else {
      re += comment[i];
    }
  }
  return std::regex(re);
}

// Runs the doc's command `line` in `dir` and expects the answer its comment gives ("..." for
// anything).
void expect_as_commented(const std::string& line, const fs::path& dir) {
  const auto [command, comment] = command_and_comment(line);
  ASSERT_FALSE(comment.empty()) << "each line says what it answers: " << line;
  const RunResult r = shell(command, dir, 30);
  EXPECT_TRUE(std::regex_search(r.out, pattern_of(comment)))
      << command << "\nanswered: " << r.out << "the doc says: " << comment;
}

// The doc's code `lines` in runs: each run is either config lines or command lines (those that
// start with `command`), in the order the doc gives them.
std::vector<std::string> runs_of(const std::vector<std::string>& lines, const std::string& command) {
  std::vector<std::string> out;
  bool last_command = false;
  for (const std::string& l : lines) {
    if (l.empty()) continue;
    const bool is_command = l.starts_with(command);
    if (out.empty() || is_command != last_command) out.emplace_back();
    out.back() += l + "\n";
    last_command = is_command;
  }
  return out;
}

// Starts `chash-proxy ARGS` from `dir` (the doc's command line, PATH as path_env) in the
// background; ready once `port` accepts.
bool start_proxy(ChildProcess& p, const fs::path& dir, const std::string& command,
                 std::uint16_t port) {
  return p.start({"bash", "-c",
                  "cd " + shell_quote(dir.string()) + " && export " + path_env() + " && exec " +
                      command + " 2>>" + (dir / "proxy.log").string()},
                 [port] { return dials(port); });
}

TEST(ProxyDocExamples, TheQuickStartRunsAsWritten) {
  ASSERT_TRUE(have_program("redis-server") && have_program("redis-cli") && have_program("curl") &&
              have_program("nc"))
      << "redis-server, redis-cli, curl or nc missing: scripts/bootstrap.sh installs them";
  const std::vector<std::string> lines = code_lines(doc("PROXY.md"), "## Quick start");
  ASSERT_GE(lines.size(), 20u) << "docs/PROXY.md's quick start lost its block";
  ScopedTestDir scoped("chash-proxy-doc-quickstart");
  const fs::path& dir = scoped.path();
  const std::uint16_t listen = free_port(), admin = free_port(), stats = free_port();
  const std::uint16_t r1 = free_port(), r2 = free_port();
  ChildProcess redis1, redis2, proxy;
  ASSERT_TRUE(start_redis(redis1, dir, "r1", r1));
  ASSERT_TRUE(start_redis(redis2, dir, "r2", r2));

  // The heredoc that writes proxy.yml is one command; each line after it is one.
  std::vector<std::string> commands;
  std::string heredoc;
  bool in_heredoc = false;
  for (const std::string& l : lines) {
    if (l.starts_with("cat > proxy.yml <<'YML'")) in_heredoc = true;
    if (in_heredoc) {
      heredoc += l + "\n";
      if (l == "YML") {
        commands.push_back(heredoc);
        in_heredoc = false;
      }
    } else if (!l.empty()) {
      commands.push_back(l);
    }
  }
  ASSERT_FALSE(heredoc.empty()) << "no `cat > proxy.yml <<'YML'` in the quick start";
  std::string all;
  for (const auto& c : commands) all += c + "\n";
  const std::vector<std::pair<std::string, std::string>> subs = {
      {"127.0.0.1:22121", "127.0.0.1:" + std::to_string(listen)},
      {"-p 22121", "-p " + std::to_string(listen)},
      {"127.0.0.1:6379", "127.0.0.1:" + std::to_string(r1)},
      {"127.0.0.1:6380", "127.0.0.1:" + std::to_string(r2)},
      {"127.0.0.1:22223", "127.0.0.1:" + std::to_string(admin)},
      {"127.0.0.1:22222", "127.0.0.1:" + std::to_string(stats)},
      {"nc 127.0.0.1 22222", "nc 127.0.0.1 " + std::to_string(stats)}};
  for (const auto& [from, to] : subs) {
    EXPECT_NE(all.find(from), std::string::npos) << "the quick start lost " << from;
  }
  auto local = [&](std::string text) {
    for (const auto& [from, to] : subs) substitute(text, from, to);
    return text;
  };

  std::size_t ran = 0;
  std::string routed_to;
  for (const std::string& raw : commands) {
    const auto [command, comment] = command_and_comment(local(raw));
    if (command.starts_with("chash-proxy") && command.find("--check") == std::string::npos &&
        command.find(" -t") == std::string::npos) {
      ASSERT_TRUE(start_proxy(proxy, dir, command, listen)) << read_text(dir / "proxy.log");
      ++ran;
      continue;
    }
    const RunResult r = shell("export " + path_env() + "; " + command, dir, 30);
    ASSERT_EQ(r.code, 0) << command << "\n" << r.out;
    ++ran;
    if (command.starts_with("redis-cli")) {
      EXPECT_EQ(r.out, "OK\n") << command;
    } else if (command.starts_with("chash route")) {
      routed_to = r.out;
    } else if (command.starts_with("curl")) {
      EXPECT_NE(r.out.find("# TYPE"), std::string::npos) << command << "\n" << r.out;
    } else if (command.starts_with("nc ")) {
      EXPECT_NE(r.out.find("\"alpha\""), std::string::npos) << r.out;
    }
  }
  EXPECT_GE(ran, 7u);
  // `chash route` named the server the proxy stored user:42 on.
  const bool on_r1 = routed_to.find("r1") != std::string::npos;
  ASSERT_NE(on_r1, routed_to.find("r2") != std::string::npos) << routed_to;
  const RunResult held =
      shell("redis-cli -p " + std::to_string(on_r1 ? r1 : r2) + " get user:42", dir);
  EXPECT_EQ(held.out, "x\n") << "chash route said " << routed_to;
}

TEST(ProxyDocExamples, TheAclUsersAnswerAsTheCommentsSay) {
  ASSERT_TRUE(have_program("redis-server") && have_program("redis-cli"));
  const std::string security = doc("SECURITY.md");
  const std::vector<std::string> lines = code_lines(security, "### ACL users");
  ScopedTestDir scoped("chash-proxy-doc-acl");
  const fs::path& dir = scoped.path();
  // The first block is the config; the redis-cli lines are the commands.
  std::string yaml;
  std::vector<std::string> commands;
  bool first_block = true;
  for (const std::string& l : lines) {
    if (l.empty()) first_block = false;
    if (first_block) yaml += l + "\n";
    if (l.starts_with("redis-cli")) commands.push_back(l);
  }
  ASSERT_NE(yaml.find("acl:"), std::string::npos) << yaml;
  ASSERT_GE(commands.size(), 5u);
  // The backends hold the proxy's user as the doc says they must.
  const std::vector<std::string> backend_acl = {"user default off",
                                                "user proxy on >backend-secret ~* +@all"};
  std::string aclfile;
  for (const auto& rule : backend_acl) {
    ASSERT_NE(security.find("`" + rule + "`"), std::string::npos)
        << "the doc no longer says " << rule;
    aclfile += rule + "\n";
  }
  std::ofstream(dir / "users.acl") << aclfile;
  const std::uint16_t listen = free_port(), admin = free_port(), r1 = free_port(),
                      r2 = free_port();
  ChildProcess redis1, redis2, proxy;
  ASSERT_TRUE(start_redis(redis1, dir, "r1", r1, (dir / "users.acl").string()));
  ASSERT_TRUE(start_redis(redis2, dir, "r2", r2, (dir / "users.acl").string()));
  std::ofstream(dir / "admin.token") << "doc-example-token\n";
  const std::vector<std::pair<std::string, std::string>> subs = {
      {"127.0.0.1:22121", "127.0.0.1:" + std::to_string(listen)},
      {"127.0.0.1:6379", "127.0.0.1:" + std::to_string(r1)},
      {"127.0.0.1:6380", "127.0.0.1:" + std::to_string(r2)},
      {"admin: 22223", "admin: " + std::to_string(admin)},
      {"/etc/chash-proxy/admin.token", (dir / "admin.token").string()}};
  for (const auto& [from, to] : subs) {
    ASSERT_TRUE(substitute(yaml, from, to)) << "the ACL example lost " << from;
  }
  std::ofstream(dir / "acl.yml") << yaml;
  ASSERT_TRUE(start_proxy(proxy, dir, "chash-proxy -c acl.yml --no-stats", listen))
      << read_text(dir / "proxy.log") << yaml;
  for (std::string line : commands) {
    ASSERT_TRUE(substitute(line, "-p 22121", "-p " + std::to_string(listen))) << line;
    expect_as_commented(line, dir);
  }
}

TEST(ProxyDocExamples, TheMemcachedPoolAnswersThePrintfLine) {
  ASSERT_TRUE(have_program("memcached") && have_program("nc"));
  const std::vector<std::string> lines = code_lines(doc("MEMCACHED.md"), "# Memcached pools");
  ScopedTestDir scoped("chash-proxy-doc-mc");
  const fs::path& dir = scoped.path();
  std::string yaml, command;
  for (const std::string& l : lines) {
    if (l.starts_with("printf ")) {
      command = l;
      break;
    }
    yaml += l + "\n";
  }
  ASSERT_FALSE(command.empty()) << "no printf | nc line in MEMCACHED.md's opening";
  const std::uint16_t listen = free_port(), m1 = free_port();
  const std::string m2 = (dir / "m2.sock").string();
  const std::vector<std::pair<std::string, std::string>> subs = {
      {"127.0.0.1:22122", "127.0.0.1:" + std::to_string(listen)},
      {"127.0.0.1:11211", "127.0.0.1:" + std::to_string(m1)},
      {"/var/run/memcached/m2.sock", m2}};
  for (const auto& [from, to] : subs) {
    ASSERT_TRUE(substitute(yaml, from, to)) << "the memcached example lost " << from;
  }
  ASSERT_TRUE(substitute(command, "127.0.0.1 22122", "127.0.0.1 " + std::to_string(listen)));
  // `nc -q1` gives up one second after its input ends, which a loaded CI machine can exceed
  // before the proxy answers (empty output seen). -N (without -q) half-closes instead and waits; the proxy closes
  // once it has answered a client that half-closed, so nc ends as soon as the answer is in (shell() bounds it at 30 s).
  ASSERT_TRUE(substitute(command, "nc -q1", "nc -N"));
  std::vector<std::string> user;
  if (::geteuid() == 0) user = {"-u", "root"};
  ChildProcess mc1, mc2, proxy;
  std::vector<std::string> a1 = {"memcached", "-l", "127.0.0.1", "-p", std::to_string(m1), "-U", "0"};
  std::vector<std::string> a2 = {"memcached", "-s", m2};
  a1.insert(a1.end(), user.begin(), user.end());
  a2.insert(a2.end(), user.begin(), user.end());
  ASSERT_TRUE(mc1.start(a1, [m1] { return dials(m1); }));
  ASSERT_TRUE(mc2.start(a2, [&m2] { return fs::exists(m2); }));
  std::ofstream(dir / "mc.yml") << yaml;
  ASSERT_TRUE(start_proxy(proxy, dir, "chash-proxy -c mc.yml --no-stats", listen))
      << read_text(dir / "proxy.log") << yaml;
  const RunResult r = shell(command, dir, 30);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n") << command;
}

// Every ```yaml block of the docs that is a whole config loads as written (a block that needed a
// setting its feature requires was once shipped: prefix_routes' replicated pool without
// auto_eject_hosts). HOTKEYS.md's blocks are fragments of a pool ("..."), left out.
TEST(ProxyDocExamples, EveryWholeConfigBlockLoads) {
  int loaded = 0;
  for (const char* name : {"MEMCACHED.md", "REDIS.md", "FAILURES.md", "FLEET.md",
                           "GETTING-STARTED.md"}) {
    std::istringstream in(doc(name));
    std::string line, block;
    bool inside = false;
    int at = 0, opened = 0;
    while (std::getline(in, line)) {
      ++at;
      if (!inside && line == "```yaml") {
        inside = true;
        opened = at;
        block.clear();
      } else if (inside && line.starts_with("```")) {
        inside = false;
        const std::string where = std::string(name) + ":" + std::to_string(opened);
        EXPECT_NO_THROW(parse_config(block, where)) << where << "\n" << block;
        ++loaded;
      } else if (inside) {
        block += line + "\n";
      }
    }
    EXPECT_FALSE(inside) << name << ": a ```yaml block is not closed";
  }
  EXPECT_GE(loaded, 10);
}

// The admin port's two examples: `admin_auth` with a token file and a basic user (each curl
// line answers as its comment says: the reload, the status, a 401 without credentials), then
// `admin_tls` reached as https://proxy-1 (curl --resolve: the test's only change to the line).
TEST(ProxyDocExamples, TheAdminAuthCurlLinesAnswerAsTheCommentsSay) {
  ASSERT_TRUE(have_program("curl") && have_program("openssl"));
  const std::vector<std::string> blocks =
      runs_of(code_lines(doc("SECURITY.md"), "### Admin authentication"), "curl ");
  ASSERT_EQ(blocks.size(), 4u) << "config, curl lines, TLS config, TLS curl line";
  ScopedTestDir scoped("chash-proxy-doc-admin");
  const fs::path& dir = scoped.path();
  std::ofstream(dir / "admin.token") << "doc-example-token\n";
  Certs certs(dir);
  ASSERT_TRUE(certs.ca("ca"));
  ASSERT_TRUE(certs.leaf("admin", "ca", "DNS:proxy-1"));
  for (int tls = 0; tls < 2; ++tls) {
    const std::uint16_t listen = free_port(), admin = free_port();
    const std::string pool = "p:\n  listen: 127.0.0.1:" + std::to_string(listen) +
                             "\n  redis: true\n  servers:\n    - 127.0.0.1:1:1 r1\n";
    const std::string at = "127.0.0.1:" + std::to_string(admin);
    std::string yaml = blocks[tls * 2], lines = blocks[tls * 2 + 1];
    ASSERT_TRUE(substitute(yaml, tls ? "0.0.0.0:22223" : "127.0.0.1:22223", at)) << yaml;
    ASSERT_TRUE(substitute(yaml, "/etc/chash-proxy/", dir.string() + "/")) << yaml;
    if (tls) {
      ASSERT_TRUE(substitute(lines, "https://proxy-1:22223",
                             "--resolve proxy-1:" + std::to_string(admin) +
                                 ":127.0.0.1 https://proxy-1:" + std::to_string(admin)));
    } else {
      ASSERT_TRUE(substitute(lines, "127.0.0.1:22223", at)) << lines;
      ASSERT_TRUE(substitute(lines, "/etc/chash-proxy/", dir.string() + "/")) << lines;
    }
    std::ofstream(dir / "admin.yml") << yaml << pool;
    ChildProcess proxy;
    ASSERT_TRUE(start_proxy(proxy, dir, "chash-proxy -c admin.yml --no-stats", listen))
        << read_text(dir / "proxy.log") << yaml;
    ASSERT_TRUE(eventually([&] { return dials(admin); }));
    std::istringstream in(lines);
    std::size_t ran = 0;
    for (std::string line; std::getline(in, line); ++ran) expect_as_commented(line, dir);
    EXPECT_EQ(ran, tls ? 1u : 3u);
  }
}

// The TLS pool: its config with the doc's certificate files (made here: the proxy's, signed by
// the ca.crt the redis-cli line trusts; the backends', under redis.internal, the name `sni`
// asks for; the proxy's client certificate towards them), two TLS-only redis-servers that
// accept the `proxy` user the config logs in as, and the doc's redis-cli line as alice.
TEST(ProxyDocExamples, TheTlsPoolServesTheRedisCliLine) {
  ASSERT_TRUE(have_program("redis-server") && have_program("redis-cli") &&
              have_program("openssl"));
  const std::vector<std::string> blocks =
      runs_of(code_lines(doc("SECURITY.md"), "## TLS"), "redis-cli ");
  ASSERT_GE(blocks.size(), 2u);
  std::string yaml = blocks[0], line = blocks[1];
  ASSERT_TRUE(line.starts_with("redis-cli --tls")) << line;
  line.pop_back();  // its newline
  ScopedTestDir scoped("chash-proxy-doc-tls");
  const fs::path& dir = scoped.path();
  Certs certs(dir);
  ASSERT_TRUE(certs.ca("ca") && certs.ca("clients-ca") && certs.ca("redis-ca"));
  ASSERT_TRUE(certs.leaf("proxy", "ca", "IP:127.0.0.1,DNS:localhost"));
  ASSERT_TRUE(certs.leaf("redis", "redis-ca", "DNS:redis.internal"));
  ASSERT_TRUE(certs.leaf("to-redis", "redis-ca", ""));
  std::ofstream(dir / "users.acl") << "user default off\nuser proxy on >proxy-password ~* +@all\n";
  const std::uint16_t listen = free_port(), r1 = free_port(), r2 = free_port();
  ChildProcess redis1, redis2, proxy;
  for (auto [p, port, name] : {std::tuple{&redis1, r1, "r1"}, std::tuple{&redis2, r2, "r2"}}) {
    ASSERT_TRUE(p->start({"redis-server", "--port", "0", "--tls-port", std::to_string(port),
                          "--bind", "127.0.0.1", "--tls-cert-file", certs.path("redis.crt"),
                          "--tls-key-file", certs.path("redis.key"), "--tls-ca-cert-file",
                          certs.path("redis-ca.crt"), "--tls-auth-clients", "yes", "--save", "",
                          "--appendonly", "no", "--dir", dir.string(), "--aclfile",
                          (dir / "users.acl").string(), "--logfile",
                          (dir / (std::string(name) + ".log")).string()},
                         [port = port] { return dials(port); }));
    // app:1 on both: whichever the proxy routes it to answers it.
    const RunResult set = shell("redis-cli --tls --cacert redis-ca.crt --cert to-redis.crt --key "
                                "to-redis.key --sni redis.internal -p " + std::to_string(port) +
                                " --user proxy --pass proxy-password --no-auth-warning "
                                "SET app:1 from-tls-backend", dir);
    ASSERT_EQ(set.out, "OK\n") << name;
  }
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"0.0.0.0:6380", "127.0.0.1:" + std::to_string(listen)},
           {"10.0.0.1:6390", "127.0.0.1:" + std::to_string(r1)},
           {"10.0.0.2:6390", "127.0.0.1:" + std::to_string(r2)},
           {"/etc/chash-proxy/", dir.string() + "/"}}) {
    ASSERT_TRUE(substitute(yaml, from, to)) << "the TLS example lost " << from;
  }
  ASSERT_TRUE(substitute(line, "-p 6380", "-p " + std::to_string(listen)));
  std::ofstream(dir / "tls.yml") << yaml;
  ASSERT_TRUE(start_proxy(proxy, dir, "chash-proxy -c tls.yml --no-stats", listen))
      << read_text(dir / "proxy.log") << yaml;
  const RunResult r = shell(line, dir, 30);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("from-tls-backend\n"), std::string::npos)
      << line << "\n" << r.out << read_text(dir / "proxy.log");
  // As alice: redis-cli goes on as the default user when AUTH fails.
  EXPECT_EQ(r.out.find("AUTH failed"), std::string::npos) << line << "\n" << r.out;
}

#endif

}  // namespace
}  // namespace chash::proxy::testing
