// SPDX-License-Identifier: Apache-2.0
// net::EventLoop: timers in deadline order, fd readiness, the batch-end hook, deferred deletes,
// cross-thread post().
#include "net/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace chash::proxy::net {
namespace {

using std::chrono::milliseconds;

// Runs `loop` until `done()` or 2 s (a bound for loaded CI machines, not a timing assertion).
void run_until(EventLoop& loop, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (!done() && Clock::now() < deadline) loop.run_once(milliseconds(10));
}

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0); }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  void put(char c) const { ASSERT_EQ(::write(fds[1], &c, 1), 1); }
  int fds[2] = {-1, -1};
};

// Records each readiness event, in order, into a shared log.
class Recorder : public Pollable {
 public:
  Recorder(std::string name, std::vector<std::string>& log, std::function<void()> on = {})
      : name_(std::move(name)), log_(log), on_(std::move(on)) {}
  void on_event(std::uint32_t events) override {
    log_.push_back(name_ + ((events & EPOLLIN) ? ":in" : ":other"));
    if (on_) on_();
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  std::function<void()> on_;
};

TEST(EventLoopTest, TimersFireInDeadlineOrderNotInsertionOrder) {
  EventLoop loop;
  std::vector<int> fired;
  // Deadlines are absolute (now + after): 150 ms apart, so that a loaded machine (ASan, other
  // jobs) pausing between two add_timer calls cannot reorder them.
  loop.add_timer(milliseconds(300), [&] { fired.push_back(300); });
  loop.add_timer(milliseconds(1), [&] { fired.push_back(1); });
  loop.add_timer(milliseconds(150), [&] { fired.push_back(150); });
  run_until(loop, [&] { return fired.size() == 3; });
  EXPECT_EQ(fired, (std::vector<int>{1, 150, 300}));
}

TEST(EventLoopTest, TimerDoesNotFireEarly) {
  EventLoop loop;
  bool fired = false;
  const auto start = Clock::now();
  loop.add_timer(milliseconds(40), [&] { fired = true; });
  loop.run_once(milliseconds(0));
  EXPECT_FALSE(fired);
  run_until(loop, [&] { return fired; });
  EXPECT_TRUE(fired);
  EXPECT_GE(Clock::now() - start, milliseconds(40));
}

TEST(EventLoopTest, CancelledTimerNeverFires) {
  EventLoop loop;
  bool cancelled_fired = false, other_fired = false;
  const auto id = loop.add_timer(milliseconds(1), [&] { cancelled_fired = true; });
  loop.add_timer(milliseconds(20), [&] { other_fired = true; });
  loop.cancel_timer(id);
  loop.cancel_timer(id);      // twice: harmless
  loop.cancel_timer(999999);  // unknown: harmless
  run_until(loop, [&] { return other_fired; });
  EXPECT_TRUE(other_fired);
  EXPECT_FALSE(cancelled_fired);
}

TEST(EventLoopTest, TimerThatRearmsItselfRunsOncePerIteration) {
  // A timer added by a timer is due at once but waits for the next iteration, so a 0 ms
  // self-rearming timer cannot starve the loop.
  EventLoop loop;
  int runs = 0;
  std::function<void()> again = [&] {
    ++runs;
    loop.add_timer(milliseconds(0), again);
  };
  loop.add_timer(milliseconds(0), again);
  loop.run_once(milliseconds(0));
  EXPECT_EQ(runs, 1);
  loop.run_once(milliseconds(0));
  EXPECT_EQ(runs, 2);
}

TEST(EventLoopTest, ReadableFdReachesItsPollableAndRemoveStopsIt) {
  EventLoop loop;
  Pipe p;
  std::vector<std::string> log;
  Recorder r("pipe", log);
  ASSERT_TRUE(loop.add(p.fds[0], EPOLLIN, &r));
  loop.run_once(milliseconds(0));
  EXPECT_TRUE(log.empty());  // nothing to read yet
  p.put('x');
  run_until(loop, [&] { return !log.empty(); });
  ASSERT_EQ(log, (std::vector<std::string>{"pipe:in"}));
  // Level-triggered: still readable, reported again.
  loop.run_once(milliseconds(10));
  EXPECT_EQ(log.size(), 2u);
  loop.remove(p.fds[0]);
  loop.run_once(milliseconds(10));
  EXPECT_EQ(log.size(), 2u);
}

TEST(EventLoopTest, ModifyChangesTheEventsWatched) {
  EventLoop loop;
  Pipe p;
  std::vector<std::string> log;
  Recorder r("w", log);
  ASSERT_TRUE(loop.add(p.fds[1], 0, &r));  // the write end, watching nothing
  loop.run_once(milliseconds(0));
  EXPECT_TRUE(log.empty());
  ASSERT_TRUE(loop.modify(p.fds[1], EPOLLOUT, &r));
  run_until(loop, [&] { return !log.empty(); });
  EXPECT_EQ(log, (std::vector<std::string>{"w:other"}));
  EXPECT_FALSE(loop.add(p.fds[1], EPOLLOUT, &r));  // already added
  EXPECT_FALSE(loop.modify(-1, EPOLLIN, &r));
}

TEST(EventLoopTest, BatchEndRunsAfterTheBatchsEvents) {
  EventLoop loop;
  Pipe a, b;
  std::vector<std::string> log;
  Recorder ra("a", log), rb("b", log);
  loop.add(a.fds[0], EPOLLIN, &ra);
  loop.add(b.fds[0], EPOLLIN, &rb);
  loop.set_batch_end([&] { log.push_back("end"); });
  a.put('1');
  b.put('2');
  loop.run_once(milliseconds(100));
  // Both fds in one batch, then the hook (it also runs after the timer phase).
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[2], "end");
  EXPECT_NE(std::find(log.begin(), log.begin() + 2, "a:in"), log.begin() + 2);
  EXPECT_NE(std::find(log.begin(), log.begin() + 2, "b:in"), log.begin() + 2);
}

TEST(EventLoopTest, DeferDeleteWaitsForTheEndOfTheBatch) {
  EventLoop loop;
  Pipe a, b;
  bool freed = false;
  struct Tracked : Pollable {
    explicit Tracked(bool& f) : freed(f) {}
    ~Tracked() override { freed = true; }
    void on_event(std::uint32_t) override {}
    bool& freed;
  };
  auto* tracked = new Tracked(freed);
  std::vector<std::string> log;
  bool freed_during_batch = true;
  // Whichever of the two runs first hands `tracked` to the loop; the other checks it is alive.
  bool handed = false;
  auto step = [&] {
    if (!handed) {
      handed = true;
      loop.defer_delete(std::unique_ptr<Pollable>(tracked));
    } else {
      freed_during_batch = freed;
    }
  };
  Recorder ra("a", log, step), rb("b", log, step);
  loop.add(a.fds[0], EPOLLIN, &ra);
  loop.add(b.fds[0], EPOLLIN, &rb);
  a.put('1');
  b.put('2');
  loop.run_once(milliseconds(100));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_FALSE(freed_during_batch);
  EXPECT_TRUE(freed);
}

TEST(EventLoopTest, PostRunsOnTheLoopThreadAndStopsRun) {
  EventLoop loop;
  std::thread::id ran_on;
  std::thread poster([&] {
    loop.post([&] {
      ran_on = std::this_thread::get_id();
      loop.stop();
    });
  });
  const auto start = Clock::now();
  loop.run();  // returns once the posted function stopped it
  poster.join();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));  // woken by the eventfd, not a timeout
}

}  // namespace
}  // namespace chash::proxy::net
