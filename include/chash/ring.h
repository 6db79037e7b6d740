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
// per point) narrows the search to one bucket; the points of a 16-point window over it (pick) or
// of the one or two 64-byte cache lines holding it (pick_batch) are counted without branches —
// O(1) expected, O(log points) worst case (a binary search in a crowded bucket), and always the
// same point as the plain binary search (plain_index_of, kept as the reference the tests compare
// against: tests/placement/ring_index_test.cc).
//
// Memory: positions are stored 64-byte aligned (so a bucket of a few points is usually one cache
// line); owners in 1 byte up to 256 nodes, 2 bytes up to 65,536, else 4 (chash/node_ids.h). A
// 32-bit ring costs 4 + 2 bytes per point plus the index (0.5 to 1 byte): 6.5 to 7 B/point
// (5.5 to 6 up to 256 nodes).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/node_ids.h"
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

namespace internal {

// std::allocator with 64-byte (cache line) alignment: ring positions start on a line, so the
// lines a lookup reads are those of its bucket and no more (see BasicRing::index_of).
template <class T>
struct LineAlignedAllocator {
  using value_type = T;
  static constexpr std::size_t kAlign = 64;
  LineAlignedAllocator() noexcept = default;
  template <class U>
  LineAlignedAllocator(const LineAlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kAlign}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kAlign}); }
  template <class U>
  bool operator==(const LineAlignedAllocator<U>&) const noexcept { return true; }
};

}  // namespace internal

// The owners of a ring's points, in points order (operator[], size, iteration).
using RingOwners = NodeIdsView;

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
    points_ = std::exchange(o.points_, 0);
    last_window_ = std::exchange(o.last_window_, 0);
    window_limit_ = std::exchange(o.window_limit_, 0);
    node_count_ = std::exchange(o.node_count_, 0);
    drawable_ = std::exchange(o.drawable_, 0);
    successor_ = o.successor_;
    o.positions_.clear();
    o.index_.clear();
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
    return owner(index_of(hash));
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
    if (index_.empty()) [[unlikely]] return plain_index_of(hash);
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
    if (index_.empty()) [[unlikely]] return plain_index_of(hash);
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
  RingOwners owners() const noexcept { return owners_.view(); }
  // The owner of point i (i < point_count()).
  NodeId owner(std::size_t i) const noexcept { return owners_[i]; }
  RingSuccessor successor() const noexcept { return successor_; }
  // Bytes of the lookup structures: points (with the padding of the last line), owners and the
  // top-bits index.
  std::size_t memory_bytes() const noexcept {
    return positions_.capacity() * sizeof(Pos) + owners_.memory_bytes() +
           index_.capacity() * sizeof(std::uint32_t);
  }
  std::size_t index_buckets() const noexcept { return index_.empty() ? 0 : index_.size() - 1; }

  // Most points per index bucket on average (half to all of it): the index costs 4 to 8 /
  // kPointsPerBucket bytes per point, 0.5 to 1 byte.
  static constexpr std::size_t kPointsPerBucket = 8;
  // pick_batch: how many keys ahead a key's points and owners are fetched (its index entry is
  // fetched twice as far ahead).
  static constexpr std::size_t kBatchDistance = 8;
  // Points counted by pick() when the bucket fits (see index_of).
  static constexpr std::size_t kWindow = 16;
  // Points per 64-byte cache line: 16 (32-bit positions) or 8.
  static constexpr std::size_t kLine = 64 / sizeof(Pos);

 private:
  // Points of the window w[0 .. kWindow) below `pos` (< pos, or <= pos for kGreater).
  std::size_t count_window(const Pos* w, Pos pos) const noexcept {
#if defined(__SSE2__)
    if constexpr (sizeof(Pos) == 4) {
      // Explicit SSE2, as in count_lines (GCC scalarizes this loop once pick() is inlined into a
      // caller's loop).
      const __m128i bias = _mm_set1_epi32(INT32_MIN);
      const __m128i p = _mm_xor_si128(_mm_set1_epi32(static_cast<int>(pos)), bias);
      const bool ge = successor_ == RingSuccessor::kGreaterOrEqual;
      __m128i acc = _mm_setzero_si128();  // lanes: minus the points counted
      for (std::size_t k = 0; k < kWindow / 4; ++k) {
        const __m128i x =
            _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w) + k), bias);
        acc = _mm_add_epi32(acc, ge ? _mm_cmpgt_epi32(p, x) : _mm_cmpgt_epi32(x, p));
      }
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4E));
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xB1));
      const auto counted = static_cast<std::size_t>(-_mm_cvtsi128_si32(acc));
      return ge ? counted : kWindow - counted;
    }
#endif
    std::uint32_t below = 0;
    if (successor_ == RingSuccessor::kGreaterOrEqual) {
      for (std::size_t j = 0; j < kWindow; ++j) below += w[j] < pos ? 1u : 0u;
    } else {
      for (std::size_t j = 0; j < kWindow; ++j) below += w[j] <= pos ? 1u : 0u;
    }
    return below;
  }

  // Points of positions_[a .. hi) that come before the owner of `pos` (< pos, or <= pos for
  // kGreater), where a is line-aligned and hi - a <= 2 * kLine: the points of the line at a plus,
  // when hi is past that line, those of the next. No index mask is needed: the points of a line
  // before lo are in earlier buckets (all below pos) and those from hi on in later ones (all
  // above it). The one exception is the padding after the last point (the largest Pos), counted
  // for kGreater when pos is the largest Pos — then the answer is past the last point, i.e. a
  // wrap to 0, which index_of_by_lines' `i >= points_` gives.
  std::size_t count_lines(std::size_t a, std::size_t hi, Pos pos) const noexcept {
    std::size_t second = hi - a > kLine ? 1 : 0;  // does the bucket run into the next line?
    // Opaque to the optimizer, so this stays a select: GCC otherwise turns it into a branch
    // (duplicating the counts on both sides), which mispredicts on a third of the lookups.
    __asm__("" : "+r"(second));
    const Pos* l0 = positions_.data() + a;
#if defined(__SSE2__)
    if constexpr (sizeof(Pos) == 4) {
      // Explicit SSE2 (baseline x86-64): left to itself, GCC vectorizes the two counts well in
      // a lone pick() but not once pick() is inlined into a caller's loop, where it spills the
      // lanes to the stack. Unsigned compares as signed ones on values biased by 2^31.
      // Without a second line, a constant line that counts nothing stands in for it.
      const bool ge = successor_ == RingSuccessor::kGreaterOrEqual;
      // l1 = second ? the next line : the constant line, by masking (second is 0 or 1) and kept
      // opaque too — else GCC branches on it again and folds the constant line's compares.
      const auto next = reinterpret_cast<std::uintptr_t>(l0 + kLine);
      const auto none = reinterpret_cast<std::uintptr_t>(ge ? kNeverBelowGe.v : kNeverBelowGt.v);
      std::uintptr_t u1 = none ^ ((next ^ none) & (std::uintptr_t{0} - second));
      __asm__("" : "+r"(u1));
      const Pos* l1 = reinterpret_cast<const Pos*>(u1);
      const __m128i bias = _mm_set1_epi32(INT32_MIN);
      const __m128i p = _mm_xor_si128(_mm_set1_epi32(static_cast<int>(pos)), bias);
      const auto* v0 = reinterpret_cast<const __m128i*>(l0);
      const auto* v1 = reinterpret_cast<const __m128i*>(l1);
      __m128i acc = _mm_setzero_si128();  // lanes: minus the points counted
      for (std::size_t k = 0; k < kLine / 4; ++k) {
        const __m128i x0 = _mm_xor_si128(_mm_load_si128(v0 + k), bias);
        const __m128i x1 = _mm_xor_si128(_mm_load_si128(v1 + k), bias);
        // kGreaterOrEqual counts w < pos; kGreater counts w > pos (then below = points - that).
        const __m128i c0 = ge ? _mm_cmpgt_epi32(p, x0) : _mm_cmpgt_epi32(x0, p);
        const __m128i c1 = ge ? _mm_cmpgt_epi32(p, x1) : _mm_cmpgt_epi32(x1, p);
        acc = _mm_add_epi32(acc, _mm_add_epi32(c0, c1));
      }
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4E));
      acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xB1));
      const auto counted = static_cast<std::size_t>(-_mm_cvtsi128_si32(acc));
      return ge ? counted : kLine + second * kLine - counted;
    }
#endif
    // Without a second line, line 0 is read again (no extra miss) and its count discarded.
    const std::size_t c1 = count_line(l0 + second * kLine, pos);
    return count_line(l0, pos) + (c1 & (std::size_t{0} - second));
  }

  // A cache line of positions that count_lines' SSE2 path never counts: the largest Pos is never
  // < pos (kGreaterOrEqual), 0 never > pos (kGreater, which counts the points above).
  struct alignas(64) Line {
    Pos v[kLine];
  };
  static constexpr Line filled_line(Pos x) noexcept {
    Line l{};
    for (Pos& e : l.v) e = x;
    return l;
  }
  static constexpr Line kNeverBelowGe = filled_line(static_cast<Pos>(~Pos{0}));
  static constexpr Line kNeverBelowGt = filled_line(0);

  // Points of one aligned line below `pos` (< pos, or <= pos for kGreater); vectorized.
  std::size_t count_line(const Pos* w, Pos pos) const noexcept {
    w = std::assume_aligned<64>(w);
    std::uint32_t below = 0;
    if (successor_ == RingSuccessor::kGreaterOrEqual) {
      for (std::size_t j = 0; j < kLine; ++j) below += w[j] < pos ? 1u : 0u;
    } else {
      for (std::size_t j = 0; j < kLine; ++j) below += w[j] <= pos ? 1u : 0u;
    }
    return below;
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

  // First i in [lo, hi) whose point is >= pos (> pos for kGreater); hi if none. Branchless
  // binary search inside one bucket.
  [[gnu::noinline]] std::size_t search_bucket(std::size_t lo, std::size_t hi,
                                              Pos pos) const noexcept {
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

  // Stores sorted points (position, owner) and builds the index.
  template <class Points>
  void assign(const Points& sorted);
  void build_index();

  // positions_[i] for i < points_, sorted ascending; then padding (the largest Pos) up to a whole
  // line past the last point, so every line a lookup reads is allocated and initialized.
  std::vector<Pos, internal::LineAlignedAllocator<Pos>> positions_;
  // owners_[i] owns positions_[i]: 1-byte ids up to 256 nodes, 2-byte up to 65,536, else 4.
  PackedNodeIds owners_;
  // index_[b] = first point whose top bits are >= b; index_.size() = 2^bits + 1 (last = points).
  std::vector<std::uint32_t> index_;
  unsigned shift_ = 0;           // sizeof(Pos) * 8 - bits
  std::size_t points_ = 0;
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
