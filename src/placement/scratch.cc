// SPDX-License-Identifier: Apache-2.0
#include "chash/internal/scratch.h"

#include <algorithm>
#include <memory>

namespace chash::internal {
namespace {

// Free buffers of this thread; a lease pops one (or makes one) and pushes it back.
template <class T>
struct Pool {
  std::vector<std::unique_ptr<std::vector<T>>> free;

  std::vector<T>* take() {
    if (free.empty()) return new std::vector<T>();
    std::vector<T>* v = free.back().release();
    free.pop_back();
    return v;
  }
  void give(std::vector<T>* v) { free.emplace_back(v); }
};

thread_local Pool<std::uint64_t> bitmaps;
thread_local Pool<NodeId> id_lists;

}  // namespace

ScratchBitmap::ScratchBitmap(std::size_t bits)
    : words_(bitmaps.take()), used_words_((bits + 63) / 64) {
  // Pool buffers are kept zeroed; growing appends zeros.
  if (words_->size() < used_words_) words_->resize(used_words_, 0);
}

ScratchBitmap::~ScratchBitmap() {
  std::fill_n(words_->begin(), used_words_, std::uint64_t{0});
  bitmaps.give(words_);
}

ScratchIds::ScratchIds(std::size_t count) : ids_(id_lists.take()), count_(count) {
  if (ids_->size() < count_) ids_->resize(count_);
}

ScratchIds::~ScratchIds() { id_lists.give(ids_); }

}  // namespace chash::internal
