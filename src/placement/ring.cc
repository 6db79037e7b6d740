// SPDX-License-Identifier: Apache-2.0
#include "chash/ring.h"

#include <algorithm>
#include <numeric>

#include "chash/error.h"
#include "internal.h"

namespace chash {

namespace internal {

void format_point_name(std::string_view format, std::string_view name, std::uint64_t i,
                       std::string& out) {
  out.clear();
  std::size_t pos = 0;
  while (pos < format.size()) {
    const std::size_t open = format.find('{', pos);
    if (open == std::string_view::npos) {
      out.append(format.substr(pos));
      break;
    }
    out.append(format.substr(pos, open - pos));
    if (format.compare(open, 6, "{name}") == 0) {
      out.append(name);
      pos = open + 6;
    } else if (format.compare(open, 3, "{i}") == 0) {
      char digits[24];
      int n = 0;
      do {
        digits[n++] = static_cast<char>('0' + i % 10);
        i /= 10;
      } while (i != 0);
      while (n > 0) out.push_back(digits[--n]);
      pos = open + 3;
    } else {
      out.push_back('{');
      pos = open + 1;
    }
  }
}

}  // namespace internal

template <class Pos>
BasicRing<Pos> BasicRing<Pos>::build(std::span<const Node> nodes, const Options& options) {
  validate_nodes(nodes);
  if (options.vnodes == 0 || options.vnodes > 65536) {
    throw Error(ErrorCode::kInvalidArgument,
                "ring vnodes must be 1..65536, got " + std::to_string(options.vnodes));
  }
  if (options.point_format.find("{i}") == std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument,
                "ring point format must contain {i} (else every point of a node is the same): \"" +
                    options.point_format + "\"");
  }
  std::uint64_t total = 0;
  for (const Node& n : nodes) total += std::uint64_t{n.weight} * options.vnodes;
  if (total > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "ring would have " + std::to_string(total) +
                                               " points (vnodes x weight summed); at most " +
                                               std::to_string(kMaxRingPoints));
  }

  // Tie-break rank: position of each node in name order.
  std::vector<NodeId> by_name(nodes.size());
  std::iota(by_name.begin(), by_name.end(), NodeId{0});
  std::sort(by_name.begin(), by_name.end(),
            [&](NodeId a, NodeId b) { return nodes[a].name < nodes[b].name; });
  std::vector<std::uint32_t> rank(nodes.size());
  for (std::uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;

  struct Raw {
    Pos pos;
    std::uint32_t rank;
    NodeId node;
  };
  std::vector<Raw> raw;
  raw.reserve(static_cast<std::size_t>(total));
  std::string buf;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    const std::uint64_t points = std::uint64_t{nodes[id].weight} * options.vnodes;
    for (std::uint64_t i = 0; i < points; ++i) {
      internal::format_point_name(options.point_format, nodes[id].name, i, buf);
      raw.push_back(Raw{static_cast<Pos>(hash_key(options.point_hash, buf)), rank[id],
                        static_cast<NodeId>(id)});
    }
  }
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
    return a.pos != b.pos ? a.pos < b.pos : a.rank < b.rank;
  });

  BasicRing r;
  r.node_count_ = nodes.size();
  r.assign(raw);
  for (const Node& n : nodes) r.drawable_ += n.weight > 0 ? 1 : 0;
  return r;
}

template <class Pos>
BasicRing<Pos> BasicRing<Pos>::from_points(std::vector<Point> points, std::size_t node_count,
                                           RingSuccessor successor) {
  if (points.empty()) throw Error(ErrorCode::kEmptyNodeSet, "the ring has no points");
  if (points.size() > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "ring has " + std::to_string(points.size()) +
                                               " points; at most " +
                                               std::to_string(kMaxRingPoints));
  }
  std::vector<bool> has_point(node_count, false);
  for (const Point& p : points) {
    if (p.node >= node_count) {
      throw Error(ErrorCode::kInvalidArgument, "ring point names node " + std::to_string(p.node) +
                                                   " of " + std::to_string(node_count));
    }
    has_point[p.node] = true;
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Point& a, const Point& b) { return a.position < b.position; });
  BasicRing r;
  r.node_count_ = node_count;
  r.successor_ = successor;
  r.assign(points);
  r.drawable_ = static_cast<std::size_t>(std::count(has_point.begin(), has_point.end(), true));
  return r;
}

// ---- Storage, the top-bits index and batch lookup -------------------------------------------------

namespace {
template <class P>
auto point_position(const P& p) noexcept {
  if constexpr (requires { p.position; }) {
    return p.position;
  } else {
    return p.pos;
  }
}
}  // namespace

template <class Pos>
template <class Points>
void BasicRing<Pos>::assign(const Points& sorted) {
  points_ = sorted.size();
  // Whole lines, and at least one line past the last point: a lookup whose bucket starts at
  // points_ (an empty last bucket) reads the line there. Padding is the largest Pos; the counts
  // mask it out by index anyway.
  const std::size_t padded = (points_ / kLine + 1) * kLine;
  positions_.clear();
  positions_.reserve(padded);
  for (const auto& p : sorted) positions_.push_back(point_position(p));
  positions_.resize(padded, static_cast<Pos>(~Pos{0}));
  owners_.assign(points_, node_count_, [&](std::size_t i) { return sorted[i].node; });
  build_index();
  build_direct();
}

template <class Pos>
void BasicRing<Pos>::build_direct() {
  direct8_.clear();
  direct16_.clear();
  direct_shift_ = 0;
  constexpr unsigned kPosBits = sizeof(Pos) * 8;
  const std::size_t points = points_;
  if (points == 0 || points > kDirectMaxPoints || node_count_ >= kDirectMiss16) return;
  // bit_ceil(points) * 16 slots (16 to 32 per point), at most 2^21 (8 to 16 per point for the
  // rings over 2^17 points). Measured with bench/peers/chash_peers at 10 and 100 nodes
  // of 160 points: 8 to 16 slots a point made a lookup 1.45-1.9x faster than the index alone, 16
  // to 32 another 1.07-1.13x (fewer mispredicted misses); the table stays within L2 there.
  const unsigned bits = std::min(21u, static_cast<unsigned>(std::bit_width(points - 1)) + 4);
  const std::size_t slots = std::size_t{1} << bits;
  direct_shift_ = kPosBits - bits;
  const bool narrow = node_count_ < kDirectMiss8;
  if (narrow) {
    direct8_.assign(slots, kDirectMiss8);
  } else {
    direct16_.assign(slots, kDirectMiss16);
  }
  // Slot s holds positions [lo, hi]. The owner of a position is point first(pos) (the first
  // point >= pos, or > pos), which never decreases with pos: when first(lo) == first(hi) every
  // position of the slot has that owner. Two cursors walk the points once for all slots.
  const Pos* p = positions_.data();
  const bool ge = successor_ == RingSuccessor::kGreaterOrEqual;
  auto before = [&](std::size_t i, Pos pos) { return ge ? p[i] < pos : p[i] <= pos; };
  std::size_t a = 0, b = 0;
  for (std::size_t slot = 0; slot < slots; ++slot) {
    const Pos lo = static_cast<Pos>(static_cast<Pos>(slot) << direct_shift_);
    const Pos hi = static_cast<Pos>(lo | ((Pos{1} << direct_shift_) - 1));
    while (a < points && before(a, lo)) ++a;
    if (b < a) b = a;
    while (b < points && before(b, hi)) ++b;
    if (a != b) continue;  // a point inside the slot: look it up
    const NodeId id = owner(a == points ? 0 : a);
    if (narrow) {
      direct8_[slot] = static_cast<std::uint8_t>(id);
    } else {
      direct16_[slot] = static_cast<std::uint16_t>(id);
    }
  }
}

template <class Pos>
void BasicRing<Pos>::build_index() {
  constexpr unsigned kPosBits = sizeof(Pos) * 8;
  // 2^bits buckets, bits = bit_width(points / kPointsPerBucket), at least 1: kPointsPerBucket/2
  // to kPointsPerBucket points per bucket on a uniform ring (at most 2^26
  // points, so bits <= 25 and a bucket number fits any Pos).
  const std::size_t points = points_;
  const unsigned bits =
      std::max(1u, static_cast<unsigned>(std::bit_width(points / kPointsPerBucket)));
  shift_ = kPosBits - bits;
  const std::size_t buckets = std::size_t{1} << bits;
  index_.assign(buckets + 1, 0);
  std::size_t i = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    while (i < points && static_cast<std::size_t>(positions_[i] >> shift_) < b) ++i;
    index_[b] = static_cast<std::uint32_t>(i);
  }
  index_[buckets] = static_cast<std::uint32_t>(points);
  last_window_ = points >= kWindow ? points - kWindow : 0;
  window_limit_ = points >= kWindow ? kWindow + 1 : 0;
}

template <class Pos>
void BasicRing<Pos>::pick_batch(std::span<const std::uint64_t> hashes,
                                std::span<NodeId> out) const noexcept {
  constexpr std::size_t D = kBatchDistance;
  const std::uint64_t* h = hashes.data();
  NodeId* o = out.data();
  const std::size_t n = hashes.size();
  if (direct_slots() != 0) {
    // A ring with a direct table is small enough to stay in cache: no prefetching needed.
    // pick() inline, with the choice of table (1- or 2-byte entries) made once for the batch
    // rather than per key. Measured (bench/chash_bench BM_PickBatch, 1,024 keys, ns per call,
    // old -> new, three runs alternating): ring at 10 / 100 / 1,000 nodes 980 -> 818,
    // 1,380 -> 1,000, 2,450 -> 1,990; ring64 1,270 -> 1,120, 1,640 -> 1,490, 3,700 -> 3,260;
    // BM_PresetBatch/groupcache 6,600 -> 6,400, 6,530 -> 6,320, 8,000 -> 7,490. (Reading every
    // key's entry first, branch-free, and resolving the misses in a second pass was slower:
    // ring at 10 nodes 980 -> 1,140.)
    const unsigned shift = direct_shift_;
    const auto by_table = [&](const auto* table, auto miss) {
      for (std::size_t i = 0; i < n; ++i) {
        const auto e = table[static_cast<std::size_t>(static_cast<Pos>(h[i]) >> shift)];
        o[i] = e != miss ? NodeId{e} : owner(index_of(h[i]));
      }
    };
    if (!direct8_.empty()) {
      by_table(direct8_.data(), kDirectMiss8);
    } else {
      by_table(direct16_.data(), kDirectMiss16);
    }
    return;
  }
  if (index_.empty() || n < 2 * D) {
    for (std::size_t i = 0; i < n; ++i) o[i] = pick(h[i]);
    return;
  }
  // Stage 1: the key's index entry, into L2 only (prefetcht1): an L1 prefetch holds one of the
  // core's ~16 L1 fill buffers until its line arrives, and with the index, points and owners of
  // ~2D keys in flight those buffers, not latency, were the limit (measured: 13.5 -> 11.3 ns
  // per key at 10,000 x 160; distances 6 to 24 made no difference). Stage 2 (the entry has
  // arrived): the lines index_of will read, into L1 (prefetch_bucket). Both are plain statements
  // or always_inline: a function that only prefetches can be judged side-effect free by GCC and
  // its call deleted.
  const std::uint32_t* index = index_.data();
  for (std::size_t k = 0; k < 2 * D; ++k) __builtin_prefetch(index + bucket_of(h[k]), 0, 2);
  for (std::size_t k = 0; k < D; ++k) prefetch_bucket(h[k]);
  std::size_t i = 0;
  for (; i + 2 * D < n; ++i) {
    __builtin_prefetch(index + bucket_of(h[i + 2 * D]), 0, 2);
    prefetch_bucket(h[i + D]);
    o[i] = owner(index_of_by_lines(h[i]));
  }
  for (; i + D < n; ++i) {
    prefetch_bucket(h[i + D]);
    o[i] = owner(index_of_by_lines(h[i]));
  }
  for (; i < n; ++i) o[i] = owner(index_of_by_lines(h[i]));
}

template class BasicRing<std::uint32_t>;
template class BasicRing<std::uint64_t>;

}  // namespace chash
