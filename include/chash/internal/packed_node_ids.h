// SPDX-License-Identifier: Apache-2.0
// chash internal — the storage behind NodeIdsView: NodeIds packed into 1, 2 or 4 bytes (see
// chash/node_ids.h for why). Not part of the API.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "chash/node.h"
#include "chash/node_ids.h"

namespace chash::internal {

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
    assert(i < size_);
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

}  // namespace chash::internal
