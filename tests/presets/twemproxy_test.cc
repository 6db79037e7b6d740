// SPDX-License-Identifier: Apache-2.0
// twemproxy presets: what the peer vectors (tests/compat/vectors/twemproxy*.tsv) do not spell
// out one by one — options and server lists nutcracker refuses, replicas, nutcracker's own hash
// check values, its server order.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"

namespace chash {
namespace {

constexpr const char* kPresets[] = {"twemproxy", "twemproxy-modula"};

std::vector<Node> five() {
  return {{"127.0.0.1:6379", 3},
          {"127.0.0.1:6380", 1},
          {"redis-c", 2},
          {"10.0.0.4:11211", 5},
          {"/var/run/redis.sock", 1}};
}

ErrorCode error_of(const char* preset, const std::vector<Node>& nodes, const PresetOptions& o) {
  try {
    make_preset(preset, nodes, o);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << preset << ": no error";
  return ErrorCode::kInvalidArgument;
}

TEST(TwemproxyPresetTest, RefusesWhatNutcrackerRefuses) {
  for (const char* p : kPresets) {
    PresetOptions vnodes;
    vnodes.vnodes = 100;  // KETAMA_POINTS_PER_SERVER is fixed
    EXPECT_EQ(error_of(p, five(), vnodes), ErrorCode::kUnsupported) << p;
    PresetOptions hash;
    hash.hash = "fnv1a64";
    EXPECT_EQ(error_of(p, five(), hash), ErrorCode::kParse) << p;
    PresetOptions tag;
    tag.hash_tag = "{";
    EXPECT_EQ(error_of(p, five(), tag), ErrorCode::kInvalidArgument) << p;
    EXPECT_EQ(error_of(p, {{"a:1", 1}, {"b:1", 0}}, {}), ErrorCode::kInvalidArgument) << p;
    // "host:11211" hashes as "host": the same server name twice.
    EXPECT_EQ(error_of(p, {{"10.0.0.1:11211", 1}, {"10.0.0.1", 1}}, {}), ErrorCode::kDuplicateNode)
        << p;
    EXPECT_EQ(error_of(p, {{"/tmp/a:b.sock", 1}, {"x", 1}}, {}), ErrorCode::kParse) << p;
  }
}

TEST(TwemproxyPresetTest, ErrorNamesTheValidHashes) {
  PresetOptions o;
  o.hash = "xxh3";
  try {
    make_preset("twemproxy", five(), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one_at_a_time"), std::string::npos) << e.what();
  }
}

TEST(TwemproxyPresetTest, RouteNIsDistinctAndStartsWithRoute) {
  for (const char* p : kPresets) {
    const auto preset = make_preset(p, five(), {});
    std::vector<NodeId> out(7);
    for (int i = 0; i < 500; ++i) {
      const std::string key = "user:" + std::to_string(i);
      const std::size_t n = preset->route_n(key, out);
      ASSERT_EQ(n, 5u) << p;
      EXPECT_EQ(out[0], preset->route(key)) << p;
      EXPECT_EQ(std::set<NodeId>(out.begin(), out.begin() + 5).size(), 5u) << p;
    }
  }
}

TEST(TwemproxyPresetTest, OneServerTakesEveryKeyUnhashed) {
  for (const char* p : kPresets) {
    const auto preset = make_preset(p, std::vector<Node>{{"127.0.0.1:6379", 7}}, {});
    EXPECT_EQ(preset->route("anything"), 0u);
    EXPECT_EQ(preset->route(""), 0u);
  }
}

// Modula slots follow nutcracker's server order — shorter name first, then bytewise — not the
// order of the yml: "a" owns slot 0 though listed second. An empty key hashes to 0 (slot 0).
TEST(TwemproxyPresetTest, ModulaNumbersServersInNutcrackerOrder) {
  const auto preset = make_preset("twemproxy-modula", std::vector<Node>{{"bb", 1}, {"a", 1}}, {});
  EXPECT_EQ(preset->route(""), 1u);
  std::vector<NodeId> out(2);
  ASSERT_EQ(preset->route_n("", out), 2u);
  EXPECT_EQ(out[1], 0u);
}

// The key hash modulo `modulus`, read back through modula routing: with "a" weighted k and "bb"
// weighted modulus - k, "a" (first in nutcracker's order) owns slots [0, k).
std::uint32_t hash_mod(const std::string& hash, const std::string& key, std::uint32_t modulus) {
  PresetOptions o;
  o.hash = hash;
  std::uint32_t lo = 1, hi = modulus;  // smallest k in [1, modulus) with route == "a", or modulus
  while (lo < hi) {
    const std::uint32_t k = lo + (hi - lo) / 2;
    const auto p =
        make_preset("twemproxy-modula", std::vector<Node>{{"a", k}, {"bb", modulus - k}}, o);
    if (p->route(key) == 0) {
      hi = k;
    } else {
      lo = k + 1;
    }
  }
  return lo - 1;
}

// nutcracker 0.5.0 src/test_all.c test_hash_algorithms, key "apple" (the libmemcached
// hash_results.h values); crc16 is 32 bits wide there, crc32 15 bits.
TEST(TwemproxyPresetTest, KeyHashesMatchNutcrackersOwnCheckValues) {
  const std::pair<const char*, std::uint32_t> expected[] = {
      {"one_at_a_time", 2297466611u}, {"md5", 3195025439u},
      {"crc16", 3662830516u},         {"crc32", 10542u},
      {"crc32a", 2838417488u},        {"fnv1_32", 67176023u},
      {"fnv1a_32", 280767167u},       {"fnv1_64", 473199127u},
      {"fnv1a_64", 1488911807u},      {"hsieh", 3738850110u},
      {"jenkins", 1442444624u},       {"murmur", 4142305122u},
  };
  for (const auto& [hash, value] : expected) {
    EXPECT_EQ(hash_mod(hash, "apple", 65536), value % 65536) << hash;
    EXPECT_EQ(hash_mod(hash, "apple", 65521), value % 65521) << hash;
  }
}

}  // namespace
}  // namespace chash
