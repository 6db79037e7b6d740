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
    throw Error(ErrorCode::kLimitExceeded,
                "ring would have " + std::to_string(total) + " points (vnodes x weight summed); at most " +
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
      raw.push_back(Raw{static_cast<Pos>(hash_key(options.point_hash, buf)),
                        rank[id], static_cast<NodeId>(id)});
    }
  }
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
    return a.pos != b.pos ? a.pos < b.pos : a.rank < b.rank;
  });

  BasicRing r;
  r.node_count_ = nodes.size();
  r.positions_.reserve(raw.size());
  r.owners_.reserve(raw.size());
  for (const Raw& p : raw) {
    r.positions_.push_back(p.pos);
    r.owners_.push_back(p.node);
  }
  for (const Node& n : nodes) r.drawable_ += n.weight > 0 ? 1 : 0;
  r.build_index();
  return r;
}

template <class Pos>
BasicRing<Pos> BasicRing<Pos>::from_points(std::vector<Point> points, std::size_t node_count,
                                           RingSuccessor successor) {
  if (points.empty()) throw Error(ErrorCode::kEmptyNodeSet, "the ring has no points");
  if (points.size() > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "ring has " + std::to_string(points.size()) +
                                               " points; at most " + std::to_string(kMaxRingPoints));
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
  r.positions_.reserve(points.size());
  r.owners_.reserve(points.size());
  for (const Point& p : points) {
    r.positions_.push_back(p.position);
    r.owners_.push_back(p.node);
  }
  r.drawable_ = static_cast<std::size_t>(std::count(has_point.begin(), has_point.end(), true));
  r.build_index();
  return r;
}

// ---- The top-bits index and batch lookup ----------------------------------------------------------

template <class Pos>
void BasicRing<Pos>::build_index() {
  constexpr unsigned kPosBits = sizeof(Pos) * 8;
  // 2^bits buckets, bits = bit_width(points / kPointsPerBucket), at least 1: kPointsPerBucket/2
  // to kPointsPerBucket points per bucket on a uniform ring (at most 2^26
  // points, so bits <= 25 and a bucket number fits any Pos).
  const std::size_t points = positions_.size();
  const unsigned bits = std::max(1u, static_cast<unsigned>(std::bit_width(points / kPointsPerBucket)));
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
  constexpr std::size_t G = kBatchGroup;
  const std::uint64_t* h = hashes.data();
  NodeId* o = out.data();
  const std::size_t n = hashes.size();
  std::size_t i = 0;
  if (!index_.empty()) {
    const std::uint32_t* index = index_.data();
    const Pos* pos = positions_.data();
    const NodeId* owners = owners_.data();
    for (; i + G <= n; i += G) {
      for (std::size_t j = 0; j < G; ++j) {  // stage 1: fetch the window index_of will count
        // The points counted are the window from s; the owner is one of owners[lo .. hi] (a
        // line or two fewer than the whole window, which matters when misses are the limit).
        const std::size_t b = static_cast<std::size_t>(static_cast<Pos>(h[i + j]) >> shift_);
        const std::size_t lo = index[b], hi = index[b + 1];
        const std::size_t s = std::min<std::size_t>(lo, last_window_);
        __builtin_prefetch(pos + s);
        __builtin_prefetch(pos + s + kWindow - 1);
        __builtin_prefetch(owners + lo);
        __builtin_prefetch(owners + hi);
      }
      for (std::size_t j = 0; j < G; ++j) o[i + j] = pick(h[i + j]);  // stage 2: in cache now
    }
  }
  for (; i < n; ++i) o[i] = pick(h[i]);
}

template class BasicRing<std::uint32_t>;
template class BasicRing<std::uint64_t>;

}  // namespace chash
