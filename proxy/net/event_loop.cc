// SPDX-License-Identifier: Apache-2.0
#include "net/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace chash::proxy::net {

class EventLoop::Waker : public Pollable {
 public:
  explicit Waker(EventLoop* loop) : loop_(loop) {}
  void on_event(std::uint32_t) override {
    std::uint64_t v = 0;
    while (::read(loop_->eventfd_, &v, sizeof v) > 0) {
    }
    loop_->run_posted();
  }

 private:
  EventLoop* loop_;
};

EventLoop::EventLoop() : now_(Clock::now()) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  eventfd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (eventfd_ < 0) {
    ::close(epfd_);
    throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  waker_ = std::make_unique<Waker>(this);
  add(eventfd_, EPOLLIN, waker_.get());
}

EventLoop::~EventLoop() {
  graveyard_.clear();
  ::close(eventfd_);
  ::close(epfd_);
}

bool EventLoop::add(int fd, std::uint32_t events, Pollable* p) noexcept {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = p;
  return ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool EventLoop::modify(int fd, std::uint32_t events, Pollable* p) noexcept {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = p;
  return ::epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0;
}

void EventLoop::remove(int fd) noexcept { ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

EventLoop::TimerId EventLoop::add_timer(std::chrono::milliseconds after, std::function<void()> fn) {
  const TimerId id = next_timer_++;
  const auto when = Clock::now() + after;
  timers_.emplace(std::make_pair(when, id), std::move(fn));
  timer_index_.emplace(id, when);
  return id;
}

void EventLoop::cancel_timer(TimerId id) noexcept {
  const auto it = timer_index_.find(id);
  if (it == timer_index_.end()) return;
  timers_.erase({it->second, id});
  timer_index_.erase(it);
}

void EventLoop::defer_delete(std::unique_ptr<Pollable> p) { graveyard_.push_back(std::move(p)); }

void EventLoop::post(std::function<void()> fn) {
  {
    std::lock_guard lock(posted_mu_);
    posted_.push_back(std::move(fn));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(eventfd_, &one, sizeof one);
}

void EventLoop::run_posted() {
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard lock(posted_mu_);
    fns.swap(posted_);
  }
  for (auto& f : fns) f();
}

void EventLoop::run_timers() {
  now_ = Clock::now();
  // Bounded: timers added while running fire in a later iteration (they are at >= now_ + 0).
  std::size_t budget = timers_.size();
  while (budget-- > 0 && !timers_.empty() && timers_.begin()->first.first <= now_) {
    auto node = timers_.extract(timers_.begin());
    timer_index_.erase(node.key().second);
    node.mapped()();
  }
}

void EventLoop::run_once(std::chrono::milliseconds max_wait) {
  int timeout = static_cast<int>(max_wait.count());
  if (!timers_.empty()) {
    const auto until =
        std::chrono::ceil<std::chrono::milliseconds>(timers_.begin()->first.first - Clock::now());
    timeout = static_cast<int>(std::clamp<std::int64_t>(until.count(), 0, timeout));
  }
  epoll_event events[256];
  const int n = ::epoll_wait(epfd_, events, 256, timeout);
  now_ = Clock::now();
  for (int i = 0; i < n; ++i) {
    static_cast<Pollable*>(events[i].data.ptr)->on_event(events[i].events);
  }
  if (batch_end_) batch_end_();
  graveyard_.clear();
  run_timers();
  if (batch_end_) batch_end_();
  graveyard_.clear();
}

void EventLoop::run() {
  running_ = true;
  while (running_) run_once(std::chrono::milliseconds(1000));
  run_posted();
  graveyard_.clear();
}

}  // namespace chash::proxy::net
