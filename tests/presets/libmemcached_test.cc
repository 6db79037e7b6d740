// SPDX-License-Identifier: Apache-2.0
// The libmemcached and libketama presets: what the peer refuses, and the details the vectors in
// tests/compat/vectors/ rest on (replica walk, default port, hash names); libmemcached's
// behaviours as preset settings (their spelling, their order, their errors) and the 1.0.18
// continuum beyond 100 servers.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"

namespace chash {
namespace {

std::vector<Node> servers(int n, const std::string& prefix = "10.0.0.") {
  std::vector<Node> v;
  for (int i = 1; i <= n; ++i) v.push_back({prefix + std::to_string(i) + ":11211", 1});
  return v;
}

ErrorCode error_of(std::string_view preset, const std::vector<Node>& nodes,
                   const PresetOptions& options = {}) {
  try {
    make_preset(preset, nodes, options);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << preset << " built";
  return ErrorCode::kInvalidArgument;
}

// The message of the Error make_preset throws ("" if it builds).
std::string message_of(std::string_view preset, const std::vector<Node>& nodes,
                       const PresetOptions& options) {
  try {
    make_preset(preset, nodes, options);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << preset << " built";
  return "";
}

PresetOptions with(std::vector<std::pair<std::string, std::string>> settings) {
  PresetOptions o;
  o.settings = std::move(settings);
  return o;
}

// How many of `keys` test keys the two presets send to different servers.
int differences(const Preset& a, const Preset& b, int keys = 3000) {
  int n = 0;
  for (int i = 0; i < keys; ++i) {
    const std::string key = "user:" + std::to_string(i);
    n += a.route(key) != b.route(key);
  }
  return n;
}

// Five servers, default port written or not, one with a non-default port; weights all 1 or not.
std::vector<Node> five(bool weighted) {
  return {{"mc1.example", 1},
          {"mc2.example:11211", weighted ? 2u : 1u},
          {"mc3.example:11212", 1},
          {"10.0.3.4", weighted ? 3u : 1u},
          {"10.0.3.5:22122", 1}};
}

TEST(LibmemcachedPresetTest, DefaultPortWrittenOrNotIsTheSameServer) {
  // libmemcached leaves port 11211 out of the point names either way.
  const auto a = make_preset("ketama", std::vector<Node>{{"a", 1}, {"b:11211", 2}, {"c:11212", 1}});
  const auto b = make_preset("ketama", std::vector<Node>{{"a:11211", 1}, {"b", 2}, {"c:11212", 1}});
  const auto c = make_preset("ketama", std::vector<Node>{{"a:11212", 1}, {"b", 2}, {"c:11212", 1}});
  int differ = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "key:" + std::to_string(i);
    EXPECT_EQ(a->route(key), b->route(key)) << key;
    differ += a->route(key) != c->route(key);
  }
  EXPECT_GT(differ, 0);
}

TEST(LibmemcachedPresetTest, ReplicasFollowServerIndexAsLibmemcachedReplication) {
  const auto p = make_preset("ketama", servers(5));
  std::vector<NodeId> out(3);
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(p->route_n(key, out), 3u);
    EXPECT_EQ(out[0], p->route(key));
    EXPECT_EQ(out[1], (out[0] + 1) % 5);
    EXPECT_EQ(out[2], (out[0] + 2) % 5);
  }
  std::vector<NodeId> all(9);
  EXPECT_EQ(p->route_n("x", all), 5u);
}

TEST(LibmemcachedPresetTest, OneServerTakesEveryKey) {
  for (const char* preset :
       {"ketama", "ketama-spy", "libmemcached-consistent", "libmemcached-modula", "libketama"}) {
    const auto p = make_preset(preset, servers(1));
    EXPECT_EQ(p->route("anything"), 0u) << preset;
  }
}

TEST(LibmemcachedPresetTest, HashNamesAreLibmemcachedsInEitherCase) {
  PresetOptions o;
  o.hash = "MD5";
  const auto upper = make_preset("libmemcached-consistent", servers(4), o);
  o.hash = "md5";
  const auto lower = make_preset("libmemcached-consistent", servers(4), o);
  o.hash = "one_at_a_time";
  const auto oaat = make_preset("libmemcached-consistent", servers(4), o);
  const auto dflt = make_preset("libmemcached-consistent", servers(4));
  for (int i = 0; i < 500; ++i) {
    const std::string key = "user:" + std::to_string(i);
    EXPECT_EQ(upper->route(key), lower->route(key));
    EXPECT_EQ(oaat->route(key), dflt->route(key));
  }
}

TEST(LibmemcachedPresetTest, RefusesWhatThePeerRefuses) {
  PresetOptions hsieh;
  hsieh.hash = "hsieh";  // Debian's libhashkit is built without it
  EXPECT_EQ(error_of("ketama", servers(2), hsieh), ErrorCode::kUnsupported);
  PresetOptions unknown;
  unknown.hash = "xxh3";
  EXPECT_EQ(error_of("ketama", servers(2), unknown), ErrorCode::kParse);
  PresetOptions vnodes;
  vnodes.vnodes = 200;
  EXPECT_EQ(error_of("ketama", servers(2), vnodes), ErrorCode::kUnsupported);
  // 101 servers abort Debian's libmemcached in a consistent distribution; modula has no limit.
  EXPECT_EQ(error_of("ketama", servers(101)), ErrorCode::kLimitExceeded);
  EXPECT_EQ(error_of("libmemcached-consistent", servers(101)), ErrorCode::kLimitExceeded);
  EXPECT_EQ(make_preset("libmemcached-modula", servers(150))->node_count(), 150u);
  // libmemcached reads weight 0 as 1, so it cannot mean "drained".
  EXPECT_EQ(error_of("ketama", std::vector<Node>{{"a", 1}, {"b", 0}}), ErrorCode::kInvalidArgument);
  for (const char* bad : {"host:", "host:0", "host:65536", "host:11211:3", ":11211"}) {
    EXPECT_EQ(error_of("ketama", std::vector<Node>{{bad, 1}}), ErrorCode::kParse) << bad;
  }
}

TEST(LibmemcachedPresetTest, AcceptsIpv6AndUnixSocketNames) {
  const auto p = make_preset(
      "ketama", std::vector<Node>{{"[::1]:11211", 1}, {"[2001:db8::5]", 1}, {"/tmp/mc.sock", 1}});
  EXPECT_EQ(p->node_count(), 3u);
}

// ---- Settings: libmemcached's behaviours -------------------------------------------------------

TEST(LibmemcachedSettingsTest, PresetsAreShorthandsForBehaviourLists) {
  for (const bool weighted : {false, true}) {
    const auto nodes = five(weighted);
    const auto bare = [&](std::vector<std::pair<std::string, std::string>> s) {
      return make_preset("libmemcached-modula", nodes, with(std::move(s)));
    };
    EXPECT_EQ(differences(*make_preset("ketama", nodes), *bare({{"ketama_weighted", "true"}})), 0);
    EXPECT_EQ(differences(
                  *make_preset("ketama-spy", nodes),
                  *bare({{"ketama_weighted", "true"}, {"distribution", "CONSISTENT_KETAMA_SPY"}})),
              0);
    EXPECT_EQ(differences(*make_preset("libmemcached-consistent", nodes),
                          *bare({{"distribution", "CONSISTENT"}})),
              0);
    EXPECT_EQ(differences(*make_preset("libmemcached-modula", nodes), *bare({})), 0);
  }
}

TEST(LibmemcachedSettingsTest, NamesAndValuesInLibmemcachedsSpellingAnyCase) {
  const auto nodes = five(false);
  const auto plain =
      make_preset("libmemcached-modula", nodes,
                  with({{"distribution", "CONSISTENT_KETAMA_SPY"}, {"hash", "md5"}}));
  for (const auto& settings : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"MEMCACHED_BEHAVIOR_DISTRIBUTION", "MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY"},
            {"MEMCACHED_BEHAVIOR_HASH", "MEMCACHED_HASH_MD5"}},
           {{"distribution", "consistent_ketama_spy"}, {"Hash", "MD5"}},
           {{"distribution", "DISTRIBUTION_CONSISTENT_KETAMA_SPY"}, {"hash", "memcached_hash_md5"}},
       }) {
    EXPECT_EQ(differences(*plain, *make_preset("libmemcached-modula", nodes, with(settings))), 0);
  }
  // Booleans: true/false, on/off, yes/no, 1/0.
  const auto on = make_preset("libmemcached-modula", nodes, with({{"ketama_weighted", "on"}}));
  for (const char* t : {"true", "TRUE", "yes", "1"}) {
    EXPECT_EQ(differences(
                  *on, *make_preset("libmemcached-modula", nodes, with({{"ketama_weighted", t}}))),
              0)
        << t;
  }
}

TEST(LibmemcachedSettingsTest, OrderMattersAsInMemcachedBehaviorSet) {
  const auto nodes = five(false);
  auto bare = [&](std::vector<std::pair<std::string, std::string>> s) {
    return make_preset("libmemcached-modula", nodes, with(std::move(s)));
  };
  PresetOptions crc;
  crc.hash = "crc";
  // KETAMA_WEIGHTED sets the key hash to MD5: a hash set before it is lost, one after it stays.
  EXPECT_EQ(differences(*bare({{"hash", "crc"}, {"ketama_weighted", "true"}}),
                        *make_preset("ketama", nodes)),
            0);
  EXPECT_EQ(differences(*bare({{"ketama_weighted", "true"}, {"hash", "crc"}}),
                        *make_preset("ketama", nodes, crc)),
            0);
  // KETAMA_WEIGHTED replaces the distribution; a distribution after it keeps (SPY) or clears
  // (CONSISTENT) the weighting.
  EXPECT_EQ(
      differences(*bare({{"distribution", "CONSISTENT_KETAMA_SPY"}, {"ketama_weighted", "1"}}),
                  *make_preset("ketama", nodes)),
      0);
  EXPECT_EQ(
      differences(*bare({{"ketama_weighted", "1"}, {"distribution", "CONSISTENT_KETAMA_SPY"}}),
                  *make_preset("ketama-spy", nodes)),
      0);
  // Unweighted after KETAMA_WEIGHTED: 100 points per server hashed with the key hash, MD5 here.
  PresetOptions md5;
  md5.hash = "md5";
  EXPECT_EQ(differences(*bare({{"ketama_weighted", "1"}, {"distribution", "CONSISTENT"}}),
                        *make_preset("libmemcached-consistent", nodes, md5)),
            0);
  // KETAMA_WEIGHTED off is MEMCACHED_BEHAVIOR_KETAMA on: CONSISTENT_KETAMA, unweighted, which maps
  // as CONSISTENT does.
  EXPECT_EQ(
      differences(*bare({{"distribution", "CONSISTENT_KETAMA_SPY"}, {"ketama_weighted", "0"}}),
                  *make_preset("libmemcached-consistent", nodes)),
      0);
  EXPECT_GT(differences(*bare({{"distribution", "CONSISTENT_KETAMA_SPY"}}),
                        *make_preset("libmemcached-consistent", nodes)),
            0);
  // MODULA keeps the weighting for a later SPY.
  EXPECT_EQ(differences(*bare({{"ketama_weighted", "1"},
                               {"distribution", "MODULA"},
                               {"distribution", "CONSISTENT_KETAMA_SPY"}}),
                        *make_preset("ketama-spy", nodes)),
            0);
  EXPECT_EQ(
      differences(*bare({{"ketama", "true"}}), *make_preset("libmemcached-consistent", nodes)), 0);
}

TEST(LibmemcachedSettingsTest, KetamaHashIsCheckedAndChangesNothing) {
  // 1.1.4 (and 1.0.18) store MEMCACHED_BEHAVIOR_KETAMA_HASH and never hash with it.
  for (const char* preset : {"ketama", "libmemcached-consistent", "ketama-spy"}) {
    const auto plain = make_preset(preset, five(false));
    for (const char* h : {"crc", "md5", "murmur3", "jenkins", "fnv1a_32"}) {
      EXPECT_EQ(differences(*plain, *make_preset(preset, five(false), with({{"ketama_hash", h}}))),
                0)
          << preset << " " << h;
    }
  }
  EXPECT_EQ(error_of("ketama", five(false), with({{"ketama_hash", "hsieh"}})),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_of("ketama", five(false), with({{"ketama_hash", "sha1"}})), ErrorCode::kParse);
}

TEST(LibmemcachedSettingsTest, UnknownSettingNamesTheValidOnes) {
  const std::string m = message_of("ketama", five(false), with({{"ketama_compat", "1"}}));
  for (const char* name :
       {"ketama_compat", "distribution", "ketama_weighted", "ketama_hash", "hash", "version"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name << " in: " << m;
  }
  EXPECT_EQ(error_of("ketama", five(false), with({{"ketama_compat", "1"}})), ErrorCode::kParse);
}

TEST(LibmemcachedSettingsTest, UnknownValuesNameTheValidOnes) {
  const std::string dist = message_of("ketama", five(false), with({{"distribution", "ring"}}));
  for (const char* v : {"MODULA", "CONSISTENT", "CONSISTENT_KETAMA", "CONSISTENT_KETAMA_SPY",
                        "CONSISTENT_WEIGHTED"}) {
    EXPECT_NE(dist.find(v), std::string::npos) << v << " in: " << dist;
  }
  const std::string hash = message_of("ketama", five(false), with({{"hash", "xxh3"}}));
  EXPECT_NE(hash.find("fnv1a_32"), std::string::npos) << hash;
  const std::string flag = message_of("ketama", five(false), with({{"ketama_weighted", "maybe"}}));
  EXPECT_NE(flag.find("true, false"), std::string::npos) << flag;
  const std::string version = message_of("ketama", five(false), with({{"version", "1.0"}}));
  EXPECT_NE(version.find("1.0.18"), std::string::npos) << version;
  EXPECT_EQ(error_of("ketama", five(false), with({{"distribution", "ring"}})), ErrorCode::kParse);
  EXPECT_EQ(error_of("ketama", five(false), with({{"ketama", "2"}})), ErrorCode::kParse);
}

TEST(LibmemcachedSettingsTest, RefusesDistributionsThatAreNotAFunctionOfTheKey) {
  for (const char* d : {"RANDOM", "MEMCACHED_DISTRIBUTION_VIRTUAL_BUCKET"}) {
    EXPECT_EQ(error_of("libmemcached-modula", five(false), with({{"distribution", d}})),
              ErrorCode::kUnsupported)
        << d;
  }
}

TEST(LibmemcachedSettingsTest, HashGivenTwiceIsAnError) {
  PresetOptions o = with({{"hash", "crc"}});
  o.hash = "md5";
  EXPECT_EQ(error_of("ketama", five(false), o), ErrorCode::kInvalidArgument);
  EXPECT_NE(message_of("ketama", five(false), o).find("--hash"), std::string::npos);
}

TEST(LibmemcachedSettingsTest, PresetsWithoutSettingsRefuseAny) {
  for (const char* preset : {"libketama", "twemproxy", "jedis", "nginx-hash", "redis-cluster"}) {
    const std::string m = message_of(preset, five(false), with({{"hash", "md5"}}));
    EXPECT_NE(m.find("has no settings"), std::string::npos) << preset << ": " << m;
    EXPECT_NE(m.find("libmemcached-consistent"), std::string::npos) << preset << ": " << m;
    EXPECT_EQ(error_of(preset, five(false), with({{"hash", "md5"}})), ErrorCode::kUnsupported);
  }
}

// ---- Above 100 servers: libmemcached 1.0.18's continuum ----------------------------------------

std::vector<Node> named_servers(int n) {
  std::vector<Node> v;
  for (int i = 1; i <= n; ++i) v.push_back({"mc" + std::to_string(i) + ".example.net:11211", 1});
  return v;
}

TEST(LibmemcachedContinuum1018Test, OverOneHundredServersNamesTheSetting) {
  for (const char* preset : {"ketama", "ketama-spy", "libmemcached-consistent"}) {
    const std::string m = message_of(preset, servers(101), {});
    EXPECT_NE(m.find("version=1.0.18"), std::string::npos) << m;
  }
  EXPECT_EQ(error_of("libmemcached-modula", servers(101),
                     with({{"distribution", "CONSISTENT_WEIGHTED"}})),
            ErrorCode::kLimitExceeded);
}

TEST(LibmemcachedContinuum1018Test, UpToOneHundredServersMapsAs114) {
  // hosts.cc update_continuum is the same computation at both tags; only the assert differs.
  for (const char* preset : {"ketama", "ketama-spy", "libmemcached-consistent"}) {
    for (const int n : {2, 5, 50, 100}) {
      const auto a = make_preset(preset, named_servers(n));
      const auto b = make_preset(preset, named_servers(n), with({{"version", "1.0.18"}}));
      EXPECT_EQ(differences(*a, *b, 5000), 0) << preset << " " << n;
    }
    const auto a = make_preset(preset, five(true));
    const auto b = make_preset(preset, five(true), with({{"version", "1.0.18"}}));
    EXPECT_EQ(differences(*a, *b, 5000), 0) << preset << " weighted";
  }
}

TEST(LibmemcachedContinuum1018Test, Murmur3IsMurmurAndBracketedNamesAreRefused) {
  // 1.0.18's libhashkit/function.cc gives MEMCACHED_HASH_MURMUR3 hashkit_murmur (MurmurHash2).
  PresetOptions murmur3 = with({{"version", "1.0.18"}, {"hash", "murmur3"}});
  PresetOptions murmur = with({{"hash", "murmur"}});
  EXPECT_EQ(differences(*make_preset("libmemcached-modula", five(false), murmur3),
                        *make_preset("libmemcached-modula", five(false), murmur)),
            0);
  EXPECT_GT(
      differences(*make_preset("libmemcached-modula", five(false), murmur3),
                  *make_preset("libmemcached-modula", five(false), with({{"hash", "murmur3"}}))),
      0);
  // Its memcached_servers_parse splits "[::1]:11211" at the first ':'.
  EXPECT_EQ(error_of("ketama", std::vector<Node>{{"[::1]:11211", 1}, {"a", 1}},
                     with({{"version", "1.0.18"}})),
            ErrorCode::kUnsupported);
}

TEST(LibmemcachedContinuum1018Test, EveryServerOwnsKeysAndBuildsAreDeterministic) {
  for (const char* preset : {"ketama", "ketama-spy", "libmemcached-consistent"}) {
    const auto nodes = named_servers(250);
    const auto a = make_preset(preset, nodes, with({{"version", "1.0.18"}}));
    const auto b = make_preset(preset, nodes, with({{"version", "1.0.18"}}));
    ASSERT_EQ(a->node_count(), 250u);
    std::set<NodeId> owners;
    for (int i = 0; i < 50000; ++i) {
      const std::string key = "k" + std::to_string(i);
      const NodeId id = a->route(key);
      ASSERT_LT(id, 250u);
      ASSERT_EQ(id, b->route(key));
      owners.insert(id);
    }
    EXPECT_EQ(owners.size(), 250u) << preset;
  }
}

// With MD5 keys, the key "mcS.example.net-i" hashes to the first point of server S's digest i
// (ketama_server_hash word 0 = hashkit_md5 of the same string), so the key lands on S exactly
// when that digest is on the continuum. 200 equal servers get
// floor((float)(1/200.f * 160 / 4 * 200) + 1e-10f) = floor(39.999996) = 39 digests (156 points)
// each; 150 get 40 (160 points): the float rounding 1.1.4 has, 1.0.18 has too.
TEST(LibmemcachedContinuum1018Test, WeightedPointNamesLandOnTheirServer) {
  for (const auto& [n, digests] : {std::pair{150, 40}, std::pair{200, 39}}) {
    const auto p = make_preset("ketama", named_servers(n), with({{"version", "1.0.18"}}));
    int last_digest_hits = 0;
    for (int s = 1; s <= n; ++s) {
      const std::string host = "mc" + std::to_string(s) + ".example.net-";
      for (int i = 0; i < digests; ++i) {
        ASSERT_EQ(p->route(host + std::to_string(i)), static_cast<NodeId>(s - 1)) << n << " " << s;
      }
      last_digest_hits += p->route(host + "39") == static_cast<NodeId>(s - 1);
    }
    // Digest 39 is on the continuum only with 40 digests per server; else a key hashing there
    // lands on its own server by chance (1 in n).
    if (digests == 40) {
      EXPECT_EQ(last_digest_hits, n);
    } else {
      EXPECT_LT(last_digest_hits, 10);
    }
  }
}

// Unweighted: 100 points per server, point i = the key hash (one_at_a_time) of "host-i", so the
// key "host-i" lands on its server — or on a server added earlier that has the same point value
// (one_at_a_time collides on such names; the lower index owns a tie).
TEST(LibmemcachedContinuum1018Test, UnweightedPointNamesLandOnTheirServer) {
  const int n = 120;
  const auto p =
      make_preset("libmemcached-consistent", named_servers(n), with({{"version", "1.0.18"}}));
  int exact = 0;
  for (int s = 1; s <= n; ++s) {
    for (int i = 0; i < 100; ++i) {
      const NodeId id = p->route("mc" + std::to_string(s) + ".example.net-" + std::to_string(i));
      ASSERT_LE(id, static_cast<NodeId>(s - 1));
      exact += id == static_cast<NodeId>(s - 1);
    }
  }
  EXPECT_GT(exact, n * 100 * 95 / 100);
}

TEST(LibketamaPresetTest, RefusesWhatLibketamaCannotRead) {
  EXPECT_EQ(error_of("libketama", servers(118)), ErrorCode::kLimitExceeded);
  EXPECT_EQ(error_of("libketama", std::vector<Node>{{"a-very-long-host.example:11211", 1}}),
            ErrorCode::kParse);
  EXPECT_EQ(error_of("libketama", std::vector<Node>{{"#commented:11211", 1}}), ErrorCode::kParse);
  EXPECT_EQ(error_of("libketama", std::vector<Node>{{"a:1", 1}, {"b:1", 0}}),
            ErrorCode::kInvalidArgument);
  PresetOptions o;
  o.hash = "md5";
  EXPECT_EQ(error_of("libketama", servers(2), o), ErrorCode::kUnsupported);
}

TEST(LibketamaPresetTest, ReplicasAreTheNextDistinctServersClockwise) {
  const auto p = make_preset("libketama", servers(6));
  std::vector<NodeId> out(6);
  ASSERT_EQ(p->route_n("user:1", out), 6u);
  EXPECT_EQ(out[0], p->route("user:1"));
  std::sort(out.begin(), out.end());
  EXPECT_EQ(std::unique(out.begin(), out.end()), out.end());
}

TEST(LibketamaPresetTest, KeysAreCStrings) {
  // ketama_hashi hashes up to the first NUL byte.
  const auto p = make_preset("libketama", servers(8));
  for (int i = 0; i < 100; ++i) {
    const std::string key = "key" + std::to_string(i);
    EXPECT_EQ(p->route(key), p->route(key + std::string("\0tail", 5)));
  }
}

}  // namespace
}  // namespace chash
