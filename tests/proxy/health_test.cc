// SPDX-License-Identifier: Apache-2.0
// Backend health: failure counting and ejection (record_failure/record_success), when probes
// are due, how probe results move a backend up and down (rise/fall), each protocol's probe
// conversation (membership/probe_check.h via make_probe_check), and the prober on loopback sockets.
#include "membership/health.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "config/config.h"
#include "core/protocols.h"
#include "membership/probe_check.h"
#include "membership/topology.h"
#include "net/event_loop.h"
#include "net/socket.h"

namespace chash::proxy {
namespace {

PoolConfig pool_config(const std::string& yaml) { return parse_config(yaml, "t.yml").pools.at(0); }

PoolConfig redis_pool(std::uint32_t failure_limit, std::uint32_t rise = 1) {
  return pool_config("a:\n  listen: 127.0.0.1:0\n  redis: true\n  server_failure_limit: " +
                     std::to_string(failure_limit) + "\n  rise: " + std::to_string(rise) +
                     "\n  servers:\n   - 127.0.0.1:1:1 r1\n");
}

// ---- record_failure / record_success ------------------------------------------------------------

TEST(HealthTest, FailuresBelowTheLimitKeepTheBackendUp) {
  const PoolConfig pool = redis_pool(3);
  BackendState s("r1");
  record_failure(s, pool, "timed out");
  record_failure(s, pool, "timed out");
  EXPECT_FALSE(s.down.load());
  EXPECT_EQ(s.failures.load(), 2u);
  EXPECT_EQ(s.errors.load(), 2u);
  EXPECT_EQ(s.ejections.load(), 0u);
  record_failure(s, pool, "timed out");  // the third in a row
  EXPECT_TRUE(s.down.load());
  EXPECT_EQ(s.ejections.load(), 1u);
  EXPECT_GT(s.down_since_ms.load(), 0);
}

TEST(HealthTest, ASuccessRestartsTheConsecutiveCount) {
  const PoolConfig pool = redis_pool(2);
  BackendState s("r1");
  record_failure(s, pool, "x");
  record_success(s);
  EXPECT_EQ(s.failures.load(), 0u);
  record_failure(s, pool, "x");
  EXPECT_FALSE(s.down.load());  // 1, 0, 1: never two in a row
  record_failure(s, pool, "x");
  EXPECT_TRUE(s.down.load());
  EXPECT_EQ(s.errors.load(), 3u);  // errors count every failure
}

TEST(HealthTest, FailuresWhileDownDoNotEjectAgain) {
  const PoolConfig pool = redis_pool(1);
  BackendState s("r1");
  record_failure(s, pool, "x");
  ASSERT_TRUE(s.down.load());
  const std::int64_t since = s.down_since_ms.load();
  record_failure(s, pool, "x");
  record_failure(s, pool, "x");
  EXPECT_EQ(s.ejections.load(), 1u);
  EXPECT_EQ(s.errors.load(), 3u);
  EXPECT_EQ(s.down_since_ms.load(), since);  // the retry wait is not pushed back
}

// ---- When a probe is due ------------------------------------------------------------------------

TEST(HealthTest, ADownBackendIsProbedAfterServerRetryTimeout) {
  PoolConfig pool = redis_pool(1);
  pool.server_retry_timeout_ms = 2000;
  BackendState s("r1");
  s.down = true;
  s.down_since_ms = 10000;
  EXPECT_FALSE(probe_due(s, pool, 11999));
  EXPECT_TRUE(probe_due(s, pool, 12000));
  s.probing = true;  // one probe at a time
  EXPECT_FALSE(probe_due(s, pool, 12000));
}

TEST(HealthTest, AnUpBackendIsProbedOnlyWithHealthCheckInterval) {
  PoolConfig pool = redis_pool(1);
  BackendState s("r1");
  s.last_check_ms = 1000;
  EXPECT_FALSE(probe_due(s, pool, 1000000));  // interval 0: up backends are not probed
  pool.health_check_interval_ms = 500;
  EXPECT_FALSE(probe_due(s, pool, 1499));
  EXPECT_TRUE(probe_due(s, pool, 1500));
}

// ---- Probe results: rise and fall ---------------------------------------------------------------

TEST(HealthTest, ADownBackendReturnsAfterRiseSuccessesInARow) {
  const PoolConfig pool = redis_pool(1, /*rise=*/2);
  BackendState s("r1");
  record_failure(s, pool, "x");
  ASSERT_TRUE(s.down.load());
  apply_probe_result(s, pool, /*was_down=*/true, /*ok=*/true, "");
  EXPECT_TRUE(s.down.load());
  EXPECT_EQ(s.probe_successes.load(), 1u);
  apply_probe_result(s, pool, true, false, "connection closed");  // the run is broken
  EXPECT_EQ(s.probe_successes.load(), 0u);
  apply_probe_result(s, pool, true, true, "");
  EXPECT_TRUE(s.down.load());
  apply_probe_result(s, pool, true, true, "");
  EXPECT_FALSE(s.down.load());
  EXPECT_EQ(s.failures.load(), 0u);
  EXPECT_EQ(s.probe_successes.load(), 0u);
  EXPECT_GT(s.last_check_ms.load(), 0);
}

TEST(HealthTest, FailedChecksOfAnUpBackendCountTowardFall) {
  const PoolConfig pool = redis_pool(2);  // fall = server_failure_limit = 2
  BackendState s("r1");
  apply_probe_result(s, pool, /*was_down=*/false, /*ok=*/false, "probe timed out");
  EXPECT_FALSE(s.down.load());
  apply_probe_result(s, pool, false, true, "");  // a good check clears the count
  EXPECT_EQ(s.failures.load(), 0u);
  apply_probe_result(s, pool, false, false, "probe timed out");
  apply_probe_result(s, pool, false, false, "probe timed out");
  EXPECT_TRUE(s.down.load());
  EXPECT_EQ(s.ejections.load(), 1u);
}

// ---- Each protocol's probe conversation ---------------------------------------------------------

ProbeVerdict verdict(ProbeCheck& c, std::string_view in, std::string& why) {
  return c.check(in, why);
}

TEST(ProbeCheckTest, RedisPingWithoutPassword) {
  const PoolConfig pool = redis_pool(1);
  std::string why;
  auto c = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(c->request(), "*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(verdict(*c, "", why), ProbeVerdict::kNeedMore);
  EXPECT_EQ(verdict(*c, "+PO", why), ProbeVerdict::kNeedMore);  // partial
  EXPECT_EQ(verdict(*c, "+PONG\r", why), ProbeVerdict::kNeedMore);
  EXPECT_EQ(verdict(*c, "+PONG\r\n", why), ProbeVerdict::kUp);

  auto err = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(verdict(*err, "-LOADING Redis is loading the dataset in memory\r\n", why),
            ProbeVerdict::kDown);
  EXPECT_EQ(why, "probe refused");
  auto other = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(verdict(*other, "+OK\r\n", why), ProbeVerdict::kDown);
  EXPECT_EQ(why, "unexpected PING reply");
  auto garbage = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(verdict(*garbage, "HTTP/1.1 400 Bad Request\r\n", why), ProbeVerdict::kDown);
  EXPECT_EQ(why, "probe refused");
}

TEST(ProbeCheckTest, RedisAuthThenPing) {
  const PoolConfig pool = pool_config(
      "a:\n  listen: 127.0.0.1:0\n  redis: true\n  server_auth: pw\n  servers:\n"
      "   - 127.0.0.1:1:1 r1\n   - {server: \"127.0.0.1:2:1 r2\", password: own}\n");
  std::string why;
  auto c = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(c->request(), "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(verdict(*c, "+OK\r\n", why), ProbeVerdict::kNeedMore);  // AUTH answered, PING not yet
  EXPECT_EQ(verdict(*c, "+OK\r\n+PONG\r\n", why), ProbeVerdict::kUp);
  // A server's own password overrides the pool's.
  EXPECT_EQ(make_probe_check(pool, pool.servers[1])->request(),
            "*2\r\n$4\r\nAUTH\r\n$3\r\nown\r\n*1\r\n$4\r\nPING\r\n");
  auto refused = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(verdict(*refused, "-WRONGPASS invalid username-password pair\r\n", why),
            ProbeVerdict::kDown);
  EXPECT_EQ(why, "probe refused");
  // An AUTH answered +PONG and a PING answered +OK is not a healthy server either.
  auto swapped = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(verdict(*swapped, "+PONG\r\n+OK\r\n", why), ProbeVerdict::kDown);
  EXPECT_EQ(why, "unexpected PING reply");
}

TEST(ProbeCheckTest, MemcacheVersion) {
  const PoolConfig pool =
      pool_config("a:\n  listen: 127.0.0.1:0\n  servers:\n   - 127.0.0.1:1:1 m1\n");
  std::string why;
  auto c = make_probe_check(pool, pool.servers[0]);
  EXPECT_EQ(c->request(), "version\r\n");
  EXPECT_EQ(verdict(*c, "", why), ProbeVerdict::kNeedMore);
  EXPECT_EQ(verdict(*c, "VERSION 1.6.", why), ProbeVerdict::kNeedMore);
  EXPECT_EQ(verdict(*c, "VERSION 1.6.18\r\n", why), ProbeVerdict::kUp);
  EXPECT_EQ(verdict(*c, "ERROR\r\n", why), ProbeVerdict::kDown);
  EXPECT_EQ(why, "unexpected version reply");
  why.clear();
  EXPECT_EQ(verdict(*c, "SERVER_ERROR out of memory\r\n", why), ProbeVerdict::kDown);
  EXPECT_EQ(why, "unexpected version reply");
  EXPECT_EQ(verdict(*c, "VERSION\r\n", why), ProbeVerdict::kDown);  // "VERSION " with its space
  // No line end within 1 KiB: not memcached.
  EXPECT_EQ(verdict(*c, std::string(1024, 'x'), why), ProbeVerdict::kNeedMore);
  EXPECT_EQ(verdict(*c, std::string(1025, 'x'), why), ProbeVerdict::kDown);
}

TEST(ProbeCheckTest, TcpSendsNothing) {
  const PoolConfig pool = pool_config(
      "a:\n  listen: 127.0.0.1:0\n  protocol: tcp\n  servers:\n   - 127.0.0.1:1:1 t1\n");
  auto c = make_probe_check(pool, pool.servers[0]);
  EXPECT_TRUE(c->request().empty());  // the connect completing is the check
}

// ---- The prober on loopback ---------------------------------------------------------------------

struct Listener {
  Listener() {
    std::string error;
    fd = net::listen_on(parse_address("127.0.0.1:0", "listen"), 16, error);
    EXPECT_GE(fd, 0) << error;
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(net::local_port(fd)); }
  int fd = -1;
};

std::shared_ptr<const Topology> one_backend(const std::string& protocol_line,
                                            const std::string& address) {
  return build_topology(
      parse_config("a:\n  listen: 127.0.0.1:0\n" + protocol_line +
                       "  timeout: 2000\n  server_retry_timeout: 1\n  server_failure_limit: 1\n"
                       "  servers:\n   - " +
                       address + ":1 b1\n",
                   "t.yml"),
      nullptr, 1);
}

// Marks the backend down long enough ago that a probe is due at once.
void mark_down(BackendState& s) {
  s.down = true;
  s.down_since_ms = steady_ms() - 1000;
}

// Runs `loop` until the backend's probe has finished (or 3 s).
void run_probe(net::EventLoop& loop, const BackendState& s,
               const std::function<void()>& between = {}) {
  const auto deadline = net::Clock::now() + std::chrono::seconds(3);
  while (s.probing.load() && net::Clock::now() < deadline) {
    loop.run_once(std::chrono::milliseconds(10));
    if (between) between();
  }
}

TEST(HealthCheckerTest, TcpConnectBringsADownBackendBack) {
  Listener backend;
  const auto t = one_backend("  protocol: tcp\n", backend.address());
  BackendState& s = *t->pools[0]->states[0];
  mark_down(s);
  net::EventLoop loop;
  HealthChecker checker(loop, [&] { return t; });
  checker.tick();
  EXPECT_TRUE(s.probing.load());
  run_probe(loop, s);
  EXPECT_FALSE(s.probing.load());
  EXPECT_FALSE(s.down.load());
}

// A checker that goes (the proxy stops) while a probe waits on a silent backend frees the probe:
// it is out of the loop and its backend no longer shows a probe under way. (Before, the probe
// stayed allocated with nothing left to run it: LeakSanitizer found one in a CI proof.)
TEST(HealthCheckerTest, AProbeUnderWayIsFreedWithItsChecker) {
  Listener backend;  // accepts (in the kernel's queue) and never answers
  const auto t = one_backend("", backend.address());
  BackendState& s = *t->pools[0]->states[0];
  mark_down(s);
  net::EventLoop loop;
  {
    HealthChecker checker(loop, [&] { return t; });
    checker.tick();
    for (int i = 0; i < 5; ++i) loop.run_once(std::chrono::milliseconds(10));
    ASSERT_TRUE(s.probing.load()) << "the memcache probe waits for VERSION";
  }
  EXPECT_FALSE(s.probing.load());
  loop.run_once(std::chrono::milliseconds(10));  // no event or timer of the freed probe runs
  EXPECT_TRUE(s.down.load());
}

TEST(HealthCheckerTest, RefusedConnectKeepsItDown) {
  std::string address;
  {
    Listener gone;
    address = gone.address();
  }  // closed: connects are refused
  const auto t = one_backend("  protocol: tcp\n", address);
  BackendState& s = *t->pools[0]->states[0];
  mark_down(s);
  const std::int64_t before = s.down_since_ms.load();
  net::EventLoop loop;
  HealthChecker checker(loop, [&] { return t; });
  checker.tick();
  run_probe(loop, s);
  EXPECT_TRUE(s.down.load());
  EXPECT_GT(s.down_since_ms.load(), before);  // the retry wait starts again
}

TEST(HealthCheckerTest, MemcacheProbeAsksVersionAndReadsTheReply) {
  Listener backend;
  const auto t = one_backend("", backend.address());  // memcache: nutcracker's default
  BackendState& s = *t->pools[0]->states[0];
  mark_down(s);
  net::EventLoop loop;
  HealthChecker checker(loop, [&] { return t; });
  checker.tick();
  // Play memcached between loop iterations: accept, read the request, answer it.
  int conn = -1;
  std::string request;
  run_probe(loop, s, [&] {
    if (conn < 0) conn = ::accept4(backend.fd, nullptr, nullptr, SOCK_NONBLOCK);
    if (conn < 0) return;
    char buf[64];
    const ssize_t n = ::recv(conn, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<std::size_t>(n));
    if (request == "version\r\n") {
      const std::string reply = "VERSION 1.6.18\r\n";
      ASSERT_EQ(::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(reply.size()));
    }
  });
  EXPECT_EQ(request, "version\r\n");
  EXPECT_FALSE(s.down.load());
  if (conn >= 0) ::close(conn);
}

TEST(HealthCheckerTest, BackendsThatAreUpAndNotDueAreLeftAlone) {
  Listener backend;
  const auto t = one_backend("  protocol: tcp\n", backend.address());
  net::EventLoop loop;
  HealthChecker checker(loop, [&] { return t; });
  checker.tick();  // up, no health_check_interval: nothing to do
  EXPECT_FALSE(t->pools[0]->states[0]->probing.load());
}

}  // namespace
}  // namespace chash::proxy
