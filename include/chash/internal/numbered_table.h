// SPDX-License-Identifier: Apache-2.0
// The table of the numbered-bucket algorithms, jump (chash/jump.h) and JumpBackHash
// (chash/jumpback.h). Both map a key to a bucket in [0, n) and differ only in that function (the
// Buckets policy), so the table around it is written once: unweighted nodes (0 or 1), only the
// last node truly leaves (trailing drained nodes are trimmed off), a drained node elsewhere keeps
// its bucket and only its keys are rehashed; next choices: the function over a rehash of the key
// (attempt 1, 2, ...), then a linear scan. Removals anywhere: memento (chash/memento.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chash/node.h"
#include "chash/placement.h"

namespace chash::internal {

// A bucket function with a batch form: bucket_batch(hashes, n, out) fills out[i] for each hash.
// clang-format 14 mangles a concept's requirement body.
// clang-format off
template <class B>
concept BucketBatchFunction = requires(std::span<const std::uint64_t> h, std::span<NodeId> o) {
  B::bucket_batch(h, std::uint32_t{1}, o);
};
// clang-format on

// Buckets: static constexpr const char* kName; static std::uint32_t bucket(std::uint64_t hash,
// std::uint32_t n) noexcept; optionally static void bucket_batch(std::span<const std::uint64_t>,
// std::uint32_t n, std::span<NodeId> out) noexcept, which gives the table a pick_batch.
template <class Buckets>
class NumberedBucketTable {
 public:
  struct Options {};

  static NumberedBucketTable build(std::span<const Node> nodes, const Options& options = {});

  NodeId pick(std::uint64_t hash) const noexcept {
    const NodeId b = Buckets::bucket(hash, buckets_);
    if (drained_.empty() || !drained_[b]) return b;
    return pick_slow(hash);
  }

  // pick() for every hash (out.size() >= hashes.size()), when the function has a batch form.
  // A member template, so that the class's explicit instantiation leaves it out where the
  // function has no batch form (clang 14 instantiates a constrained non-template member anyway).
  template <internal::BucketBatchFunction B = Buckets>
  void pick_batch(std::span<const std::uint64_t> hashes, std::span<NodeId> out) const noexcept {
    B::bucket_batch(hashes, buckets_, out);
    if (drained_.empty()) return;
    for (std::size_t k = 0; k < hashes.size(); ++k) {
      if (drained_[out[k]]) out[k] = pick_slow(hashes[k]);
    }
  }

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    SeenSet seen(node_count_);
    NodeId b = pick(hash);
    if (!seen.insert(b) || !f(b)) return;
    for (std::uint64_t attempt = 1; attempt <= kRehashAttempts; ++attempt) {
      if (seen.size() == drawable_) return;
      b = Buckets::bucket(rehash(hash, attempt), buckets_);
      if (is_drained(b) || !seen.insert(b)) continue;
      if (!f(b)) return;
    }
    for (NodeId i = 0; i < buckets_ && seen.size() < drawable_; ++i) {
      if (is_drained(i) || !seen.insert(i)) continue;
      if (!f(i)) return;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }

 private:
  static constexpr std::uint64_t kRehashAttempts = 64;

  bool is_drained(NodeId b) const noexcept { return !drained_.empty() && drained_[b]; }
  NodeId pick_slow(std::uint64_t hash) const noexcept;

  std::uint32_t buckets_ = 0;          // trailing drained nodes are trimmed off
  std::vector<std::uint8_t> drained_;  // empty when no bucket below buckets_ is drained
  std::size_t drawable_ = 0;
  std::size_t node_count_ = 0;
};

}  // namespace chash::internal
