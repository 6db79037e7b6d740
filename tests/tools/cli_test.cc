// SPDX-License-Identifier: Apache-2.0
// The chash command-line tool, run as a user runs it: exit codes, every output format parses,
// numbers agree with the library.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "chash/analysis.h"
#include "chash/chash.h"
#include "chash/preset.h"
#include "chash/version.h"

namespace chash {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("chash-cli-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult run(const std::string& args, const std::string& input = "") {
    const fs::path in = dir_ / "stdin", out = dir_ / "stdout", err = dir_ / "stderr";
    std::ofstream(in, std::ios::binary) << input;
    const std::string cmd = std::string(CHASH_CLI_PATH) + " " + args + " <" + in.string() + " >" +
                            out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  static std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::stringstream ss(s);
    std::string l;
    while (std::getline(ss, l)) v.push_back(l);
    return v;
  }
  fs::path dir_;
};

std::string keys_text(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "user:" + std::to_string(i) + "\n";
  return s;
}

// ---- route / slot / presets ------------------------------------------------------------------------

TEST_F(Cli, RoutePrintsOneNodeNamePerKeyAsTheLibraryPicks) {
  const auto r = run("route --algo ring --nodes cache-a,cache-b,cache-c", keys_text(500));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto got = lines(r.out);
  ASSERT_EQ(got.size(), 500u);
  const auto nodes = make_nodes({"cache-a", "cache-b", "cache-c"});
  const auto t = RingTable::build(nodes);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(got[i], nodes[t.pick(hash::xxh3_64("user:" + std::to_string(i)))].name);
  }
}

TEST_F(Cli, RouteWithAPresetMatchesTheLibraryPreset) {
  const auto nf =
      write("nodes.txt",
            "# memcached pool\n10.0.0.1:11211 1\n\n10.0.0.2:11211 2  # bigger\n10.0.0.3:11211\n");
  const auto r = run("route --preset ketama --nodes-file " + nf.string(), keys_text(300));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<Node> nodes = {
      {"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 2}, {"10.0.0.3:11211", 1}};
  const auto p = make_preset("ketama", nodes);
  const auto got = lines(r.out);
  ASSERT_EQ(got.size(), 300u);
  for (int i = 0; i < 300; ++i)
    EXPECT_EQ(got[i], nodes[p->route("user:" + std::to_string(i))].name);
}

TEST_F(Cli, RouteReplicasAreDistinctAndTabSeparated) {
  const auto r = run("route --algo jump --nodes a,b,c,d,e --replicas 3", keys_text(100));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& l : lines(r.out)) {
    std::set<std::string> names;
    std::stringstream ss(l);
    std::string n;
    while (std::getline(ss, n, '\t')) names.insert(n);
    EXPECT_EQ(names.size(), 3u) << l;
  }
  // More replicas than nodes: every node, once.
  const auto all = run("route --algo ring --nodes a,b --replicas 5", "k\n");
  EXPECT_EQ(all.out == "a\tb\n" || all.out == "b\ta\n", true) << all.out;
}

TEST_F(Cli, JumpBackAlgorithmsRouteAsTheLibraryInEveryCommand) {
  // The names added after the first nine go wherever --algo goes: route answers are the
  // library's, and analyze, migrate, sweep, plot and bench accept them.
  std::vector<Node> nodes;
  for (int i = 0; i < 7; ++i) nodes.push_back({"n" + std::to_string(i), 1});
  for (const std::string algo : {"jumpback", "memento-jumpback"}) {
    const auto r = run("route --algo " + algo + " --nodes n0,n1,n2,n3,n4,n5,n6", keys_text(300));
    ASSERT_EQ(r.code, 0) << algo << ": " << r.err;
    RoutingSpec spec;
    spec.algorithm = algo;
    const Router router = Router::build(spec, nodes);
    const auto got = lines(r.out);
    ASSERT_EQ(got.size(), 300u);
    for (int i = 0; i < 300; ++i) {
      EXPECT_EQ(got[i], nodes[router.route("user:" + std::to_string(i))].name) << algo << " " << i;
    }
    for (const std::string& args :
         {"analyze --algo " + algo + " --nodes a,b,c,d --synthetic 2000",
          "migrate --algo " + algo + " --nodes a,b,c,d --add e --synthetic 2000",
          "sweep --algo " + algo + " --param nodes --values 2,5 --synthetic 2000",
          "bench --algos " + algo + " --node-counts 10 --threads 1 --lookups 2000"}) {
      const auto x = run(args);
      EXPECT_EQ(x.code, 0) << args << ": " << x.err;
    }
  }
  // jumpback moves only the new node's share when a node joins, as jump.
  const auto m =
      run("migrate --algo jumpback --nodes a,b,c,d --add e --synthetic 20000 "
          "--format json");
  ASSERT_EQ(m.code, 0) << m.err;
  const auto j = nlohmann::json::parse(m.out);
  EXPECT_NEAR(j["moved_fraction"].get<double>(), 0.2, 0.02);
  for (const auto& x : j["moves"]) EXPECT_EQ(x["to"], "e");
  const auto weighted = write("weighted.txt", "a 2\nb\n");
  const auto bad = run("route --algo jumpback --nodes-file " + weighted.string(), "k\n");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("jumpback is unweighted"), std::string::npos) << bad.err;
}

TEST_F(Cli, RouteCsvAndJsonParse) {
  const auto csv = run("route --algo maglev --nodes a,b,c --format csv", "k1\nk,2\n\"q\"\n");
  ASSERT_EQ(csv.code, 0) << csv.err;
  const auto l = lines(csv.out);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], "key,node");
  EXPECT_EQ(l[2].substr(0, 6), "\"k,2\",");
  EXPECT_EQ(l[3].substr(0, 7), "\"\"\"q\"\"\"");
  const auto json =
      run("route --algo maglev --nodes a,b,c --format json --replicas 2", "k1\n\xff\xfe\n");
  ASSERT_EQ(json.code, 0) << json.err;
  for (const auto& line : lines(json.out)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("node"));
    EXPECT_EQ(j["replicas"].size(), 2u);
  }
}

TEST_F(Cli, RouteReadsKeysFromAFileAndSyntheticKeys) {
  const auto kf = write("keys.txt", "a\r\nb\nc");  // CRLF and a last line without newline
  const auto r = run("route --algo ring --nodes x,y --keys-file " + kf.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out).size(), 3u);
  const auto r2 = run("route --algo ring --nodes x,y");  // empty stdin
  EXPECT_EQ(r2.code, 0);
  EXPECT_EQ(r2.out, "");
  const auto s = run("route --algo ring --nodes x,y --synthetic 1000 --seed 7");
  EXPECT_EQ(lines(s.out).size(), 1000u);
  EXPECT_EQ(s.out, run("route --algo ring --nodes x,y --synthetic 1000 --seed 7").out);
  EXPECT_NE(s.out, run("route --algo ring --nodes x,y --synthetic 1000 --seed 8").out);
}

// route, analyze and migrate read keys in batches (KeySource::next_batch, Router::route_batch):
// over input longer than the 64 KiB read buffer, with CRLF, empty and long lines and a last line
// without a newline, each key's node is its first choice routed one key at a time (the
// --replicas path), and an error names the right line.
TEST_F(Cli, BatchedRoutingEqualsOneKeyAtATimeOverLongInput) {
  std::string text;
  int count = 0;
  for (int i = 0; text.size() < 200000; ++i, ++count) {
    if (i % 97 == 0) {
      text += "\n";  // an empty key
    } else if (i % 89 == 0) {
      text += std::string(300 + i % 700, static_cast<char>('a' + i % 26)) + "\n";
    } else {
      text += "user:" + std::to_string(i * 7919) + (i % 5 == 0 ? "\r\n" : "\n");
    }
  }
  text += "last-line-without-newline";
  ++count;
  const auto kf = write("keys.txt", text);
  for (const std::string routing :
       {"--preset ketama", "--preset guava", "--algo jump", "--algo ring --hash md5"}) {
    const std::string args = "route " + routing +
                             " --nodes 10.0.0.1:11211,10.0.0.2:11211,"
                             "10.0.0.3:11211,10.0.0.4:11211 --keys-file " +
                             kf.string();
    const auto batched = run(args);
    ASSERT_EQ(batched.code, 0) << routing << ": " << batched.err;
    const auto one = run(args + " --replicas 2");
    ASSERT_EQ(one.code, 0) << routing << ": " << one.err;
    const auto b = lines(batched.out), o = lines(one.out);
    ASSERT_EQ(b.size(), static_cast<std::size_t>(count)) << routing;
    ASSERT_EQ(o.size(), b.size()) << routing;
    for (std::size_t i = 0; i < b.size(); ++i) {
      ASSERT_EQ(b[i], o[i].substr(0, o[i].find('\t'))) << routing << ", line " << i + 1;
    }
    // analyze counts the same owners.
    const auto j = nlohmann::json::parse(run("analyze " + routing +
                                             " --nodes 10.0.0.1:11211,10.0.0.2:11211,"
                                             "10.0.0.3:11211,10.0.0.4:11211 --format json "
                                             "--keys-file " +
                                             kf.string())
                                             .out);
    for (const auto& n : j["nodes"]) {
      const auto name = n["node"].get<std::string>();
      EXPECT_EQ(n["keys"].get<std::int64_t>(), std::count(b.begin(), b.end(), name)) << routing;
    }
  }
  // nginx-ip-hash cannot route a non-address: the error names its line, deep in a batch.
  std::string ips;
  for (int i = 0; i < 3000; ++i)
    ips += "10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250) + "\n";
  ips += "not-an-address\n10.9.9.9\n";
  const auto bad = run("route --preset nginx-ip-hash --nodes 10.0.0.1:80,10.0.0.2:80", ips);
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("line 3001: cannot route key \"not-an-address\""), std::string::npos)
      << bad.err;
}

TEST_F(Cli, ErrorsAreClearWithConventionalExitCodes) {
  auto r = run("route --algo nope --nodes a", "k\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown algorithm \"nope\""), std::string::npos) << r.err;
  r = run("route --nodes a", "k\n");
  EXPECT_EQ(r.code, 2) << r.err;
  r = run("route --algo ring --preset ketama --nodes a", "k\n");
  EXPECT_EQ(r.code, 2) << r.err;
  r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
  r = run("route --algo ring --nodes a --format yaml", "k\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--format: 'yaml' is not one of table|csv|json"), std::string::npos) << r.err;
  // A misspelt subcommand or flag gets the nearest name.
  r = run("rout");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown subcommand 'rout' (did you mean 'route'?)"), std::string::npos)
      << r.err;
  r = run("route --algo ring --node a", "k\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option '--node' (did you mean '--nodes'?)"), std::string::npos)
      << r.err;
  r = run("route --algo ring --nodes a,,b", "k\n");
  EXPECT_EQ(r.code, 1);
  const auto bad = write("bad.txt", "a 1\nb twelve\n");
  r = run("route --algo ring --nodes-file " + bad.string(), "k\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad.txt:2"), std::string::npos) << r.err;
  // An unreadable node list is bad input (1, as docs/CLI.md says), not a usage error (2).
  r = run("route --algo ring --nodes-file " + (dir_ / "missing.txt").string(), "k\n");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot read nodes file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  r = run("route --ring hash=nope --nodes a", "k\n");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.find("murmur64a"), r.err.rfind("murmur64a")) << "listed twice: " << r.err;
  const auto dup = write("dup.txt", "a\nb\na\n");
  r = run("route --algo ring --nodes-file " + dup.string(), "k\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("duplicate node name \"a\""), std::string::npos) << r.err;
  r = run("route --algo jump --nodes a,b --vnodes 10", "k\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("vnodes does not apply to algorithm jump"), std::string::npos);
  r = run("route --preset nginx-ip-hash --nodes a,b", "10.0.0.1\nnot-an-ip\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.out).size(), 1u);  // the good line before the bad one was written
  r = run("route --algo ring --nodes a --hash-tag x", "k\n");
  EXPECT_EQ(r.code, 1);
  r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

// The version comes from project(chash VERSION ...) through chash/version.h, not its own string.
TEST_F(Cli, VersionIsTheProjectVersion) {
  const auto r = run("--version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "chash " CHASH_VERSION_STRING "\n");
  EXPECT_EQ(version(), CHASH_VERSION_STRING);
}

TEST_F(Cli, HashTagHashesOnlyTheTag) {
  const auto r = run("route --algo ring --nodes a,b,c,d,e,f,g --hash-tag {}",
                     "{user1}:x\n{user1}:y\n{user1}:zzz\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto l = lines(r.out);
  EXPECT_EQ(l[0], l[1]);
  EXPECT_EQ(l[1], l[2]);
}

// --balance-factor: keys are assigned in order and stay assigned; no node takes more than the
// factor times the average (+1 for the key being placed), and the answers are the library's.
TEST_F(Cli, BalanceFactorBoundsEveryNodesShareOfAHotKey) {
  std::string input;
  for (int i = 0; i < 600; ++i) input += (i % 2 == 0 ? "hot\n" : "k" + std::to_string(i) + "\n");
  const auto r = run("route --algo maglev --nodes a,b,c,d,e,f --balance-factor 125", input);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto l = lines(r.out);
  ASSERT_EQ(l.size(), 600u);
  std::map<std::string, int> per_node;
  for (const auto& n : l) ++per_node[n];
  for (const auto& [n, c] : per_node) EXPECT_LE(c, 125 + 1) << n;  // 1.25 * 600 / 6
  RoutingSpec spec;
  spec.algorithm = "maglev";
  spec.balance_factor = 125;
  const auto nodes = make_nodes({"a", "b", "c", "d", "e", "f"});
  const Router router = Router::build(spec, nodes);
  std::vector<std::uint64_t> loads(nodes.size(), 0);
  std::stringstream in(input);
  std::string key;
  for (std::size_t i = 0; std::getline(in, key); ++i) {
    const NodeId id = router.route_bounded(key, loads);
    ++loads[id];
    ASSERT_EQ(l[i], nodes[id].name) << "key " << i;
  }
  // Without the factor every "hot" line goes to one node.
  const auto plain = run("route --algo maglev --nodes a,b,c,d,e,f", input);
  std::map<std::string, int> plain_per_node;
  for (const auto& n : lines(plain.out)) ++plain_per_node[n];
  int most = 0;
  for (const auto& [n, c] : plain_per_node) most = std::max(most, c);
  EXPECT_GE(most, 300);
  // analyze agrees: max/mean at most 1.25 (+1 key) with the factor.
  const auto a =
      run("analyze --algo maglev --nodes a,b,c,d,e,f --balance-factor 125 --format json", input);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_LE(nlohmann::json::parse(a.out)["max_over_mean"].get<double>(), 1.26);
  EXPECT_EQ(run("route --algo maglev --nodes a,b --balance-factor 99", "k\n").code, 1);
}

TEST_F(Cli, PresetOptionsAreKeyValuePairsForPresetsOnly) {
  auto r = run("route --algo ring --nodes a,b --preset-option distribution=CONSISTENT", "k\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("apply to presets"), std::string::npos) << r.err;
  r = run("route --preset ketama --nodes a,b --preset-option distribution", "k\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("KEY=VALUE"), std::string::npos) << r.err;
  // libmemcached's behaviours, in order: modula's defaults + KETAMA_WEIGHTED + KETAMA_SPY is
  // exactly the ketama-spy preset.
  std::string in;
  for (int i = 0; i < 300; ++i) in += "key" + std::to_string(i) + "\n";
  const std::string nodes = " --nodes 10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11212,10.0.0.4";
  const auto spy = run("route --preset ketama-spy" + nodes, in);
  const auto set = run("route --preset libmemcached-modula" + nodes +
                           " --preset-option ketama_weighted=true"
                           " --preset-option distribution=CONSISTENT_KETAMA_SPY",
                       in);
  ASSERT_EQ(spy.code, 0) << spy.err;
  ASSERT_EQ(set.code, 0) << set.err;
  EXPECT_EQ(spy.out, set.out);
  const auto modula = run("route --preset libmemcached-modula" + nodes, in);
  EXPECT_NE(modula.out, set.out);
  r = run("route --preset libmemcached-modula" + nodes + " --preset-option distribution=RANDOMISH",
          "k\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("CONSISTENT_KETAMA_SPY"), std::string::npos)
      << r.err;  // lists the valid ones
}

TEST_F(Cli, SlotMatchesRedis) {
  const auto r = run("slot", "123456789\n{user1000}.following\n{user1000}.followers\nfoo{}{bar}\n");
  ASSERT_EQ(r.code, 0);
  const auto l = lines(r.out);
  EXPECT_EQ(l[0], "12739");
  EXPECT_EQ(l[1], l[2]);
  EXPECT_EQ(l[3], std::to_string(redis_key_slot("foo{}{bar}")));
}

TEST_F(Cli, PresetsListsEveryPresetInEveryFormat) {
  auto r = run("presets");
  ASSERT_EQ(r.code, 0);
  // One line per preset, and one more with the --ring spec of each of the 4 article rings.
  EXPECT_EQ(lines(r.out).size(), preset_list().size() + 4);
  EXPECT_NE(r.out.find("twemproxy-modula"), std::string::npos);
  EXPECT_NE(r.out.find("= --ring 'points={name}_v{i}; from=0; vnodes=150;"), std::string::npos);
  r = run("presets --format json");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.size(), preset_list().size());
  std::size_t specs = 0;
  for (const auto& p : j) specs += p["ring_spec"].is_string() ? 1 : 0;
  EXPECT_EQ(specs, 4u);
  r = run("presets --format csv");
  EXPECT_EQ(lines(r.out).size(), preset_list().size() + 1);
}

// A hand-written ring through --ring: the article presets' printed specs route as the presets,
// in route, analyze, migrate, sweep and plot; bad specs name the field.
TEST_F(Cli, RingSpecRoutesAsTheArticlePresetAndWorksInEveryCommand) {
  const std::string nodes = "--nodes 123.111.0.0,123.101.3.1,111.20.35.2,123.98.26.3";
  const std::string spec = "'points={name}#{i}; bare=first; vnodes=3; hash=java-hashcode; abs=yes'";
  const auto preset = run("route --preset java-hashcode-ring " + nodes, keys_text(400));
  const auto ring = run("route --ring " + spec + " " + nodes, keys_text(400));
  ASSERT_EQ(ring.code, 0) << ring.err;
  EXPECT_EQ(ring.out, preset.out);
  EXPECT_EQ(lines(ring.out).size(), 400u);
  // --vnodes overrides the spec's count. (Synthetic keys: "user:N" keys have String.hashCodes
  // so close together that they share one arc whatever the count — article 002's skew.)
  const auto few = run("route --ring " + spec + " --synthetic 400 " + nodes);
  const auto more = run("route --ring " + spec + " --vnodes 100 --synthetic 400 " + nodes);
  const auto more_preset =
      run("route --preset java-hashcode-ring --vnodes 100 --synthetic 400 " + nodes);
  EXPECT_TRUE(more.out == more_preset.out);
  EXPECT_TRUE(more.out != few.out);

  const auto analyze =
      run("analyze --ring 'vnodes=100; hash=md5-int32' --nodes a,b,c,d "
          "--synthetic 20000 --format json");
  ASSERT_EQ(analyze.code, 0) << analyze.err;
  EXPECT_EQ(nlohmann::json::parse(analyze.out)["keys"], 20000);
  const auto migrate =
      run("migrate --ring 'vnodes=150; hash=guava-long' --nodes a,b,c,d --add e "
          "--synthetic 20000 --format json");
  ASSERT_EQ(migrate.code, 0) << migrate.err;
  const auto mj = nlohmann::json::parse(migrate.out);
  EXPECT_NEAR(mj["moved_fraction"].get<double>(), 0.2, 0.05);
  for (const auto& m : mj["moves"]) EXPECT_EQ(m["to"], "e");
  const auto sweep =
      run("sweep --ring 'points={name}_v{i}; hash=md5-int32' --values 1,10,150 "
          "--synthetic 20000 --format json");
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  const auto sj = nlohmann::json::parse(sweep.out);
  ASSERT_EQ(sj["points"].size(), 3u);
  EXPECT_GT(sj["points"][0]["max_over_mean"].get<double>(),
            sj["points"][2]["max_over_mean"].get<double>());
  EXPECT_NE(sj["ring"].get<std::string>().find("hash=md5-int32"), std::string::npos);
  EXPECT_EQ(run("sweep --ring 'vnodes=10' --param probes --values 1 --synthetic 10").code, 1);
  const fs::path svg = dir_ / "ring.svg";
  const auto plot =
      run("plot --kind sweep --ring 'hash=java-hashcode; abs=yes' --param vnodes --values "
          "1,3,50 --synthetic 5000 --out " +
          svg.string());
  ASSERT_EQ(plot.code, 0) << plot.err;
  EXPECT_NE(slurp(svg).find("</svg>"), std::string::npos);

  const auto bad = run("route --ring 'vnodes=3; hash=sha1' --nodes a,b", "k\n");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("ring spec: hash: unknown hash \"sha1\""), std::string::npos) << bad.err;
  const auto both = run("route --ring 'vnodes=3' --preset ketama --nodes a,b", "k\n");
  EXPECT_EQ(both.code, 2) << both.err;
  const auto with_hash = run("route --ring 'vnodes=3' --hash md5 --nodes a,b", "k\n");
  EXPECT_EQ(with_hash.code, 1);
  EXPECT_NE(with_hash.err.find("--hash"), std::string::npos) << with_hash.err;
}

// ---- analyze / migrate / sweep / bench -------------------------------------------------------------

TEST_F(Cli, AnalyzeAgreesWithTheLibrary) {
  const auto r = run("analyze --algo ring --nodes a,b,c,d --synthetic 20000 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["keys"], 20000);
  const auto nodes = make_nodes({"a", "b", "c", "d"});
  const auto t = RingTable::build(nodes);
  LoadCounter load(4);
  // The CLI's synthetic keys are "key:" + 16 hex digits; recompute them through `route`.
  const auto routed = lines(run("route --algo ring --nodes a,b,c,d --synthetic 20000").out);
  std::uint64_t sum = 0;
  for (const auto& n : j["nodes"]) sum += n["keys"].get<std::uint64_t>();
  EXPECT_EQ(sum, 20000u);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto count = std::count(routed.begin(), routed.end(), nodes[i].name);
    EXPECT_EQ(j["nodes"][i]["keys"], count);
  }
  std::vector<std::uint64_t> counts;
  for (const auto& n : j["nodes"]) counts.push_back(n["keys"]);
  EXPECT_NEAR(j["max_over_mean"].get<double>(), load_stats(counts, nodes).max_over_mean, 1e-12);
  const auto owned = owned_fractions(AnyTable(t));
  EXPECT_NEAR(j["nodes"][0]["owned_fraction"].get<double>(), (*owned)[0], 1e-12);
  EXPECT_EQ(run("analyze --algo ring --nodes a,b --synthetic 100 --format csv").code, 0);
  const auto table = run("analyze --preset ketama --nodes a,b --synthetic 1000");
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("max/mean"), std::string::npos);
}

TEST_F(Cli, MigrateShowsModuloMovingMostAndTheRingOnlyTheNewShare) {
  auto r = run("migrate --algo modulo --nodes a,b,c,d --add e --synthetic 20000 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["moved_fraction"].get<double>(), 0.8, 0.02);
  EXPECT_NEAR(j["optimal_fraction"].get<double>(), 0.2, 1e-9);
  r = run("migrate --algo ring --nodes a,b,c,d --add e --synthetic 20000 --format json");
  j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["moved_fraction"].get<double>(), 0.2, 0.03);
  double ranges = 0;
  for (const auto& x : j["ranges"]) {
    EXPECT_EQ(x["to"], "e");
    ranges += x["fraction"].get<double>();
  }
  EXPECT_NEAR(ranges, j["moved_fraction"].get<double>(), 0.02);
  for (const auto& m : j["moves"]) EXPECT_EQ(m["to"], "e");
}

TEST_F(Cli, MigrateDownMovesOnlyTheDownNodesKeys) {
  const auto r =
      run("migrate --algo maglev --nodes a,b,c,d --down b --synthetic 20000 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& m : j["moves"]) EXPECT_EQ(m["from"], "b");
  EXPECT_NEAR(j["moved_fraction"].get<double>(), 0.25, 0.03);
  const auto two = write("after.txt", "a\nb\nc\n");
  const auto f = run("migrate --algo ring --nodes a,b,c,d --after-nodes-file " + two.string() +
                     " --synthetic 5000 --format csv");
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(lines(f.out)[0], "from,to,keys,of all keys");
  EXPECT_EQ(run("migrate --algo ring --nodes a,b --synthetic 10").code, 2);  // no change given
  EXPECT_EQ(run("migrate --algo ring --nodes a,b --remove zz --synthetic 10").code, 1);
  EXPECT_EQ(run("migrate --preset ketama --nodes a,b,c --add d --synthetic 2000").code, 0);
}

// A preset with a node down: only that node's keys move, each to its next choice in the peer's
// order (the batch routes first choices, then walks the down node's keys on).
TEST_F(Cli, MigratePresetDownMovesOnlyItsKeysToTheirNextChoice) {
  const auto r =
      run("migrate --preset ketama --nodes 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4 "
          "--down 10.0.0.2 --synthetic 20000 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::uint64_t moved = 0;
  for (const auto& m : j["moves"]) {
    EXPECT_EQ(m["from"], "10.0.0.2");
    moved += m["keys"].get<std::uint64_t>();
  }
  const auto routed = lines(run("route --preset ketama --nodes 10.0.0.1,10.0.0.2,10.0.0.3,"
                                "10.0.0.4 --synthetic 20000")
                                .out);
  EXPECT_EQ(moved,
            static_cast<std::uint64_t>(std::count(routed.begin(), routed.end(), "10.0.0.2")));
}

TEST_F(Cli, SweepTableCsvJson) {
  const auto r = run("sweep --values 1,10,160 --synthetic 20000 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_GT(j["points"][0]["max_over_mean"].get<double>(),
            j["points"][2]["max_over_mean"].get<double>());
  const auto csv = run(
      "sweep --algo maglev --param table-size --values 251,65537 --synthetic 5000 --format csv");
  EXPECT_EQ(lines(csv.out).size(), 3u) << csv.err;
  EXPECT_EQ(run("sweep --param balance-factor --values 100,150 --synthetic 5000").code, 0);
  EXPECT_EQ(run("sweep --param nodes --values 0 --synthetic 10").code, 1);
  EXPECT_EQ(run("sweep --param wrong --values 1 --synthetic 10").code, 1);
}

// sweep and plot measure the keys they are given — on stdin or in --keys-file — not synthetic
// ones; synthetic keys only when asked (--synthetic) or when stdin is a terminal.
TEST_F(Cli, SweepAndPlotMeasureTheKeysOnStdin) {
  std::string same;  // one key, 2000 times: every request on one node of ten
  for (int i = 0; i < 2000; ++i) same += "user:42\n";
  const auto piped = run("sweep --param nodes --values 10 --format json", same);
  ASSERT_EQ(piped.code, 0) << piped.err;
  const auto pj = nlohmann::json::parse(piped.out);
  EXPECT_EQ(pj["keys"], 2000);
  EXPECT_EQ(pj["synthetic"], false);
  EXPECT_DOUBLE_EQ(pj["points"][0]["max_over_mean"].get<double>(), 10.0);
  const fs::path file = write("keys.txt", same);
  const auto filed = run("sweep --param nodes --values 10 --keys-file " + file.string());
  ASSERT_EQ(filed.code, 0) << filed.err;
  EXPECT_NE(filed.out.find("2000 keys from " + file.string()), std::string::npos) << filed.out;
  EXPECT_NE(filed.out.find("10.000"), std::string::npos) << filed.out;
  const auto ring = run("sweep --ring 'vnodes=10' --param nodes --values 10 --format json", same);
  ASSERT_EQ(ring.code, 0) << ring.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(ring.out)["points"][0]["max_over_mean"].get<double>(),
                   10.0);
  // Synthetic keys when asked, and said so.
  const auto synthetic = run("sweep --param nodes --values 10 --synthetic 2000", same);
  ASSERT_EQ(synthetic.code, 0) << synthetic.err;
  EXPECT_NE(synthetic.out.find("2000 synthetic keys (seed 1)"), std::string::npos) << synthetic.out;
  // Nothing on stdin (a pipe or /dev/null): an error saying where no keys came from.
  for (const std::string args :
       {"sweep --values 10", "sweep --ring vnodes=10 --values 10", "plot --kind sweep --values 10",
        "plot --kind load --algo ring --nodes a,b",
        "plot --kind moves --algo jump --nodes a,b --add c"}) {
    const auto none = run(args);
    EXPECT_EQ(none.code, 1) << args;
    EXPECT_NE(none.err.find("no keys in stdin"), std::string::npos) << args << ": " << none.err;
  }
  // plot --kind sweep draws the keys given: one hot key is not the synthetic picture.
  const fs::path a = dir_ / "a.svg", b = dir_ / "b.svg";
  ASSERT_EQ(run("plot --kind sweep --param nodes --values 2,5,10 --out " + a.string(), same).code,
            0);
  ASSERT_EQ(
      run("plot --kind sweep --param nodes --values 2,5,10 --synthetic 2000 --out " + b.string())
          .code,
      0);
  EXPECT_NE(slurp(a), slurp(b));
  // --help says which keys are used.
  EXPECT_NE(run("sweep --help").out.find("synthetic keys when stdin is a terminal"),
            std::string::npos);
}

// The bounded-loads sweep's "moved on +1" is bounded loads' own: the same requests with one node
// more, both bounded — so it changes with the factor (the plain algorithm's would not).
TEST_F(Cli, BoundedSweepMovedOnAddIsBoundedLoads) {
  const auto r =
      run("sweep --param balance-factor --values 100,125,1000 --synthetic 20000 "
          "--format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 3u);
  const double tight = j["points"][0]["moved_on_add"], loose = j["points"][2]["moved_on_add"];
  EXPECT_GT(tight, loose) << r.out;  // a tight bound reshuffles spilled requests too
  // A bound of 10x never binds: the plain ring's movement (about 1/11 of the keys; the hot key
  // is 10% of the requests and moves with its key or not at all).
  const auto plain = run("sweep --param nodes --values 10 --synthetic 20000 --format json");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_GT(loose, 0.0);
  EXPECT_LT(loose, 0.3);
  EXPECT_NE(tight, nlohmann::json::parse(plain.out)["points"][0]["moved_on_add"].get<double>());
}

TEST_F(Cli, BenchReportsEveryAlgorithmAndNodeCount) {
  const auto r = run(
      "bench --algos ring,jump --node-counts 10,100 --threads 1,2 --lookups 20000 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);
  for (const auto& x : j["results"]) {
    EXPECT_GT(x["ns_per_lookup"].get<double>(), 0);
    EXPECT_EQ(x["lookups_per_s_by_threads"].size(), 2u);
  }
  EXPECT_EQ(run("bench --preset ketama --node-counts 10 --lookups 2000").code, 0);
  EXPECT_EQ(run("bench --threads 0").code, 1);
}

// ---- plot / demo ---------------------------------------------------------------------------------

bool renders(const fs::path& svg) {
  // rsvg-convert (librsvg, from scripts/bootstrap.sh) parses the XML and draws it.
  const std::string cmd =
      "rsvg-convert " + svg.string() + " -o " + svg.string() + ".png 2>/dev/null";
  return std::system(cmd.c_str()) == 0 && fs::file_size(svg.string() + ".png") > 1000;
}

TEST_F(Cli, EveryPlotIsWellFormedSvg) {
  const auto out = dir_ / "p.svg";
  for (const std::string args :
       {"plot --kind ring --algo ring --nodes a,b,c --vnodes 10",
        "plot --kind ring --preset ketama --nodes a,b,c",
        "plot --kind load --algo ring --nodes a,b,c --synthetic 5000",
        "plot --kind moves --algo ring --nodes a,b,c --add d",
        "plot --kind moves --algo jump --nodes a,b,c --add d --synthetic 5000",
        "plot --kind sweep --values 1,10,100 --synthetic 5000"}) {
    const auto r = run(args + " --out " + out.string());
    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    EXPECT_TRUE(renders(out)) << args;
  }
  EXPECT_EQ(run("plot --kind ring --algo jump --nodes a,b").code, 1);
  EXPECT_EQ(run("plot --kind ring --preset twemproxy-modula --nodes a,b").code, 1);
  // Hostile node names are escaped.
  const auto nf = write("n.txt", "<script>&\"x\n\xff\xfe\n");
  EXPECT_EQ(
      run("plot --kind ring --algo ring --nodes-file " + nf.string() + " --out " + out.string())
          .code,
      0);
  EXPECT_TRUE(renders(out));
  EXPECT_EQ(slurp(out).find("<script>"), std::string::npos);
}

TEST_F(Cli, DemoPrintsTheReportAndWritesThePlots) {
  const auto plots = dir_ / "plots";
  const auto r = run("demo --keys 20000 --out-dir " + plots.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* s :
       {"4 to 5 nodes", "Virtual nodes", "Weighted", "fails", "Replicas", "Bounded loads"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  EXPECT_NE(r.out.find("keys moved that were not on cache-2: 0"), std::string::npos);
  int svgs = 0;
  for (const auto& e : fs::directory_iterator(plots)) {
    if (e.path().extension() == ".svg") {
      ++svgs;
      EXPECT_TRUE(renders(e.path())) << e.path();
    }
  }
  EXPECT_EQ(svgs, 7);
}

}  // namespace
}  // namespace chash
