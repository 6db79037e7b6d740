// SPDX-License-Identifier: Apache-2.0
// chash's envoy presets against Envoy's own unit-test expectations.
//
// Envoy cannot run here (it is in neither Debian nor npm), and its tests assert hosts for request
// HASHES, not for keys, so there is no key -> node vector file for it. Instead
// tests/compat/envoy/extract.py transcribes every concrete expectation of Envoy's
// ring_hash_lb_test.cc, maglev_lb_test.cc and hash_test.cc into tests/compat/envoy/published.txt
// (ring points, table entries, chooseHost results, retry attempts, per-host counts over thousands
// of hashes, stats gauges, error messages, hash check values), and each is replayed here.
#include "envoy.h"  // src/presets

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/preset.h"

namespace chash {
namespace {

using presets::envoy_choose_host;

struct EnvoyCase {
  std::string kind;  // ring_hash | maglev
  std::string name;
  std::map<std::string, std::string> options;
  std::vector<Node> hosts;
  std::vector<std::vector<std::string>> checks;  // the remaining lines, split
};

struct Published {
  std::vector<EnvoyCase> cases;
  std::vector<std::vector<std::string>> hashes;
};

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

const Published& published() {
  static const Published p = [] {
    Published out;
    std::ifstream in(std::string(CHASH_COMPAT_DIR) + "/envoy/published.txt");
    EnvoyCase* c = nullptr;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      auto w = words(line);
      if (w[0] == "case") {
        out.cases.push_back(EnvoyCase{w.at(1), w.at(2), {}, {}, {}});
        c = &out.cases.back();
      } else if (w[0] == "end") {
        c = nullptr;
      } else if (w[0] == "hash") {
        out.hashes.push_back(w);
      } else if (c != nullptr && w[0] == "option") {
        c->options[w.at(1)] = w.at(2);
      } else if (c != nullptr && w[0] == "host") {
        c->hosts.push_back(Node{w.at(1), static_cast<std::uint32_t>(std::stoul(w.at(2)))});
      } else if (c != nullptr) {
        if (w[0] == "throws") w = {"throws", line.substr(7)};
        c->checks.push_back(w);
      }
    }
    return out;
  }();
  return p;
}

std::uint64_t u64(const std::string& s) { return std::stoull(s); }

std::string unhex(const std::string& hex) {
  std::string out;
  if (hex == "-") return out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::unique_ptr<Preset> build(const EnvoyCase& c) {
  auto opt = [&](const std::string& k, std::uint64_t dflt) {
    auto it = c.options.find(k);
    return it == c.options.end() ? dflt : u64(it->second);
  };
  if (c.kind == "ring_hash") {
    const auto fn = c.options.count("hash_function") ? c.options.at("hash_function") : "XX_HASH";
    return presets::make_envoy_ring_hash_with(c.hosts, opt("minimum_ring_size", 1024),
                                              opt("maximum_ring_size", 8 * 1024 * 1024),
                                              fn == "MURMUR_HASH_2");
  }
  return presets::make_envoy_maglev_with(c.hosts, opt("table_size", 65537));
}

// LoadBalancerImpl::chooseHost with hostSelectionRetryCount() = retries: attempts 0..retries,
// the first host the predicate accepts, else the last one tried.
NodeId choose_with_retries(const Preset& p, std::uint64_t hash, std::uint32_t retries,
                           const std::string& pred) {
  NodeId host = kNoNode;
  for (std::uint32_t a = 0; a <= retries; ++a) {
    host = envoy_choose_host(p, hash, a);
    const bool reject =
        pred == "all" || (pred.rfind("not:", 0) == 0 && host == std::stoul(pred.substr(4)));
    if (!reject) return host;
  }
  return host;
}

class EnvoyPublished : public ::testing::TestWithParam<std::size_t> {};

TEST_P(EnvoyPublished, MatchesEnvoysOwnTestExpectations) {
  const EnvoyCase& c = published().cases[GetParam()];
  SCOPED_TRACE(c.name);
  if (c.checks.size() == 1 && c.checks[0][0] == "throws") {
    try {
      build(c);
      FAIL() << "expected an error: " << c.checks[0][1];
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.checks[0][1]), std::string::npos) << e.what();
    }
    return;
  }
  const auto p = build(c);
  const auto table = presets::envoy_table(*p);
  std::vector<std::uint64_t> per_host(c.hosts.size(), 0);
  for (const auto& [pos, id] : table) ++per_host[id];
  std::uint64_t min_per_host = ~0ULL, max_per_host = 0;
  for (std::size_t i = 0; i < c.hosts.size(); ++i) {
    if (c.hosts[i].weight == 0) continue;
    min_per_host = std::min(min_per_host, per_host[i]);
    max_per_host = std::max(max_per_host, per_host[i]);
  }

  for (const auto& w : c.checks) {
    SCOPED_TRACE(w[0] + " " + (w.size() > 1 ? w[1] : ""));
    if (w[0] == "choose") {
      EXPECT_EQ(envoy_choose_host(*p, u64(w[1]), 0), u64(w[2]));
    } else if (w[0] == "retry") {
      EXPECT_EQ(choose_with_retries(*p, u64(w[1]), static_cast<std::uint32_t>(u64(w[2])), w[3]),
                u64(w[4]));
    } else if (w[0] == "ring") {
      const auto it = std::find_if(table.begin(), table.end(),
                                   [&](const auto& e) { return e.first == u64(w[1]); });
      ASSERT_NE(it, table.end()) << "no ring point at " << w[1];
      EXPECT_EQ(it->second, u64(w[2]));
    } else if (w[0] == "table") {
      ASSERT_LT(u64(w[1]), table.size());
      EXPECT_EQ(table[u64(w[1])].second, u64(w[2]));
    } else if (w[0] == "counts") {
      const std::uint64_t n = u64(w[1]);
      const std::uint64_t step = ~0ULL / u64(w[2]);
      std::uint64_t count = 0;
      for (std::uint64_t i = 0; i < n; ++i)
        count += envoy_choose_host(*p, i * step, 0) == u64(w[3]);
      EXPECT_EQ(count, u64(w[4]));
    } else if (w[0] == "stat") {
      if (w[1] == "size") {
        EXPECT_EQ(table.size(), u64(w[2]));
      } else if (w[1] == "min_hashes_per_host" || w[1] == "min_entries_per_host") {
        EXPECT_EQ(min_per_host, u64(w[2]));
      } else if (w[1] == "max_hashes_per_host" || w[1] == "max_entries_per_host") {
        EXPECT_EQ(max_per_host, u64(w[2]));
      } else {
        ADD_FAILURE() << "unknown stat " << w[1];
      }
    } else {
      ADD_FAILURE() << "unknown check " << w[0];
    }
  }
}

std::vector<std::size_t> case_indexes() {
  std::vector<std::size_t> v(published().cases.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string n = published().cases[info.param].name;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Envoy, EnvoyPublished, ::testing::ValuesIn(case_indexes()), case_name);

TEST(EnvoyPresetTest, PublishedExpectationsWereTranscribed) {
  // Guards against an extract.py that silently finds nothing in a newer Envoy.
  std::size_t chooses = 0;
  for (const auto& c : published().cases) {
    for (const auto& w : c.checks) chooses += w[0] == "choose" || w[0] == "retry";
  }
  EXPECT_GE(published().cases.size(), 15u);
  EXPECT_GE(chooses, 100u);
  EXPECT_GE(published().hashes.size(), 10u);
}

TEST(EnvoyPresetTest, KeyHashesMatchEnvoysCheckValues) {
  for (const auto& w : published().hashes) {
    const std::string key = unhex(w.at(2));
    if (w[1] == "xxhash64") {
      EXPECT_EQ(hash::xxh64(key), u64(w[3])) << w[2];
    } else {
      EXPECT_EQ(presets::envoy_murmur_hash_2(key), u64(w[3])) << w[2];
    }
  }
}

// route(key) is chooseHost(xxHash64(key)): "foo" hashes to 3728699739546630719
// (Envoy's hash_test.cc), so it goes where that hash goes.
TEST(EnvoyPresetTest, RouteIsChooseHostOfTheKeysXxHash64) {
  const std::vector<Node> nodes = {{"10.0.0.1:80", 1}, {"10.0.0.2:80", 2}, {"10.0.0.3:80", 1}};
  for (const char* preset : {"envoy-ring-hash", "envoy-maglev"}) {
    const auto p = make_preset(preset, nodes);
    EXPECT_EQ(p->route("foo"), envoy_choose_host(*p, 3728699739546630719ULL, 0)) << preset;
    for (int i = 0; i < 200; ++i) {
      const std::string key = "user:" + std::to_string(i);
      EXPECT_EQ(p->route(key), envoy_choose_host(*p, hash::xxh64(key), 0)) << preset;
    }
  }
}

TEST(EnvoyPresetTest, DefaultSizes) {
  const std::vector<Node> three = {{"10.0.0.1:80", 1}, {"10.0.0.2:80", 1}, {"10.0.0.3:80", 1}};
  // minimum_ring_size 1024: each of 3 hosts gets ceil(1024 / 3) = 342 points.
  EXPECT_EQ(presets::envoy_table(*make_preset("envoy-ring-hash", three)).size(), 3u * 342u);
  EXPECT_EQ(presets::envoy_table(*make_preset("envoy-maglev", three)).size(), 65537u);
}

TEST(EnvoyPresetTest, RouteNFollowsEnvoysRetryAttempts) {
  const std::vector<Node> nodes = {{"a:1", 1}, {"b:1", 1}, {"c:1", 1}, {"d:1", 1}};
  for (const char* preset : {"envoy-ring-hash", "envoy-maglev"}) {
    const auto p = make_preset(preset, nodes);
    std::vector<NodeId> out(4);
    ASSERT_EQ(p->route_n("k", out), 4u) << preset;
    EXPECT_EQ(out[0], p->route("k"));
    std::vector<NodeId> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<NodeId>{0, 1, 2, 3})) << preset;
  }
}

TEST(EnvoyPresetTest, DrainedNodeIsLeftOutOfTheTable) {
  const std::vector<Node> nodes = {{"a:1", 1}, {"b:1", 0}, {"c:1", 1}};
  for (const char* preset : {"envoy-ring-hash", "envoy-maglev"}) {
    const auto p = make_preset(preset, nodes);
    for (const auto& e : presets::envoy_table(*p)) EXPECT_NE(e.second, 1u) << preset;
  }
}

TEST(EnvoyPresetTest, OptionsThePeerDoesNotHaveAreRefused) {
  const std::vector<Node> nodes = {{"a:1", 1}};
  PresetOptions vnodes;
  vnodes.vnodes = 100;
  EXPECT_THROW(make_preset("envoy-ring-hash", nodes, vnodes), Error);
  EXPECT_THROW(make_preset("envoy-maglev", nodes, vnodes), Error);
  PresetOptions fn;
  fn.hash = "MURMUR_HASH_2";
  EXPECT_NO_THROW(make_preset("envoy-ring-hash", nodes, fn));
  EXPECT_THROW(make_preset("envoy-maglev", nodes, fn), Error);
  fn.hash = "md5";
  EXPECT_THROW(make_preset("envoy-ring-hash", nodes, fn), Error);
}

}  // namespace
}  // namespace chash
