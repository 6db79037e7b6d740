// SPDX-License-Identifier: Apache-2.0
// chash — the shape every placement table shares, and the generic operations built on it.
//
// A placement table is an immutable value built from an ordered list of nodes (chash::Node). Every
// table type T offers:
//
//   static T build(std::span<const Node> nodes, const T::Options& = {});  // throws chash::Error
//   NodeId pick(std::uint64_t hash) const noexcept;       // the owner of `hash`
//   template <class F> void visit(std::uint64_t hash, F&& f) const;
//       // calls f(NodeId) for distinct drawable nodes (weight > 0) in preference order —
//       // pick(hash) first, then the next choices ("the next nodes clockwise" on a ring) — until
//       // f returns false or every drawable node was visited.
//   std::size_t node_count() const noexcept;              // nodes given to build, drained included
//
// On top of visit(), this header gives every table the same replicas and failover semantics:
//   pick_n(table, hash, out)      — n distinct nodes in preference order (n = out.size());
//                                   with n > drawable nodes it returns all of them.
//   pick_up(table, hash, down)    — the first choice that is not down: a down node keeps its place
//                                   and only its keys move, to their next choice.
//
// Hot path contract: pick() and visit() do not allocate or throw. visit() tracks visited nodes in
// an inline buffer of kInlineSeen ids; a walk past that many distinct nodes (pick_n with a large
// n, or more than kInlineSeen consecutive down choices) uses a bitmap from a per-thread pool
// (internal/scratch.h): only the first such walk on a thread allocates.
#pragma once

#include <algorithm>
#include <cassert>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "chash/hash.h"
#include "chash/internal/scratch.h"
#include "chash/node.h"

namespace chash {

// clang-format 14 breaks compound requirements apart.
// clang-format off
template <class T>
concept PlacementTable = requires(const T& t, std::uint64_t h) {
  { t.pick(h) } noexcept -> std::same_as<NodeId>;
  { t.node_count() } noexcept -> std::convertible_to<std::size_t>;
  t.visit(h, [](NodeId) { return true; });
};
// clang-format on

// ---- Node state for failover ---------------------------------------------------------------------
// An immutable set of down NodeIds (a bitmap). Shared read-only by lookups.
class DownSet {
 public:
  DownSet() = default;
  explicit DownSet(std::size_t node_count) : bits_((node_count + 63) / 64, 0) {}

  void set(NodeId id, bool down) {
    if (id / 64 >= bits_.size()) bits_.resize(id / 64 + 1, 0);
    const std::uint64_t mask = std::uint64_t{1} << (id % 64);
    const bool was = (bits_[id / 64] & mask) != 0;
    if (down && !was) {
      bits_[id / 64] |= mask;
      ++count_;
    } else if (!down && was) {
      bits_[id / 64] &= ~mask;
      --count_;
    }
  }
  bool contains(NodeId id) const noexcept {
    return id / 64 < bits_.size() && (bits_[id / 64] >> (id % 64) & 1u) != 0;
  }
  bool empty() const noexcept { return count_ == 0; }
  std::size_t size() const noexcept { return count_; }

 private:
  std::vector<std::uint64_t> bits_;
  std::size_t count_ = 0;
};

namespace internal {

// Visited-node tracking for visit(): inline for the common case, a bitmap beyond it.
class SeenSet {
 public:
  static constexpr std::size_t kInlineSeen = 16;

  explicit SeenSet(std::size_t node_count) noexcept : node_count_(node_count) {}

  // Returns true if `id` was not seen before (and records it).
  bool insert(NodeId id) {
    assert(id < node_count_);
    if (!bitmap_) {
      for (std::size_t i = 0; i < n_; ++i) {
        if (inline_[i] == id) return false;
      }
      if (n_ < kInlineSeen) {
        inline_[n_++] = id;
        return true;
      }
      // Spill: rare (more than kInlineSeen distinct nodes visited).
      bitmap_.emplace(node_count_);
      bits_ = bitmap_->words();
      for (std::size_t i = 0; i < n_; ++i) mark(inline_[i]);
    }
    if (test(id)) return false;
    mark(id);
    ++n_;
    return true;
  }
  bool contains(NodeId id) const noexcept {
    if (bitmap_) return test(id);
    for (std::size_t i = 0; i < n_; ++i) {
      if (inline_[i] == id) return true;
    }
    return false;
  }
  std::size_t size() const noexcept { return n_; }

 private:
  bool test(NodeId id) const noexcept { return (bits_[id / 64] >> (id % 64) & 1u) != 0; }
  void mark(NodeId id) noexcept { bits_[id / 64] |= std::uint64_t{1} << (id % 64); }

  std::size_t node_count_;
  std::size_t n_ = 0;
  NodeId inline_[kInlineSeen]{};
  std::uint64_t* bits_ = nullptr;
  std::optional<ScratchBitmap> bitmap_;
};

// Derives the attempt-th independent hash from a key hash (attempt >= 1). Used by algorithms
// whose next choice is "rehash and look again" (jump, memento, slots, probes).
constexpr std::uint64_t rehash(std::uint64_t hash, std::uint64_t attempt) noexcept {
  return hash::mix64(hash + attempt * 0x9E3779B97F4A7C15ULL);
}

}  // namespace internal

// ---- Generic operations over any table -------------------------------------------------------------

// Writes up to out.size() distinct nodes in preference order; returns how many were written
// (fewer only when the table has fewer drawable nodes).
template <PlacementTable T>
std::size_t pick_n(const T& table, std::uint64_t hash, std::span<NodeId> out) {
  std::size_t n = 0;
  if (out.empty()) return 0;
  table.visit(hash, [&](NodeId id) {
    out[n++] = id;
    return n < out.size();
  });
  return n;
}

// The first choice for `hash` that is not down; kNoNode when every drawable node is down.
template <PlacementTable T>
NodeId pick_up(const T& table, std::uint64_t hash, const DownSet& down) {
  if (down.empty()) return table.pick(hash);
  const NodeId first = table.pick(hash);
  if (!down.contains(first)) return first;
  NodeId chosen = kNoNode;
  table.visit(hash, [&](NodeId id) {
    if (down.contains(id)) return true;
    chosen = id;
    return false;
  });
  return chosen;
}

// pick_n that skips down nodes: replicas are placed on the next nodes that are up.
template <PlacementTable T>
std::size_t pick_n_up(const T& table, std::uint64_t hash, const DownSet& down,
                      std::span<NodeId> out) {
  std::size_t n = 0;
  if (out.empty()) return 0;
  table.visit(hash, [&](NodeId id) {
    if (down.contains(id)) return true;
    out[n++] = id;
    return n < out.size();
  });
  return n;
}

}  // namespace chash
