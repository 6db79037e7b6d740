// SPDX-License-Identifier: Apache-2.0
// Building the candidates of `chash detect` ahead of their scoring. Building rings (hashing and
// sorting their points) is most of a search's time; scoring is cheap and must see the candidates
// in order (ranks, the top's bar). Worker threads (one per core, at most 8) build the routers of
// a list of specs a bounded window ahead; the caller takes them in order, so results do not
// depend on the number of threads.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "chash/error.h"
#include "chash/router.h"

namespace chash::cli {

class BuildAhead {
 public:
  BuildAhead(std::vector<RoutingSpec> specs, std::span<const Node> nodes)
      : specs_(std::move(specs)), nodes_(nodes), built_(specs_.size()) {
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    window_ = 4 * std::size_t{threads};
    for (unsigned t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~BuildAhead() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& w : workers_) w.join();
  }
  BuildAhead(const BuildAhead&) = delete;
  BuildAhead& operator=(const BuildAhead&) = delete;

  std::size_t size() const noexcept { return specs_.size(); }
  const RoutingSpec& spec(std::size_t i) const noexcept { return specs_[i]; }
  // The router of spec i (nullopt: the spec refuses these nodes). Call with i = 0, 1, 2, ...
  std::optional<Router> take(std::size_t i) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return built_[i].has_value(); });
    if (failure_) std::rethrow_exception(failure_);
    std::optional<Router> r = std::move(*built_[i]);
    built_[i].reset();
    taken_ = i + 1;
    ready_.notify_all();
    return r;
  }

 private:
  void work() {
    for (;;) {
      std::size_t i;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock,
                    [&] { return stop_ || (next_ < specs_.size() && next_ < taken_ + window_); });
        if (stop_) return;
        i = next_++;
      }
      std::optional<Router> r;
      std::exception_ptr failure;
      try {
        r.emplace(Router::build(specs_[i], nodes_));
      } catch (const Error&) {
        // e.g. more points than a ring holds: not a candidate
      } catch (...) {
        failure = std::current_exception();  // out of memory...: the caller's to report
      }
      {
        std::lock_guard lock(mu_);
        built_[i].emplace(std::move(r));
        if (failure && !failure_) failure_ = failure;
      }
      done_.notify_all();
    }
  }

  std::vector<RoutingSpec> specs_;
  std::span<const Node> nodes_;
  std::vector<std::optional<std::optional<Router>>> built_;  // outer: done; inner: built
  std::size_t window_ = 0, next_ = 0, taken_ = 0;
  bool stop_ = false;
  std::exception_ptr failure_;
  std::mutex mu_;
  std::condition_variable ready_, done_;
  std::vector<std::thread> workers_;
};

}  // namespace chash::cli
