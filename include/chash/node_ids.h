// SPDX-License-Identifier: Apache-2.0
// chash — arrays of NodeIds stored in as few bytes as the node count allows.
//
// Tables index by NodeId, and most clusters have far fewer than 2^16 nodes: a ring owner or a
// maglev entry stored in 1 byte (node_count <= 256) or 2 bytes (<= 65,536) instead of 4 makes the
// table 2-4x smaller, so more of it stays in L1/L2 and a lookup's cache miss is likelier to be a
// hit (maglev's default 65,537-entry table: 64 KiB instead of 256 KiB up to 256 nodes).
// Reading one costs a well-predicted branch on the width, fixed per table.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "chash/node.h"

namespace chash {

// A read-only view of a table's packed NodeIds (ring owners, maglev entries): operator[], size,
// iteration (values are NodeIds).
class NodeIdsView {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = NodeId;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = NodeId;
    iterator() = default;
    iterator(const NodeIdsView* v, std::size_t i) noexcept : v_(v), i_(i) {}
    NodeId operator*() const noexcept { return (*v_)[i_]; }
    iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator t = *this;
      ++i_;
      return t;
    }
    bool operator==(const iterator& o) const noexcept { return i_ == o.i_; }

   private:
    const NodeIdsView* v_ = nullptr;
    std::size_t i_ = 0;
  };

  NodeIdsView() = default;
  NodeIdsView(const void* data, std::size_t size, unsigned width) noexcept
      : data_(data), size_(size), width_(width) {}

  NodeId operator[](std::size_t i) const noexcept {
    assert(i < size_);
    const auto* p = static_cast<const unsigned char*>(data_) + i * width_;
    if (width_ == 1) return *p;
    if (width_ == 2) {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    NodeId v;
    std::memcpy(&v, p, 4);
    return v;
  }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  iterator begin() const noexcept { return {this, 0}; }
  iterator end() const noexcept { return {this, size_}; }
  std::vector<NodeId> to_vector() const { return {begin(), end()}; }
  // Bytes per id: 1, 2 or 4.
  unsigned width() const noexcept { return width_; }
  const void* data() const noexcept { return data_; }

 private:
  const void* data_ = nullptr;
  std::size_t size_ = 0;
  unsigned width_ = 4;
};

}  // namespace chash
