// SPDX-License-Identifier: Apache-2.0
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
// Lookup: rings of up to 2^18 points (1,638 nodes of 160) first read a direct table, the owner
// of each of 8 to 32 slots per point wherever no point splits the slot (7 to 15 lookups in 8 to
// 16 end there, in one load). Otherwise an index on the top bits of the position (one bucket per 4
// to 8 points, 0.5 to 1 byte per point) narrows the search to one bucket; the points of a 16-point
// window over it (pick) or of the one or two 64-byte cache lines holding it (pick_batch) are
// counted without branches — O(1) expected, O(log points) worst case (a binary search in a crowded
// bucket), and always the same point as the plain binary search (plain_index_of, kept as the
// reference the tests compare against: tests/placement/ring_index_test.cc).
//
// Memory: positions are stored 64-byte aligned (so a bucket of a few points is usually one cache
// line); owners in 1 byte up to 256 nodes, 2 bytes up to 65,536, else 4 (chash/node_ids.h). A
// 32-bit ring costs 4 + 2 bytes per point plus the index (0.5 to 1 byte): 6.5 to 7 B/point
// (5.5 to 6 up to 256 nodes), plus, up to 2^18 points, the direct table: 8 to 64 B/point, at most
// 4 MiB (1 byte a slot up to 254 nodes, 2 beyond) — memory bought for speed; issue 5's bound of
// 8 B/point at 10,000 nodes of 160 (1.6 M points, no table) stands.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "chash/hash.h"
#include "chash/internal/packed_node_ids.h"
#include "chash/internal/ring_search.h"
#include "chash/node.h"
#include "chash/node_ids.h"
#include "chash/placement.h"

namespace chash {

struct RingOptions {
  std::uint32_t vnodes = 160;                 // points per unit of weight, 1..65536
  KeyHash point_hash = KeyHash::kXxh3;        // hashes each point name
  std::string point_format = "{name}#VN{i}";  // {name} and {i} are replaced; {i} from 0
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

  BasicRing() = default;
  BasicRing(const BasicRing&) = default;
  BasicRing& operator=(const BasicRing&) = default;
  // A moved-from ring is empty (point_count() 0), as a default-constructed one.
  BasicRing(BasicRing&& o) noexcept { *this = std::move(o); }
  BasicRing& operator=(BasicRing&& o) noexcept {
    positions_ = std::move(o.positions_);
    owners_ = std::move(o.owners_);
    index_ = std::move(o.index_);
    shift_ = o.shift_;
    direct8_ = std::move(o.direct8_);
    direct16_ = std::move(o.direct16_);
    direct_shift_ = o.direct_shift_;
    points_ = std::exchange(o.points_, 0);
    last_window_ = std::exchange(o.last_window_, 0);
    window_limit_ = std::exchange(o.window_limit_, 0);
    node_count_ = std::exchange(o.node_count_, 0);
    drawable_ = std::exchange(o.drawable_, 0);
    successor_ = o.successor_;
    o.positions_.clear();
    o.index_.clear();
    o.direct8_.clear();
    o.direct16_.clear();
    return *this;
  }

  // Points named and hashed per `options`; ties broken by node name.
  static BasicRing build(std::span<const Node> nodes, const Options& options = {});

  // Points supplied by the caller (compatibility presets compute peers' exact points). Equal
  // positions keep the caller's order: the earlier point owns the position. Throws on an empty
  // point set or a node id >= node_count.
  static BasicRing from_points(std::vector<Point> points, std::size_t node_count,
                               RingSuccessor successor = RingSuccessor::kGreaterOrEqual);

  // Not forced inline (maglev's pick is): inlined into a caller's loop, GCC scalarizes the 64-bit
  // ring's count (spilling to the stack), a third slower than the call.
  NodeId pick(std::uint64_t hash) const noexcept {
    NodeId id;
    if (direct_hit(hash, id)) [[likely]] {
      return id;
    }
    return owner(index_of(hash));
  }

  // The direct table (rings of up to kDirectMaxPoints points and fewer than 65,535 nodes): the
  // position range cut into 2^k slots — 16 to 32 per point up to 2^17 points, then 2^21 (8 to 16
  // per point up to 2^18) — each holding the owner of every position
  // in it when no point falls inside the slot (the owner is then the same for all of them), else
  // "look it up". On a uniform ring a slot holds a point with probability about 1 - e^(-1/s) for
  // s slots a point, so 15 lookups in 16 (7 in 8 at 2^18 points) are one load — maglev's cost —
  // and the rest take the index below. The price is memory: 1 byte a slot up to 254 nodes, 2
  // bytes beyond (8 to 64 bytes per point; at most 4 MiB). Larger rings have none.
  bool direct_hit(std::uint64_t hash, NodeId& id) const noexcept {
    const std::size_t slot = static_cast<std::size_t>(static_cast<Pos>(hash) >> direct_shift_);
    if (!direct8_.empty()) {
      const std::uint8_t e = direct8_[slot];
      id = e;
      return e != kDirectMiss8;
    }
    if (!direct16_.empty()) {
      const std::uint16_t e = direct16_[slot];
      id = e;
      return e != kDirectMiss16;
    }
    return false;
  }

  // Index of the owning point of `hash` in points order: the first point >= (or >, per
  // successor()) the position, wrapping to 0. The top-bits index gives the bucket's points
  // [lo, hi): every point before lo is smaller than the position and every point from hi on
  // larger, so the answer is s + (points of [s, hi) below it) for any s <= lo — counted over any
  // window from s that covers [lo, hi), since the window's points past hi are not below it.
  // pick() counts the fixed 16-point window from s = lo (fewest instructions: a lookup that is
  // one of many in flight is bound by instructions, not misses); pick_batch() counts the one or
  // two cache lines the bucket occupies (fewest lines: a batch is bound by lines in flight).
  // Neither branches on the data; a bucket that fits neither (clustered or tied points) takes a
  // binary search inside the bucket.
  std::size_t index_of(std::uint64_t hash) const noexcept {
    // A default-constructed (or moved-from) ring has no index.
    if (index_.empty()) [[unlikely]] {
      return plain_index_of(hash);
    }
    const Pos pos = static_cast<Pos>(hash);
    const std::size_t bucket = bucket_of(hash);
    const std::size_t lo = index_[bucket], hi = index_[bucket + 1];
    // The owner is one of owners [lo, hi] — nearly always on lo's line (a bucket's owners are
    // 4 to 16 bytes): start loading it beside the points rather than after the count (one cache
    // miss less on the critical path).
    __builtin_prefetch(owners_.address_of(lo));
    const std::size_t s = std::min(lo, last_window_);
    std::size_t i;
    if (hi - s < window_limit_) [[likely]] {
      i = s + count_window(positions_.data() + s, pos);
    } else {
      i = search_bucket(lo, hi, pos);
    }
    return i >= points_ ? 0 : i;
  }

  // index_of by the bucket's cache lines (pick_batch's count; the same answer).
  [[gnu::always_inline]] std::size_t index_of_by_lines(std::uint64_t hash) const noexcept {
    if (index_.empty()) [[unlikely]] {
      return plain_index_of(hash);
    }
    const Pos pos = static_cast<Pos>(hash);
    const std::size_t bucket = bucket_of(hash);
    const std::size_t lo = index_[bucket], hi = index_[bucket + 1];
    const std::size_t a = lo & ~(kLine - 1);
    std::size_t i;
    if (hi - a <= 2 * kLine) [[likely]] {
      i = a + count_lines(a, hi, pos);
    } else {
      i = search_bucket(lo, hi, pos);
    }
    return i >= points_ ? 0 : i;
  }

  // The same answer by binary search over all points: the reference implementation.
  [[gnu::noinline]] std::size_t plain_index_of(std::uint64_t hash) const noexcept {
    const Pos pos = static_cast<Pos>(hash);
    const Pos* first = positions_.data();
    const Pos* last = first + points_;
    const Pos* it = successor_ == RingSuccessor::kGreaterOrEqual
                        ? std::lower_bound(first, last, pos)
                        : std::upper_bound(first, last, pos);
    const std::size_t i = static_cast<std::size_t>(it - first);
    return i == points_ ? 0 : i;
  }

  // pick() for hashes[i] into out[i] (out.size() >= hashes.size()), software-pipelined: while
  // key i is looked up, the lines of key i + kBatchDistance (its bucket's points and owners,
  // found from its index entry) and the index entry of key i + 2 * kBatchDistance are being
  // fetched — so the cache misses of ~2 * kBatchDistance keys overlap, continuously rather than
  // group by group. Same results as pick() one at a time (it is pick(), on data now in cache).
  void pick_batch(std::span<const std::uint64_t> hashes, std::span<NodeId> out) const noexcept;

  template <class F>
  void visit(std::uint64_t hash, F&& f) const {
    internal::SeenSet seen(node_count_);
    const std::size_t n = points_;
    std::size_t i = index_of(hash);
    for (std::size_t step = 0; step < n && seen.size() < drawable_; ++step) {
      const NodeId id = owner(i);
      if (seen.insert(id) && !f(id)) return;
      if (++i == n) i = 0;
    }
  }

  std::size_t node_count() const noexcept { return node_count_; }
  std::size_t point_count() const noexcept { return points_; }
  std::span<const Pos> positions() const noexcept { return {positions_.data(), points_}; }
  // The owners of the points, in points order.
  NodeIdsView owners() const noexcept { return owners_.view(); }
  // The owner of point i (i < point_count()).
  NodeId owner(std::size_t i) const noexcept { return owners_[i]; }  // asserts i < point_count()
  RingSuccessor successor() const noexcept { return successor_; }
  // Bytes of the lookup structures: points (with the padding of the last line), owners and the
  // top-bits index.
  std::size_t memory_bytes() const noexcept {
    return positions_.capacity() * sizeof(Pos) + owners_.memory_bytes() +
           index_.capacity() * sizeof(std::uint32_t) + direct8_.capacity() +
           direct16_.capacity() * sizeof(std::uint16_t);
  }
  std::size_t index_buckets() const noexcept { return index_.empty() ? 0 : index_.size() - 1; }
  // Slots of the direct table (0: none).
  std::size_t direct_slots() const noexcept { return direct8_.size() + direct16_.size(); }

  // Most points per index bucket on average (half to all of it): the index costs 4 to 8 /
  // kPointsPerBucket bytes per point, 0.5 to 1 byte.
  static constexpr std::size_t kPointsPerBucket = 8;
  // Rings of up to this many points get a direct table (at most 2^21 entries: 2 MiB with 1-byte
  // entries, 4 MiB with 2-byte). Measured at 1,000 nodes of 160 (160,000 points; a table beyond
  // L2): route_batch 11.1 ns a key without, 8.4 with 2^20 slots (6.5 a point), 7.2-8.0 with 2^21.
  static constexpr std::size_t kDirectMaxPoints = std::size_t{1} << 18;
  // pick_batch: how many keys ahead a key's points and owners are fetched (its index entry is
  // fetched twice as far ahead).
  static constexpr std::size_t kBatchDistance = 8;
  // Points counted by pick() when the bucket fits (see index_of).
  static constexpr std::size_t kWindow = internal::RingSearch<Pos>::kWindow;
  // Points per 64-byte cache line: 16 (32-bit positions) or 8.
  static constexpr std::size_t kLine = internal::RingSearch<Pos>::kLine;

 private:
  // The counting kernels (internal/ring_search.h) under this ring's successor rule.
  using Search = internal::RingSearch<Pos>;
  bool ge() const noexcept { return successor_ == RingSuccessor::kGreaterOrEqual; }
  std::size_t count_window(const Pos* w, Pos pos) const noexcept {
    return Search::count_window(w, pos, ge());
  }
  std::size_t count_lines(std::size_t a, std::size_t hi, Pos pos) const noexcept {
    return Search::count_lines(positions_.data(), a, hi, pos, ge());
  }
  std::size_t search_bucket(std::size_t lo, std::size_t hi, Pos pos) const noexcept {
    return Search::search_bucket(positions_.data(), lo, hi, pos, ge());
  }

  std::size_t bucket_of(std::uint64_t hash) const noexcept {
    return static_cast<std::size_t>(static_cast<Pos>(hash) >> shift_);
  }

  // pick_batch's second stage for one key, once its index entry is in cache: prefetch the first
  // and last line of its bucket's points (one line for most buckets) and of its owners.
  [[gnu::always_inline]] void prefetch_bucket(std::uint64_t hash) const noexcept {
    const std::size_t b = bucket_of(hash);
    const std::size_t lo = index_[b], hi = index_[b + 1];
    __builtin_prefetch(positions_.data() + lo);
    __builtin_prefetch(positions_.data() + (hi > lo ? hi - 1 : lo));
    prefetch_owners(lo, hi);
  }

  // always_inline: as a separate function GCC's pure-const analysis deems it side-effect free
  // and deletes the call — and the prefetches with it.
  [[gnu::always_inline]] void prefetch_owners(std::size_t lo, std::size_t hi) const noexcept {
    __builtin_prefetch(owners_.address_of(lo));
    __builtin_prefetch(owners_.address_of(hi));
  }

  // Stores sorted points (position, owner) and builds the index and the direct table.
  template <class Points>
  void assign(const Points& sorted);
  void build_index();
  void build_direct();

  static constexpr std::uint8_t kDirectMiss8 = 0xFF;
  static constexpr std::uint16_t kDirectMiss16 = 0xFFFF;

  // positions_[i] for i < points_, sorted ascending; then padding (the largest Pos) up to a whole
  // line past the last point, so every line a lookup reads is allocated and initialized.
  std::vector<Pos, internal::LineAlignedAllocator<Pos>> positions_;
  // owners_[i] owns positions_[i]: 1-byte ids up to 256 nodes, 2-byte up to 65,536, else 4.
  internal::PackedNodeIds owners_;
  // index_[b] = first point whose top bits are >= b; index_.size() = 2^bits + 1 (last = points).
  std::vector<std::uint32_t> index_;
  unsigned shift_ = 0;  // sizeof(Pos) * 8 - bits
  // The direct table (direct_hit): one of the two is filled, or neither.
  std::vector<std::uint8_t> direct8_;
  std::vector<std::uint16_t> direct16_;
  unsigned direct_shift_ = 0;  // sizeof(Pos) * 8 - log2(slots)
  std::size_t points_ = 0;
  std::size_t last_window_ = 0;   // points - kWindow: the last window that fits
  std::size_t window_limit_ = 0;  // kWindow + 1; 0 (never count a window) below kWindow points
  std::size_t node_count_ = 0;
  std::size_t drawable_ = 0;  // distinct nodes with at least one point
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
