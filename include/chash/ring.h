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
// Lookup: binary search, O(log(N * vnodes)).
#pragma once

#include <algorithm>
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

  // Index of the owning point of `hash` in points order.
  std::size_t index_of(std::uint64_t hash) const noexcept {
    const Pos pos = static_cast<Pos>(hash);
    const auto it = successor_ == RingSuccessor::kGreaterOrEqual
                        ? std::lower_bound(positions_.begin(), positions_.end(), pos)
                        : std::upper_bound(positions_.begin(), positions_.end(), pos);
    const std::size_t i = static_cast<std::size_t>(it - positions_.begin());
    return i == positions_.size() ? 0 : i;
  }

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

 private:
  std::vector<Pos> positions_;   // sorted ascending
  std::vector<NodeId> owners_;   // owners_[i] owns positions_[i]
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
