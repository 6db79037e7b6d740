// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the top-K sketch hot keys are found with: Space-Saving (Metwally, Agrawal and
// El Abbadi, "Efficient Computation of Frequent and Top-k Elements in Data Streams", ICDT 2005).
//
// It monitors at most `capacity` keys. A monitored key's count goes up by its weight; a key that
// is not monitored takes the place of the one with the smallest count m and starts at m + w, with
// error m (its true count is in [count - error, count]). Every key whose true count exceeds
// total / capacity is monitored, so with capacity a few times the top asked for, the top ranks
// are the true heavy hitters of the window. Chosen over HeavyKeeper because its guarantee holds
// for any stream (no hash collisions to reason about) and the sketch is small (capacity 256).
//
// The minimum is found with a binary min-heap over the entries (positions tracked), so an
// update is O(log capacity) and allocation-free once the key is monitored; a replacement reuses
// the evicted entry's string. Not thread-safe: each worker has its own (proxy/hotkeys/hot_keys.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chash::proxy::hotkeys {

class SpaceSaving {
 public:
  struct Entry {
    std::string key;
    std::uint64_t count = 0;
    std::uint64_t error = 0;  // over-estimate bound: count - error <= true count <= count
  };

  explicit SpaceSaving(std::size_t capacity);

  void add(std::string_view key, std::uint64_t weight = 1);
  // Adds every entry of `other` (counts and errors summed: the merge of per-worker sketches;
  // each bound still holds for the union of their streams).
  void merge(const SpaceSaving& other);
  // The `k` largest counts, largest first (ties: by key, so the order is stable).
  std::vector<Entry> top(std::size_t k) const;
  void clear() noexcept;

  std::size_t size() const noexcept { return heap_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }
  std::uint64_t total() const noexcept { return total_; }  // weight added (the stream's length)

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  void sift_up(std::size_t i) noexcept;
  void sift_down(std::size_t i) noexcept;
  void swap_nodes(std::size_t a, std::size_t b) noexcept;

  std::size_t capacity_;
  std::uint64_t total_ = 0;
  std::vector<Entry> entries_;       // stable slots
  std::vector<std::uint32_t> heap_;  // entry slots, min-heap by count
  std::vector<std::uint32_t> pos_;   // entry slot -> its index in heap_
  std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> index_;  // key -> slot
};

}  // namespace chash::proxy::hotkeys
