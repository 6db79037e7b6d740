// chash — arrays of NodeIds stored in as few bytes as the node count allows.
//
// Tables index by NodeId, and most clusters have far fewer than 2^16 nodes: a ring owner or a
// maglev entry stored in 1 byte (node_count <= 256) or 2 bytes (<= 65,536) instead of 4 makes the
// table 2-4x smaller, so more of it stays in L1/L2 and a lookup's cache miss is likelier to be a
// hit (maglev's default 65,537-entry table: 64 KiB instead of 256 KiB up to 256 nodes).
// Reading one costs a well-predicted branch on the width, fixed per table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "chash/node.h"

namespace chash {

// A read-only view of a PackedNodeIds: operator[], size, iteration (values are NodeIds).
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

// NodeIds below a node count, stored in 1 byte each (node_count <= 256), 2 (<= 65,536) or 4, in
// native byte order in one byte buffer with 3 bytes of padding after the last id. On
// little-endian machines an id is read without a branch on the width: a 4-byte load at
// i << shift, masked to the width (the padding keeps the last id's load in bounds).
class PackedNodeIds {
 public:
  PackedNodeIds() = default;
  PackedNodeIds(const PackedNodeIds&) = default;
  PackedNodeIds& operator=(const PackedNodeIds&) = default;
  // A moved-from array is empty.
  PackedNodeIds(PackedNodeIds&& o) noexcept { *this = std::move(o); }
  PackedNodeIds& operator=(PackedNodeIds&& o) noexcept {
    bytes_ = std::move(o.bytes_);
    size_ = std::exchange(o.size_, 0);
    width_ = o.width_;
    shift_ = o.shift_;
    mask_ = o.mask_;
    o.bytes_.clear();
    return *this;
  }

  // Stores ids[0 .. n) (each < node_count), ids read through get(i).
  template <class Get>
  void assign(std::size_t n, std::size_t node_count, Get&& get) {
    width_ = width_for(node_count);
    shift_ = width_ == 1 ? 0 : width_ == 2 ? 1 : 2;
    mask_ = width_ == 1 ? 0xFFu : width_ == 2 ? 0xFFFFu : 0xFFFFFFFFu;
    bytes_.assign(n * width_ + kPadding, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto id = static_cast<NodeId>(get(i));
      unsigned char* p = bytes_.data() + (i << shift_);
      if (width_ == 1) {
        *p = static_cast<unsigned char>(id);
      } else if (width_ == 2) {
        const auto v = static_cast<std::uint16_t>(id);
        std::memcpy(p, &v, 2);
      } else {
        std::memcpy(p, &id, 4);
      }
    }
    size_ = n;
  }

  NodeId operator[](std::size_t i) const noexcept {
    const unsigned char* p = bytes_.data() + (i << shift_);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    NodeId v;
    std::memcpy(&v, p, 4);
    return v & mask_;
#else
    return NodeIdsView(bytes_.data(), size_, width_)[i];
#endif
  }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  unsigned width() const noexcept { return width_; }
  // The first byte of id i's storage (for prefetching; i may be size()).
  const void* address_of(std::size_t i) const noexcept { return bytes_.data() + (i << shift_); }
  NodeIdsView view() const noexcept { return {bytes_.data(), size_, width_}; }
  std::size_t memory_bytes() const noexcept { return bytes_.capacity(); }

  static unsigned width_for(std::size_t node_count) noexcept {
    return node_count <= 256 ? 1 : node_count <= 65536 ? 2 : 4;
  }

 private:
  static constexpr std::size_t kPadding = 3;  // a 4-byte load at the last id stays in bounds
  std::vector<unsigned char> bytes_;
  std::size_t size_ = 0;
  unsigned width_ = 4;
  unsigned shift_ = 2;
  NodeId mask_ = 0xFFFFFFFFu;
};

}  // namespace chash
