// SPDX-License-Identifier: Apache-2.0
// Batch routing (Router::route_batch, Preset::route_batch, pick_batch) gives exactly route()'s
// answer for every key: every preset in preset_list() and every native algorithm, over several
// node lists (1, 3, 10 weighted, 57 nodes), the hash options that change the batch path (MD5
// side by side, hash tags, the presets' other hashes), random binary keys of 0..300 bytes, and
// batch sizes 1..1000 that are and are not multiples of the lane counts (8, 16) and of the
// 64-key chunks.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chash/batch.h"
#include "chash/error.h"
#include "chash/preset.h"
#include "chash/ring_spec.h"
#include "chash/router.h"

namespace chash {
namespace {

constexpr std::size_t kBatchSizes[] = {1,  2,  3,  7,   8,   9,   15,  16,  17,  31,  33,
                                       63, 64, 65, 100, 127, 128, 129, 500, 999, 1000};

// 1,000 keys: random binary of 0..300 bytes (mostly short, as keys are), hash-tagged keys with
// tags of both kinds, keys with NUL bytes (libketama hashes up to the first), IP addresses (the
// only keys nginx-ip-hash routes), empty keys.
std::vector<std::string> make_keys(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys;
  while (keys.size() < 1000) {
    const std::uint64_t kind = rng() % 10;
    std::string k;
    if (kind < 5) {
      k.resize(rng() % 4 == 0 ? rng() % 301 : rng() % 33);
      for (char& c : k) c = static_cast<char>(rng());
    } else if (kind == 5) {
      k = "{user" + std::to_string(rng() % 50) + "}:" + std::to_string(rng());
    } else if (kind == 6) {
      k = "pre{" + std::to_string(rng() % 7) + "}post";
    } else if (kind == 7) {
      k = "10." + std::to_string(rng() % 256) + "." + std::to_string(rng() % 256) + "." +
          std::to_string(rng() % 256);
    } else if (kind == 8) {
      k = std::string("ab\0cd", 5) + std::to_string(rng());
    } else {
      k = rng() % 2 == 0 ? std::string() : "key:" + std::to_string(rng());
    }
    keys.push_back(std::move(k));
  }
  return keys;
}

struct NodeList {
  std::string label;
  std::vector<Node> nodes;
};

std::vector<NodeList> node_lists() {
  std::vector<NodeList> v;
  v.push_back({"1 node", {{"10.0.0.1:11211", 1}}});
  v.push_back({"3 nodes", {{"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 1}, {"10.0.0.3:6379", 1}}});
  std::vector<Node> weighted;
  for (int i = 0; i < 10; ++i) {
    weighted.push_back(
        {"10.1.0." + std::to_string(i + 1) + ":11211", static_cast<std::uint32_t>(i % 3 + 1)});
  }
  v.push_back({"10 weighted", weighted});
  std::vector<Node> many;
  for (int i = 0; i < 57; ++i) many.push_back({"10.2.0." + std::to_string(i + 1) + ":11211", 1});
  v.push_back({"57 nodes", many});
  return v;
}

// route_batch over `keys` in batches of every size in kBatchSizes (each batch from a different
// offset), each answer equal to route().
void expect_batches_equal_route(const Router& r, const std::vector<std::string>& keys,
                                const std::string& label) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<NodeId> one(views.size());
  for (std::size_t i = 0; i < views.size(); ++i) one[i] = r.route(views[i]);
  std::size_t offset = 0;
  for (const std::size_t size : kBatchSizes) {
    const std::size_t n = std::min(size, views.size());
    offset = (offset + 37) % (views.size() - n + 1);
    std::vector<NodeId> out(n + 1, 12345);  // one past the batch: must stay untouched
    r.route_batch(std::span<const std::string_view>(views).subspan(offset, n),
                  std::span<NodeId>(out).first(n));
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], one[offset + i]) << label << ", batch of " << n << ", key " << i;
    }
    ASSERT_EQ(out[n], 12345u) << label << ": wrote past the batch";
  }
}

// The options each preset is also tried with: every hash that takes another batch path.
std::vector<RoutingSpec> preset_variants(std::string_view name) {
  RoutingSpec base;
  base.preset = std::string(name);
  std::vector<RoutingSpec> v{base};
  auto with = [&](auto&& edit) {
    RoutingSpec s = base;
    edit(s);
    v.push_back(s);
  };
  if (name == "libmemcached-consistent" || name == "libmemcached-modula") {
    for (const char* h : {"md5", "crc", "fnv1a_32", "murmur", "jenkins"}) {
      with([&](RoutingSpec& s) { s.hash = h; });
    }
  }
  if (name == "ketama" || name == "ketama-spy") {
    with([](RoutingSpec& s) { s.preset_settings = {{"hash", "fnv1a_32"}}; });
  }
  if (name == "twemproxy" || name == "twemproxy-modula") {
    for (const char* h : {"md5", "crc32a", "murmur", "one_at_a_time"}) {
      with([&](RoutingSpec& s) { s.hash = h; });
      with([&](RoutingSpec& s) {
        s.hash = h;
        s.hash_tag = "{}";
      });
    }
  }
  if (name == "jedis") {
    with([](RoutingSpec& s) { s.hash = "MD5"; });
    with([](RoutingSpec& s) {
      s.hash = "MD5";
      s.hash_tag = "{}";
    });
    with([](RoutingSpec& s) { s.hash_tag = "{}"; });
  }
  if (name == "uhashring" || name == "uhashring-ketama" || name == "node-hashring") {
    with([](RoutingSpec& s) { s.vnodes = 7; });
  }
  if (name == "python-md5-ring" || name == "guava-treemap") {
    with([](RoutingSpec& s) { s.hash_tag = "{}"; });
  }
  return v;
}

std::string describe(const RoutingSpec& s) {
  std::string d = !s.preset.empty() ? s.preset : !s.algorithm.empty() ? s.algorithm : *s.ring;
  if (s.hash) d += " hash=" + *s.hash;
  if (s.hash_tag) d += " tag=" + *s.hash_tag;
  if (s.vnodes) d += " vnodes=" + std::to_string(*s.vnodes);
  for (const auto& [k, val] : s.preset_settings) d += " " + k + "=" + val;
  return d;
}

TEST(RouteBatchTest, EveryPresetBatchEqualsRouteOnEveryKey) {
  const std::vector<std::string> keys = make_keys(1);
  for (const PresetInfo& info : preset_list()) {
    std::size_t built = 0;
    for (const RoutingSpec& spec : preset_variants(info.name)) {
      for (const NodeList& list : node_lists()) {
        std::optional<Router> r;
        try {
          r = Router::build(spec, list.nodes);
        } catch (const Error&) {
          continue;  // a node list this peer refuses (weights for guava, ...)
        }
        ++built;
        expect_batches_equal_route(*r, keys, describe(spec) + ", " + list.label);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    EXPECT_GE(built, 2u) << info.name << ": too few configurations built to mean anything";
  }
}

TEST(RouteBatchTest, PresetRouteBatchEqualsRouteDirectly) {
  const std::vector<std::string> keys = make_keys(2);
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<Node> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back({"10.3.0." + std::to_string(i + 1) + ":11211", 1});
  for (const PresetInfo& info : preset_list()) {
    const auto p = make_preset(info.name, nodes);
    std::vector<NodeId> out(views.size());
    p->route_batch(views, out);
    for (std::size_t i = 0; i < views.size(); ++i) {
      ASSERT_EQ(out[i], p->route(views[i])) << info.name << ", key " << i;
    }
  }
}

TEST(RouteBatchTest, EveryAlgorithmAndKeyHashBatchEqualsRoute) {
  const std::vector<std::string> keys = make_keys(3);
  for (const Algorithm a : kAllAlgorithms) {
    for (const KeyHash h : kAllKeyHashes) {
      for (const bool tag : {false, true}) {
        for (const NodeList& list : node_lists()) {
          RoutingSpec spec;
          spec.algorithm = std::string(algorithm_name(a));
          spec.hash = std::string(key_hash_name(h));
          if (tag) spec.hash_tag = "{}";
          std::vector<Node> nodes = list.nodes;
          for (Node& n : nodes) n.weight = 1;  // jump, memento, multiprobe, ... are unweighted
          std::optional<Router> r;
          try {
            r = Router::build(spec, nodes);
          } catch (const Error&) {
            continue;
          }
          expect_batches_equal_route(*r, keys, describe(spec) + ", " + list.label);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Drained (weight 0) nodes send jump's batch through its rehash path for the keys that land on
// them, memento's through its replacements.
TEST(RouteBatchTest, DrainedNodesBatchEqualsRoute) {
  const std::vector<std::string> keys = make_keys(4);
  for (const char* algo : {"jump", "jumpback", "memento", "memento-jumpback", "ring", "maglev",
                           "modulo", "rendezvous"}) {
    std::vector<Node> nodes;
    for (int i = 0; i < 40; ++i) {
      nodes.push_back({"n" + std::to_string(i), static_cast<std::uint32_t>(i % 5 == 2 ? 0 : 1)});
    }
    RoutingSpec spec;
    spec.algorithm = algo;
    expect_batches_equal_route(Router::build(spec, nodes), keys, algo);
  }
}

TEST(RouteBatchTest, RingSpecsBatchEqualsRoute) {
  const std::vector<std::string> keys = make_keys(5);
  for (const char* text :
       {"points={name}_v{i}; vnodes=40; hash=md5-int32", "points={name}-{i}; hash=md5-int64",
        "points={name}#{i}; vnodes=20; hash=md5; successor=gt",
        "points={name}#{i}; vnodes=30; hash=md5-int32; abs=yes; order=signed",
        "points={name}#{i}; vnodes=10; hash=java-hashcode; abs=yes",
        "points={name}{i}; vnodes=50; hash=murmur64a; seed=0x1234ABCD"}) {
    for (const NodeList& list : node_lists()) {
      for (const bool tag : {false, true}) {
        RoutingSpec spec;
        spec.ring = text;
        if (tag) spec.hash_tag = "{}";
        expect_batches_equal_route(Router::build(spec, list.nodes), keys,
                                   std::string(text) + ", " + list.label);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// The tables whose function has a batch form offer pick_batch (route_batch then uses it); the
// others are looped by route_batch.
static_assert(internal::HasPickBatch<JumpTable> && internal::HasPickBatch<MementoTable>);
static_assert(!internal::HasPickBatch<JumpBackTable> &&
              !internal::HasPickBatch<MementoJumpBackTable>);

// JumpTable::pick_batch runs 8 keys in lockstep: equal to pick() at bucket counts from 1 up,
// on hashes that make long and short chains.
TEST(RouteBatchTest, JumpPickBatchEqualsPickAtEveryBucketCount) {
  std::mt19937_64 rng(6);
  std::vector<std::uint64_t> hashes(1003);
  for (auto& h : hashes) h = rng();
  hashes[0] = 0;
  hashes[1] = ~std::uint64_t{0};
  for (const int n : {1, 2, 3, 5, 8, 10, 100, 1000, 65536, 1000003}) {
    std::vector<Node> nodes;
    for (int i = 0; i < n; ++i) nodes.push_back({std::to_string(i), 1});
    const JumpTable t = JumpTable::build(nodes);
    std::vector<NodeId> out(hashes.size());
    t.pick_batch(hashes, out);
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      ASSERT_EQ(out[i], t.pick(hashes[i])) << n << " buckets, hash " << hashes[i];
    }
  }
}

// MementoTable::pick_batch runs jump's lanes, then follows each removed bucket as pick() does:
// equal to pick() with no removals, removals in the middle and at the tail, in several orders.
TEST(RouteBatchTest, MementoPickBatchEqualsPickWithRemovals) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> hashes(2005);
  for (auto& h : hashes) h = rng();
  for (const int n : {1, 2, 7, 64, 1000}) {
    std::vector<Node> nodes;
    for (int i = 0; i < n; ++i) nodes.push_back({std::to_string(i), 1});
    MementoOptions opt;
    for (int removed = 0; removed < n - 1 && removed < 40; removed += 1 + removed / 3) {
      const auto id = static_cast<NodeId>(rng() % static_cast<std::uint64_t>(n));
      if (nodes[id].weight == 0) continue;
      nodes[id].weight = 0;
      opt.removal_order.push_back(id);
      const MementoTable t = MementoTable::build(nodes, opt);
      std::vector<NodeId> out(hashes.size());
      t.pick_batch(hashes, out);
      for (std::size_t i = 0; i < hashes.size(); ++i) {
        ASSERT_EQ(out[i], t.pick(hashes[i])) << n << " buckets, " << removed << " removed";
        ASSERT_NE(nodes[out[i]].weight, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace chash
