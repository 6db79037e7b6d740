// SPDX-License-Identifier: Apache-2.0
// chash-proxy — one epoll event loop per thread, with timers and cross-thread posting.
//
// Level-triggered epoll. A Pollable registers its fd with the events it wants; the loop calls
// on_event() with what happened. Objects closed while a batch of events is being dispatched
// must not be freed until the batch ends: hand them to defer_delete() (the loop frees them
// after the batch), so a later event of the same batch never reaches freed memory.
//
// Timers are one-shot, keyed by an id; cancel() is O(log n). post() is the only thread-safe
// call: it queues a function and wakes the loop through an eventfd.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace chash::proxy::net {

using Clock = std::chrono::steady_clock;

class Pollable {
 public:
  virtual ~Pollable() = default;
  virtual void on_event(std::uint32_t events) = 0;
};

class EventLoop {
 public:
  EventLoop();  // throws std::system_error
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // epoll_ctl ADD / MOD / DEL. events: EPOLLIN | EPOLLOUT | ...; returns false on failure.
  bool add(int fd, std::uint32_t events, Pollable* p) noexcept;
  bool modify(int fd, std::uint32_t events, Pollable* p) noexcept;
  void remove(int fd) noexcept;

  using TimerId = std::uint64_t;
  TimerId add_timer(std::chrono::milliseconds after, std::function<void()> fn);
  void cancel_timer(TimerId id) noexcept;

  // Frees `p` after the current batch of events (or at once when not dispatching).
  void defer_delete(std::unique_ptr<Pollable> p);

  // Runs after each batch of events (and of timers): where a worker writes the requests the
  // batch queued for its backends, so requests from many clients leave in one send().
  void set_batch_end(std::function<void()> fn) { batch_end_ = std::move(fn); }

  // Thread-safe: runs fn on the loop's thread.
  void post(std::function<void()> fn);

  // Runs until stop(). stop() may be called from the loop's thread; from others, post() it.
  void run();
  void stop() noexcept { running_ = false; }
  // One iteration (for tests): waits at most `max_wait`.
  void run_once(std::chrono::milliseconds max_wait);

  Clock::time_point now() const noexcept { return now_; }

 private:
  class Waker;
  void run_timers();
  void run_posted();

  int epfd_ = -1;
  int eventfd_ = -1;
  bool running_ = false;
  Clock::time_point now_;
  TimerId next_timer_ = 1;
  std::map<std::pair<Clock::time_point, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, Clock::time_point> timer_index_;
  std::vector<std::unique_ptr<Pollable>> graveyard_;
  std::function<void()> batch_end_;
  std::unique_ptr<Waker> waker_;
  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;
};

}  // namespace chash::proxy::net
