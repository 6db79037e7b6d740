// SPDX-License-Identifier: Apache-2.0
#include "chash/svg.h"

#include <gtest/gtest.h>

#include <string>

#include "chash/error.h"
#include "chash/router.h"
#include "test_nodes.h"

namespace chash::svg {
namespace {

std::size_t count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

Router router(const std::string& algorithm, int nodes) {
  RoutingSpec spec;
  spec.algorithm = algorithm;
  if (algorithm == "ring") spec.vnodes = 4;
  return Router::build(spec, testing::numbered_nodes(nodes));
}

TEST(SvgTest, EscapeMarkupControlBytesAndBrokenUtf8) {
  EXPECT_EQ(escape("<script>a&\"b'</script>"), "&lt;script&gt;a&amp;&quot;b&apos;&lt;/script&gt;");
  EXPECT_EQ(escape("caf\xc3\xa9"), "caf\xc3\xa9");  // well-formed UTF-8 stays
  EXPECT_EQ(escape("a\x01\xff\xc3"), "a???");       // control byte, bad lead, cut sequence
}

TEST(SvgTest, RingIsOneDocumentWithEscapedNames) {
  const std::string s = ring("t<1>", {"<b>", "c"}, {{0.0, 0.5, 0}, {0.5, 1.0, 1}}, {});
  EXPECT_TRUE(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(s.ends_with("</svg>\n"));
  EXPECT_NE(s.find("&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(s.find("<b>"), std::string::npos);
  EXPECT_NE(s.find("t&lt;1&gt;"), std::string::npos);
}

TEST(SvgTest, ArcOverHalfTheCircleIsDrawnInTwoPieces) {
  // An arc whose ends meet draws nothing in SVG: a whole circle is two paths.
  const std::string s = ring("one", {"a"}, {{0.0, 1.0, 0}}, {}, {}, {}, "centre text");
  EXPECT_EQ(count(s, "<path "), 2u);
  EXPECT_NE(s.find("centre text"), std::string::npos);
  EXPECT_EQ(s.find(" points</text>"), std::string::npos);
}

TEST(SvgTest, PlacementOfARingDrawsEveryPoint) {
  const Router r = router("ring", 3);  // 3 nodes x 4 vnodes
  const std::string s = placement(r, "ring");
  EXPECT_NE(s.find("12 points"), std::string::npos);
  EXPECT_EQ(count(s, "<line x1"), 12u);  // one tick per point
  for (const Node& n : testing::numbered_nodes(3)) EXPECT_NE(s.find(n.name), std::string::npos);
}

TEST(SvgTest, PlacementOfARingPresetDrawsThePeersRing) {
  RoutingSpec spec;
  spec.preset = "ketama";  // libketama: 160 points per equal-weight server
  const std::string s = placement(Router::build(spec, testing::numbered_nodes(3)), "ketama");
  EXPECT_NE(s.find("480 points"), std::string::npos);
  EXPECT_EQ(count(s, "<line x1"), 480u);
  spec.preset = "twemproxy-modula";  // no ring: shares of sampled keys
  EXPECT_NE(placement(Router::build(spec, testing::numbered_nodes(3)), "modula")
                .find("share of 8192 sampled keys per node"),
            std::string::npos);
}

// A large ring is drawn at a bounded resolution: 1000 ketama servers are 160,000 points (38 MB of
// SVG drawn one by one); the picture is resampled to 2048 steps of the circle, without ticks,
// and says so — and stays true to who owns where.
TEST(SvgTest, ALargeRingIsDrawnAtABoundedResolution) {
  RoutingSpec spec;
  spec.preset = "twemproxy";  // nutcracker's ketama: 160 points per server, any number of them
  const std::string s = placement(Router::build(spec, testing::numbered_nodes(1000)), "big");
  EXPECT_LT(s.size(), 700'000u);
  EXPECT_LE(count(s, "<path "), 2 * 2048u);
  EXPECT_GT(count(s, "<path "), 500u);  // still many owners around the circle
  EXPECT_EQ(count(s, "<line x1"), 0u);
  EXPECT_NE(s.find("160000 points"), std::string::npos);
  EXPECT_NE(s.find("drawn at 1/2048 of the circle"), std::string::npos);
  // Adjacent arcs of one owner are one segment: a ring of two arcs of one node draws one path.
  const std::string merged = ring("m", {"a", "b"}, {{0.0, 0.2, 0}, {0.2, 0.4, 0}, {0.4, 1.0, 1}}, {});
  EXPECT_EQ(count(merged, "<path "), 3u);  // a: one path; b: over half the circle, two
}

TEST(SvgTest, PlacementOfSlotsDrawsSlotRanges) {
  const Router r = router("slots", 3);
  const std::string s = placement(r, "cluster");
  EXPECT_NE(s.find("16384 of 16384 slots served"), std::string::npos);
  EXPECT_GE(count(s, "<path "), 3u);
}

TEST(SvgTest, PlacementWithoutPositionsDrawsSampledShares) {
  for (const char* algorithm : {"jump", "maglev", "modulo", "rendezvous"}) {
    const std::string s = placement(router(algorithm, 4), algorithm);
    EXPECT_NE(s.find("share of 8192 sampled keys per node"), std::string::npos) << algorithm;
    EXPECT_EQ(count(s, "<path "), 4u) << algorithm;  // one arc per node, each under half
  }
}

TEST(SvgTest, TableRingRefusesOtherTables) {
  const Router r = router("jump", 2);
  EXPECT_THROW(table_ring(*r.table(), r.nodes(), "x"), Error);
}

}  // namespace
}  // namespace chash::svg
