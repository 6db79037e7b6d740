// SPDX-License-Identifier: Apache-2.0
// The admin port's status page (control/ui.h) for a known state: every server with its state in
// words (up, ejected, warming, retired, replica of X), hostile names escaped, rates from two
// samples, latency quantiles from the histogram, the hot keys when /status has them, and the
// pool's picture (GET /ring.svg) through the admin server.
#include "control/ui.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "control/admin.h"
#include "control/status.h"
#include "membership/topology.h"
#include "net/event_loop.h"

namespace chash::proxy {
namespace {

const char* kBefore = R"("<script>alert(1)</script>":
  listen: 127.0.0.1:0
  redis: true
  auto_eject_hosts: true
  read_policy: prefer_replica
  servers:
    - {server: "127.0.0.1:7001:1 r1", replicas: [127.0.0.1:7101]}
    - 127.0.0.1:7002:1 r2
    - 127.0.0.1:7003:1 r3
)";
// r3 leaves (retired: the warm-up still reads it), r4 and a hostile name join (warming).
const char* kAfter = R"("<script>alert(1)</script>":
  listen: 127.0.0.1:0
  redis: true
  auto_eject_hosts: true
  read_policy: prefer_replica
  servers:
    - {server: "127.0.0.1:7001:1 r1", replicas: [127.0.0.1:7101]}
    - 127.0.0.1:7002:1 r2
    - 127.0.0.1:7004:1 r4
    - "127.0.0.1:7005:1 <img/src=x/onerror=alert(2)>"
)";

std::shared_ptr<const Topology> topology() {
  const auto v1 = build_topology(parse_config(kBefore, "t.yml"), nullptr, 1);
  return build_topology(parse_config(kAfter, "t.yml"), v1.get(), 2);
}

const Pool& only_pool(const Topology& t) { return *t.pools.at(0); }

NodeId member(const Pool& p, std::string_view name) {
  for (NodeId i = 0; i < p.servers.size(); ++i) {
    if (p.servers[i].name == name) return i;
  }
  ADD_FAILURE() << "no member " << name;
  return 0;
}

// The table row of server `name` (its data-server attribute as the page escapes it).
std::string row(const std::string& page, const std::string& escaped_name) {
  const std::size_t at = page.find("data-server=\"" + escaped_name + "\"");
  if (at == std::string::npos) return {};
  return page.substr(at, page.find("</tr>", at) - at);
}

TEST(UiTest, EveryServerWithItsStateAndRole) {
  const auto t = topology();
  const Pool& p = only_pool(*t);
  p.states[member(p, "r2")]->down = true;
  const std::int64_t now = steady_ms();
  const std::string page = render_ui(*t, "", take_ui_sample(*t, now), nullptr);
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(page.find("<meta http-equiv=\"refresh\" content=\"2\">"), std::string::npos);
  // A large membership reloads less often (10,000 servers: a 3.5 MB page).
  EXPECT_EQ(ui_refresh_seconds(256), 2);
  EXPECT_EQ(ui_refresh_seconds(257), 4);
  EXPECT_EQ(ui_refresh_seconds(1000), 8);
  EXPECT_EQ(ui_refresh_seconds(10000), 60);
  EXPECT_NE(row(page, "r1").find(">up<"), std::string::npos) << row(page, "r1");
  EXPECT_NE(row(page, "r2").find(">ejected<"), std::string::npos) << row(page, "r2");
  EXPECT_NE(row(page, "r4").find(">warming<"), std::string::npos) << row(page, "r4");
  EXPECT_NE(row(page, "r3").find(">retired<"), std::string::npos) << row(page, "r3");
  const std::string replica = row(page, p.servers[p.replicas.at(0).at(0)].name);
  EXPECT_NE(replica.find("replica of r1"), std::string::npos) << replica;
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));  // nothing external
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("not sampled in this pool"), std::string::npos);  // no /status given
  // /status says the same states.
  const auto status = nlohmann::json::parse(render_status_json(Metrics{}, *t, 2, 1));
  std::map<std::string, std::string> states;
  for (const auto& s : status["pools"][0]["servers"]) states[s["name"]] = s["state"];
  EXPECT_EQ(states["r2"], "ejected");
  EXPECT_EQ(states["r3"], "retired");
  EXPECT_EQ(states["r4"], "warming");
}

TEST(UiTest, SentinelAndClusterRolesFromStatus) {
  const auto t = build_topology(parse_config(R"(watched:
  listen: 127.0.0.1:0
  redis: true
  sentinels: [127.0.0.1:26379]
  servers:
    - {name: shard-a, sentinel_master: mymaster-a}
)",
                                             "t.yml"),
                                nullptr, 1);
  auto status = nlohmann::json::parse(render_status_json(Metrics{}, *t, 1, 1));
  status["sentinel"] = {{{"pool", "watched"},
                         {"server", "shard-a"},
                         {"master_group", "mymaster-a"},
                         {"master", "10.0.0.7:6379"},
                         {"status", "ok"}}};
  status["cluster"] = {{{"pool", "watched"}, {"status", "ok"}, {"covered_slots", 16384}}};
  status["rebalance"] = {
      {{"pool", "watched"}, {"state", "running"}, {"scanned", 120}, {"moved", 7}}};
  const std::string page = render_ui(*t, status.dump(), take_ui_sample(*t, steady_ms()), nullptr);
  EXPECT_NE(row(page, "shard-a").find("master of Sentinel group mymaster-a at 10.0.0.7:6379 (ok)"),
            std::string::npos)
      << row(page, "shard-a");
  EXPECT_NE(page.find("Rebalance: running, 120 keys scanned, 7 moved"), std::string::npos);
  EXPECT_NE(page.find("Redis Cluster map: ok, 16384 of 16384 slots covered"), std::string::npos);
}

TEST(UiTest, HostileNamesAreEscaped) {
  const auto t = topology();
  const std::string page = render_ui(*t, "", take_ui_sample(*t, steady_ms()), nullptr);
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(row(page, "&lt;img/src=x/onerror=alert(2)&gt;").find(">warming<"), std::string::npos);
  // The picture's link carries the name URL-encoded.
  EXPECT_NE(page.find("ring.svg?pool=%3Cscript%3Ealert%281%29%3C%2Fscript%3E"), std::string::npos);
}

TEST(UiTest, RatesFromTwoSamples) {
  const auto t = topology();
  const Pool& p = only_pool(*t);
  const UiSample before = take_ui_sample(*t, 10'000);
  p.shared->requests += 500;
  p.shared->errors += 20;
  p.states[member(p, "r1")]->requests += 300;
  p.states[member(p, "r1")]->errors += 4;
  const std::string first = render_ui(*t, "", before, nullptr);
  EXPECT_NE(first.find("rates from the next refresh"), std::string::npos);  // no earlier sample
  EXPECT_NE(row(first, "r1").find("<td class=\"num\">–</td>"), std::string::npos);
  const std::string page = render_ui(*t, "", take_ui_sample(*t, 12'000), &before);
  const std::string pool_stats = page.substr(page.find("class=\"pool-stats\""));
  EXPECT_NE(pool_stats.find(">250<"), std::string::npos) << pool_stats.substr(0, 600);  // 500/2s
  EXPECT_NE(pool_stats.find(">10.0<"), std::string::npos);                              // 20/2s
  const std::string r1 = row(page, "r1");
  EXPECT_NE(r1.find(">150<"), std::string::npos) << r1;  // 300/2s
  EXPECT_NE(r1.find(">2.0<"), std::string::npos) << r1;  // 4/2s
  EXPECT_NE(page.find("rates over the last 2.0 s"), std::string::npos);
}

TEST(UiTest, LatencyQuantilesFromBuckets) {
  UiSample::Buckets b{};
  EXPECT_EQ(latency_quantile(b, 0.5), -1);
  b[4] = 100;  // all in (500, 1000] us
  EXPECT_DOUBLE_EQ(latency_quantile(b, 0.5), 750);
  EXPECT_DOUBLE_EQ(latency_quantile(b, 1.0), 1000);
  b[12] = 100;  // as many over 2 s: p99 is given as the last finite bound
  EXPECT_DOUBLE_EQ(latency_quantile(b, 0.25), 750);
  EXPECT_DOUBLE_EQ(latency_quantile(b, 0.99), 2000000);
}

TEST(UiTest, HotKeysTableShowsOnlyKeysAboveMinRateOverTheWindow) {
  const auto t = topology();
  auto status = nlohmann::json::parse(render_status_json(Metrics{}, *t, 2, 1));
  auto& hot = status["pools"][0]["hot_keys"];
  // As /status has it before the first window ends.
  EXPECT_EQ(hot["at_ms"], 0);
  EXPECT_EQ(hot["min_rate"], 100.0);
  std::string page = render_ui(*t, status.dump(), take_ui_sample(*t, steady_ms()), nullptr);
  EXPECT_NE(page.find("no window has ended yet (one every 10.0 s)"), std::string::npos);
  // A window of 9.8 s as measured: one key above min_rate, one under it (a sample or two).
  hot["window_ms"] = 9800;
  hot["at_ms"] = 1'800'000'000'000;
  hot["top"] = {{{"key", "user:<42>"}, {"rate", 123.4}, {"owner", "r1"}},
                {{"key", "9f86d081884c7d65"}, {"rate", 1.6}, {"owner", "r2"}}};
  page = render_ui(*t, status.dump(), take_ui_sample(*t, steady_ms()), nullptr);
  EXPECT_NE(page.find("(over the last 9.8 s)"), std::string::npos);
  EXPECT_NE(page.find("<td>user:&lt;42&gt;</td><td class=\"num\">123</td><td>r1</td>"),
            std::string::npos);
  EXPECT_EQ(page.find("9f86d081884c7d65"), std::string::npos) << "1.6 req/s is under min_rate";
  // Uniform traffic: every key of the sketch under min_rate, and the page says so.
  hot["top"] = {{{"key", "a"}, {"rate", 1.6}, {"owner", "r1"}},
                {{"key", "b"}, {"rate", 3.2}, {"owner", "r2"}}};
  page = render_ui(*t, status.dump(), take_ui_sample(*t, steady_ms()), nullptr);
  EXPECT_NE(page.find("no key above 100 req/s (min_rate)"), std::string::npos);
  EXPECT_EQ(page.find("class=\"hot-keys\"><tr>"), std::string::npos);
}

// The page's rates are over the proxy's own window of samples, whoever loads the page and when:
// the history keeps kUiRateWindowMs of one-a-second samples, and a server that came in the
// window (or after the newest sample) has a rate from when it came, not "–".
TEST(UiTest, RatesAreOverTheSampleWindowAndANewServerHasOne) {
  const auto t = topology();
  const Pool& p = only_pool(*t);
  UiHistory history;
  const UiSample first = take_ui_sample(*t, 100'000);
  EXPECT_FALSE(history.baseline(first));  // no samples yet: "rates from the next refresh"
  const std::pair<std::string, std::string> r4{p.config.name, "r4"}, r5{p.config.name, "r5"};
  for (std::int64_t at = 100'000; at <= 130'000; at += kUiSampleMs) {
    p.shared->requests += 100;                  // 100 a second
    p.states[member(p, "r1")]->requests += 10;  // 10 a second
    UiSample s = take_ui_sample(*t, at);
    s.servers.erase(r4);  // r4 comes later
    history.add(std::move(s));
  }
  UiSample now = take_ui_sample(*t, 130'000);
  auto base = history.baseline(now);
  ASSERT_TRUE(base);
  EXPECT_EQ(now.at_ms - base->at_ms, kUiRateWindowMs);  // not since 100 s: the window only
  std::string page = render_ui(*t, "", now, &*base);
  EXPECT_NE(page.find("rates over the last 10.0 s"), std::string::npos);
  EXPECT_NE(row(page, "r1").find(">10.0<"), std::string::npos) << row(page, "r1");
  // r4 joins after the window's oldest sample: its rate is from its first sample (400 in 2 s),
  // and r5, after the newest one, from zero at that one (50 in 2 s).
  p.states[member(p, "r4")]->requests = 0;
  history.add(take_ui_sample(*t, 131'000));
  p.states[member(p, "r4")]->requests += 400;
  UiSample later = take_ui_sample(*t, 133'000);
  later.servers[r5] = {50, 0};
  base = history.baseline(later);
  ASSERT_TRUE(base);
  EXPECT_EQ(base->servers.at(r4).at_ms, 131'000);
  EXPECT_EQ(base->servers.at(r5).at_ms, 131'000);
  EXPECT_EQ(base->servers.at(r5).requests, 0u);
  page = render_ui(*t, "", later, &*base);
  EXPECT_NE(row(page, "r4").find("<td class=\"num\">200</td>"), std::string::npos)
      << row(page, "r4");
  // Loading the page does not move the window: twice at one instant, the same rates.
  const auto again = history.baseline(later);
  ASSERT_TRUE(again);
  EXPECT_EQ(render_ui(*t, "", later, &*base), render_ui(*t, "", later, &*again));
}

TEST(UiTest, QueryValuesAreDecoded) {
  EXPECT_EQ(query_value("pool=a%20b&x=1", "pool"), "a b");
  EXPECT_EQ(query_value("x=1&pool=a+b", "pool"), "a b");
  EXPECT_EQ(query_value("pool=%3Cs%3E%zz%4", "pool"), "<s>%zz%4");
  EXPECT_EQ(query_value("x=1", "pool"), "");
}

TEST(UiTest, AdminServesThePageAndEachPoolsPicture) {
  const auto t = topology();
  net::EventLoop loop;
  int fd[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0);
  AdminServer::Handlers handlers{[] { return std::string(); }, [] { return std::string("{}\n"); },
                                 [](std::string&) { return true; }, nullptr};
  handlers.ui = [&] { return render_ui(*t, "", take_ui_sample(*t, steady_ms()), nullptr); };
  handlers.ring_svg = [&](std::string_view query, std::string& body) {
    auto svg = render_pool_svg(*t, query_value(query, "pool"));
    body = svg ? *svg : "no such pool";
    return svg.has_value();
  };
  AdminServer admin(loop, fd[0], handlers);
  for (const char* path : {"/", "/ui", "/ui?x=1"}) {
    const std::string r = admin.respond(std::string("GET ") + path + " HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"))
        << path;
    EXPECT_NE(r.find("data-server=\"r1\""), std::string::npos) << path;
  }
  const std::string svg =
      admin.respond("GET /ring.svg?pool=%3Cscript%3Ealert(1)%3C/script%3E HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(svg.starts_with("HTTP/1.1 200 OK\r\nContent-Type: image/svg+xml\r\n")) << svg;
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  const std::string missing = admin.respond("GET /ring.svg?pool=nope HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(missing.starts_with("HTTP/1.1 404 Not Found\r\n")) << missing;
  EXPECT_TRUE(missing.ends_with("no such pool\n"));
  ::close(fd[0]);
  ::close(fd[1]);
}

}  // namespace
}  // namespace chash::proxy
