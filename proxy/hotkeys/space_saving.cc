// SPDX-License-Identifier: Apache-2.0
#include "hotkeys/space_saving.h"

#include <algorithm>
#include <utility>

namespace chash::proxy::hotkeys {

// Nothing is reserved: a pool has a sketch per worker shard and most stay small or empty; the
// vectors keep their capacity across clear(), so a busy shard allocates in its first window only.
SpaceSaving::SpaceSaving(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

void SpaceSaving::swap_nodes(std::size_t a, std::size_t b) noexcept {
  std::swap(heap_[a], heap_[b]);
  pos_[heap_[a]] = static_cast<std::uint32_t>(a);
  pos_[heap_[b]] = static_cast<std::uint32_t>(b);
}

void SpaceSaving::sift_up(std::size_t i) noexcept {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (entries_[heap_[parent]].count <= entries_[heap_[i]].count) return;
    swap_nodes(i, parent);
    i = parent;
  }
}

void SpaceSaving::sift_down(std::size_t i) noexcept {
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t least = i;
    const std::size_t l = 2 * i + 1, r = l + 1;
    if (l < n && entries_[heap_[l]].count < entries_[heap_[least]].count) least = l;
    if (r < n && entries_[heap_[r]].count < entries_[heap_[least]].count) least = r;
    if (least == i) return;
    swap_nodes(i, least);
    i = least;
  }
}

void SpaceSaving::add(std::string_view key, std::uint64_t weight) {
  total_ += weight;
  if (const auto it = index_.find(key); it != index_.end()) {
    entries_[it->second].count += weight;
    sift_down(pos_[it->second]);  // a count only grows: it can only move away from the root
    return;
  }
  if (entries_.size() < capacity_) {
    const auto slot = static_cast<std::uint32_t>(entries_.size());
    entries_.push_back({std::string(key), weight, 0});
    pos_.push_back(static_cast<std::uint32_t>(heap_.size()));
    heap_.push_back(slot);
    index_.emplace(entries_.back().key, slot);
    sift_up(heap_.size() - 1);
    return;
  }
  // Replace the minimum: the newcomer inherits its count as error (the paper's rule).
  const std::uint32_t slot = heap_[0];
  Entry& e = entries_[slot];
  index_.erase(e.key);
  e.error = e.count;
  e.count += weight;
  e.key.assign(key);
  index_.emplace(e.key, slot);
  sift_down(0);
}

void SpaceSaving::merge(const SpaceSaving& other) {
  for (const Entry& o : other.entries_) {
    const std::uint64_t before = total_;
    add(o.key, o.count);
    total_ = before;  // add() counted the weight; the stream length is summed once below
    if (const auto it = index_.find(o.key); it != index_.end()) {
      Entry& e = entries_[it->second];
      e.error = std::min(e.count, e.error + o.error);
    }
  }
  total_ += other.total_;
}

std::vector<SpaceSaving::Entry> SpaceSaving::top(std::size_t k) const {
  std::vector<Entry> out(entries_.begin(), entries_.end());
  const auto by_count = [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  };
  k = std::min(k, out.size());
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k), out.end(), by_count);
  out.resize(k);
  return out;
}

void SpaceSaving::clear() noexcept {
  entries_.clear();
  heap_.clear();
  pos_.clear();
  index_.clear();
  total_ = 0;
}

}  // namespace chash::proxy::hotkeys
