// SPDX-License-Identifier: Apache-2.0
// The status page (control/ui.h) in a real browser: three redis-server on 127.0.0.1, the proxy
// in-process with an admin port behind admin_auth (protect: all), and headless Chromium (Debian
// `chromium`, scripts/bootstrap.sh) loading http://user:password@127.0.0.1:PORT/ui. The DOM it
// dumps has every server's row and the pools' SVG, and its screenshot is not one colour (decoded
// with libpng). Skipped only where no chromium binary exists; Chromium is killed after 30 s.
// FleetInChromium: two proxies fed by a real etcd — the page shows etcd and each endpoint up or
// down, the pool's epoch and phase, the leader, both proxies with their revision and lag, the
// votes against a stopped backend, and the configuration line's fleet epoch.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "control/proxy.h"
#include "e2e_util.h"
#include "etcd_util.h"
#include "membership/fleet/state.h"
#include "redis_util.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::RespClient;

std::string chromium_binary() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    if (testing::have_program(name)) return name;
  }
  return {};
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A headless Chromium run with its own profile in `dir`, killed after 30 s (`timeout`); its
// messages go to `dir`/chromium.log. Returns the exit status.
int run_chromium(const std::string& binary, const fs::path& dir, const std::string& args,
                 const std::string& url, const fs::path& out) {
  const std::string cmd = "timeout -k 5 30 " + binary +
                          " --headless --no-sandbox --disable-gpu --no-first-run"
                          " --disable-extensions --user-data-dir=" +
                          (dir / "chromium-profile").string() + " " + args + " '" + url + "' >" +
                          out.string() + " 2>>" + (dir / "chromium.log").string();
  return std::system(cmd.c_str());
}

struct Pixels {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};

bool read_png(const fs::path& p, Pixels& out) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, p.c_str())) return false;
  image.format = PNG_FORMAT_RGB;
  out.width = image.width;
  out.height = image.height;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    png_image_free(&image);
    return false;
  }
  return true;
}

TEST(UiBrowserTest, ChromiumShowsEveryServerAndTheRing) {
  const std::string chromium = chromium_binary();
  if (chromium.empty()) {
    GTEST_SKIP() << "no chromium binary (apt-get install chromium; scripts/bootstrap.sh): the "
                    "status page is not checked in a browser";
  }
  if (!testing::have_program("redis-server")) GTEST_SKIP() << "redis-server not installed";
  const auto started = std::chrono::steady_clock::now();
  const fs::path dir = testing::make_test_dir("chash-ui");
  std::vector<std::unique_ptr<ChildProcess>> redis;
  std::string servers;
  for (int i = 1; i <= 3; ++i) {
    const std::uint16_t port = testing::free_port();
    auto p = std::make_unique<ChildProcess>();
    ASSERT_TRUE(p->start({"redis-server", "--bind", "127.0.0.1", "--port", std::to_string(port),
                          "--save", "", "--appendonly", "no", "--dir", dir.string(), "--logfile",
                          (dir / ("r" + std::to_string(i) + ".log")).string()},
                         [port] {
                           const int fd = testing::dial_tcp(port);
                           if (fd < 0) return false;
                           ::close(fd);
                           return true;
                         }))
        << "redis-server on " << port;
    redis.push_back(std::move(p));
    servers += "    - 127.0.0.1:" + std::to_string(port) + ":1 redis-" + std::to_string(i) + "\n";
  }
  testing::ProxyRunner proxy;
  proxy.start(dir,
              "alpha:\n  listen: 127.0.0.1:0\n  redis: true\n  hash: fnv1a_64\n"
              "  distribution: ketama\n"
              "  hot_keys: {window: 300ms, sample: 1, min_rate: 1, log_rate: 0}\n  servers:\n" +
                  servers +
                  "beta:\n  listen: 127.0.0.1:0\n  redis: true\n  algorithm: ring\n"
                  "  servers:\n" +
                  servers +
                  "chash_proxy:\n  admin: 127.0.0.1:0\n"
                  "  admin_auth: {basic: \"ops:s3cret\", protect: all}\n");
  {  // some traffic, so that the page has requests to show, and a hot key in alpha's table
    RespClient c(RespClient::dial_tcp(proxy->port(0)));
    for (int i = 0; i < 50; ++i) c.call({"SET", "k" + std::to_string(i), "v"});
  }
  // The hot key stays hot while the browser loads: reads of it go on until the DOM is in.
  std::atomic<bool> reading{true};
  std::thread reader([&] {
    RespClient c(RespClient::dial_tcp(proxy->port(0)));
    while (reading) c.call({"GET", "user:hot"});
  });
  struct Join {
    std::atomic<bool>& flag;
    std::thread& t;
    ~Join() {
      flag = false;
      t.join();
    }
  } join{reading, reader};
  ASSERT_TRUE(testing::eventually([&] {
    return proxy->status_json().find("\"top\":[{\"key\":\"user:hot\"") != std::string::npos;
  })) << proxy->status_json();
  const std::uint16_t admin = proxy->admin_port();
  // Without credentials the page is refused like the rest of the port.
  EXPECT_TRUE(testing::http(admin, "GET /ui HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 401"));
  const std::string url = "http://ops:s3cret@127.0.0.1:" + std::to_string(admin) + "/ui";

  const fs::path dom_file = dir / "dom.html";
  EXPECT_EQ(run_chromium(chromium, dir, "--dump-dom", url, dom_file), 0)
      << slurp(dir / "chromium.log");
  const std::string dom = slurp(dom_file);
  ASSERT_NE(dom.find("chash-proxy"), std::string::npos)
      << dom.substr(0, 2000) << slurp(dir / "chromium.log");
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "redis-" + std::to_string(i);
    EXPECT_NE(dom.find("data-server=\"" + name + "\""), std::string::npos) << name;
  }
  EXPECT_NE(dom.find("data-pool=\"alpha\""), std::string::npos);
  EXPECT_NE(dom.find("data-pool=\"beta\""), std::string::npos);
  std::size_t svgs = 0;
  for (std::size_t at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1))
    ++svgs;
  EXPECT_GE(svgs, 2u);  // each pool's picture, inline
  EXPECT_NE(dom.find(">up<"), std::string::npos);
  EXPECT_NE(dom.find("<td>user:hot</td>"), std::string::npos) << "alpha's hot key";

  const fs::path png = dir / "page.png";
  EXPECT_EQ(run_chromium(chromium, dir,
                         "--hide-scrollbars --window-size=1200,900 --screenshot=" + png.string(),
                         url, dir / "screenshot.out"),
            0)
      << slurp(dir / "chromium.log");
  Pixels px;
  ASSERT_TRUE(read_png(png, px)) << "no PNG at " << png;
  EXPECT_EQ(px.width, 1200u);
  EXPECT_EQ(px.height, 900u);
  auto pixel = [&px](std::size_t i) {
    return std::uint32_t{px.rgb[i]} << 16 | std::uint32_t{px.rgb[i + 1]} << 8 |
           std::uint32_t{px.rgb[i + 2]};
  };
  std::set<std::uint32_t> colours;
  std::size_t unlike_first = 0;
  for (std::size_t i = 0; i + 2 < px.rgb.size(); i += 3) {
    colours.insert(pixel(i));
    unlike_first += pixel(i) != pixel(0);
  }
  EXPECT_GE(colours.size(), 16u) << "a blank screenshot: " << png;
  EXPECT_GT(unlike_first, px.rgb.size() / 3 / 100) << "under 1% of the pixels drawn: " << png;
  std::cout << "browser test: " << colours.size() << " colours, "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count()
            << " ms\n";
  // To look at the page: CHASH_UI_SCREENSHOT=/tmp/page.png keeps a copy of the screenshot.
  if (const char* keep = std::getenv("CHASH_UI_SCREENSHOT")) {
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
  }
  proxy.stop();
  if (!HasFailure()) fs::remove_all(dir);  // else kept: the DOM, the screenshot, chromium.log
}

// The DOM element (up to its closing tag's end) with attribute `attr` (e.g. data-member="p1").
std::string element(const std::string& dom, const std::string& attr, const char* until = "</tr>") {
  const std::size_t at = dom.find(attr);
  if (at == std::string::npos) return {};
  const std::size_t end = dom.find(until, at);
  return dom.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

TEST(UiBrowserTest, FleetInChromium) {
  const std::string chromium = chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "no chromium binary (apt-get install chromium)";
  if (!testing::have_etcd() || !testing::have_program("redis-server")) {
    GTEST_SKIP() << "etcd or redis-server missing: scripts/bootstrap.sh installs them";
  }
  const fs::path dir = testing::make_test_dir("chash-ui-fleet");
  testing::EtcdCluster etcd(dir, 1);
  ASSERT_TRUE(etcd.start()) << "etcd did not start (see " << dir << "/e1.log)";
  std::vector<std::unique_ptr<testing::RedisServer>> redis;
  std::string servers;
  for (int i = 1; i <= 3; ++i) {
    redis.push_back(std::make_unique<testing::RedisServer>(dir, "r" + std::to_string(i)));
    ASSERT_TRUE(redis.back()->start());
    servers += "    - " + redis.back()->socket() + ":1 r" + std::to_string(i) + "\n";
  }
  // The first endpoint has nothing behind it: the page shows it down and the real one up.
  const std::string dead = "127.0.0.1:" + std::to_string(testing::free_port());
  auto yaml = [&](const std::string& id, std::uint16_t admin) {
    return "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) +
           "\n  membership:\n    etcd: [" + dead + ", " + etcd.endpoints()[0] +
           "]\n    prefix: /ui\n    id: " + id +
           "\n    lease_ttl: 2000\n    start_timeout: 3000\n    timeout: 500\n"
           "cache:\n  listen: 127.0.0.1:0\n  redis: true\n  distribution: ketama\n"
           "  auto_eject_hosts: true\n  server_retry_timeout: 300\n  server_failure_limit: 1\n"
           "  health_check_interval: 200\n"
           "  timeout: 1000\n  servers:\n" +
           servers;
  };
  std::vector<std::unique_ptr<testing::ProxyRunner>> proxies;
  std::vector<std::uint16_t> admins;
  for (int i = 1; i <= 2; ++i) {
    admins.push_back(testing::free_port());
    proxies.push_back(std::make_unique<testing::ProxyRunner>());
    const fs::path d = dir / ("p" + std::to_string(i));
    fs::create_directories(d);
    (*proxies.back()).start(d, yaml("p" + std::to_string(i), admins.back()), 1);
  }
  auto state = [&] {
    auto c = etcd.client();
    const auto r = c.get("/ui/pools/cache/state");
    return r.kvs.empty() ? fleet::PoolState{} : fleet::decode_state(r.kvs.front().value);
  };
  // A membership change through p1's admin port (r3 out), so the epoch is past the first.
  ASSERT_TRUE(testing::within(std::chrono::seconds(10), [&] { return state().epoch >= 1; }));
  const std::string removed =
      testing::http(admins[0], "POST /fleet/remove?pool=cache&server=r3 HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(removed.starts_with("HTTP/1.1 200")) << removed;
  std::uint64_t epoch = 0;
  auto settled = [&] {
    const fleet::PoolState s = state();
    if (s.epoch < 2 || s.phase != fleet::Phase::kStable) return false;
    for (auto& p : proxies) {
      if ((*p)->topology()->pools[0]->fleet_epoch != s.epoch) return false;
    }
    epoch = s.epoch;
    return true;
  };
  ASSERT_TRUE(testing::within(std::chrono::seconds(20), settled)) << (*proxies[0])->status_json();
  // r2 stops: both proxies vote against it (and the fleet ejects it). The page is loaded once
  // both votes are in /fleet.
  redis[1].reset();
  ASSERT_TRUE(testing::within(std::chrono::seconds(20), [&] {
    const auto f = nlohmann::json::parse((*proxies[0])->etcd().fleet_json());
    std::size_t votes = 0;
    for (const auto& m : f["fleet"][0]["pools"][0]["members"]) votes += m["down"].contains("r2");
    return votes == 2;
  })) << (*proxies[0])->etcd().fleet_json();
  const auto f = nlohmann::json::parse((*proxies[0])->etcd().fleet_json())["fleet"][0];
  const std::string leader = f["leader"];
  ASSERT_TRUE(leader == "p1" || leader == "p2") << f.dump();
  // The fleet may still move (r2's ejection bumps the epoch) while the page loads: the page's
  // epoch is one this proxy applied between just before the load and just after it.
  const std::uint64_t epoch_before = (*proxies[0])->topology()->pools[0]->fleet_epoch;

  const std::string url = "http://127.0.0.1:" + std::to_string(admins[0]) + "/ui";
  const fs::path dom_file = dir / "dom.html";
  EXPECT_EQ(run_chromium(chromium, dir, "--dump-dom", url, dom_file), 0)
      << slurp(dir / "chromium.log");
  const std::string dom = slurp(dom_file);
  ASSERT_NE(dom.find("data-fleet=\"/ui\""), std::string::npos) << dom.substr(0, 4000);
  const std::uint64_t epoch_after = (*proxies[0])->topology()->pools[0]->fleet_epoch;
  // The configuration line names the fleet's epoch, not only the file's version.
  const std::string shown = "at fleet epoch <span class=\"fleet-epoch\" data-pool=\"cache\">";
  const std::size_t at = dom.find(shown);
  ASSERT_NE(at, std::string::npos) << element(dom, "class=\"summary\"", "</p>");
  const std::uint64_t page_epoch = std::strtoull(dom.c_str() + at + shown.size(), nullptr, 10);
  EXPECT_GE(page_epoch, epoch_before) << element(dom, "class=\"summary\"", "</p>");
  EXPECT_LE(page_epoch, epoch_after) << element(dom, "class=\"summary\"", "</p>");
  EXPECT_GE(epoch_before, epoch);
  // etcd up; the dead endpoint down with its reason, the live one up.
  EXPECT_NE(dom.find("data-etcd=\"up\""), std::string::npos);
  EXPECT_NE(element(dom, "data-endpoint=\"" + dead + "\"").find("data-state=\"down\""),
            std::string::npos)
      << element(dom, "data-endpoint=\"" + dead + "\"");
  EXPECT_NE(element(dom, "data-endpoint=\"" + etcd.endpoints()[0] + "\"").find("data-state=\"up\""),
            std::string::npos);
  EXPECT_NE(element(dom, "class=\"leader\"", "</span>").find(leader), std::string::npos);
  // The pool's epoch and phase; every live proxy with its revision and lag.
  EXPECT_NE(dom.find("epoch <span class=\"epoch\">"), std::string::npos);
  EXPECT_NE(dom.find("phase <span class=\"phase\">"), std::string::npos);
  for (const char* id : {"p1", "p2"}) {
    const std::string row = element(dom, std::string("data-member=\"") + id + "\"");
    EXPECT_NE(row.find("data-lag="), std::string::npos) << id;
    // Its revision, as /fleet has it.
    for (const auto& m : f["pools"][0]["members"]) {
      if (m["id"] == id) {
        EXPECT_NE(row.find(">" + std::to_string(m["revision"].get<std::int64_t>()) + "<"),
                  std::string::npos)
            << row;
      }
    }
    EXPECT_NE(row.find("r2"), std::string::npos) << "p " << id << " cannot reach r2: " << row;
  }
  EXPECT_NE(element(dom, "data-member=\"" + leader + "\"").find("(leader)"), std::string::npos);
  EXPECT_NE(element(dom, "data-member=\"p1\"").find("(this proxy)"), std::string::npos);
  // Votes against each backend: r2 has both.
  EXPECT_NE(element(dom, "data-backend=\"r2\"").find("data-votes=\"2\""), std::string::npos)
      << element(dom, "data-backend=\"r2\"");
  EXPECT_NE(element(dom, "data-backend=\"r1\"").find("data-votes=\"0\""), std::string::npos);

  // To look at the fleet's page: CHASH_UI_FLEET_SCREENSHOT=/tmp/fleet.png.
  if (const char* keep = std::getenv("CHASH_UI_FLEET_SCREENSHOT")) {
    EXPECT_EQ(
        run_chromium(chromium, dir,
                     "--hide-scrollbars --window-size=1200,1400 --screenshot=" + std::string(keep),
                     url, dir / "screenshot.out"),
        0);
  }

  // etcd goes away: the page says so.
  etcd[0].kill();
  ASSERT_TRUE(testing::within(std::chrono::seconds(20), [&] {
    return (*proxies[0])->etcd().fleet_json().find("\"up\":false") != std::string::npos;
  }));
  EXPECT_EQ(run_chromium(chromium, dir, "--dump-dom", url, dom_file), 0);
  const std::string away = slurp(dom_file);
  EXPECT_NE(away.find("data-etcd=\"down\""), std::string::npos)
      << element(away, "data-fleet", "</table>");
  EXPECT_NE(
      element(away, "data-endpoint=\"" + etcd.endpoints()[0] + "\"").find("data-state=\"down\""),
      std::string::npos)
      << element(away, "data-fleet", "</table>");
  proxies.clear();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace chash::proxy
