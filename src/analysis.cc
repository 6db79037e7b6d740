// SPDX-License-Identifier: Apache-2.0
#include "chash/analysis.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace chash {

LoadStats load_stats(std::span<const std::uint64_t> counts, std::span<const Node> nodes) {
  LoadStats s;
  const std::size_t n = counts.size();
  std::uint64_t total_weight = 0;
  for (std::size_t i = 0; i < n && i < nodes.size(); ++i) total_weight += nodes[i].weight;
  for (auto c : counts) s.keys += c;
  s.share.assign(n, 0);
  s.fair_share.assign(n, 0);
  s.load_ratio.assign(n, 0);
  std::size_t drawable = 0;
  double sum = 0, max_r = 0, min_r = INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t w = i < nodes.size() ? nodes[i].weight : 0;
    s.share[i] = s.keys ? static_cast<double>(counts[i]) / static_cast<double>(s.keys) : 0;
    if (w == 0 || total_weight == 0) continue;
    ++drawable;
    s.fair_share[i] = static_cast<double>(w) / static_cast<double>(total_weight);
    s.load_ratio[i] = s.share[i] / s.fair_share[i];
    sum += s.load_ratio[i];
    max_r = std::max(max_r, s.load_ratio[i]);
    min_r = std::min(min_r, s.load_ratio[i]);
  }
  if (drawable == 0) return s;
  s.mean = static_cast<double>(s.keys) / static_cast<double>(drawable);
  s.max_over_mean = max_r;
  s.min_over_mean = min_r;
  const double mean_r = sum / static_cast<double>(drawable);
  double var = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (s.fair_share[i] > 0) var += (s.load_ratio[i] - mean_r) * (s.load_ratio[i] - mean_r);
  }
  s.stddev = std::sqrt(var / static_cast<double>(drawable));
  s.cv = mean_r > 0 ? s.stddev / mean_r : 0;
  return s;
}

namespace {

template <class Ring>
std::vector<double> ring_fractions(const Ring& r, double space) {
  std::vector<double> f(r.node_count(), 0.0);
  const auto pos = r.positions();
  const auto own = r.owners();
  const std::size_t n = pos.size();
  // Point i (>= successor) owns (pos[i-1], pos[i]]; point 0 also owns the wrap-around arc.
  for (std::size_t i = 0; i < n; ++i) {
    const double prev =
        i == 0 ? static_cast<double>(pos[n - 1]) - space : static_cast<double>(pos[i - 1]);
    f[own[i]] += (static_cast<double>(pos[i]) - prev) / space;
  }
  return f;
}

}  // namespace

std::optional<std::vector<double>> owned_fractions(const AnyTable& table) {
  return std::visit(
      [](const auto& t) -> std::optional<std::vector<double>> {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, RingTable>) {
          return ring_fractions(t, 4294967296.0);
        } else if constexpr (std::is_same_v<T, Ring64Table>) {
          return ring_fractions(t, 18446744073709551616.0);
        } else if constexpr (std::is_same_v<T, MaglevTable>) {
          std::vector<double> f(t.node_count(), 0.0);
          for (NodeId id : t.entries()) f[id] += 1.0;
          for (double& x : f) x /= static_cast<double>(t.entries().size());
          return f;
        } else if constexpr (std::is_same_v<T, SlotTable>) {
          std::vector<double> f(t.node_count(), 0.0);
          for (NodeId id : t.slots()) f[id] += 1.0 / kRedisSlots;
          return f;
        } else {
          return std::nullopt;
        }
      },
      table);
}

MoveCounter::MoveCounter(std::span<const Node> before, std::span<const Node> after) {
  std::unordered_map<std::string, std::uint32_t> index;
  auto intern = [&](const std::string& name) {
    auto [it, inserted] = index.emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  };
  for (const Node& n : before) before_index_.push_back(intern(n.name));
  for (const Node& n : after) after_index_.push_back(intern(n.name));
  cells_.assign(names_.size() * names_.size(), 0);
}

void MoveCounter::add(NodeId before, NodeId after) noexcept {
  ++keys_;
  const std::uint32_t a = before < before_index_.size() ? before_index_[before] : 0xFFFFFFFFu;
  const std::uint32_t b = after < after_index_.size() ? after_index_[after] : 0xFFFFFFFFu;
  if (a == b) return;
  ++moved_;
  if (a != 0xFFFFFFFFu && b != 0xFFFFFFFFu) ++cells_[a * names_.size() + b];
}

std::map<std::pair<std::string, std::string>, std::uint64_t> MoveCounter::matrix() const {
  std::map<std::pair<std::string, std::string>, std::uint64_t> m;
  const std::size_t n = names_.size();
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (cells_[a * n + b]) m[{names_[a], names_[b]}] = cells_[a * n + b];
    }
  }
  return m;
}

double optimal_moved_fraction(std::span<const Node> before, std::span<const Node> after) {
  auto shares = [](std::span<const Node> nodes) {
    std::unordered_map<std::string, double> s;
    double total = 0;
    for (const Node& n : nodes) total += n.weight;
    for (const Node& n : nodes) {
      if (n.weight > 0) s[n.name] += n.weight / total;
    }
    return s;
  };
  const auto a = shares(before), b = shares(after);
  double moved = 0;
  for (const auto& [name, sa] : a) {
    const auto it = b.find(name);
    moved += std::max(0.0, sa - (it == b.end() ? 0.0 : it->second));
  }
  return moved;
}

template <class Ring>
std::vector<MovedRange> moved_ranges(const Ring& before, std::span<const Node> before_nodes,
                                     const Ring& after, std::span<const Node> after_nodes) {
  using Pos = std::decay_t<decltype(before.positions()[0])>;
  std::vector<Pos> bounds(before.positions().begin(), before.positions().end());
  bounds.insert(bounds.end(), after.positions().begin(), after.positions().end());
  return moved_ranges(
      std::move(bounds),
      [&](Pos p) -> std::string_view { return before_nodes[before.pick(p)].name; },
      [&](Pos p) -> std::string_view { return after_nodes[after.pick(p)].name; });
}

template std::vector<MovedRange> moved_ranges<RingTable>(const RingTable&, std::span<const Node>,
                                                         const RingTable&, std::span<const Node>);
template std::vector<MovedRange> moved_ranges<Ring64Table>(const Ring64Table&,
                                                           std::span<const Node>,
                                                           const Ring64Table&,
                                                           std::span<const Node>);

}  // namespace chash
