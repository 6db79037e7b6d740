// SPDX-License-Identifier: Apache-2.0
// jedis and guava presets: behaviour the peer vectors (tests/compat/vectors/jedis__*, guava__*)
// do not pin by themselves — naming rules, key tags, options the peers refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"

namespace chash {
namespace {

std::vector<Node> numbered(const std::string& prefix, int n) {
  std::vector<Node> v;
  for (int i = 0; i < n; ++i) v.push_back(Node{prefix + std::to_string(i), 1});
  return v;
}

// Unnamed shards are placed by position ("SHARD-i-NODE-n"), so their written names do not matter.
TEST(JedisPresetTest, UnnamedShardsArePlacedByPosition) {
  const auto a = make_preset("jedis", numbered("10.0.0.", 8));
  const auto b = make_preset("jedis", numbered("cache-", 8));
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(a->route(key), b->route(key)) << key;
  }
}

// "name=host:port" is a named shard: its points come from the name, not the address.
TEST(JedisPresetTest, NamedShardsArePlacedByName) {
  const auto a =
      make_preset("jedis", std::vector<Node>{{"x=10.0.0.1:6379", 1}, {"y=10.0.0.2:6379", 1}});
  const auto b = make_preset("jedis", std::vector<Node>{{"x=10.9.9.9:1", 1}, {"y=10.8.8.8:2", 1}});
  const auto swapped =
      make_preset("jedis", std::vector<Node>{{"y=10.0.0.2:6379", 1}, {"x=10.0.0.1:6379", 1}});
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(a->route(key), b->route(key));
    EXPECT_EQ(a->route(key), 1 - swapped->route(key));  // same shard, other position
  }
}

// Sharded.DEFAULT_KEY_TAG_PATTERN \{(.+?)\}: the tagged key routes as its tag alone.
TEST(JedisPresetTest, KeyTagIsTheFirstNonEmptyBracedSpanWithoutLineBreaks) {
  PresetOptions tag;
  tag.hash_tag = "{}";
  const auto nodes = numbered("10.0.0.", 64);
  const auto tagged = make_preset("jedis", nodes, tag);
  const auto plain = make_preset("jedis", nodes);
  const std::pair<const char*, const char*> cases[] = {
      {"{user1}.followers", "user1"},
      {"a{b}c{d}", "b"},
      {"{}}", "}"},  // the lazy group takes one character, even a '}'
      {"{}x}", "}x"},
      {"{a\nb}{cd}", "cd"},           // '.' stops at a line terminator: the next '{' is tried
      {"x{\xe2\x80\xa8}{ef}", "ef"},  // U+2028 is a line terminator too
      {"{\xc3\xa9t\xc3\xa9}", "\xc3\xa9t\xc3\xa9"},
  };
  for (const auto& [key, as] : cases) EXPECT_EQ(tagged->route(key), plain->route(as)) << key;
  // No match: the whole key.
  for (const char* key : {"{}", "{", "}{", "nothing", "{a\n}"}) {
    EXPECT_EQ(tagged->route(key), plain->route(key)) << key;
  }
}

TEST(JedisPresetTest, OptionsThePeerDoesNotHaveAreRefused) {
  const auto nodes = numbered("n", 3);
  PresetOptions o;
  o.vnodes = 100;
  EXPECT_THROW(make_preset("jedis", nodes, o), Error);
  o = {};
  o.hash_tag = "[]";
  EXPECT_THROW(make_preset("jedis", nodes, o), Error);
  o = {};
  o.hash = "crc32";
  EXPECT_THROW(make_preset("jedis", nodes, o), Error);
  o.hash = "MD5";
  EXPECT_NO_THROW(make_preset("jedis", nodes, o));
}

TEST(JedisPresetTest, WeightZeroShardGetsNoKeys) {
  auto nodes = numbered("n", 4);
  nodes[2].weight = 0;
  const auto p = make_preset("jedis", nodes);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(p->route("k" + std::to_string(i)), 2u);
}

TEST(GuavaPresetTest, WeightsAreRefused) {
  auto nodes = numbered("n", 3);
  nodes[1].weight = 2;
  EXPECT_THROW(make_preset("guava", nodes), Error);
  nodes[1].weight = 0;
  EXPECT_THROW(make_preset("guava", nodes), Error);
}

TEST(GuavaPresetTest, RouteNIsADistinctOrderStartingWithTheOwner) {
  const auto p = make_preset("guava", numbered("n", 40));
  std::vector<NodeId> out(40);
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(p->route_n(key, out), 40u);
    EXPECT_EQ(out[0], p->route(key));
    std::vector<NodeId> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
}

// Growing n -> n+1 moves only keys to the new last bucket (Guava's consistentHash contract).
TEST(GuavaPresetTest, AddingABucketMovesKeysOnlyToIt) {
  const auto small = make_preset("guava", numbered("n", 10));
  const auto big = make_preset("guava", numbered("n", 11));
  for (int i = 0; i < 5000; ++i) {
    const std::string key = "k" + std::to_string(i);
    const NodeId b = big->route(key);
    if (b != 10) {
      EXPECT_EQ(b, small->route(key)) << key;
    }
  }
}

}  // namespace
}  // namespace chash
