// SPDX-License-Identifier: Apache-2.0
// uhashring, uhashring-ketama, hash_ring and node-hashring presets: the properties the peer
// vectors (tests/compat/vectors/{uhashring,uhashring-ketama,hash_ring,node-hashring}__*.tsv) do
// not spell out — refused options and weights, drained nodes, route_n's shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"

namespace chash {
namespace {

constexpr const char* kPresets[] = {"uhashring", "uhashring-ketama", "hash_ring", "node-hashring"};

std::vector<Node> five() {
  return {{"cache-a", 1}, {"cache-b", 2}, {"cache-c", 1}, {"cache-d", 3}, {"cache-e", 1}};
}

std::vector<std::string> keys() {
  std::vector<std::string> out;
  for (int i = 0; i < 3000; ++i) out.push_back("user:" + std::to_string(i));
  out.push_back("");
  out.push_back(std::string("\xff\xfe not utf-8", 12));
  return out;
}

ErrorCode code_of(const char* name, const std::vector<Node>& nodes, const PresetOptions& o) {
  try {
    make_preset(name, nodes, o);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << name << ": no error";
  return ErrorCode::kInvalidArgument;
}

TEST(ScriptingPresetTest, RefusesOptionsThePeerDoesNotHave) {
  PresetOptions tag;
  tag.hash_tag = "{}";
  PresetOptions sha1;
  sha1.hash = "sha1";
  for (const char* name : kPresets) {
    EXPECT_EQ(code_of(name, five(), tag), ErrorCode::kUnsupported) << name;
    EXPECT_EQ(code_of(name, five(), sha1), ErrorCode::kUnsupported) << name;
  }
  PresetOptions vnodes;
  vnodes.vnodes = 100;
  EXPECT_EQ(code_of("hash_ring", five(), vnodes), ErrorCode::kUnsupported);
  // hashring's algorithm argument: md5, its default, is the one chash implements.
  PresetOptions md5;
  md5.hash = "md5";
  EXPECT_NO_THROW(make_preset("node-hashring", five(), md5));
}

TEST(ScriptingPresetTest, ZeroVnodesIsRefusedNotAnEmptyRing) {
  PresetOptions zero;
  zero.vnodes = 0;
  for (const char* name : {"uhashring", "uhashring-ketama", "node-hashring"}) {
    EXPECT_EQ(code_of(name, five(), zero), ErrorCode::kInvalidArgument) << name;
  }
}

TEST(ScriptingPresetTest, NodeHashringRefusesWeightZeroWhichItWouldReadAsOne) {
  auto nodes = five();
  nodes[2].weight = 0;
  EXPECT_EQ(code_of("node-hashring", nodes, {}), ErrorCode::kUnsupported);
}

TEST(ScriptingPresetTest, PythonRingsGiveADrainedNodeNoPoint) {
  // uhashring and hash_ring accept weight 0: the node has no point, so it owns no key, and
  // route_n never lists it.
  auto nodes = five();
  nodes[1].weight = 0;
  for (const char* name : {"uhashring", "uhashring-ketama", "hash_ring"}) {
    const auto p = make_preset(name, nodes);
    for (const std::string& k : keys()) {
      ASSERT_NE(p->route(k), 1u) << name << " " << k;
      std::vector<NodeId> out(8, kNoNode);
      ASSERT_EQ(p->route_n(k, out), 4u) << name;
      ASSERT_EQ(std::find(out.begin(), out.end(), 1u), out.end()) << name;
    }
  }
}

TEST(ScriptingPresetTest, RouteNStartsWithRouteAndListsEveryNodeOnce) {
  for (const char* name : kPresets) {
    const auto p = make_preset(name, five());
    EXPECT_EQ(p->node_count(), 5u);
    for (const std::string& k : keys()) {
      std::vector<NodeId> out(7, kNoNode);
      const std::size_t n = p->route_n(k, out);
      ASSERT_EQ(n, 5u) << name << " " << k;
      EXPECT_EQ(out[0], p->route(k)) << name << " " << k;
      std::vector<NodeId> sorted(out.begin(), out.begin() + 5);
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << name;
      std::vector<NodeId> two(2);
      ASSERT_EQ(p->route_n(k, two), 2u);
      EXPECT_EQ(two[0], out[0]);
      EXPECT_EQ(two[1], out[1]);
    }
  }
}

TEST(ScriptingPresetTest, HeavierNodesOwnMoreKeys) {
  for (const char* name : kPresets) {
    const auto p = make_preset(name, five());
    std::vector<int> count(5, 0);
    for (const std::string& k : keys()) ++count[p->route(k)];
    // cache-d (weight 3) against cache-a (weight 1).
    EXPECT_GT(count[3], 2 * count[0]) << name;
  }
}

TEST(ScriptingPresetTest, NamesAreHashedAsWritten) {
  // None of these peers drops a default port: "h:11211" and "h" are different points.
  const std::vector<Node> a = {{"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 1}};
  const std::vector<Node> b = {{"10.0.0.1", 1}, {"10.0.0.2:11211", 1}};
  for (const char* name : kPresets) {
    const auto pa = make_preset(name, a);
    const auto pb = make_preset(name, b);
    std::size_t differ = 0;
    for (const std::string& k : keys()) differ += pa->route(k) != pb->route(k) ? 1 : 0;
    EXPECT_GT(differ, 100u) << name;
  }
}

}  // namespace
}  // namespace chash
