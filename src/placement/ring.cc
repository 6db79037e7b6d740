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
  return r;
}

template class BasicRing<std::uint32_t>;
template class BasicRing<std::uint64_t>;

}  // namespace chash
