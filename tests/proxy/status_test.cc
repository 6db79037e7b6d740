// SPDX-License-Identifier: Apache-2.0
// /metrics and /status rendering (control/status.h) of a known state, and the admin port's HTTP
// (control/admin.h) with stand-in handlers and over a real loopback socket.
#include "control/status.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "config/config.h"
#include "control/admin.h"
#include "base/utf8.h"
#include "membership/topology.h"
#include "net/event_loop.h"
#include "net/socket.h"

namespace chash::proxy {
namespace {

std::shared_ptr<const Topology> two_pools() {
  return build_topology(parse_config(R"(alpha:
  listen: 127.0.0.1:0
  redis: true
  servers:
    - 127.0.0.1:7001:1 r1
    - 127.0.0.1:7002:2 r2
web:
  listen: 127.0.0.1:0
  protocol: tcp
  balance: round-robin
  servers:
    - 127.0.0.1:8001:1 w1
)",
                                     "t.yml"),
                        nullptr, 3);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(StatusTest, PrometheusCountersAndGauges) {
  Metrics m;
  m.requests = 7;
  m.clients_open = -1;  // a transient underflow prints as 0
  m.reloads = 4;
  const auto t = two_pools();
  t->pools[0]->shared->requests = 7;
  t->pools[0]->shared->local_replies = 2;
  t->pools[0]->shared->errors = 1;
  const std::string o = render_prometheus(m, *t);
  EXPECT_NE(o.find("# TYPE chash_proxy_requests_total counter\n"
                   "chash_proxy_requests_total{pool=\"alpha\"} 7\n"
                   "chash_proxy_requests_total{pool=\"web\"} 0\n"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("\nchash_proxy_local_replies_total{pool=\"alpha\"} 2\n"), std::string::npos);
  EXPECT_NE(o.find("\nchash_proxy_errors_total{pool=\"alpha\"} 1\n"), std::string::npos);
  EXPECT_NE(o.find("# TYPE chash_proxy_clients gauge\nchash_proxy_clients 0\n"), std::string::npos);
  EXPECT_NE(o.find("\nchash_proxy_reloads_total 4\n"), std::string::npos);
  EXPECT_NE(o.find("\nchash_proxy_reload_failures_total 0\n"), std::string::npos);
}

TEST(StatusTest, PrometheusLatencyHistogramIsCumulativePerPool) {
  const auto t = two_pools();
  LatencyHistogram& h = t->pools[0]->shared->latency;
  h.observe(40);       // <= 50 us
  h.observe(3000);     // <= 5 ms
  h.observe(5000000);  // over 2 s: +Inf only
  const std::string o = render_prometheus(Metrics{}, *t);
  EXPECT_NE(o.find("# TYPE chash_proxy_request_duration_seconds histogram\n"
                   "chash_proxy_request_duration_seconds_bucket{pool=\"alpha\",le=\"5e-05\"} 1\n"
                   "chash_proxy_request_duration_seconds_bucket{pool=\"alpha\",le=\"0.0001\"} 1\n"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("{pool=\"alpha\",le=\"0.0025\"} 1\n"), std::string::npos);
  EXPECT_NE(o.find("{pool=\"alpha\",le=\"0.005\"} 2\n"), std::string::npos);
  EXPECT_NE(o.find("{pool=\"alpha\",le=\"2\"} 2\n"), std::string::npos);
  EXPECT_NE(o.find("{pool=\"alpha\",le=\"+Inf\"} 3\n"
                   "chash_proxy_request_duration_seconds_sum{pool=\"alpha\"} 5.003040\n"
                   "chash_proxy_request_duration_seconds_count{pool=\"alpha\"} 3\n"),
            std::string::npos)
      << o;
  // The other pool has its own, empty series.
  EXPECT_NE(o.find("chash_proxy_request_duration_seconds_count{pool=\"web\"} 0\n"),
            std::string::npos);
}

TEST(StatusTest, LatencyBatchAddsWhatObservingEachWould) {
  // A client's replies released together are published in one batch (ClientSession::on_done).
  LatencyHistogram direct, batched;
  LatencyBatch batch;
  for (const std::uint64_t us : {0, 40, 50, 51, 3000, 3000, 2000000, 5000000}) {
    direct.observe(us);
    batch.observe(us);
  }
  EXPECT_EQ(batched.sum_us.load(), 0u);  // nothing until published
  batch.publish(batched);
  batch.publish(batched);  // published once: the batch is empty after
  for (std::size_t i = 0; i < direct.counts.size(); ++i)
    EXPECT_EQ(batched.counts[i].load(), direct.counts[i].load()) << "bucket " << i;
  EXPECT_EQ(batched.sum_us.load(), direct.sum_us.load());
  EXPECT_EQ(batched.counts[0].load(), 3u);  // 0, 40 and 50 are <= 50 us
}

TEST(StatusTest, PrometheusBackendSeriesPerPoolAndBackend) {
  const auto t = two_pools();
  BackendState& r1 = *t->pools[0]->states[0];
  r1.down = true;
  r1.requests = 5;
  r1.errors = 2;
  r1.ejections = 1;
  r1.timeouts = 1;
  t->pools[1]->states[0]->active = 3;
  const std::string o = render_prometheus(Metrics{}, *t);
  EXPECT_NE(
      o.find(
          "# HELP chash_proxy_backend_up 1 when the backend takes traffic, 0 when down/ejected.\n"
          "# TYPE chash_proxy_backend_up gauge\n"
          "chash_proxy_backend_up{pool=\"alpha\",backend=\"r1\"} 0\n"
          "chash_proxy_backend_up{pool=\"alpha\",backend=\"r2\"} 1\n"
          "chash_proxy_backend_up{pool=\"web\",backend=\"w1\"} 1\n"),
      std::string::npos)
      << o;
  EXPECT_NE(o.find("# TYPE chash_proxy_backend_requests_total counter\n"
                   "chash_proxy_backend_requests_total{pool=\"alpha\",backend=\"r1\"} 5\n"),
            std::string::npos);
  EXPECT_NE(o.find("chash_proxy_backend_errors_total{pool=\"alpha\",backend=\"r1\"} 2\n"),
            std::string::npos);
  EXPECT_NE(o.find("chash_proxy_backend_ejections_total{pool=\"alpha\",backend=\"r1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(o.find("chash_proxy_backend_timeouts_total{pool=\"alpha\",backend=\"r1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(o.find("# TYPE chash_proxy_backend_connections gauge\n"), std::string::npos);
  EXPECT_NE(o.find("chash_proxy_backend_connections{pool=\"web\",backend=\"w1\"} 3\n"),
            std::string::npos);
}

TEST(StatusTest, PrometheusTextIsWellFormed) {
  // Every family: one # HELP then one # TYPE, then samples of that family only; every sample
  // line is `name[{labels}] value`.
  const std::string o = render_prometheus(Metrics{}, *two_pools());
  const std::regex sample(R"(^([a-z_]+)(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? [0-9][0-9.e+-]*$)");
  std::istringstream in(o);
  std::string line, family;
  int families = 0;
  bool typed = false;
  while (std::getline(in, line)) {
    if (line.starts_with("# HELP ")) {
      family = line.substr(7, line.find(' ', 7) - 7);
      typed = false;
      ++families;
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      EXPECT_EQ(line.substr(7, family.size() + 1), family + " ") << line;
      typed = true;
      continue;
    }
    std::smatch mt;
    ASSERT_TRUE(std::regex_match(line, mt, sample)) << line;
    EXPECT_TRUE(typed) << line;
    EXPECT_TRUE(mt[1].str().starts_with(family)) << line << " under " << family;
  }
  // Process-wide series, per-pool series, the histogram, the hot keys' (rates, sampled
  // requests, five counters), per-backend series; then the process_* series, each shown only
  // when /proc gives it (all of them on Linux but process_max_fds under an unlimited
  // RLIMIT_NOFILE).
  EXPECT_GE(families, 11 + 23 + 1 + 7 + 15 + 5);
  EXPECT_LE(families, 11 + 23 + 1 + 7 + 15 + 6);
  EXPECT_EQ(count(o, "# TYPE "), static_cast<std::size_t>(families));
}

TEST(StatusTest, LabelAndJsonEscaping) {
  EXPECT_EQ(prometheus_label_escape("a\"b\\c\nd"), "a\\\"b\\\\c d");
  EXPECT_EQ(json_escape("a\"b\\c\nd\x01"), "a\\\"b\\\\c\\u000ad\\u0001");
  EXPECT_EQ(json_escape("plain"), "plain");
}

// RFC 3629's table of well-formed sequences, at its edges.
static_assert(utf8_sequence_length("a") == 1);
static_assert(utf8_sequence_length("\xc3\xa9") == 2);          // é
static_assert(utf8_sequence_length("\xe2\x82\xac") == 3);      // €
static_assert(utf8_sequence_length("\xf0\x9f\x98\x80") == 4);  // U+1F600
static_assert(utf8_sequence_length("\xf4\x8f\xbf\xbf") == 4);  // U+10FFFF, the last
static_assert(utf8_sequence_length("") == 0);
static_assert(utf8_sequence_length("\x80") == 0);                // a continuation alone
static_assert(utf8_sequence_length("\xc0\xaf") == 0);            // overlong '/'
static_assert(utf8_sequence_length("\xe0\x80\xaf") == 0);        // overlong, 3 bytes
static_assert(utf8_sequence_length("\xed\xa0\x80") == 0);        // a surrogate
static_assert(utf8_sequence_length("\xf4\x90\x80\x80") == 0);    // above U+10FFFF
static_assert(utf8_sequence_length("\xe2\x82") == 0);            // cut short
static_assert(utf8_sequence_length("\xff") == 0);

// A hot key is network bytes: binary keys must leave /status valid JSON and /metrics valid
// UTF-8, shown as redis-cli shows them (\xNN), with valid UTF-8 kept as it is.
TEST(StatusTest, BytesOutsideUtf8AreShownAsHexAndTheJsonStaysValid) {
  EXPECT_EQ(json_escape("k\xff\xfe"), "k\\\\xff\\\\xfe");
  EXPECT_EQ(json_escape("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(json_escape("\xe2\x82"), "\\\\xe2\\\\x82");  // a sequence cut at the 200-byte limit
  EXPECT_EQ(json_escape("\xed\xa0\x80"), "\\\\xed\\\\xa0\\\\x80");
  EXPECT_EQ(prometheus_label_escape("a\tb\xff\"c"), "a\\\\x09b\\\\xff\\\"c");
  EXPECT_EQ(prometheus_label_escape("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");

  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string raw(rng() % 40, '\0');
    for (char& c : raw) c = static_cast<char>(rng() % 4 == 0 ? 0xc0 | rng() % 0x40 : rng());
    const std::string doc = "\"" + json_escape(raw) + "\"";
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(doc)) << doc;
    ASSERT_NO_THROW((void)j.dump()) << doc;  // dump() throws on invalid UTF-8
    std::string_view rest = raw;
    bool valid = true;
    while (!rest.empty() && valid) {
      const std::size_t n = utf8_sequence_length(rest);
      valid = n != 0 && static_cast<unsigned char>(rest[0]) >= 0x20;
      rest.remove_prefix(n == 0 ? 1 : n);
    }
    if (valid) {
      EXPECT_EQ(j.get<std::string>(), raw);
    }
    const std::string label = prometheus_label_escape(raw);
    for (std::string_view l = label; !l.empty();) {
      const std::size_t n = utf8_sequence_length(l);
      ASSERT_NE(n, 0u) << "label not UTF-8 for input #" << i;
      ASSERT_GE(static_cast<unsigned char>(l[0]), 0x20);
      l.remove_prefix(n);
    }
  }
}

TEST(StatusTest, StatusJsonOfAKnownState) {
  const auto t = two_pools();
  t->pools[0]->states[0]->down = true;
  t->pools[0]->states[1]->requests = 9;
  t->pools[0]->states[1]->errors = 1;
  t->pools[1]->shared->clients = 2;
  Metrics m;
  m.requests = 11;
  m.clients_open = 2;
  const std::string routing = json_escape(t->pools[0]->router.describe());
  EXPECT_EQ(
      render_status_json(m, *t, 2, 4),
      "{\"version\":3,\"applied_version\":2,\"workers\":4,\"requests\":11,\"clients\":2,\"pools\":["
      "{\"name\":\"alpha\",\"listen\":\"127.0.0.1:0\",\"protocol\":\"redis\",\"routing\":\"" +
          routing +
          "\",\"clients\":0,\"auto_eject_hosts\":false,\"read_policy\":\"master\",\"servers\":["
          "{\"name\":\"r1\",\"address\":\"127.0.0.1:7001\",\"role\":\"node\",\"weight\":1,"
          "\"up\":false,\"requests\":0,\"errors\":0,\"ejections\":0,\"connections\":0,"
          "\"state\":\"down\"},"
          "{\"name\":\"r2\",\"address\":\"127.0.0.1:7002\",\"role\":\"node\",\"weight\":2,"
          "\"up\":true,\"requests\":9,\"errors\":1,\"ejections\":0,\"connections\":0,"
          "\"state\":\"up\"}],"
          // The hot keys of the last window (none yet), and the relief's settings and counters.
          "\"hot_keys\":{\"window_ms\":10000,\"min_rate\":100.0,\"at_ms\":0,\"requests\":0,\"top\":"
          "[],"
          "\"hot_cache\":false,\"hot_reads\":\"owner\",\"cache_hits\":0,\"cache_misses\":0,"
          "\"replica_reads\":0}},"
          "{\"name\":\"web\",\"listen\":\"127.0.0.1:0\",\"protocol\":\"tcp\",\"routing\":\"round-"
          "robin\","
          "\"clients\":2,\"auto_eject_hosts\":false,\"read_policy\":\"master\",\"servers\":["
          "{\"name\":\"w1\",\"address\":\"127.0.0.1:8001\",\"role\":\"node\",\"weight\":1,"
          "\"up\":true,\"requests\":0,\"errors\":0,\"ejections\":0,\"connections\":0,"
          "\"state\":\"up\"}]}]}\n");
  EXPECT_FALSE(routing.empty());
}

// ---- Admin HTTP
// -------------------------------------------------------------------------------------

struct FakeAdmin {
  bool reload_ok = true;
  int reloads = 0;
  AdminServer::Handlers handlers() {
    return {[] { return std::string("m 1\n"); },
            [] { return std::string("{}\n"); },
            [this](std::string& message) {
              ++reloads;
              message = reload_ok ? "no change" : "reload refused: bad";
              return reload_ok;
            },
            nullptr,
            nullptr,
            nullptr,
            nullptr,
            [] { return std::string("<!DOCTYPE html>\n"); }};
  }
};

std::string http(int code, const char* reason, const char* type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

TEST(AdminTest, RoutesEachRequest) {
  net::EventLoop loop;
  FakeAdmin fake;
  int fd[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0);  // a stand-in listener
  AdminServer admin(loop, fd[0], fake.handlers());
  EXPECT_EQ(admin.respond("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            http(200, "OK", "text/plain; version=0.0.4", "m 1\n"));
  EXPECT_EQ(admin.respond("GET /status HTTP/1.1\r\n\r\n"),
            http(200, "OK", "application/json", "{}\n"));
  // The status page (control/ui.h) at / and /ui; /status stays JSON.
  const std::string page = http(200, "OK", "text/html; charset=utf-8", "<!DOCTYPE html>\n");
  EXPECT_EQ(admin.respond("GET / HTTP/1.0\r\n\r\n"), page);
  EXPECT_EQ(admin.respond("GET /ui HTTP/1.1\r\n\r\n"), page);
  EXPECT_EQ(admin.respond("POST /reload HTTP/1.1\r\n\r\n"),
            http(200, "OK", "text/plain; version=0.0.4", "no change\n"));
  fake.reload_ok = false;
  EXPECT_EQ(admin.respond("POST /reload HTTP/1.1\r\n\r\n"),
            http(409, "Conflict", "text/plain; version=0.0.4", "reload refused: bad\n"));
  EXPECT_EQ(fake.reloads, 2);
  const std::string not_found =
      http(404, "Not Found", "text/plain; version=0.0.4",
           "not found: GET / (or /ui), GET /ring.svg?pool=NAME, GET /metrics, GET /status, "
           "POST /reload, POST /flush, POST /rebalance, GET /fleet, POST /fleet/...\n");
  // A known path with the other method: 405 and the method it takes.
  const auto wrong = [](const std::string& what, const std::string& allow) {
    const std::string body = what + ": use " + allow + "\n";
    return "HTTP/1.1 405 Method Not Allowed\r\nAllow: " + allow +
           "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  };
  EXPECT_EQ(admin.respond("GET /reload HTTP/1.1\r\n\r\n"), wrong("GET /reload", "POST"));
  EXPECT_EQ(admin.respond("POST /metrics HTTP/1.1\r\n\r\n"), wrong("POST /metrics", "GET"));
  EXPECT_EQ(admin.respond("GET /metricsx HTTP/1.1\r\n\r\n"), not_found);
  EXPECT_EQ(admin.respond("GET /ring.svg?pool=a HTTP/1.1\r\n\r\n"), not_found);  // no handler
  // A query string is ignored.
  EXPECT_EQ(admin.respond("GET /metrics?name[]=x HTTP/1.1\r\n\r\n"),
            http(200, "OK", "text/plain; version=0.0.4", "m 1\n"));
  EXPECT_EQ(admin.respond(""), not_found);
  EXPECT_EQ(admin.respond("GET"), not_found);
  EXPECT_EQ(fake.reloads, 2);
  ::close(fd[0]);
  ::close(fd[1]);
}

TEST(AdminTest, ServesOverLoopback) {
  net::EventLoop loop;
  FakeAdmin fake;
  std::string error;
  const int l = net::listen_on(parse_address("127.0.0.1:0", "admin"), 16, error);
  ASSERT_GE(l, 0) << error;
  AdminServer admin(loop, l, fake.handlers());
  // A blocking client: connected and its request sent before the loop accepts it.
  const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(net::local_port(l));
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(c, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  loop.run_once(std::chrono::milliseconds(2000));  // accept, read, answer, close
  std::string got;
  char buf[512];
  for (ssize_t n; (n = ::recv(c, buf, sizeof buf, 0)) > 0;)
    got.append(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(got, http(200, "OK", "text/plain; version=0.0.4", "m 1\n"));
  ::close(c);
  ::close(l);
}

}  // namespace
}  // namespace chash::proxy
