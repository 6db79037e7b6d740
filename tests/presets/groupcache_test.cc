// SPDX-License-Identifier: Apache-2.0
// groupcache preset: defaults and refusals the peer vectors (groupcache__*) do not show alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"

namespace chash {
namespace {

const std::vector<Node> kPeers = {
    {"http://10.0.0.1:8000", 1}, {"http://10.0.0.2:8000", 1}, {"http://10.0.0.3:8000", 1}};

// HTTPPool's defaultReplicas.
TEST(GroupcachePresetTest, DefaultReplicasAre50) {
  PresetOptions fifty;
  fifty.vnodes = 50;
  PresetOptions other;
  other.vnodes = 49;
  const auto dflt = make_preset("groupcache", kPeers);
  const auto explicit50 = make_preset("groupcache", kPeers, fifty);
  const auto p49 = make_preset("groupcache", kPeers, other);
  int differ = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(dflt->route(key), explicit50->route(key));
    differ += dflt->route(key) != p49->route(key) ? 1 : 0;
  }
  EXPECT_GT(differ, 0);
}

TEST(GroupcachePresetTest, RefusesWhatConsistenthashDoesNotHave) {
  std::vector<Node> weighted = kPeers;
  weighted[0].weight = 2;
  EXPECT_THROW(make_preset("groupcache", weighted), Error);
  PresetOptions zero;
  zero.vnodes = 0;
  EXPECT_THROW(make_preset("groupcache", kPeers, zero), Error);
  PresetOptions hash;
  hash.hash = "fnv1a_32";
  EXPECT_THROW(make_preset("groupcache", kPeers, hash), Error);
}

// Weight 0: the node is not Added, so it owns nothing; the others keep their points.
TEST(GroupcachePresetTest, DrainedNodeIsNotAdded) {
  std::vector<Node> drained = kPeers;
  drained[1].weight = 0;
  const auto p = make_preset("groupcache", drained);
  const auto two = make_preset(
      "groupcache", std::vector<Node>{{"http://10.0.0.1:8000", 1}, {"http://10.0.0.3:8000", 1}});
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    const NodeId id = p->route(key);
    EXPECT_NE(id, 1u);
    EXPECT_EQ(id == 0 ? 0u : 1u, two->route(key));
  }
}

}  // namespace
}  // namespace chash
