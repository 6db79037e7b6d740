// SPDX-License-Identifier: Apache-2.0
// nginx presets: the properties the peer vectors (tests/compat/vectors/nginx-*.tsv) do not spell
// out one by one — down servers, retries, options, keys that are not addresses.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"

namespace chash {
namespace {

constexpr const char* kPresets[] = {"nginx-hash-consistent", "nginx-hash", "nginx-ip-hash"};

std::vector<Node> five(std::uint32_t down = 99) {
  std::vector<Node> nodes = {{"10.0.0.1:8080", 1},
                             {"10.0.0.2:8080", 2},
                             {"10.0.0.3", 5},
                             {"unix:/run/app.sock", 1},
                             {"[2001:db8::1]:80", 3}};
  if (down < nodes.size()) nodes[down].weight = 0;
  return nodes;
}

// Keys for every preset: client addresses work as hash keys too.
std::vector<std::string> keys() {
  std::vector<std::string> out;
  for (int i = 0; i < 2000; ++i) {
    out.push_back("10." + std::to_string(i % 256) + "." + std::to_string(i / 256 * 31 % 256) + "." +
                  std::to_string(i % 7));
  }
  out.push_back("2001:db8::42");
  return out;
}

TEST(NginxPresetTest, RefusesOptionsNginxDoesNotHave) {
  for (const char* name : kPresets) {
    PresetOptions o;
    o.vnodes = 100;
    EXPECT_THROW(make_preset(name, five(), o), Error) << name;
    PresetOptions h;
    h.hash = "md5";
    EXPECT_THROW(make_preset(name, five(), h), Error) << name;
  }
}

TEST(NginxPresetTest, DownServerOwnsNothingAndMovesNoOtherKey) {
  // `server NAME down;` keeps nginx's weight 1, so taking down a server of weight 1 (nodes 0
  // and 3) leaves every walk as it was: only the down server's keys move.
  for (const char* name : kPresets) {
    for (std::uint32_t down : {0u, 3u}) {
      const auto all = make_preset(name, five());
      const auto less = make_preset(name, five(down));
      for (const std::string& k : keys()) {
        const NodeId before = all->route(k);
        const NodeId after = less->route(k);
        ASSERT_NE(after, down) << name << " " << k;
        ASSERT_NE(after, kNoNode) << name << " " << k;
        if (before != down) {
          ASSERT_EQ(after, before) << name << " " << k;
        }
      }
    }
  }
}

TEST(NginxPresetTest, RouteNStartsWithRouteAndListsEveryUpServerOnce) {
  for (const char* name : kPresets) {
    for (std::uint32_t down : {1u, 99u}) {
      const auto p = make_preset(name, five(down));
      const std::size_t up = down < 5 ? 4 : 5;
      for (const std::string& k : keys()) {
        std::vector<NodeId> out(8, kNoNode);
        const std::size_t n = p->route_n(k, out);
        ASSERT_EQ(n, up) << name << " " << k;
        EXPECT_EQ(out[0], p->route(k)) << name << " " << k;
        std::vector<NodeId> sorted(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << name;
        EXPECT_EQ(std::find(sorted.begin(), sorted.end(), down), sorted.end()) << name;
      }
    }
  }
}

TEST(NginxPresetTest, ConsistentHashesTheNameAsWrittenWithoutItsDefaultPort) {
  // ngx_http_upstream_init_chash hashes "10.0.0.3" as written: adding the default ":80" nginx
  // connects to changes the points, so it changes where keys go.
  std::vector<Node> written = {{"10.0.0.3", 1}, {"10.0.0.4:8080", 1}};
  std::vector<Node> with_port = {{"10.0.0.3:80", 1}, {"10.0.0.4:8080", 1}};
  const auto a = make_preset("nginx-hash-consistent", written);
  const auto b = make_preset("nginx-hash-consistent", with_port);
  std::size_t differ = 0;
  for (const std::string& k : keys()) differ += a->route(k) != b->route(k) ? 1 : 0;
  EXPECT_GT(differ, 100u);
  // The "unix:" prefix is not hashed (nor its case).
  const auto u1 = make_preset("nginx-hash-consistent", std::vector<Node>{{"unix:/s", 1}, {"x", 1}});
  const auto u2 = make_preset("nginx-hash-consistent", std::vector<Node>{{"UNIX:/s", 1}, {"x", 1}});
  for (const std::string& k : keys()) ASSERT_EQ(u1->route(k), u2->route(k));
}

TEST(NginxPresetTest, IpHashKeysAreAddressesAndOnlyTheFirstThreeOctetsCount) {
  const auto p = make_preset("nginx-ip-hash", five());
  EXPECT_EQ(p->route("user:42"), kNoNode);
  EXPECT_EQ(p->route(""), kNoNode);
  EXPECT_EQ(p->route("10.0.0"), kNoNode);
  std::vector<NodeId> out(3);
  EXPECT_EQ(p->route_n("not-an-address", out), 0u);
  for (int i = 0; i < 256; ++i) {
    const std::string net = "192.0." + std::to_string(i) + ".";
    EXPECT_EQ(p->route(net + "1"), p->route(net + "254")) << net;
    EXPECT_EQ(p->route(net + "7"), p->route(net + "7:5000")) << net;
  }
}

TEST(NginxPresetTest, SingleServerAndEmptyKeyAnswerAsRoundRobinFirstWould) {
  // nginx round-robins an empty key; from a fresh state its first pick is the highest weight.
  for (const char* name : {"nginx-hash-consistent", "nginx-hash"}) {
    const auto p = make_preset(name, five());
    EXPECT_EQ(p->route(""), 2u) << name;
    std::vector<NodeId> out(5);
    ASSERT_EQ(p->route_n("", out), 5u);
    EXPECT_EQ(out, (std::vector<NodeId>{2, 4, 1, 0, 3})) << name;
  }
  for (const char* name : kPresets) {
    const auto p = make_preset(name, std::vector<Node>{{"10.0.0.1:80", 3}});
    EXPECT_EQ(p->route("10.1.2.3"), 0u) << name;
  }
}

TEST(NginxPresetTest, NoServerOrEveryServerDownIsAnError) {
  // nginx would start and answer 502; a table with no server to route to is refused up front.
  for (const char* name : kPresets) {
    EXPECT_THROW(make_preset(name, std::vector<Node>{}), Error) << name;
    EXPECT_THROW(make_preset(name, std::vector<Node>{{"a:1", 0}}), Error) << name;
  }
}

}  // namespace
}  // namespace chash
