// SPDX-License-Identifier: Apache-2.0
// chash detect, run as a user runs it: observations placed by a known mapping (the library's
// Router, as `chash route` routes) come back named, as `chash route` arguments that reproduce
// them; random placements are "no match" with exit code 3; bad input is an error naming the
// line.
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "chash/preset.h"
#include "cli_run.h"

namespace chash {
namespace {

using testing::split_lines;
using Json = nlohmann::json;

constexpr int kExitNoMatch = 3;  // docs/CLI.md, chash --help

const std::vector<std::string> kAddresses = {"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379",
                                             "10.0.0.4:6379", "10.0.0.5:6379"};

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Keys as an application writes them; client addresses for presets whose keys are addresses.
std::vector<std::string> make_keys(std::size_t n, bool addresses = false) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) {
    keys.push_back(addresses ? "192.168." + std::to_string(i / 250) + "." + std::to_string(i % 250)
                             : "user:" + std::to_string(i * 7919 % 1000003) + ":profile");
  }
  return keys;
}

// key<TAB>node for each key, placed by `spec` over `nodes`.
std::string observe(const RoutingSpec& spec, const std::vector<Node>& nodes,
                    const std::vector<std::string>& keys) {
  const Router r = Router::build(spec, nodes);
  std::string text;
  for (const auto& k : keys) text += k + "\t" + std::string(r.name(r.route(k))) + "\n";
  return text;
}

class Detect : public testing::CliTest {
 protected:
  // Runs detect --format json on observations, returns the parsed list (asserting exit 0).
  Json detect_json(const std::string& observations, std::vector<std::string> extra,
                   int want_code = 0) {
    const auto f = write("observed.txt", observations);
    std::vector<std::string> args = {"detect", "--observed", f.string(), "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, want_code) << r.err;
    if (r.out.empty()) return Json::array();
    return Json::parse(r.out);
  }
  // Whether `chash route ARGS --nodes N` puts every key where the observations say.
  bool route_reproduces(const std::vector<std::string>& route_args, const std::string& nodes,
                        const std::vector<std::string>& keys, const std::string& observations) {
    std::string key_text;
    for (const auto& k : keys) key_text += k + "\n";
    std::vector<std::string> args = {"route"};
    args.insert(args.end(), route_args.begin(), route_args.end());
    args.insert(args.end(), {"--nodes", nodes});
    const auto r = run(args, key_text);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto got = split_lines(r.out);
    const auto want = split_lines(observations);
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (want[i] != keys[i] + "\t" + got[i]) return false;
    }
    return true;
  }
};

std::vector<std::string> args_of(const Json& entry) {
  return entry["route_args"].get<std::vector<std::string>>();
}

// ---- Recovering the mapping ------------------------------------------------------------------

// Every preset (the articles' rings included): its own placements are reproduced 100% by the
// best candidate, and the preset itself is among the candidates that reproduce them.
TEST_F(Detect, EveryPresetIsRecognisedFromItsOwnPlacements) {
  const auto nodes = make_nodes(kAddresses);
  const std::string node_list = join(kAddresses, ",");
  for (const PresetInfo& p : preset_list()) {
    SCOPED_TRACE(std::string(p.name));
    const auto keys = make_keys(3000, p.keys_are_addresses);
    RoutingSpec spec;
    spec.preset = std::string(p.name);
    const std::string obs = observe(spec, nodes, keys);
    const Json list = detect_json(obs, {"--nodes", node_list, "--top", "40"});
    ASSERT_FALSE(list.empty());
    EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0) << list[0].dump();
    EXPECT_EQ(list[0]["keys"].get<int>(), 3000);
    bool named = false;
    for (const auto& e : list) {
      if (args_of(e) == std::vector<std::string>{"--preset", std::string(p.name)}) {
        named = e["agreement"].get<double>() == 1.0;
      }
    }
    EXPECT_TRUE(named) << list.dump();
    EXPECT_TRUE(route_reproduces(args_of(list[0]), node_list, keys, obs)) << list[0].dump();
  }
}

// Presets that no other candidate imitates on these nodes come first, by name and with no
// option: the defaults rank before options, presets before native algorithms.
TEST_F(Detect, DistinctivePresetsComeFirstWithTheirDefaults) {
  const auto nodes = make_nodes(kAddresses);
  for (const char* name : {"twemproxy", "jedis", "guava", "nginx-hash-consistent", "uhashring",
                           "groupcache", "redis-cluster", "hash_ring", "envoy-ring-hash"}) {
    SCOPED_TRACE(name);
    const auto keys = make_keys(5000);
    RoutingSpec spec;
    spec.preset = name;
    const Json list = detect_json(observe(spec, nodes, keys), {"--nodes", join(kAddresses, ",")});
    ASSERT_FALSE(list.empty());
    EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--preset", name})) << list.dump();
    EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
  }
}

// A preset's hash option is found (twemproxy's hash: names), and its vnodes (groupcache).
TEST_F(Detect, PresetOptionsAreRecovered) {
  const auto nodes = make_nodes(kAddresses);
  const std::string node_list = join(kAddresses, ",");
  const auto keys = make_keys(5000);
  RoutingSpec tw;
  tw.preset = "twemproxy";
  tw.hash = "fnv1a_32";
  std::string obs = observe(tw, nodes, keys);
  Json list = detect_json(obs, {"--nodes", node_list, "--top", "20"});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
  bool found = false;
  for (const auto& e : list) {
    found = found ||
            args_of(e) == std::vector<std::string>{"--preset", "twemproxy", "--hash", "fnv1a_32"};
  }
  EXPECT_TRUE(found) << list.dump();
  EXPECT_TRUE(route_reproduces(args_of(list[0]), node_list, keys, obs));

  RoutingSpec gc;
  gc.preset = "groupcache";
  gc.vnodes = 20;
  list = detect_json(observe(gc, nodes, keys), {"--nodes", node_list});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]),
            (std::vector<std::string>{"--preset", "groupcache", "--vnodes", "20"}));
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
}

// Native algorithms with their options: a ring with 100 vnodes, an MD5 key hash and "{name}-{i}"
// point names; maglev with its defaults.
TEST_F(Detect, NativeAlgorithmsAreRecovered) {
  const std::vector<std::string> names = {"cache-a", "cache-b", "cache-c", "cache-d",
                                          "cache-e", "cache-f", "cache-g"};
  const auto nodes = make_nodes(names);
  const auto keys = make_keys(20000);
  RoutingSpec ring;
  ring.algorithm = "ring";
  ring.vnodes = 100;
  ring.hash = "md5";
  ring.point_format = "{name}-{i}";
  std::string obs = observe(ring, nodes, keys);
  Json list = detect_json(obs, {"--nodes", join(names, ",")});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]),
            (std::vector<std::string>{"--algo", "ring", "--hash", "md5", "--vnodes", "100",
                                      "--point-format", "{name}-{i}"}));
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
  EXPECT_TRUE(route_reproduces(args_of(list[0]), join(names, ","), keys, obs));
  // The runner-up is a different mapping: well below.
  ASSERT_GE(list.size(), 2u);
  EXPECT_LT(list[1]["agreement"].get<double>(), 0.99);

  RoutingSpec maglev;
  maglev.algorithm = "maglev";
  list = detect_json(observe(maglev, nodes, keys), {"--nodes", join(names, ",")});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--algo", "maglev"}));
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
}

// A hand-written ring that is no preset comes back as the ring spec that reproduces it.
TEST_F(Detect, HandWrittenRingsAreRecoveredAsRingSpecs) {
  const std::vector<std::string> names = {"alpha", "beta", "gamma", "delta"};
  const auto nodes = make_nodes(names);
  const auto keys = make_keys(20000);
  for (const char* text : {"points={name}:{i}; vnodes=40; bare=first; hash=guava-int",
                           "points={name}_v{i}; vnodes=200; hash=fnv1a_64"}) {
    SCOPED_TRACE(text);
    RoutingSpec spec;
    spec.ring = text;
    const std::string obs = observe(spec, nodes, keys);
    const Json list = detect_json(obs, {"--nodes", join(names, ",")});
    ASSERT_FALSE(list.empty());
    EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--ring", text})) << list.dump();
    EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
    EXPECT_TRUE(route_reproduces(args_of(list[0]), join(names, ","), keys, obs));
  }
}

// String.hashCode gives "n-vn0", "n-vn1", ... consecutive positions, so a node's points sit
// together and vnode counts past a few route these keys alike: each of them reproduces the
// placements, the simplest is named first, and the ring actually used is among them.
TEST_F(Detect, EquivalentRingsAreAllReportedSimplestFirst) {
  const std::vector<std::string> names = {"alpha", "beta", "gamma", "delta"};
  const auto keys = make_keys(20000);
  const std::string text = "points={name}-vn{i}; vnodes=64; hash=java-hashcode";
  RoutingSpec spec;
  spec.ring = text;
  const std::string obs = observe(spec, make_nodes(names), keys);
  const Json list = detect_json(obs, {"--nodes", join(names, ","), "--top", "30"});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
  EXPECT_TRUE(route_reproduces(args_of(list[0]), join(names, ","), keys, obs));
  bool found = false;
  for (const auto& e : list) {
    found = found || (args_of(e) == std::vector<std::string>{"--ring", text} &&
                      e["agreement"].get<double>() == 1.0);
  }
  EXPECT_TRUE(found) << list.dump();
  const auto f = write("observed.txt", obs);
  const auto r = run({"detect", "--observed", f.string(), "--nodes", join(names, ",")});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("candidates reproduce these placements equally well (the simplest first)"),
            std::string::npos)
      << r.out;
}

// Weights come from --nodes-file; a hash tag is tried when keys have braces.
TEST_F(Detect, WeightsAndHashTags) {
  const std::vector<Node> nodes = {
      {"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 3}, {"10.0.0.3:11211", 2}};
  const auto nf = write("nodes.txt", "10.0.0.1:11211 1\n10.0.0.2:11211 3\n10.0.0.3:11211 2\n");
  RoutingSpec ketama;
  ketama.preset = "ketama";
  Json list = detect_json(observe(ketama, nodes, make_keys(5000)), {"--nodes-file", nf.string()});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--preset", "ketama"}));
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);

  std::vector<std::string> tagged;
  for (int i = 0; i < 5000; ++i) {
    tagged.push_back("{user" + std::to_string(i) + "}:" + (i % 2 ? "cart" : "session"));
  }
  RoutingSpec tw;
  tw.preset = "twemproxy";
  tw.hash_tag = "{}";
  list =
      detect_json(observe(tw, make_nodes(kAddresses), tagged), {"--nodes", join(kAddresses, ",")});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]),
            (std::vector<std::string>{"--preset", "twemproxy", "--hash-tag", "{}"}));
  EXPECT_EQ(list[0]["agreement"].get<double>(), 1.0);
}

// Order-sensitive mappings need the configuration order: without --nodes the order is guessed
// (sorted by name) and the output says so.
TEST_F(Detect, NodeOrderIsGuessedWithoutANodeList) {
  const std::vector<std::string> names = {"zeta", "alpha", "mu", "beta", "omega"};
  RoutingSpec jump;
  jump.algorithm = "jump";
  const auto keys = make_keys(10000);
  const auto f = write("observed.txt", observe(jump, make_nodes(names), keys));
  auto r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, kExitNoMatch) << r.out << r.err;
  EXPECT_NE(r.out.find("node order guessed (sorted by name)"), std::string::npos) << r.out;
  r = run({"detect", "--observed", f.string(), "--nodes", join(names, ",")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("node order guessed"), std::string::npos) << r.out;
  const auto out = split_lines(r.out);
  ASSERT_GE(out.size(), 3u);
  EXPECT_EQ(out[2].substr(0, out[2].find("  ")), "--algo jump") << r.out;
  EXPECT_NE(out[2].find("100.00% of 10,000 keys"), std::string::npos) << r.out;
}

// ---- No match ------------------------------------------------------------------------------------

TEST_F(Detect, RandomPlacementsAreNoMatchWithExitCode3) {
  std::mt19937_64 rng(42);
  std::string obs;
  for (int i = 0; i < 20000; ++i) {
    obs += "key-" + std::to_string(i) + "\tnode-" + std::to_string(rng() % 6) + "\n";
  }
  const auto f = write("observed.txt", obs);
  const auto r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, kExitNoMatch) << r.err;
  EXPECT_NE(r.out.find("no mapping reproduces these placements (best: "), std::string::npos)
      << r.out;
  // Most ring specs need not even be built: their hash orders these keys like noise.
  EXPECT_NE(r.out.find(" ruled out by key order) in "), std::string::npos) << r.out;
  const Json list = detect_json(obs, {}, kExitNoMatch);
  ASSERT_EQ(list.size(), 5u);
  for (const auto& e : list) {
    EXPECT_LT(e["agreement"].get<double>(), 0.25) << e.dump();  // chance is 1/6
    EXPECT_EQ(e["keys"].get<int>(), 20000);
  }
  for (std::size_t i = 1; i < list.size(); ++i) {
    EXPECT_LE(list[i]["agreement"].get<double>(), list[i - 1]["agreement"].get<double>());
  }
}

// A mapping that reproduces most but not all placements (a node's keys were moved by hand) is
// reported with its agreement, and the threshold decides whether it counts.
TEST_F(Detect, ThresholdDecides) {
  const auto nodes = make_nodes(kAddresses);
  const auto keys = make_keys(10000);
  RoutingSpec spec;
  spec.preset = "jedis";
  std::string obs;
  const Router r = Router::build(spec, nodes);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string node = i % 20 == 0 ? kAddresses[0] : std::string(r.name(r.route(keys[i])));
    obs += keys[i] + "\t" + node + "\n";
  }
  const std::string list_arg = join(kAddresses, ",");
  Json list = detect_json(obs, {"--nodes", list_arg}, kExitNoMatch);  // ~96% < 0.99
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--preset", "jedis"}));
  const double a = list[0]["agreement"].get<double>();
  EXPECT_GT(a, 0.95);
  EXPECT_LT(a, 0.97);
  list = detect_json(obs, {"--nodes", list_arg, "--threshold", "0.9", "--top", "2"});
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--preset", "jedis"}));
  EXPECT_EQ(list[0]["agreement"].get<double>(), a);
}

// A ring spec that explains 95% of the placements (some keys were moved by hand) is the closest
// when nothing reaches the threshold: rings are ruled out by key order only when they could not
// reach 90%.
TEST_F(Detect, NearMissRingSpecIsTheClosest) {
  const std::vector<std::string> names = {"alpha", "beta", "gamma", "delta", "epsilon"};
  const std::string text = "points={name}_v{i}; vnodes=200; hash=fnv1a_64";
  RoutingSpec spec;
  spec.ring = text;
  const Router r = Router::build(spec, make_nodes(names));
  const auto keys = make_keys(20000);
  std::string obs;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string node = i % 20 == 7 ? names[i % 5] : std::string(r.name(r.route(keys[i])));
    obs += keys[i] + "\t" + node + "\n";
  }
  const Json list = detect_json(obs, {"--nodes", join(names, ",")}, kExitNoMatch);
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(args_of(list[0]), (std::vector<std::string>{"--ring", text})) << list.dump();
  EXPECT_GT(list[0]["agreement"].get<double>(), 0.95);
  EXPECT_LT(list[0]["agreement"].get<double>(), 0.99);
}

// ---- Input ------------------------------------------------------------------------------------------

// Keys are every byte before the last tab (tabs and spaces included); CRLF and blank lines are
// fine; the table names the count and the nodes.
TEST_F(Detect, ObservationLinesAreKeyTabNode) {
  const auto nodes = make_nodes({"a", "b", "c"});
  RoutingSpec spec;
  spec.preset = "ketama";
  const Router r = Router::build(spec, nodes);
  std::string obs;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = "k\t" + std::to_string(i) + " x";
    obs += key + "\t" + std::string(r.name(r.route(key))) + (i % 2 ? "\r\n" : "\n");
    if (i % 100 == 0) obs += "\n";
  }
  const auto f = write("observed.txt", obs);
  const auto res = run({"detect", "--observed", f.string(), "--nodes", "a,b,c"});
  ASSERT_EQ(res.code, 0) << res.err;
  const auto out = split_lines(res.out);
  ASSERT_GE(out.size(), 3u);
  EXPECT_EQ(out[0].substr(0, 38), "detect: 3,000 observations on 3 nodes;") << out[0];
  EXPECT_EQ(out[2].substr(0, 15), "--preset ketama") << res.out;
  EXPECT_NE(out[2].find("100.00% of 3,000 keys"), std::string::npos) << res.out;
  // stdin, and --max-keys stops reading.
  const auto s = run({"detect", "--observed", "-", "--nodes", "a,b,c", "--max-keys", "500"}, obs);
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("detect: 500 observations"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("stopped reading at --max-keys 500"), std::string::npos) << s.out;
}

TEST_F(Detect, MalformedInputIsAnErrorNamingTheLine) {
  auto f = write("bad.txt", "k1\ta\nk2\tb\nno tab here\nk4\ta\n");
  auto r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad.txt:3: expected KEY<TAB>NODE"), std::string::npos) << r.err;
  f = write("empty-node.txt", "k1\ta\nk2\t\n");
  r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("empty-node.txt:2: empty node name"), std::string::npos) << r.err;
  f = write("empty.txt", "");
  r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no observations"), std::string::npos) << r.err;
  f = write("blank.txt", "\n\n\r\n");
  r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no observations"), std::string::npos) << r.err;
  r = run({"detect", "--observed", (dir_ / "missing.txt").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing.txt"), std::string::npos) << r.err;
  // An observed node the node list does not have.
  f = write("obs.txt", "k1\ta\nk2\tq\n");
  r = run({"detect", "--observed", f.string(), "--nodes", "a,b"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("observed node \"q\" is not in the node list"), std::string::npos) << r.err;
  // Key and node swapped: a node per line.
  std::string swapped;
  for (int i = 0; i < 1500; ++i) swapped += "node-a\tuser:" + std::to_string(i) + "\n";
  f = write("swapped.txt", swapped);
  r = run({"detect", "--observed", f.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("1,500 nodes: detect searches at most 1,000"), std::string::npos) << r.err;
  // Usage: no source, two sources, bad numbers.
  r = run({"detect"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = run({"detect", "--observed", f.string(), "--redis", "127.0.0.1:1"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = run({"detect", "--observed", f.string(), "--threshold", "1.5"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--threshold"), std::string::npos) << r.err;
  r = run({"detect", "--observed", f.string(), "--format", "csv"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = run({"detect", "--redis", "nameonly"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--redis \"nameonly\""), std::string::npos) << r.err;
  r = run({"detect", "--memcached", "m=127.0.0.1:99999"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is not 1..65535"), std::string::npos) << r.err;
}

// Garbage never crashes the reader: any bytes give an answer or an error. Half the rounds are
// random bytes, half random keys and node names around tabs (so that many lines parse).
TEST_F(Detect, GarbageInputNeverCrashes) {
  std::mt19937_64 rng(7);
  auto junk = [&rng](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<char>(rng());
    return s;
  };
  for (int round = 0; round < 10; ++round) {
    std::string bytes;
    if (round % 2 == 0) {
      bytes = junk(rng() % 4000);
    } else {
      for (int line = 0; line < 300; ++line) {
        std::string key = junk(rng() % 12), node = "n" + std::to_string(rng() % 4);
        if (rng() % 100 == 0) node = "n" + junk(rng() % 6);
        for (char& c : key) c = c == '\n' ? '\t' : c;
        for (char& c : node) c = c == '\n' || c == '\t' || c == '\r' || c == ' ' ? 'x' : c;
        bytes += key + "\t" + node + "\n";
      }
    }
    const auto f = write("garbage.txt", bytes);
    const auto r = run({"detect", "--observed", f.string(), "--top", "1"});
    ASSERT_TRUE(r.exited) << "round " << round;
    EXPECT_TRUE(r.code == 0 || r.code == 1 || r.code == kExitNoMatch)
        << "round " << round << ": " << r.code << " " << r.err;
    if (round % 2 == 1) {
      EXPECT_NE(r.code, 1) << r.err;  // those lines all parse
    }
  }
}

TEST_F(Detect, HelpDocumentsTheCommand) {
  const auto r = run({"detect", "--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--observed", "--redis", "--memcached", "--nodes", "--nodes-file",
                           "--max-keys", "--timeout", "--threshold", "--top", "--format"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(r.out.find("Exit code 3"), std::string::npos) << r.out;
  const auto top = run({"--help"});
  EXPECT_NE(top.out.find("detect"), std::string::npos);
  EXPECT_NE(top.out.find("3 `chash detect`"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace chash
