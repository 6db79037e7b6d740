// SPDX-License-Identifier: Apache-2.0
// Every `chash` example in README.md and docs/*.md runs as written, and where the doc shows its
// output ("$ chash ..." followed by lines), prints that output. The examples are read from the
// docs' indented code blocks here, not copied: a new example is tested without editing this
// file. They run in a directory with the files they name (keys.txt, nodes.txt, servers.txt,
// pool.txt, hot.txt, ips.txt, placements.tsv: made here), `chash` being this build's binary, and
// one substitution: /etc/nutcracker/nutcracker.yml is a file of the test's with the pool the
// example names. Not run here, each for a reason the list below gives: synopses (with
// placeholders such as FILE, [...], ...) and the commands that need live servers or etcd
// (`rebalance`, `detect --redis`, `fleet`), which their own tests run against real ones
// (tests/tools/rebalance_test.cc, detect_live_test.cc, tests/proxy/fleet_e2e_test.cc; the
// guides' commands: tests/proxy/fleet_quickstart_test.cc; the proxy docs' quick start, ACL,
// admin, TLS and memcached examples with redis-cli, curl and nc:
// tests/proxy/proxy_doc_examples_test.cc).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Example {
  std::string where;  // "README.md:104"
  std::string command;
  std::vector<std::string> shown;  // the output the doc shows ("$" examples), up to a "..."
  bool has_output = false;
};

// The examples of one markdown file: its 4-space-indented code lines that start a `chash`
// command ("chash ...", "$ chash ...", "printf ... | chash ..."), continuation lines joined.
std::vector<Example> examples(const fs::path& file) {
  std::vector<Example> out;
  std::vector<std::string> lines;
  {
    std::istringstream in(slurp(file));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  static const std::regex starts(R"(^    (\$ )?([a-z]+ .*\| )?chash [a-z])");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_search(lines[i], starts)) continue;
    Example e;
    e.where = file.filename().string() + ":" + std::to_string(i + 1);
    std::string cmd = lines[i].substr(4);
    e.has_output = cmd.starts_with("$ ");
    if (e.has_output) cmd = cmd.substr(2);
    while (cmd.ends_with("\\") && i + 1 < lines.size()) {
      cmd.pop_back();
      ++i;
      cmd += " " + lines[i].substr(lines[i].find_first_not_of(' '));
    }
    // A trailing "# comment" is the doc's, not the command's.
    const std::size_t hash = cmd.find("   #");
    if (hash != std::string::npos) cmd = cmd.substr(0, hash);
    e.command = cmd;
    if (e.has_output) {
      for (std::size_t j = i + 1;
           j < lines.size() && lines[j].starts_with("    ") && !lines[j].starts_with("    $ ");
           ++j) {
        if (lines[j].substr(4) == "...") break;
        e.shown.push_back(lines[j].substr(4));
      }
      while (!e.shown.empty() && e.shown.back().empty()) e.shown.pop_back();
    }
    out.push_back(e);
  }
  return out;
}

// Why an example is not run here, or empty.
std::string not_run(const Example& e) {
  static const std::regex synopsis(R"(\[|\.\.\.|\bFILE\b|\bSPEC\b|<subcommand>|\(--| P\b)");
  if (std::regex_search(e.command, synopsis)) return "a synopsis";
  if (e.command.find("chash rebalance") != std::string::npos) return "needs live Redis nodes";
  if (e.command.find("--redis ") != std::string::npos) return "needs live Redis nodes";
  if (e.command.find("chash fleet") != std::string::npos) return "needs etcd";
  return {};
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(DocExamples, EveryChashExampleRunsAndPrintsWhatTheDocShows) {
  const fs::path root = CHASH_SOURCE_DIR;
  std::vector<Example> all;
  std::vector<fs::path> docs = {root / "README.md"};
  for (const auto& entry : fs::directory_iterator(root / "docs")) {
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  std::sort(docs.begin() + 1, docs.end());
  for (const fs::path& f : docs) {
    const auto e = examples(f);
    all.insert(all.end(), e.begin(), e.end());
  }
  ASSERT_GE(all.size(), 20u) << "the docs' examples were not found";

  const fs::path dir =
      fs::temp_directory_path() / ("chash-doc-examples-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
  };
  std::string keys, hot, ips;
  for (int i = 0; i < 5000; ++i) keys += "user:" + std::to_string(i) + "\n";
  for (int i = 0; i < 2000; ++i) hot += (i % 10 == 0 ? "user:hot" : "k" + std::to_string(i)) + "\n";
  for (int i = 0; i < 200; ++i)
    ips += "10.1." + std::to_string(i / 50) + "." + std::to_string(i) + "\n";
  write("keys.txt", keys);
  write("hot.txt", hot);
  write("ips.txt", ips);
  write("nodes.txt", "cache-1\ncache-2\ncache-3\ncache-4\n");
  write("servers.txt", "10.0.0.1:11211\n10.0.0.2:11211\n10.0.0.3:11211\n");
  write("pool.txt", "10.0.0.1:6379\n10.0.0.2:6379\n10.0.0.3:6379\n10.0.0.4:6379\n");
  write("nutcracker.yml",
        "beta:\n  listen: 127.0.0.1:22122\n  hash: fnv1a_64\n  hash_tag: \"{}\"\n"
        "  distribution: ketama\n  redis: true\n  servers:\n   - 127.0.0.1:6380:1 server1\n"
        "   - 127.0.0.1:6381:1 server2\n");
  const std::string chash = CHASH_CLI_PATH;
  // placements.tsv: a fleet's keys as twemproxy (fnv1a_32) placed them on servers.txt's nodes,
  // what the detect examples read.
  ASSERT_EQ(std::system(("cd " + dir.string() + " && " + chash +
                         " route --preset twemproxy --hash fnv1a_32 --nodes-file servers.txt "
                         "--format csv < keys.txt | tail -n +2 | tr , '\\t' > placements.tsv")
                            .c_str()),
            0);

  std::size_t ran = 0, compared = 0;
  for (const Example& e : all) {
    if (const std::string why = not_run(e); !why.empty()) {
      std::cout << "not run (" << why << "): " << e.where << "  " << e.command << "\n";
      continue;
    }
    std::string cmd =
        std::regex_replace(e.command, std::regex(R"((^|\| )chash )"), "$1" + chash + " ");
    cmd = std::regex_replace(cmd, std::regex("/etc/nutcracker/nutcracker.yml"), "nutcracker.yml");
    const fs::path out = dir / "out.txt", err = dir / "err.txt";
    const std::string full = "cd " + dir.string() + " && timeout 120 bash -c '" +
                             std::regex_replace(cmd, std::regex("'"), "'\\''") + "' >" +
                             out.string() + " 2>" + err.string() + " </dev/null";
    // Examples that read keys read them from the file the command names or from a pipe;
    // /dev/null as stdin otherwise (sweep with nothing given would generate keys only on a
    // terminal).
    const int status = std::system(full.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    EXPECT_EQ(code, 0) << e.where << ": " << e.command << "\n" << slurp(err);
    ++ran;
    if (!e.has_output || e.shown.empty()) continue;
    if (e.command.starts_with("chash detect")) continue;  // its first line carries the time taken
    const auto got = split_lines(slurp(out));
    ASSERT_GE(got.size(), e.shown.size()) << e.where << ": " << slurp(out);
    for (std::size_t i = 0; i < e.shown.size(); ++i) {
      EXPECT_EQ(got[i], e.shown[i]) << e.where << ": line " << i + 1 << " of the output";
    }
    ++compared;
  }
  std::cout << "doc examples: " << ran << " run, " << compared << " outputs compared\n";
  EXPECT_GE(ran, 20u);
  EXPECT_GE(compared, 2u);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
