// SPDX-License-Identifier: Apache-2.0
// Ring specs (chash/ring_spec.h): the text form, its errors, and the rings it builds checked
// against a reference model — a sorted map filled and searched the way the hand-written rings
// do it (TreeMap.put / dict assignment, tailMap / bisect), written independently of the
// library's ring. The article presets' own vectors are in tests/compat (article rings).
#include "chash/ring_spec.h"

#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/preset.h"
#include "chash/router.h"
#include "test_nodes.h"

namespace chash {

// Failures print specs as text.
void PrintTo(const RingSpec& s, std::ostream* os) { *os << to_string(s); }

namespace {

std::string error_of(std::string_view text) {
  try {
    parse_ring_spec(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// ---- Text form ----------------------------------------------------------------------------------

TEST(RingSpecTest, DefaultsAndEveryField) {
  const RingSpec d = parse_ring_spec("vnodes=160");
  EXPECT_EQ(d, RingSpec{});
  const RingSpec s = parse_ring_spec(
      "  points = {name}:{i} ;from=1;vnodes=7;bare=last;weights=ignore;hash=murmur64a;"
      "seed=-1;abs=yes;order=unsigned;successor=gt;collision=first;");
  EXPECT_EQ(s.points, "{name}:{i}");
  EXPECT_EQ(s.from, 1u);
  EXPECT_EQ(s.vnodes, 7u);
  EXPECT_EQ(s.bare, RingSpec::Bare::kLast);
  EXPECT_FALSE(s.scale_by_weight);
  EXPECT_EQ(s.hash, RingPositionHash::kMurmur64A);
  EXPECT_EQ(s.seed, ~std::uint64_t{0});  // a negative Java long seed
  EXPECT_TRUE(s.java_abs);
  EXPECT_FALSE(s.is_signed());
  EXPECT_TRUE(s.successor_greater);
  EXPECT_FALSE(s.last_wins);
  EXPECT_EQ(s.width(), 64u);
}

TEST(RingSpecTest, HashesSetWidthAndDefaultOrder) {
  EXPECT_EQ(parse_ring_spec("hash=java-hashcode").width(), 32u);
  EXPECT_TRUE(parse_ring_spec("hash=java-hashcode").is_signed());
  EXPECT_TRUE(parse_ring_spec("hash=guava-long").is_signed());
  EXPECT_EQ(parse_ring_spec("hash=guava-int").width(), 32u);
  EXPECT_FALSE(parse_ring_spec("hash=md5-int32").is_signed());
  EXPECT_EQ(parse_ring_spec("hash=md5-int64").width(), 64u);
  EXPECT_EQ(parse_ring_spec("hash=crc32").width(), 32u);
  EXPECT_EQ(parse_ring_spec("hash=fnv1a_64").width(), 64u);
  EXPECT_FALSE(parse_ring_spec("hash=xxh3").is_signed());
  EXPECT_TRUE(parse_ring_spec("hash=xxh3; order=signed").is_signed());
}

TEST(RingSpecTest, EscapedSemicolonsAndBackslashesInFormats) {
  const RingSpec s = parse_ring_spec("points={name}\\;{i}\\\\x; vnodes=2");
  EXPECT_EQ(s.points, "{name};{i}\\x");
  RingSpec want = s;
  want.signed_order = s.is_signed();  // the text always says it
  EXPECT_EQ(parse_ring_spec(to_string(s)), want);
}

TEST(RingSpecTest, CanonicalTextRoundTrips) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> hashes = {"java-hashcode", "guava-long", "guava-int",
                                           "murmur64a",     "md5-int32",  "md5-int64",
                                           "xxh3",          "crc32",      "fnv1a_64"};
  for (int n = 0; n < 300; ++n) {
    RingSpec s;
    s.points = n % 3 == 0 ? "{name}#VN{i}" : n % 3 == 1 ? "{name};{i}" : "x\\{name}-{i}";
    s.from = rng() % 3;
    s.vnodes = static_cast<std::uint32_t>(rng() % 300 + 1);
    s.bare = static_cast<RingSpec::Bare>(rng() % 3);
    s.scale_by_weight = rng() % 2 == 0;
    const std::string& h = hashes[rng() % hashes.size()];
    const RingSpec with_hash = parse_ring_spec("hash=" + h);
    s.hash = with_hash.hash;
    s.key_hash = with_hash.key_hash;
    if (s.hash == RingPositionHash::kMurmur64A) s.seed = rng();
    s.java_abs = rng() % 2 == 0;
    if (rng() % 2 == 0) s.signed_order = rng() % 2 == 0;
    s.successor_greater = rng() % 2 == 0;
    s.last_wins = rng() % 2 == 0;
    const std::string text = to_string(s);
    RingSpec back = parse_ring_spec(text);
    RingSpec want = s;
    want.signed_order = s.is_signed();  // the text always says it
    EXPECT_EQ(back, want) << text;
    EXPECT_EQ(to_string(back), text);
  }
}

TEST(RingSpecTest, ErrorsNameTheField) {
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("vnode=3").find("unknown field \"vnode\""), std::string::npos);
  EXPECT_NE(error_of("vnode=3").find("vnodes"), std::string::npos);  // lists the fields
  EXPECT_NE(error_of("vnodes=3; vnodes=4").find("vnodes: given twice"), std::string::npos);
  EXPECT_NE(error_of("vnodes=many").find("vnodes: expected 0..65536"), std::string::npos);
  EXPECT_NE(error_of("vnodes=65537").find("vnodes:"), std::string::npos);
  EXPECT_NE(error_of("vnodes=-1").find("vnodes:"), std::string::npos);
  EXPECT_NE(error_of("hash=sha1").find("hash: unknown hash \"sha1\""), std::string::npos);
  EXPECT_NE(error_of("hash=sha1").find("md5-int32"), std::string::npos);  // lists them
  EXPECT_NE(error_of("bare=yes").find("bare: expected no, first or last"), std::string::npos);
  EXPECT_NE(error_of("order=big").find("order:"), std::string::npos);
  EXPECT_NE(error_of("successor=le").find("successor:"), std::string::npos);
  EXPECT_NE(error_of("collision=any").find("collision:"), std::string::npos);
  EXPECT_NE(error_of("abs=true").find("abs: expected yes or no"), std::string::npos);
  EXPECT_NE(error_of("weights=double").find("weights:"), std::string::npos);
  EXPECT_NE(error_of("from=x").find("from:"), std::string::npos);
  EXPECT_NE(error_of("seed=5").find("seed: applies to hash=murmur64a only"), std::string::npos);
  EXPECT_NE(error_of("seed=0xzz; hash=murmur64a").find("seed:"), std::string::npos);
  EXPECT_NE(error_of("points={i}").find("points:"), std::string::npos);
  EXPECT_NE(error_of("points={name}; vnodes=2").find("has no {i}"), std::string::npos);
  EXPECT_NE(error_of("points=").find("points:"), std::string::npos);
  EXPECT_NE(error_of("vnodes=0").find("bare=first"), std::string::npos);
  EXPECT_NE(error_of("just words").find("is not name=value"), std::string::npos);
  EXPECT_NE(error_of(std::string(5000, 'x')).find("4096"), std::string::npos);
  // vnodes=0 with a bare point, and one point per node without {i}, are fine.
  EXPECT_NO_THROW(parse_ring_spec("vnodes=0; bare=first"));
  EXPECT_NO_THROW(parse_ring_spec("points={name}-x; vnodes=1"));
}

// ---- The ring, against a reference model ---------------------------------------------------------

// A position computed the way a hand-written ring computes it, as a signed or unsigned number.
struct ModelPosition {
  std::int64_t signed_value = 0;  // compared when signed
  std::uint64_t unsigned_value = 0;
};

// What each `hash=` is in the peers' own terms (written from the peers' definitions, not from
// the library's position code).
std::uint64_t model_raw(const RingSpec& s, std::string_view text) {
  switch (s.hash) {
    case RingPositionHash::kJavaHashCode:
      return static_cast<std::uint32_t>(hash::java_string_hashcode(text));
    case RingPositionHash::kGuavaLong:
      return hash::murmur3_x64_128(text).h1;  // asLong: bytes 0..7 little-endian
    case RingPositionHash::kGuavaInt:
      return static_cast<std::uint32_t>(hash::murmur3_x64_128(text).as_int());
    case RingPositionHash::kMurmur64A:
      return hash::murmur64a(text, s.seed);
    case RingPositionHash::kMd5Int32:
    case RingPositionHash::kMd5Int64: {
      // int(hexdigest, 16) % 2**w, through the hex digits as Python does.
      static const char* kHex = "0123456789abcdef";
      std::string hexdigest;
      for (const std::uint8_t b : hash::md5(text)) {
        hexdigest += kHex[b >> 4];
        hexdigest += kHex[b & 15];
      }
      const std::size_t digits = s.width() / 4;
      return std::stoull(hexdigest.substr(32 - digits), nullptr, 16);
    }
    case RingPositionHash::kKeyHash:
      break;
  }
  const std::uint64_t v = hash_key(s.key_hash, text);
  return s.width() == 32 ? static_cast<std::uint32_t>(v) : v;
}

// Total order of positions as the spec's map sorts them (as a signed or unsigned key).
struct Pos {
  bool is_signed;
  std::int64_t sv;
  std::uint64_t uv;
  bool operator<(const Pos& o) const { return is_signed ? sv < o.sv : uv < o.uv; }
};

Pos model_pos(const RingSpec& s, std::string_view text) {
  const std::uint64_t raw = model_raw(s, text);
  const unsigned w = s.width();
  std::int64_t sv = w == 32 ? static_cast<std::int32_t>(static_cast<std::uint32_t>(raw))
                            : static_cast<std::int64_t>(raw);
  if (s.java_abs && sv < 0) {
    // Math.abs(int) / Math.abs(long): MIN_VALUE stays MIN_VALUE.
    const bool is_min = w == 32 ? sv == INT32_MIN : sv == INT64_MIN;
    if (!is_min) sv = -sv;
  }
  std::uint64_t uv = w == 32 ? static_cast<std::uint32_t>(static_cast<std::int32_t>(sv))
                             : static_cast<std::uint64_t>(sv);
  return {s.is_signed(), sv, uv};
}

// The hand-written ring: points put in order into a map (last or first write kept), lookup =
// first key >= (or >) the key's position, else the first key.
class ModelRing {
 public:
  ModelRing(const RingSpec& s, const std::vector<Node>& nodes) : spec_(s) {
    for (std::size_t id = 0; id < nodes.size(); ++id) {
      if (nodes[id].weight == 0) continue;
      auto put = [&](const std::string& point) {
        const Pos p = model_pos(s, point);
        if (s.last_wins || map_.find(p) == map_.end()) map_[p] = static_cast<NodeId>(id);
      };
      if (s.bare == RingSpec::Bare::kFirst) put(nodes[id].name);
      const std::uint64_t count = (s.scale_by_weight ? nodes[id].weight : 1) * s.vnodes;
      for (std::uint64_t i = 0; i < count; ++i) {
        std::string name = s.points;
        for (std::size_t at; (at = name.find("{name}")) != std::string::npos;)
          name.replace(at, 6, nodes[id].name);
        for (std::size_t at; (at = name.find("{i}")) != std::string::npos;)
          name.replace(at, 3, std::to_string(s.from + i));
        put(name);
      }
      if (s.bare == RingSpec::Bare::kLast) put(nodes[id].name);
    }
  }
  NodeId route(std::string_view key) const {
    const Pos p = model_pos(spec_, key);
    auto it = spec_.successor_greater ? map_.upper_bound(p) : map_.lower_bound(p);
    if (it == map_.end()) it = map_.begin();
    return it->second;
  }

 private:
  RingSpec spec_;
  std::map<Pos, NodeId> map_;
};

TEST(RingSpecTest, RoutesAsTheModelForEveryChoice) {
  std::mt19937_64 rng(2026);
  const std::vector<std::string> hashes = {"java-hashcode", "guava-long", "guava-int",
                                           "murmur64a",     "md5-int32",  "md5-int64",
                                           "xxh3",          "crc16",      "fnv1a_32"};
  const std::vector<std::string> formats = {"{name}#VN{i}", "{name}{i}", "{name}_v{i}",
                                            "{i}-{name}"};
  for (int round = 0; round < 120; ++round) {
    RingSpec s;
    s.points = formats[rng() % formats.size()];
    s.from = rng() % 2;
    s.vnodes = static_cast<std::uint32_t>(rng() % 40);
    s.bare = static_cast<RingSpec::Bare>(rng() % 3);
    if (s.vnodes == 0 && s.bare == RingSpec::Bare::kNo) s.bare = RingSpec::Bare::kFirst;
    s.scale_by_weight = rng() % 2 == 0;
    const RingSpec h = parse_ring_spec("hash=" + hashes[rng() % hashes.size()]);
    s.hash = h.hash;
    s.key_hash = h.key_hash;
    if (s.hash == RingPositionHash::kMurmur64A) s.seed = rng() % 2 ? 0x1234ABCD : rng();
    s.java_abs = rng() % 2 == 0;
    if (rng() % 3 == 0) s.signed_order = rng() % 2 == 0;
    s.successor_greater = rng() % 2 == 0;
    s.last_wins = rng() % 2 == 0;
    // Names that collide under some hashes ("Aa"/"BB" under String.hashCode) now and then.
    std::vector<Node> nodes = chash::testing::numbered_nodes(static_cast<int>(rng() % 6 + 1), "s");
    if (rng() % 4 == 0) nodes.push_back({"Aa", 1});
    if (rng() % 4 == 0) nodes.push_back({"BB", 1});
    for (Node& n : nodes) n.weight = static_cast<std::uint32_t>(rng() % 3 + (rng() % 4 ? 1 : 0));
    nodes[0].weight = std::max<std::uint32_t>(nodes[0].weight, 1);

    const ModelRing model(s, nodes);
    const auto ring = make_ring_spec_preset(s, nodes);
    std::vector<NodeId> out(nodes.size());
    for (int k = 0; k < 400; ++k) {
      // Keys, and now and then a point name itself (lands exactly on a point: ge vs gt).
      std::string key = "key:" + std::to_string(rng() % 100000);
      if (k % 10 == 0) key = nodes[rng() % nodes.size()].name;
      if (k % 10 == 1) key = nodes[rng() % nodes.size()].name + "#VN" + std::to_string(rng() % 5);
      ASSERT_EQ(ring->route(key), model.route(key)) << to_string(s) << " key " << key;
      const std::size_t n = ring->route_n(key, out);
      ASSERT_GE(n, 1u);
      EXPECT_EQ(out[0], ring->route(key));
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) EXPECT_NE(out[i], out[j]);
      }
    }
  }
}

TEST(RingSpecTest, CollisionRuleDecidesWhoOwnsAnEqualPosition) {
  // "Aa" and "BB" have the same String.hashCode (2112): with only their own points, every key
  // goes to the one the collision rule keeps.
  const std::vector<Node> nodes = {{"Aa", 1}, {"BB", 1}};
  const auto last =
      make_ring_spec_preset(parse_ring_spec("vnodes=0; bare=first; hash=java-hashcode"), nodes);
  const auto first = make_ring_spec_preset(
      parse_ring_spec("vnodes=0; bare=first; hash=java-hashcode; collision=first"), nodes);
  for (const char* key : {"x", "Aa", "BB", "zzz"}) {
    EXPECT_EQ(last->route(key), 1u) << key;
    EXPECT_EQ(first->route(key), 0u) << key;
  }
  std::vector<NodeId> out(2);
  EXPECT_EQ(last->route_n("x", out), 1u);  // the loser is gone from the map
}

TEST(RingSpecTest, SuccessorRuleOnAKeyThatIsAPoint) {
  const std::vector<Node> nodes = chash::testing::numbered_nodes(5, "node-");
  const auto ge = make_ring_spec_preset(parse_ring_spec("vnodes=0; bare=first"), nodes);
  const auto gt =
      make_ring_spec_preset(parse_ring_spec("vnodes=0; bare=first; successor=gt"), nodes);
  for (NodeId id = 0; id < 5; ++id) {
    const std::string name = "node-" + std::to_string(id);
    EXPECT_EQ(ge->route(name), id);
    EXPECT_NE(gt->route(name), id);
  }
}

TEST(RingSpecTest, JavaMathAbsKeepsMinValueNegative) {
  // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Math.abs leaves it there, the smallest
  // position in signed order, so in a signed ring it goes to the first point; in an unsigned
  // ring 0x80000000 is above every abs()'d point and wraps to the first point too — but a plain
  // (non-Java) abs would give +2^31, which does not fit an int at all.
  ASSERT_EQ(hash::java_string_hashcode("polygenelubricants"), INT32_MIN);
  const std::vector<Node> nodes = chash::testing::numbered_nodes(20, "10.0.0.");
  const auto ring = make_ring_spec_preset(
      parse_ring_spec("vnodes=0; bare=first; hash=java-hashcode; abs=yes"), nodes);
  NodeId lowest = 0;
  std::int32_t low = INT32_MAX;
  for (NodeId id = 0; id < nodes.size(); ++id) {
    const std::int32_t h = hash::java_string_hashcode(nodes[id].name);
    const std::int32_t a = h < 0 ? -h : h;
    if (a < low) low = a, lowest = id;
  }
  EXPECT_EQ(ring->route("polygenelubricants"), lowest);
}

TEST(RingSpecTest, WeightsScaleOrAreIgnored) {
  const std::vector<Node> nodes = {{"big", 4}, {"small", 1}, {"off", 0}};
  const auto scaled = make_ring_spec_preset(parse_ring_spec("vnodes=100"), nodes);
  const auto flat = make_ring_spec_preset(parse_ring_spec("vnodes=100; weights=ignore"), nodes);
  std::vector<int> a(3), b(3);
  for (int i = 0; i < 20000; ++i) {
    const std::string key = "k" + std::to_string(i);
    ++a[scaled->route(key)];
    ++b[flat->route(key)];
  }
  EXPECT_EQ(a[2], 0);  // weight 0: no point
  EXPECT_EQ(b[2], 0);
  EXPECT_GT(a[0], 3 * a[1]);  // ~4:1
  EXPECT_LT(b[0], 2 * b[1]);  // ~1:1
}

TEST(RingSpecTest, HashTagHashesOnlyTheTag) {
  const std::vector<Node> nodes = chash::testing::numbered_nodes(8);
  const auto ring = make_ring_spec_preset(parse_ring_spec("vnodes=40"), nodes, "{}");
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(ring->route("user:{" + std::to_string(i) + "}:a"),
              ring->route("cart:{" + std::to_string(i) + "}:b"));
  }
}

TEST(RingSpecTest, RefusesEmptyAndOversizedRings) {
  EXPECT_THROW(make_ring_spec_preset(RingSpec{}, std::vector<Node>{}), Error);
  EXPECT_THROW(make_ring_spec_preset(RingSpec{}, std::vector<Node>{{"a", 0}}), Error);
  RingSpec huge = parse_ring_spec("vnodes=65536");
  try {
    make_ring_spec_preset(huge, std::vector<Node>{{"a", 2000}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded) << e.what();
  }
}

// ---- Article presets ------------------------------------------------------------------------------

TEST(ArticlePresetsTest, EachRingPresetIsItsPrintedSpec) {
  const std::vector<Node> nodes = chash::testing::numbered_nodes(7, "192.168.0.");
  for (const char* name :
       {"guava-treemap", "java-hashcode-ring", "python-md5-ring", "murmur64a-treemap"}) {
    const auto spec = preset_ring_spec(name);
    ASSERT_TRUE(spec) << name;
    const auto preset = make_preset(name, nodes);
    RoutingSpec rs;
    rs.ring = to_string(*spec);
    const Router router = Router::build(rs, nodes);
    for (int i = 0; i < 3000; ++i) {
      const std::string key = "item:" + std::to_string(i);
      ASSERT_EQ(preset->route(key), router.route(key)) << name << " " << key;
    }
  }
  EXPECT_FALSE(preset_ring_spec("guava-iphash"));
  EXPECT_FALSE(preset_ring_spec("ketama"));
}

TEST(ArticlePresetsTest, VnodesOverrideTheCount) {
  EXPECT_EQ(preset_ring_spec("guava-treemap", 10)->vnodes, 10u);
  EXPECT_EQ(preset_ring_spec("guava-treemap")->vnodes, 150u);
  EXPECT_EQ(preset_ring_spec("java-hashcode-ring")->vnodes, 3u);
  EXPECT_EQ(preset_ring_spec("python-md5-ring")->vnodes, 150u);
  EXPECT_EQ(preset_ring_spec("murmur64a-treemap")->vnodes, 500u);
  // 0: only the servers' own points where the article has them.
  EXPECT_EQ(preset_ring_spec("java-hashcode-ring", 0)->vnodes, 0u);
  EXPECT_THROW(preset_ring_spec("python-md5-ring", 0), Error);
  PresetOptions zero;
  zero.vnodes = 0;
  EXPECT_THROW(make_preset("murmur64a-treemap", chash::testing::numbered_nodes(3), zero), Error);
  const auto bare_only = make_preset("guava-treemap", chash::testing::numbered_nodes(3), zero);
  EXPECT_EQ(bare_only->node_count(), 3u);
}

TEST(ArticlePresetsTest, GuavaIpHashIsJavasModulo) {
  const std::vector<Node> nodes = chash::testing::numbered_nodes(7, "10.0.0.");
  const auto p = make_preset("guava-iphash", nodes);
  for (int i = 0; i < 5000; ++i) {
    const std::string ip = "172.16." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    const std::int32_t h = hash::murmur3_x64_128(ip).as_int();
    const std::int32_t r = h % 7;  // C++ and Java both truncate toward zero
    EXPECT_EQ(p->route(ip), static_cast<NodeId>(r < 0 ? -r : r)) << ip;
    std::vector<NodeId> out(3);
    ASSERT_EQ(p->route_n(ip, out), 3u);
    EXPECT_EQ(out[1], (out[0] + 1) % 7);
  }
  std::vector<Node> weighted = nodes;
  weighted[2].weight = 2;
  EXPECT_THROW(make_preset("guava-iphash", weighted), Error);
  PresetOptions v;
  v.vnodes = 3;
  EXPECT_THROW(make_preset("guava-iphash", nodes, v), Error);
}

TEST(ArticlePresetsTest, NoHashSettingButHashTags) {
  PresetOptions h;
  h.hash = "md5";
  EXPECT_THROW(make_preset("python-md5-ring", chash::testing::numbered_nodes(3), h), Error);
  PresetOptions tag;
  tag.hash_tag = "{}";
  const auto p = make_preset("python-md5-ring", chash::testing::numbered_nodes(5), tag);
  EXPECT_EQ(p->route("a{x}"), p->route("b{x}"));
}

// ---- Router --------------------------------------------------------------------------------------

TEST(RingSpecRouterTest, RingIsOneChoiceAmongPresetAndAlgorithm) {
  const std::vector<Node> nodes = chash::testing::numbered_nodes(4);
  RoutingSpec s;
  s.ring = "vnodes=20";
  s.preset = "ketama";
  EXPECT_THROW(Router::build(s, nodes), Error);
  s.preset.clear();
  s.algorithm = "ring";
  EXPECT_THROW(Router::build(s, nodes), Error);
  s.algorithm.clear();
  s.hash = "md5";
  EXPECT_THROW(Router::build(s, nodes), Error);
  s.hash.reset();
  s.point_format = "{name}";
  EXPECT_THROW(Router::build(s, nodes), Error);
  s.point_format.reset();
  s.vnodes = 0;  // overrides vnodes=20, and leaves no point
  EXPECT_THROW(Router::build(s, nodes), Error);
  s.vnodes = 30;
  const Router r = Router::build(s, nodes);
  EXPECT_NE(r.describe().find("ring spec points={name}#{i}; from=0; vnodes=30"), std::string::npos)
      << r.describe();
  s.ring = "vnodes=30";
  s.vnodes.reset();
  const Router same = Router::build(s, nodes);
  for (int i = 0; i < 1000; ++i) {
    const std::string key = std::to_string(i);
    EXPECT_EQ(r.route(key), same.route(key));
  }
  s.ring = "vnodes=abc";
  EXPECT_THROW(Router::build(s, nodes), Error);
}

TEST(RingSpecRouterTest, FailoverAndBatchFollowTheRing) {
  const std::vector<Node> nodes = chash::testing::numbered_nodes(6, "cache-");
  RoutingSpec s;
  s.preset = "python-md5-ring";
  const Router r = Router::build(s, nodes);
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back("session:" + std::to_string(i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<NodeId> out(keys.size());
  r.route_batch(views, out);
  DownSet down;
  down.set(2, true);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(out[i], r.route(keys[i]));
    const NodeId f = r.route(keys[i], down);
    if (out[i] != 2) {
      EXPECT_EQ(f, out[i]);  // only the down node's keys move
    } else {
      NodeId two[2];
      ASSERT_EQ(r.route_n(keys[i], two), 2u);
      EXPECT_EQ(f, two[1]);  // each to its own next choice
    }
  }
}

}  // namespace
}  // namespace chash
