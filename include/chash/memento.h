// SPDX-License-Identifier: Apache-2.0
// chash — MementoHash (Coluzzi, Brocco, Antonucci, Leidi 2023, "MementoHash: A Stateful, Minimal
// Memory, Best Performing Consistent Hash Algorithm", arXiv:2306.09783).
//
// Jump consistent hash plus a memory of removed buckets: any node can be removed (drained), only
// its keys move, spread evenly over the others; re-adding restores the last removed bucket. With
// no removals a lookup is exactly jump. Removal order matters (it fixes each replacement), so
// build() replays MementoOptions::removal_order (chash::Cluster records it); drained nodes not
// listed there are removed after, in list order. Unweighted: weights must be 0 or 1.
// Memory: one uint32 per bucket (a flat array rather than the paper's hash map: a lookup then
// costs one array read per step). Next choices: memento over a rehash of the key, then a scan.
// Inner function (the lookup before any removal): jump, as the paper (MementoTable, "memento"),
// or JumpBackHash (MementoJumpBackTable, "memento-jumpback": O(1) expected instead of O(ln n);
// chash/jumpback.h). The two map keys differently; memento's mapping does not change.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chash/jump.h"
#include "chash/jumpback.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

struct MementoOptions {
  std::vector<NodeId> removal_order;  // removed (weight-0) nodes, oldest removal first
};

namespace internal {
// Memento's inner hash is the numbered table's bucket function (bucket(), and jump's batch form,
// inherited); only the name its errors carry differs.
struct MementoOverJump : JumpBuckets {
  static constexpr const char* kName = "memento";
};
struct MementoOverJumpBack : JumpBackBuckets {
  static constexpr const char* kName = "memento-jumpback";
};
}  // namespace internal

// Inner: internal::MementoOverJump or internal::MementoOverJumpBack (the aliases below).
template <class Inner>
class BasicMementoTable {
 public:
  using Options = MementoOptions;

  static BasicMementoTable build(std::span<const Node> nodes, const Options& options = {});

  NodeId pick(std::uint64_t hash) const noexcept {
    const NodeId b = Inner::bucket(hash, size_);
    if (replacer_.empty()) return b;
    return follow_removals(hash, b);
  }

  // pick() for every hash (out.size() >= hashes.size()), when the inner function has a batch
  // form: the inner buckets in one batch, then each removed one followed as pick() does.
  // A member template, so that the class's explicit instantiation leaves it out where the
  // function has no batch form (clang 14 instantiates a constrained non-template member anyway).
  template <internal::BucketBatchFunction B = Inner>
  void pick_batch(std::span<const std::uint64_t> hashes, std::span<NodeId> out) const noexcept {
    B::bucket_batch(hashes, size_, out);
    if (replacer_.empty()) return;
    for (std::size_t k = 0; k < hashes.size(); ++k) out[k] = follow_removals(hashes[k], out[k]);
  }

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    NodeId b = pick(hash);
    if (!seen.insert(b) || !f(b)) return;
    for (std::uint64_t attempt = 1; attempt <= 64; ++attempt) {
      if (seen.size() == drawable_) return;
      b = pick(internal::rehash(hash, attempt));
      if (!seen.insert(b)) continue;
      if (!f(b)) return;
    }
    for (NodeId i = 0; i < size_ && seen.size() < drawable_; ++i) {
      if (is_removed(i) || !seen.insert(i)) continue;
      if (!f(i)) return;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }
  std::uint32_t bucket_array_size() const noexcept { return size_; }

 private:
  static constexpr std::uint32_t kNotRemoved = 0xFFFFFFFFu;
  // b, or where its keys went when b was removed.
  NodeId follow_removals(std::uint64_t hash, NodeId b) const noexcept {
    // Was b removed? Rehash within the working set as it was right after b's removal (its
    // size is the replacer), then follow the replacements of buckets removed before b.
    for (std::uint32_t w = replacer_[b]; w != kNotRemoved; w = replacer_[b]) {
      b = static_cast<NodeId>(hash::mix64(hash ^ (std::uint64_t{b} + 1) * 0xA0761D6478BD642FULL) %
                              w);
      while (replacer_[b] != kNotRemoved && replacer_[b] >= w) b = replacer_[b];
    }
    return b;
  }

  bool is_removed(NodeId b) const noexcept {
    return !replacer_.empty() && replacer_[b] != kNotRemoved;
  }

  std::uint32_t size_ = 0;               // the b-array size (shrinks on tail removals)
  std::vector<std::uint32_t> replacer_;  // per bucket: replacer, or kNotRemoved; empty if none
  std::size_t drawable_ = 0;
  std::size_t node_count_ = 0;
};

using MementoTable = BasicMementoTable<internal::MementoOverJump>;
using MementoJumpBackTable = BasicMementoTable<internal::MementoOverJumpBack>;
extern template class BasicMementoTable<internal::MementoOverJump>;
extern template class BasicMementoTable<internal::MementoOverJumpBack>;

}  // namespace chash
