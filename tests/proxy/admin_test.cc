// SPDX-License-Identifier: Apache-2.0
// The admin port (control/admin.h) under clients that misbehave: one that trickles its request a
// byte at a time, ones that connect and send nothing, too many at once, an oversized head. None
// of them may delay another admin client; each is closed by the deadline or answered at once.
#include "control/admin.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "e2e_util.h"
#include "net/event_loop.h"
#include "net/socket.h"

namespace chash::proxy {
namespace {

// An AdminServer on its own event loop thread, with stand-in handlers.
class AdminHarness {
 public:
  // `render`: how long GET /metrics takes to answer (a large pool's page, a slow handler).
  explicit AdminHarness(AdminServer::Limits limits,
                        std::chrono::milliseconds render = std::chrono::milliseconds(0)) {
    std::string error;
    listen_fd_ = net::listen_on(parse_address("127.0.0.1:0", "admin"), 64, error);
    EXPECT_GE(listen_fd_, 0) << error;
    AdminServer::Handlers handlers{[render] {
                                     std::this_thread::sleep_for(render);
                                     return std::string("m 1\n");
                                   },
                                   [] { return std::string("{}\n"); },
                                   [this](std::string& message) {
                                     reloads_.fetch_add(1);
                                     message = "reloaded";
                                     return true;
                                   },
                                   nullptr};
    // POST /fleet/...: an etcd edit, here one that takes `edit_time` (etcd not answering).
    handlers.fleet_edit = [this](std::string_view action, std::string_view, std::string& message) {
      std::this_thread::sleep_for(std::chrono::milliseconds(edit_ms.load()));
      message = "edited: " + std::string(action);
      return true;
    };
    admin_ = std::make_unique<AdminServer>(loop_, listen_fd_, std::move(handlers), limits);
    thread_ = std::thread([this] { loop_.run(); });
  }
  ~AdminHarness() {
    loop_.post([this] { loop_.stop(); });
    thread_.join();
    admin_.reset();
    ::close(listen_fd_);
  }
  std::uint16_t port() const { return net::local_port(listen_fd_); }
  int reloads() const { return reloads_.load(); }
  // Whether a task posted to the loop runs within `bound`.
  bool runs_within(std::chrono::milliseconds bound) {
    auto ran = std::make_shared<std::promise<void>>();
    auto done = ran->get_future();
    loop_.post([ran] { ran->set_value(); });
    return done.wait_for(bound) == std::future_status::ready;
  }
  // Open admin connections, read on the loop's thread.
  std::atomic<int> edit_ms{0};  // how long POST /fleet/... takes
  std::size_t open() {
    std::promise<std::size_t> p;
    loop_.post([&] { p.set_value(admin_->open_connections()); });
    return p.get_future().get();
  }

 private:
  net::EventLoop loop_;
  int listen_fd_ = -1;
  std::unique_ptr<AdminServer> admin_;
  std::atomic<int> reloads_{0};
  std::thread thread_;
};

// Sends `request` and reads until the server closes (at most `seconds`); "" on a timeout.
std::string exchange(std::uint16_t port, const std::string& request, int seconds = 5) {
  const int fd = testing::dial_tcp(port);
  if (fd < 0) return "(no connection)";
  testing::set_timeouts(fd, seconds);
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      got.clear();  // timed out: the server did not finish
      break;
    }
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return got;
}

TEST(AdminNonBlockingTest, ATricklingClientAndSilentOnesDelayNoOtherRequest) {
  AdminHarness h(AdminServer::Limits{});  // 5 s deadline
  // One client sends "GET /metrics" a byte every 100 ms and never ends its head; five connect and
  // send nothing. The old admin port served one client at a time and would wait on them.
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    const int fd = testing::dial_tcp(h.port());
    const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: ";
    for (std::size_t i = 0; !stop.load() && fd >= 0; ++i) {
      (void)::send(fd, head.data() + i % head.size(), 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (fd >= 0) ::close(fd);
  });
  std::vector<int> silent;
  for (int i = 0; i < 5; ++i) silent.push_back(testing::dial_tcp(h.port()));
  ASSERT_TRUE(testing::eventually([&] { return h.open() == 6; }));
  // Every other request is answered at once (the 2 s read bound is far above the time it takes
  // and far below the trickler's life).
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(exchange(h.port(), "GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 2).find("\r\n\r\nm 1\n"),
              std::string::npos);
    EXPECT_NE(exchange(h.port(), "POST /reload HTTP/1.1\r\n\r\n", 2).find("200 OK"),
              std::string::npos);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  EXPECT_EQ(h.reloads(), 5);
  EXPECT_EQ(h.open(), 6u);  // the slow ones are still there, waiting for their deadline
  stop = true;
  trickler.join();
  for (const int fd : silent) ::close(fd);
}

TEST(AdminNonBlockingTest, TheDeadlineClosesClientsThatNeverFinish) {
  AdminServer::Limits limits;
  limits.deadline = std::chrono::milliseconds(200);
  AdminHarness h(limits);
  const int silent = testing::dial_tcp(h.port());
  ASSERT_GE(silent, 0);
  testing::set_timeouts(silent, 5);
  char c;
  EXPECT_EQ(::recv(silent, &c, 1, 0), 0);  // closed by the server (a timeout would be -1)
  ::close(silent);
  const int partial = testing::dial_tcp(h.port());
  testing::set_timeouts(partial, 5);
  (void)::send(partial, "GET /met", 8, MSG_NOSIGNAL);
  EXPECT_EQ(::recv(partial, &c, 1, 0), 0);
  ::close(partial);
  EXPECT_TRUE(testing::eventually([&] { return h.open() == 0; }));
}

TEST(AdminNonBlockingTest, AFullPortEvictsItsOldestIdleClientAndAnOversizedHeadIs431) {
  AdminServer::Limits limits;
  limits.max_connections = 2;
  limits.max_request_head = 1024;
  AdminHarness h(limits);
  const int a = testing::dial_tcp(h.port());
  ASSERT_TRUE(testing::eventually([&] { return h.open() == 1; }));
  const int b = testing::dial_tcp(h.port());
  ASSERT_TRUE(testing::eventually([&] { return h.open() == 2; }));
  // Two silent clients hold every place: a third with a request takes the place of the one
  // waiting longest (a), closed unanswered; b stays. Before, everyone else got 503 until the
  // silent ones' deadline.
  EXPECT_NE(exchange(h.port(), "GET /metrics HTTP/1.1\r\n\r\n").find("\r\n\r\nm 1\n"),
            std::string::npos);
  testing::set_timeouts(a, 5);
  char c;
  EXPECT_EQ(::recv(a, &c, 1, 0), 0);
  EXPECT_EQ(h.open(), 1u);  // b
  ::close(a);
  ::close(b);
  ASSERT_TRUE(testing::eventually([&] { return h.open() == 0; }));
  EXPECT_NE(exchange(h.port(), "GET /metrics HTTP/1.1\r\n\r\n").find("\r\n\r\nm 1\n"),
            std::string::npos);
  const std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(2000, 'a');
  EXPECT_NE(exchange(h.port(), huge).find("431 Request Header Fields Too Large"),
            std::string::npos);
}

// Clients that reconnect as fast as they are answered must not hold the control loop: it takes a
// few accepts a wakeup, so what else waits on the loop (here a posted task, in the proxy SIGHUP
// and SIGTERM) runs within one round. Before, the accept loop never returned while three such
// clients kept a connection pending (SIGHUP and SIGTERM waited 60 s and more).
TEST(AdminNonBlockingTest, AFloodOfRequestsDoesNotHoldTheControlLoop) {
  // 10 ms a render: by the time one is answered, the other clients' next connections wait.
  AdminHarness h(AdminServer::Limits{}, std::chrono::milliseconds(10));
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::vector<std::thread> flood;
  for (int t = 0; t < 3; ++t) {
    flood.emplace_back([&] {
      while (!stop.load()) {
        if (exchange(h.port(), "GET /metrics HTTP/1.1\r\n\r\n", 2).find("m 1") != std::string::npos)
          answered.fetch_add(1);
      }
    });
  }
  ASSERT_TRUE(testing::eventually([&] { return answered.load() > 30; }));
  int late = 0;
  for (int i = 0; i < 20; ++i) late += h.runs_within(std::chrono::seconds(1)) ? 0 : 1;
  stop = true;
  for (auto& t : flood) t.join();
  EXPECT_EQ(late, 0) << "tasks posted to the control loop waited over 1 s";
}

// An etcd edit (POST /fleet/...) that waits seconds for etcd is answered off the control loop:
// meanwhile the loop's own work (SIGHUP, SIGTERM, timers: here a posted task) and other admin
// requests go on, and the edit's answer still reaches its client. On the loop it held them all
// for the edit's whole wait (5.7-6 s measured with etcd hung).
TEST(AdminNonBlockingTest, AnEtcdEditThatHangsHoldsNothingElse) {
  AdminHarness h(AdminServer::Limits{});
  h.edit_ms = 2500;
  auto edit = std::async(std::launch::async, [&] {
    return exchange(h.port(), "POST /fleet/add?pool=p&server=x HTTP/1.1\r\n\r\n", 10);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the edit is under way
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(h.runs_within(std::chrono::milliseconds(1000)));
  EXPECT_NE(exchange(h.port(), "GET /metrics HTTP/1.1\r\n\r\n", 2).find("m 1"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000));
  const std::string answer = edit.get();
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find("edited: add"), std::string::npos) << answer;
  EXPECT_TRUE(testing::eventually([&] { return h.open() == 0; }));
}

}  // namespace
}  // namespace chash::proxy
