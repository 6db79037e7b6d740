// SPDX-License-Identifier: Apache-2.0
// Presets for the consistent-hashing libraries of scripting languages, each matching the peer's
// own ring construction (verified against vectors the real peer produced, tests/compat/):
//
//   uhashring         uhashring 2.1 (Python), default mode: 160 x weight points per node, each
//                     the whole MD5 of "<name>-<i>" read as a 128-bit big-endian integer.
//   uhashring-ketama  uhashring 2.1, hash_fn="ketama": 40 x n x weight / total weight digests per
//                     node, 4 little-endian points per MD5 digest.
//   hash_ring         hash_ring 1.3.1 (Python, Amir Salihefendic): floor(40 x n x weight / total)
//                     digests per node, only 3 points per digest.
//   node-hashring     hashring 3.2.0 (npm): floor(weight / total x 40 x n) digests per node (in
//                     float64), 4 points per digest.
//
// All four hash "<name>-<i>" with i from 0 and a key with MD5 of its bytes. The Python rings are
// dicts (a later point at an equal position replaces the earlier one) searched with bisect_right
// (the first point strictly greater than the key); hashring keeps every point in a stably sorted
// array and takes the first point >= the key. route_n walks on clockwise to the next distinct
// nodes, as uhashring's range(), hash_ring's iterate_nodes() and hashring's range() do.
// groupcache has its own file.
#include <algorithm>
#include <cmath>
#include <compare>
#include <string>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/placement.h"
#include "chash/ring.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {

namespace {

// "<name>-<i>": the string every one of these peers hashes for point i of a node
// ('%s-%s' % (node, j) in hash_ring, f"{node_name}-{w}" in uhashring, server.string + '-' + i in
// hashring).
void point_name(std::string_view name, std::uint64_t i, std::string& out) {
  internal::format_point_name("{name}-{i}", name, i, out);
}

// A Python dict ring: `ring[position] = node` in build order, so among equal positions the point
// assigned last owns it (uhashring's MetaRing/KetamaRing._create_ring, hash_ring's
// _generate_circle). Returns one point per position, sorted.
template <class P>
std::vector<P> last_assignment_wins(std::vector<P> points) {
  std::stable_sort(points.begin(), points.end(),
                   [](const P& a, const P& b) { return a.position < b.position; });
  std::vector<P> out;
  out.reserve(points.size());
  for (const P& p : points) {
    if (!out.empty() && out.back().position == p.position) {
      out.back() = p;
    } else {
      out.push_back(p);
    }
  }
  return out;
}

// The key's ring position for uhashring-ketama, hash_ring and hashring: the first four bytes of
// MD5(key) read little-endian (hashi / gen_key / hashValue).
struct Md5KetamaKey {
  std::uint64_t operator()(std::string_view key) const noexcept {
    return hash::ketama_point(hash::md5(key), 0);
  }
  void batch(std::span<const std::string_view> keys, std::uint64_t* out) const noexcept {
    md5_positions(keys, out, ketama_cut);
  }
};

std::uint32_t vnodes_or(const PresetOptions& options, std::uint32_t peer_default,
                        std::string_view preset) {
  const std::uint32_t v = options.vnodes.value_or(peer_default);
  if (v == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "preset " + std::string(preset) +
                    ": vnodes must be at least 1 (the peer would build an empty ring)");
  }
  return v;
}

void check_points(std::string_view preset, std::uint64_t points) {
  if (points > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded,
                "preset " + std::string(preset) + " would put " + std::to_string(points) +
                    " points on its ring; at most " + std::to_string(kMaxRingPoints));
  }
}

std::unique_ptr<Preset> ring32(std::string_view preset, std::vector<RingTable::Point> points,
                               std::size_t node_count, RingSuccessor successor) {
  if (points.empty()) {
    throw Error(ErrorCode::kEmptyNodeSet,
                "preset " + std::string(preset) +
                    ": no node gets a point on the ring (weights too small for the vnodes)");
  }
  return make_ring_preset(RingTable::from_points(std::move(points), node_count, successor),
                          Md5KetamaKey{});
}

// ---- uhashring default mode: a ring of 128-bit MD5 integers -------------------------------------
// uhashring's MetaRing hashes with int(md5(str(key).encode("utf-8")).hexdigest(), 16): the whole
// digest as one big-endian integer, so positions are 128 bits wide.

struct Pos128 {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  friend auto operator<=>(const Pos128&, const Pos128&) = default;
};

Pos128 md5_int(const hash::Md5Digest& d) noexcept {
  Pos128 p;
  for (int i = 0; i < 8; ++i) {
    p.hi = p.hi << 8 | d[static_cast<std::size_t>(i)];
    p.lo = p.lo << 8 | d[static_cast<std::size_t>(8 + i)];
  }
  return p;
}

Pos128 md5_int(std::string_view s) noexcept { return md5_int(hash::md5(s)); }

class Md5IntRingPreset final : public Preset {
 public:
  struct Point {
    Pos128 position;
    NodeId node;
  };

  Md5IntRingPreset(const std::vector<Point>& points, std::size_t node_count)
      : node_count_(node_count) {
    hi_.reserve(points.size());
    lo_.reserve(points.size());
    owners_.reserve(points.size());
    std::vector<bool> has_point(node_count, false);
    for (const Point& p : points) {
      hi_.push_back(p.position.hi);
      lo_.push_back(p.position.lo);
      owners_.push_back(p.node);
      has_point[p.node] = true;
    }
    drawable_ = static_cast<std::size_t>(std::count(has_point.begin(), has_point.end(), true));
  }

  NodeId route(std::string_view key) const noexcept override {
    return owners_[index_of(md5_int(key))];
  }

  // The keys' MD5s side by side, then the searches.
  void route_batch(std::span<const std::string_view> keys, std::span<NodeId> out) const override {
    for_each_chunk(keys, [&](std::span<const std::string_view> chunk, std::size_t at) {
      hash::Md5Digest digests[kBatchChunk];
      hash::internal::md5_many(chunk, std::span<hash::Md5Digest>(digests, chunk.size()));
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        out[at + i] = owners_[index_of(md5_int(digests[i]))];
      }
    });
  }

  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    std::size_t n = 0;
    if (out.empty()) return 0;
    internal::SeenSet seen(node_count_);
    std::size_t i = index_of(md5_int(key));
    for (std::size_t step = 0; step < hi_.size() && seen.size() < drawable_; ++step) {
      if (seen.insert(owners_[i])) {
        out[n++] = owners_[i];
        if (n == out.size()) break;
      }
      if (++i == hi_.size()) i = 0;
    }
    return n;
  }

  std::size_t node_count() const noexcept override { return node_count_; }

 private:
  // HashRing._get_pos: bisect (right) over the sorted positions, wrapping to 0 past the end.
  // The search runs on the high 64 bits alone, without branches (a comparison per step that
  // goes either way half the time mispredicts half the time; as a data dependency the
  // searches of a batch's keys overlap), then steps back over the points that tie the key's high
  // half and are above it in the low half: the same index as a 128-bit bisect_right. (A tie in
  // the high half is the key being a point's own name, "<node>-<i>", or a 64-bit collision.)
  std::size_t index_of(const Pos128& key) const noexcept {
    std::size_t i = upper_bound_hi(key.hi);
    while (i > 0 && hi_[i - 1] == key.hi && lo_[i - 1] > key.lo) --i;
    return i == hi_.size() ? 0 : i;
  }

  // How many of the sorted high halves are <= x (bisect_right). Invariant: those before `base`
  // are <= x, those from base + n on are > x.
  std::size_t upper_bound_hi(std::uint64_t x) const noexcept {
    const std::uint64_t* const first = hi_.data();
    const std::uint64_t* base = first;
    std::size_t n = hi_.size();
    if (n == 0) return 0;
    while (n > 1) {
      const std::size_t half = n / 2;
      // A mask, not a conditional: GCC turns `cond ? base + half : base` back into a branch.
      base += half & (std::size_t{0} - static_cast<std::size_t>(base[half - 1] <= x));
      n -= half;
    }
    return static_cast<std::size_t>(base - first) + (*base <= x ? 1 : 0);
  }

  // The points' positions split in halves (hi_[i], lo_[i]), sorted as 128-bit integers.
  std::vector<std::uint64_t> hi_;
  std::vector<std::uint64_t> lo_;
  std::vector<NodeId> owners_;
  std::size_t node_count_ = 0;
  std::size_t drawable_ = 0;
};

// uhashring ring.py HashRing + ring_meta.py MetaRing._create_ring: vnodes (default 160) x weight
// points per node, in node order.
std::unique_ptr<Preset> make_uhashring(std::string_view preset, std::span<const Node> nodes,
                                       const PresetOptions& options) {
  reject_options(preset, options, false, false, true);
  const std::uint32_t vnodes = vnodes_or(options, 160, preset);
  std::uint64_t total = 0;
  for (const Node& n : nodes) {
    total += std::uint64_t{vnodes} * n.weight;
    check_points(preset, total);
  }
  std::vector<Md5IntRingPreset::Point> points;
  points.reserve(static_cast<std::size_t>(total));
  std::string buf;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    const std::uint64_t count = std::uint64_t{vnodes} * nodes[id].weight;
    for (std::uint64_t w = 0; w < count; ++w) {
      point_name(nodes[id].name, w, buf);
      points.push_back({md5_int(buf), static_cast<NodeId>(id)});
    }
  }
  return std::make_unique<Md5IntRingPreset>(last_assignment_wins(std::move(points)), nodes.size());
}

// ---- uhashring compat mode (hash_fn="ketama") ---------------------------------------------------
// ring_ketama.py KetamaRing._hashi_weight_generator: ks = vnodes * len(nodes) * weight //
// weight_sum digests per node (Python integers: exact floor), replicas = 4 points per digest cut
// little-endian; _get_pos bisects right.
std::unique_ptr<Preset> make_uhashring_ketama(std::string_view preset, std::span<const Node> nodes,
                                              const PresetOptions& options) {
  reject_options(preset, options, false, false, true);
  const std::uint32_t vnodes = vnodes_or(options, 40, preset);
  const std::uint64_t n = nodes.size();
  // Every node's ks is at most vnodes * n, and they sum to at most vnodes * n.
  check_points(preset, std::uint64_t{vnodes} * n * 4);
  std::uint64_t weight_sum = 0;
  for (const Node& node : nodes) weight_sum += node.weight;
  std::vector<RingTable::Point> points;
  points.reserve(static_cast<std::size_t>(vnodes * n * 4));
  std::string buf;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    const std::uint64_t ks = std::uint64_t{vnodes} * n * nodes[id].weight / weight_sum;
    for (std::uint64_t w = 0; w < ks; ++w) {
      point_name(nodes[id].name, w, buf);
      const hash::Md5Digest d = hash::md5(buf);
      for (int r = 0; r < 4; ++r)
        points.push_back({hash::ketama_point(d, r), static_cast<NodeId>(id)});
    }
  }
  return ring32(preset, last_assignment_wins(std::move(points)), nodes.size(),
                RingSuccessor::kGreater);
}

// ---- hash_ring (Python) -------------------------------------------------------------------------
// ring.py HashRing._generate_circle: factor = math.floor((40 * len(nodes) * weight) /
// total_weight) digests per node and only range(0, 3) points per digest; get_node_pos bisects
// right. Python 3 divides in double, Python 2 (release 1.3.1) as integers: the floors agree, since
// a non-integer quotient a/b lies at least 1/b below the next integer and rounding would need
// 40 * n * weight >= 2^53 (chash's limits: n <= 2^20, weight <= 2^16).
std::unique_ptr<Preset> make_hash_ring(std::string_view preset, std::span<const Node> nodes,
                                       const PresetOptions& options) {
  reject_options(preset, options, false, false, false);
  const std::uint64_t n = nodes.size();
  check_points(preset, 40 * n * 3);
  std::uint64_t total_weight = 0;
  for (const Node& node : nodes) total_weight += node.weight;
  std::vector<RingTable::Point> points;
  points.reserve(static_cast<std::size_t>(40 * n * 3));
  std::string buf;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    const double factor = std::floor(static_cast<double>(40 * n * nodes[id].weight) /
                                     static_cast<double>(total_weight));
    const auto count = static_cast<std::uint64_t>(factor);
    for (std::uint64_t j = 0; j < count; ++j) {
      point_name(nodes[id].name, j, buf);
      const hash::Md5Digest d = hash::md5(buf);
      for (int i = 0; i < 3; ++i)
        points.push_back({hash::ketama_point(d, i), static_cast<NodeId>(id)});
    }
  }
  return ring32(preset, last_assignment_wins(std::move(points)), nodes.size(),
                RingSuccessor::kGreater);
}

// ---- hashring (npm) -----------------------------------------------------------------------------
// A JavaScript array index ("0" .. "4294967294" written canonically): Object.keys() lists such
// names first, in numeric order, before the other names in insertion order.
bool is_array_index(std::string_view s) {
  if (s.empty() || s.size() > 10 || (s.size() > 1 && s[0] == '0')) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v <= 4294967294u;
}

std::uint64_t array_index(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

// index.js HashRing.prototype.continuum: per server (in connection-parse order) length =
// Math.floor(weight / total * vnode * servers.length) in float64, digests of
// server.string + '-' + i, `replicas` = 4 points per digest; points are sorted with a stable
// Array.prototype.sort, so among equal positions the earlier server's point comes first, and
// find() returns the first point >= the key's hash.
std::unique_ptr<Preset> make_node_hashring(std::string_view preset, std::span<const Node> nodes,
                                           const PresetOptions& options) {
  reject_options(preset, options, true, false, true);
  if (options.hash && *options.hash != "md5") {
    throw Error(ErrorCode::kUnsupported,
                "preset node-hashring: hash \"" + options.hash->substr(0, 64) +
                    "\" is not available (chash implements hashring's default, md5)");
  }
  const std::uint32_t vnodes = vnodes_or(options, 40, preset);
  bool all_one = true;
  for (const Node& node : nodes) {
    if (node.weight == 0) {
      throw Error(ErrorCode::kUnsupported,
                  "preset node-hashring: node \"" + node.name.substr(0, 64) +
                      "\" has weight 0, which hashring reads as 1; remove the node instead");
    }
    all_one = all_one && node.weight == 1;
  }
  const std::uint64_t n = nodes.size();
  check_points(preset, std::uint64_t{vnodes} * n * 4);

  // Server order: a list when every weight is 1; with weights the servers are the object
  // {server: weight}, listed by Object.keys() (connection-parse's parse()).
  std::vector<NodeId> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<NodeId>(i);
  if (!all_one) {
    std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
      const bool ia = is_array_index(nodes[a].name);
      const bool ib = is_array_index(nodes[b].name);
      if (ia != ib) return ia;
      return ia && array_index(nodes[a].name) < array_index(nodes[b].name);
    });
  }

  double total = 0;
  for (const Node& node : nodes) total += node.weight;
  std::vector<RingTable::Point> points;
  points.reserve(static_cast<std::size_t>(vnodes * n * 4));
  std::string buf;
  for (const NodeId id : order) {
    const double percentage = static_cast<double>(nodes[id].weight) / total;
    const double length =
        std::floor(percentage * static_cast<double>(vnodes) * static_cast<double>(n));
    const auto count = static_cast<std::uint64_t>(length);
    for (std::uint64_t i = 0; i < count; ++i) {
      point_name(nodes[id].name, i, buf);
      const hash::Md5Digest d = hash::md5(buf);
      for (int j = 0; j < 4; ++j) points.push_back({hash::ketama_point(d, j), id});
    }
  }
  return ring32(preset, std::move(points), nodes.size(), RingSuccessor::kGreaterOrEqual);
}

}  // namespace

std::unique_ptr<Preset> make_scripting(std::string_view name, std::span<const Node> nodes,
                                       const PresetOptions& options) {
  if (name == "groupcache") {
    throw Error(ErrorCode::kUnsupported,
                "preset groupcache is built by its own factory, not make_scripting");
  }
  validate_nodes(nodes);
  if (name == "uhashring") return make_uhashring(name, nodes, options);
  if (name == "uhashring-ketama") return make_uhashring_ketama(name, nodes, options);
  if (name == "hash_ring") return make_hash_ring(name, nodes, options);
  if (name == "node-hashring") return make_node_hashring(name, nodes, options);
  throw Error(ErrorCode::kParse,
              "make_scripting: unknown preset \"" + std::string(name.substr(0, 64)) + "\"");
}

}  // namespace chash::presets
