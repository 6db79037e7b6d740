// The libmemcached and libketama presets: what the peer refuses, and the details the vectors in
// tests/compat/vectors/ rest on (replica walk, default port, hash names).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
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
