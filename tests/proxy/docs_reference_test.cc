// SPDX-License-Identifier: Apache-2.0
// The reference cannot drift from the code: every key the config parser accepts (a pool's, and
// `chash_proxy:`'s) has a row in docs/REFERENCE.md's configuration table with its default, every
// metric family a running proxy exports (a redis, a memcache and a tcp pool, and with etcd
// installed a pool fed by etcd) has a row in its metric table, and every flag of `chash-proxy
// --help` a row in its command-line table — and no configuration row names a key the parser
// refuses, no flag row a flag --help lacks. (Families of Sentinel and Redis Cluster pools need
// those servers to appear, so a documented metric is not checked the other way round.) And the
// docs hold together: every link between them reaches a file, and a heading where it names one.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "config/config.h"
#include "config/parse_util.h"
#include "e2e_util.h"
#include "etcd_util.h"

namespace chash::proxy::testing {
namespace {

std::string doc(const char* name) {
  std::ifstream f(fs::path(CHASH_PROXY_DOCS).parent_path() / name);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Table rows ("| cell | cell |") of `text` between the heading line starting with `from` and
// the next heading of any level.
std::vector<std::vector<std::string>> rows_after(const std::string& text, const std::string& from) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      inside = line.starts_with(from);
      continue;
    }
    if (!inside || !line.starts_with("| ")) continue;
    std::vector<std::string> cells;
    std::size_t at = 1;
    for (std::size_t bar; (bar = line.find(" |", at)) != std::string::npos; at = bar + 2) {
      cells.push_back(line.substr(at + 1, bar - at - 1));
    }
    if (!cells.empty() && !cells[0].starts_with("---")) rows.push_back(cells);
  }
  return rows;
}

// The `backticked` names of a cell, without a metric's {labels}.
std::set<std::string> names(const std::string& cell) {
  std::set<std::string> out;
  static const std::regex tick("`([a-z_.]+)(\\{[^`]*\\})?`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), tick);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST(DocsReference, EveryConfigKeyHasARowWithItsDefault) {
  const auto rows = rows_after(doc("REFERENCE.md"), "## Configuration");
  ASSERT_GT(rows.size(), 30u) << "docs/REFERENCE.md lost its configuration table";
  std::set<std::string> documented;
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 3u) << "a row of key | meaning | default: " << r[0];
    EXPECT_NE(r[2].find_first_not_of(' '), std::string::npos) << r[0] << " has no default";
    for (const std::string& n : names(r[0])) documented.insert(n);
  }
  std::set<std::string> accepted;
  for (const std::string_view k : config_detail::kPoolKeys) accepted.insert(std::string(k));
  for (const std::string_view k : config_detail::kGlobalKeys) {
    accepted.insert(std::string(config_detail::kGlobalSection) + "." + std::string(k));
  }
  for (const std::string& k : accepted) {
    EXPECT_TRUE(documented.contains(k)) << "config key '" << k
                                        << "' has no row in docs/REFERENCE.md's configuration table";
  }
  for (const std::string& k : documented) {
    EXPECT_TRUE(accepted.contains(k))
        << "docs/REFERENCE.md's configuration table names '" << k << "', which the parser refuses";
  }
}

// The numeric defaults, as the parser leaves them in a config that sets nothing, are the ones
// the table gives.
TEST(DocsReference, NumericDefaultsAreTheParsers) {
  const ProxyConfig c = parse_config(
      "p:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n    - 127.0.0.1:1:1 a\n", "t.yml");
  const PoolConfig& p = c.pools.at(0);
  const std::vector<std::pair<std::string, std::uint64_t>> defaults = {
      {"backlog", static_cast<std::uint64_t>(p.backlog)},
      {"server_connections", p.server_connections},
      {"server_failure_limit", p.server_failure_limit},
      {"server_retry_timeout", p.server_retry_timeout_ms},
      {"rise", p.rise},
      {"redis_db", static_cast<std::uint64_t>(p.redis_db)},
      {"max_pipeline", p.max_pipeline},
      {"max_own_connections", p.max_own_connections},
      {"client_output_limit", p.client_output_limit},
      {"max_blocked_clients", p.max_blocked_clients},
      {"idle_timeout", p.idle_timeout_ms},
      {"health_check_interval", p.health_check_interval_ms},
      {"hash_balance_factor", p.hash_balance_factor},
      {"replica_max_lag", p.replica_max_lag_ms},
      {"cluster_refresh", p.cluster_refresh_ms},
      {"cluster_max_redirects", p.cluster_max_redirects},
      {"warmup_window", p.warmup_window_ms},
      {"failover_ttl", p.failover_ttl_ms},
      {"failover_track_keys", p.failover_track_keys},
      {"chash_proxy.drain_timeout", c.drain_timeout_ms},
      {"chash_proxy.stats_interval", c.stats_interval_ms},
  };
  const auto rows = rows_after(doc("REFERENCE.md"), "## Configuration");
  for (const auto& [key, value] : defaults) {
    bool found = false;
    for (const auto& r : rows) {
      if (r.size() != 3 || !names(r[0]).contains(key)) continue;
      found = true;
      // The default cell lists the row's keys' defaults in order; this one's value is in it.
      std::set<std::string> numbers;
      static const std::regex number("[0-9]+");
      for (auto it = std::sregex_iterator(r[2].begin(), r[2].end(), number);
           it != std::sregex_iterator(); ++it) {
        numbers.insert(it->str());
      }
      EXPECT_TRUE(numbers.contains(std::to_string(value)))
          << key << ": the parser's default is " << value << ", the table says '" << r[2] << "'";
    }
    EXPECT_TRUE(found) << key;
  }
}

TEST(DocsReference, EveryMetricHasARow) {
  // Every row of the reference's metric table, by family name.
  std::set<std::string> documented;
  for (const auto& r : rows_after(doc("REFERENCE.md"), "## Admin port and metrics")) {
    if (r[0].starts_with("`chash_proxy_") || r[0].starts_with("`process_")) {
      for (const std::string& n : names(r[0])) documented.insert(n);
    }
  }
  ASSERT_GT(documented.size(), 30u);
  const fs::path dir = make_test_dir("chash-docs-reference");
  std::unique_ptr<EtcdCluster> etcd;
  std::string membership;
  if (have_etcd()) {
    etcd = std::make_unique<EtcdCluster>(dir, 1);
    ASSERT_TRUE(etcd->start());
    membership = "fleet:\n  listen: 127.0.0.1:0\n  redis: true\n  membership: {etcd: " +
                 etcd->yaml_endpoints() + ", prefix: /ref, start_timeout: 3000}\n" +
                 "  servers:\n    - 127.0.0.1:1:1 f1\n";
  }
  ProxyRunner proxy;
  proxy.start(dir,
              "chash_proxy:\n  admin: 127.0.0.1:0\n"
              "cache:\n  listen: 127.0.0.1:0\n  redis: true\n  hot_cache: true\n"
              "  servers:\n    - 127.0.0.1:1:1 r1\n"
              "mc:\n  listen: 127.0.0.1:0\n  servers:\n    - 127.0.0.1:1:1 m1\n"
              "web:\n  listen: 127.0.0.1:0\n  protocol: tcp\n  servers:\n    - 127.0.0.1:1:1 w1\n" +
                  membership);
  std::set<std::string> exported;
  if (etcd) {
    // The fleet's families come once its agent has read etcd.
    ASSERT_TRUE(eventually([&] {
      return proxy->prometheus().find("chash_proxy_fleet_members{") != std::string::npos;
    }));
  }
  std::istringstream in(proxy->prometheus());
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("# TYPE ")) exported.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  ASSERT_GT(exported.size(), 30u);
  for (const std::string& m : exported) {
    EXPECT_TRUE(documented.contains(m)) << "metric " << m << " has no row in the docs' tables";
  }
  proxy.stop();
  etcd.reset();
  fs::remove_all(dir);
}

#ifdef CHASH_PROXY_PATH
// The command-line table names exactly the flags `chash-proxy --help` lists.
TEST(DocsReference, EveryFlagOfHelpHasARow) {
  std::string help;
  {
    FILE* p = ::popen((std::string(CHASH_PROXY_PATH) + " --help 2>&1").c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) help.append(buf, n);
    ASSERT_EQ(::pclose(p), 0) << help;
  }
  static const std::regex flag("(^|[ ,(`])(--?[a-zA-Z][a-z-]*)");
  auto flags_in = [](const std::string& text) {
    std::set<std::string> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), flag);
         it != std::sregex_iterator(); ++it) {
      out.insert((*it)[2]);
    }
    return out;
  };
  // --help's flags: the first column of its option lines, and a long flag anywhere ("also
  // --check").
  std::set<std::string> listed;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    for (const std::string& f : flags_in(line)) {
      if (f.starts_with("--")) listed.insert(f);
    }
    if (!line.starts_with("  -") && !line.starts_with("      --")) continue;
    const std::size_t gap = line.find("  ", line.find('-'));
    for (const std::string& f : flags_in(line.substr(0, gap))) listed.insert(f);
  }
  ASSERT_GT(listed.size(), 25u) << help;
  std::set<std::string> documented;
  const auto rows = rows_after(doc("REFERENCE.md"), "## Command line");
  ASSERT_GT(rows.size(), 15u) << "docs/REFERENCE.md lost its command-line table";
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 3u) << "a row of flag | meaning | default: " << r[0];
    for (const std::string& f : flags_in(r[0])) documented.insert(f);
  }
  for (const std::string& f : listed) {
    EXPECT_TRUE(documented.contains(f)) << f << " (--help) has no row in docs/REFERENCE.md";
  }
  for (const std::string& f : documented) {
    EXPECT_TRUE(listed.contains(f)) << f << " has a row in docs/REFERENCE.md but not in --help";
  }
}
#endif

// A heading's anchor as GitHub makes it: lower case, spaces to '-', punctuation (and here every
// non-ASCII byte) dropped; a repeated heading gets -1, -2, ...
std::set<std::string> anchors_of(const std::string& text) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  std::istringstream in(text);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) fenced = !fenced;
    if (fenced || !line.starts_with("#")) continue;
    const std::size_t start = line.find_first_not_of('#');
    if (start == std::string::npos || line[start] != ' ') continue;
    std::string a;
    for (const char ch : line.substr(start + 1)) {
      const auto c = static_cast<unsigned char>(ch);
      if (std::isalnum(c) && c < 0x80) a += static_cast<char>(std::tolower(c));
      else if (c == ' ') a += '-';
      else if (c == '-' || c == '_') a += ch;
    }
    const int n = seen[a]++;
    out.insert(n == 0 ? a : a + "-" + std::to_string(n));
  }
  return out;
}

// Every relative link of README.md and docs/**.md reaches a file, and a heading of it when it
// names one (#anchor): splitting or renaming a page cannot leave a dead link behind.
TEST(DocsReference, EveryLinkBetweenTheDocsArrives) {
  const fs::path docs = fs::path(CHASH_PROXY_DOCS).parent_path();
  std::vector<fs::path> pages = {docs.parent_path() / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(docs)) {
    if (e.path().extension() == ".md") pages.push_back(e.path());
  }
  ASSERT_GT(pages.size(), 15u);
  static const std::regex link("\\]\\(([^)#\\s]*)(#[^)\\s]*)?\\)");
  std::size_t checked = 0;
  for (const fs::path& page : pages) {
    std::ifstream f(page);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link);
         it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1], anchor = (*it)[2];
      if (target.find("://") != std::string::npos || target.starts_with("mailto:")) continue;
      const fs::path to = target.empty() ? page : page.parent_path() / target;
      ++checked;
      if (!fs::exists(to)) {
        ADD_FAILURE() << page.filename() << ": link to " << target << ": no such file";
        continue;
      }
      if (anchor.size() > 1 && to.extension() == ".md") {
        std::ifstream t(to);
        std::stringstream ts;
        ts << t.rdbuf();
        EXPECT_TRUE(anchors_of(ts.str()).contains(anchor.substr(1)))
            << page.filename() << ": link to " << target << anchor << ": no such heading";
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace chash::proxy::testing
