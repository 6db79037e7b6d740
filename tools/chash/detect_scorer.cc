// SPDX-License-Identifier: Apache-2.0
#include "detect_scorer.h"

namespace chash::cli {

namespace {

// Hoeffding: after m of N shuffled observations with x agreeing, the agreement over all of them
// exceeds x/m + sqrt(ln(1/d) / 2m) with probability below d (sampling without replacement
// obeys the same bound). d = 1e-12: over ~15,000 candidates and a dozen checks each, a wrong
// early stop has odds below 1e-6.
constexpr double kLnInverseDelta = 27.631021115928547;  // ln(1e12)
// Closest candidates below the threshold kept (by estimate) to report when too few reach it.
constexpr std::size_t kNearPerTop = 4;
// Ties with the k-th best scored to the end to be counted (they cost a full pass each; with one
// node every candidate ties).
constexpr std::size_t kTieBudget = 64;

bool better(const DetectMatch& a, const DetectMatch& b) {
  return a.matches != b.matches ? a.matches > b.matches : a.candidate.rank < b.candidate.rank;
}

}  // namespace

Scorer::Scorer(std::span<const Node> nodes, const ObservedPlacement& obs, const DetectOptions& o)
    : nodes_(nodes),
      owners_(obs.owners),
      top_n_(std::max<std::size_t>(o.top, 1)),
      tie_budget_(kTieBudget) {
  views_.assign(obs.keys.begin(), obs.keys.end());
  n_ = views_.size();
  need_ = static_cast<std::uint64_t>(std::ceil(o.threshold * static_cast<double>(n_) - 1e-9));
  need_ = std::clamp<std::uint64_t>(need_, 1, n_);
  buf_.resize(kMaxChunk);
}

void Scorer::complete(const DetectCandidate& c, std::uint64_t x) {
  if (x < need_) {
    keep_near(c, x, n_);
    return;
  }
  ++completed_[x];
  if (top_.size() < top_n_ || x >= entry_bar(c.rank)) {
    DetectMatch match{c, x, n_};
    const auto at = std::upper_bound(top_.begin(), top_.end(), match, better);
    top_.insert(at, std::move(match));
    if (top_.size() > top_n_) top_.pop_back();
  } else if (tie_budget_ > 0) {
    --tie_budget_;  // a tie with the k-th best, run to the end to be counted
  }
}

std::pair<std::uint64_t, bool> Scorer::count_at(std::uint64_t matches) const {
  const auto it = completed_.find(matches);
  return {it == completed_.end() ? 0 : it->second, tie_budget_ > 0};
}

std::vector<DetectMatch> Scorer::finish() {
  std::vector<DetectMatch> out = top_;
  if (out.size() < top_n_) {
    for (const DetectMatch& m : near_) out.push_back(m);
  }
  for (DetectMatch& m : out) {
    m.matches = recount(m.candidate.spec);
    m.keys = n_;
  }
  std::sort(out.begin(), out.end(), better);
  if (out.size() > top_n_) out.resize(top_n_);
  return out;
}

std::uint64_t Scorer::recount(const RoutingSpec& spec) {
  const Router r = Router::build(spec, nodes_);
  std::uint64_t x = 0;
  for (std::size_t off = 0; off < n_; off += kMaxChunk) {
    const std::size_t k = std::min<std::size_t>(kMaxChunk, n_ - off);
    r.route_batch(std::span<const std::string_view>(views_).subspan(off, k), buf_);
    for (std::size_t i = 0; i < k; ++i) x += buf_[i] == owners_[off + i];
  }
  return x;
}

bool Scorer::can_reach(std::uint64_t x, std::uint64_t m, std::uint64_t target) const {
  if (x + (n_ - m) < target) return false;
  const double md = static_cast<double>(m);
  const double upper = static_cast<double>(x) / md + std::sqrt(kLnInverseDelta / (2 * md));
  return upper * static_cast<double>(n_) >= static_cast<double>(target);
}

void Scorer::keep_near(const DetectCandidate& c, std::uint64_t x, std::uint64_t m) {
  const std::size_t cap = kNearPerTop * top_n_;
  // Ordered by estimated agreement, then rank; matches/keys hold the estimate until finish().
  DetectMatch e{c, x, m};
  auto before = [](const DetectMatch& a, const DetectMatch& b) {
    const double ea = a.agreement(), eb = b.agreement();
    return ea != eb ? ea > eb : a.candidate.rank < b.candidate.rank;
  };
  if (near_.size() == cap && !before(e, near_.back())) return;
  near_.insert(std::upper_bound(near_.begin(), near_.end(), e, before), std::move(e));
  if (near_.size() > cap) near_.pop_back();
}

}  // namespace chash::cli
