// chash — classic consistent hashing on a ring with virtual nodes (Karger et al. 1997).
//
// Each node gets `vnodes * weight` points; point i of node "a" is the point hash of the point
// name, by default "a#VN{i}" — the naming the articles use; libraries also use "a-vn{i}",
// "a_v{i}", "a{i}", "a-{i}" (RingOptions::point_format). A key belongs to the first point
// clockwise at or after its position (>=), wrapping around to the first point.
//
// Ring positions are 32 bits (RingTable: 8 bytes per point, as ketama) or 64 bits (Ring64Table).
// A key's position is the low 32/64 bits of its hash; a point's the low bits of its point hash.
// Ties: equal points are ordered by node name (bytewise), so the node with the smaller name owns
// a contested position — deterministic and independent of the order nodes are listed in.
//
// Adding a node moves only keys to it (~1/(N+1)); removing or draining one moves only its keys,
// each to the next node clockwise. 150–200 vnodes keep the max/mean load within a few percent.
// Lookup: an index on the top bits of the position (one bucket per 4 to 8 points, 0.5 to 1 byte
// per point) narrows the search to one bucket; the points of a fixed 16-point window around it
// are counted without branches — O(1) expected, O(log points) worst case (a binary search in a
// crowded bucket), and always the same point as the plain binary search (plain_index_of, kept
// as the reference the tests compare against: tests/placement/ring_index_test.cc).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

struct RingOptions {
  std::uint32_t vnodes = 160;                   // points per unit of weight, 1..65536
  KeyHash point_hash = KeyHash::kXxh3;          // hashes each point name
  std::string point_format = "{name}#VN{i}";    // {name} and {i} are replaced; {i} from 0
};

// Upper bound on points in one ring (2^26 = 67,108,864; 512 MiB of 8-byte points).
inline constexpr std::uint64_t kMaxRingPoints = std::uint64_t{1} << 26;

// Which point owns a key position: the first point >= the position (libketama, most libraries),
// or the first point strictly > it (some peers, e.g. a TreeMap.higherKey lookup).
enum class RingSuccessor : std::uint8_t { kGreaterOrEqual, kGreater };

template <class Pos>
class BasicRing {
 public:
  using Options = RingOptions;
  struct Point {
    Pos position;
    NodeId node;
  };

  // Points named and hashed per `options`; ties broken by node name.
  static BasicRing build(std::span<const Node> nodes, const Options& options = {});

  // Points supplied by the caller (compatibility presets compute peers' exact points). Equal
  // positions keep the caller's order: the earlier point owns the position. Throws on an empty
  // point set or a node id >= node_count.
  static BasicRing from_points(std::vector<Point> points, std::size_t node_count,
                               RingSuccessor successor = RingSuccessor::kGreaterOrEqual);

  NodeId pick(std::uint64_t hash) const noexcept { return owners_[index_of(hash)]; }

  // Index of the owning point of `hash` in points order: the first point >= (or >, per
  // successor()) the position, wrapping to 0. The top-bits index gives the bucket's points
  // [lo, hi): every point before lo is smaller than the position and every point from hi on
  // larger, so the answer is lo + (points of the bucket below it) — or, counted over any window
  // [s, s + kWindow) that covers [lo, hi), s + (points of the window below it). The common case
  // counts one fixed window (no data-dependent branch; vectorized); a bucket that does not fit
  // (clustered or tied points) takes a binary search inside the bucket.
  std::size_t index_of(std::uint64_t hash) const noexcept {
    if (index_.empty()) return plain_index_of(hash);  // default-constructed (moved-from) ring
    const Pos pos = static_cast<Pos>(hash);
    const std::size_t bucket = static_cast<std::size_t>(pos >> shift_);
    const std::size_t lo = index_[bucket], hi = index_[bucket + 1];
    const std::size_t s = std::min(lo, last_window_);
    std::size_t i;
    if (hi - s < window_limit_) [[likely]] {
      // The owner is one of owners_[s .. s + kWindow]: start loading it beside the points
      // rather than after the count (one cache miss less on the critical path).
      __builtin_prefetch(owners_.data() + s);
      __builtin_prefetch(owners_.data() + s + kWindow - 1);
      i = s + count_below(positions_.data() + s, pos);
    } else {
      i = search_bucket(lo, hi, pos);
    }
    return i == positions_.size() ? 0 : i;
  }

  // The same answer by binary search over all points: the reference implementation.
  std::size_t plain_index_of(std::uint64_t hash) const noexcept {
    const Pos pos = static_cast<Pos>(hash);
    const auto it = successor_ == RingSuccessor::kGreaterOrEqual
                        ? std::lower_bound(positions_.begin(), positions_.end(), pos)
                        : std::upper_bound(positions_.begin(), positions_.end(), pos);
    const std::size_t i = static_cast<std::size_t>(it - positions_.begin());
    return i == positions_.size() ? 0 : i;
  }

  // pick() for hashes[i] into out[i] (out.size() >= hashes.size()), kBatchGroup keys at a time
  // in two passes: the first reads each key's index entry and prefetches the points index_of will
  // count and the owners its answer lies in; the second runs pick() on data now in flight or in
  // cache — so the cache misses of the group overlap. Same results as pick() one at a time.
  void pick_batch(std::span<const std::uint64_t> hashes, std::span<NodeId> out) const noexcept;

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    const std::size_t n = positions_.size();
    std::size_t i = index_of(hash);
    for (std::size_t step = 0; step < n && seen.size() < drawable_; ++step) {
      const NodeId id = owners_[i];
      if (seen.insert(id) && !f(id)) return;
      if (++i == n) i = 0;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }
  std::size_t point_count() const noexcept { return positions_.size(); }
  std::span<const Pos> positions() const noexcept { return positions_; }
  std::span<const NodeId> owners() const noexcept { return owners_; }
  RingSuccessor successor() const noexcept { return successor_; }
  // Bytes of the lookup structures: points, owners and the top-bits index.
  std::size_t memory_bytes() const noexcept {
    return positions_.size() * sizeof(Pos) + owners_.size() * sizeof(NodeId) +
           index_.size() * sizeof(std::uint32_t);
  }
  std::size_t index_buckets() const noexcept { return index_.empty() ? 0 : index_.size() - 1; }

  // Most points per index bucket on average (half to all of it): the index costs 4 to 8 /
  // kPointsPerBucket bytes per point, 0.5 to 1 byte.
  static constexpr std::size_t kPointsPerBucket = 8;
  static constexpr std::size_t kBatchGroup = 16;
  // Points counted per lookup when the bucket fits (see index_of).
  static constexpr std::size_t kWindow = 16;

 private:
  // Points of the window w[0 .. kWindow) that come before the owner of `pos`: < pos, or <= pos
  // for kGreater.
  std::size_t count_below(const Pos* w, Pos pos) const noexcept {
    std::uint32_t below = 0;
    if (successor_ == RingSuccessor::kGreaterOrEqual) {
      for (std::size_t j = 0; j < kWindow; ++j) below += w[j] < pos ? 1u : 0u;
    } else {
      for (std::size_t j = 0; j < kWindow; ++j) below += w[j] <= pos ? 1u : 0u;
    }
    return below;
  }

  // First i in [lo, hi) whose point is >= pos (> pos for kGreater); hi if none. Branchless
  // binary search inside one bucket.
  std::size_t search_bucket(std::size_t lo, std::size_t hi, Pos pos) const noexcept {
    std::size_t len = hi - lo;
    if (len == 0) return lo;
    const Pos* base = positions_.data() + lo;
    const bool greater = successor_ == RingSuccessor::kGreater;
    while (len > 1) {
      const std::size_t half = len / 2;
      const Pos p = base[half - 1];
      base += (greater ? p <= pos : p < pos) ? half : 0;
      len -= half;
    }
    const bool before = greater ? *base <= pos : *base < pos;
    return static_cast<std::size_t>(base - positions_.data()) + (before ? 1 : 0);
  }

  void build_index();

  std::vector<Pos> positions_;   // sorted ascending
  std::vector<NodeId> owners_;   // owners_[i] owns positions_[i]
  // index_[b] = first point whose top bits are >= b; index_.size() = 2^bits + 1 (last = points).
  std::vector<std::uint32_t> index_;
  unsigned shift_ = 0;           // sizeof(Pos) * 8 - bits
  std::size_t last_window_ = 0;  // points - kWindow: the last window that fits
  std::size_t window_limit_ = 0; // kWindow + 1; 0 (never count a window) below kWindow points
  std::size_t node_count_ = 0;
  std::size_t drawable_ = 0;     // distinct nodes with at least one point
  RingSuccessor successor_ = RingSuccessor::kGreaterOrEqual;
};

using RingTable = BasicRing<std::uint32_t>;
using Ring64Table = BasicRing<std::uint64_t>;

extern template class BasicRing<std::uint32_t>;
extern template class BasicRing<std::uint64_t>;

namespace internal {
// Expands a point_format for node `name` and index i into `out` (reused buffer).
void format_point_name(std::string_view format, std::string_view name, std::uint64_t i,
                       std::string& out);
}  // namespace internal

}  // namespace chash
