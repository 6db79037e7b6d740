// SPDX-License-Identifier: Apache-2.0
// Scoring the candidates of `chash detect`: how many observations each reproduces, stopping a
// candidate as soon as it cannot matter, and keeping the best.
//
// A candidate routes the observations in batches — 256 first, then doubling chunks up to 8192 —
// and stops once it cannot reach the threshold or the current k-th best: exactly (too many
// mismatches already) or statistically (a Hoeffding bound at 1e-12 on the keys seen so far; the
// observations are a shuffled sample, place_observations). Candidates come in rank order or
// not; ties go to the lower rank either way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/router.h"
#include "detect_search.h"

namespace chash::cli {

class Scorer {
 public:
  static constexpr std::size_t kFirstChunk = 256;
  static constexpr std::size_t kMaxChunk = 8192;

  Scorer(std::span<const Node> nodes, const ObservedPlacement& obs, const DetectOptions& o);

  std::span<const std::string_view> keys() const noexcept { return views_; }
  std::span<const NodeId> owners() const noexcept { return owners_; }
  std::uint64_t scored() const noexcept { return scored_; }
  // Mismatches a candidate may have and still matter: reach the threshold, or 90% agreement
  // (so that near misses still show as the closest when nothing reaches the threshold).
  std::uint64_t slack() const noexcept { return std::max(n_ - need_, n_ / 10); }

  // Scores `c`; route(off, n, out) writes the candidate's nodes for observations [off, off + n).
  template <class Route>
  void score(const DetectCandidate& c, Route&& route) {
    ++scored_;
    std::uint64_t m = 0, x = 0;
    std::size_t chunk = kFirstChunk;
    while (m < n_) {
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, n_ - m));
      route(static_cast<std::size_t>(m), k, buf_.data());
      const NodeId* want = owners_.data() + m;
      for (std::size_t i = 0; i < k; ++i) x += buf_[i] == want[i];
      m += k;
      chunk = std::min(chunk * 2, kMaxChunk);
      if (m == n_) break;
      if (!can_reach(x, m, need_)) {
        keep_near(c, x, m);
        return;
      }
      if (top_.size() == top_n_ && !can_reach(x, m, prune_bar(c.rank))) return;
    }
    complete(c, x);
  }

  // How many candidates reached `matches` (at or above the threshold), and whether that count
  // is exact (it is unless more than a few dozen ties ran past the top).
  std::pair<std::uint64_t, bool> count_at(std::uint64_t matches) const;

  // The best candidates, exact: recounted over every observation through Router::build(spec),
  // as `chash route` routes them. At most `top`: those at or above the threshold, then (when
  // there are fewer) the closest below it.
  std::vector<DetectMatch> finish();

 private:
  void complete(const DetectCandidate& c, std::uint64_t x);
  std::uint64_t recount(const RoutingSpec& spec);
  // The matches a candidate of rank `r` needs to displace the k-th best (ties go to the lower
  // rank).
  std::uint64_t entry_bar(std::uint64_t r) const {
    const DetectMatch& kth = top_.back();
    return kth.matches + (r < kth.candidate.rank ? 0 : 1);
  }
  // The matches below which a candidate is stopped: ties with the k-th best run to the end while
  // the tie budget lasts, so that candidates as good as the best can be counted.
  std::uint64_t prune_bar(std::uint64_t r) const {
    return tie_budget_ > 0 ? top_.back().matches : entry_bar(r);
  }
  // Whether x matches in the first m observations can still become `target` over all n_:
  // exactly possible, and not ruled out by the Hoeffding bound.
  bool can_reach(std::uint64_t x, std::uint64_t m, std::uint64_t target) const;
  void keep_near(const DetectCandidate& c, std::uint64_t x, std::uint64_t m);

  std::span<const Node> nodes_;
  std::vector<std::string_view> views_;
  std::span<const NodeId> owners_;
  std::size_t top_n_;
  std::uint64_t n_ = 0, need_ = 0, scored_ = 0;
  std::vector<NodeId> buf_;
  std::vector<DetectMatch> top_;   // at or above the threshold, best first, exact
  std::vector<DetectMatch> near_;  // below it, best estimate first
  std::map<std::uint64_t, std::uint64_t> completed_;  // matches -> candidates, at or above need_
  std::size_t tie_budget_;
};

}  // namespace chash::cli
