// SPDX-License-Identifier: Apache-2.0
// The search behind `chash detect`: which routing reproduces observed placements.
//
// Candidates are RoutingSpecs, in order of simplicity: every preset with its defaults; every
// preset with each option it accepts (hash spellings, vnodes, libmemcached settings, a "{}" hash
// tag when keys have braces), found by trying them and keeping those that route differently
// from the ones before; every native algorithm with each key hash, rings with a range of vnodes
// and point-name formats; ring specs of the families hand-written rings use. Each is scored by
// how many observations it reproduces (agreement), and ties go to the simpler candidate.
//
// Fast: candidates stop early on a shuffled sample of the observations (detect_scorer.h);
// tables are built on worker threads ahead of the scoring (build_ahead.h); native tables once
// per option set, looked up with each key hash's cached hashes; ring specs whose hash orders the
// observed keys with more owner changes than their points allow are ruled out without being
// built (circular_changes in detect_search.cc has the argument). The agreement reported for
// every result is recomputed over all observations with Router::build(spec), as `chash route`
// routes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chash/router.h"
#include "observations.h"

namespace chash::cli {

struct DetectCandidate {
  RoutingSpec spec;    // Router::build(spec, nodes) routes it
  std::uint64_t rank;  // lower = simpler: preferred among equal agreements
};

// The `chash route` arguments that route as `spec` (without the node list), e.g.
// {"--preset", "twemproxy", "--hash", "md5"}.
std::vector<std::string> route_args(const RoutingSpec& spec);

struct DetectMatch {
  DetectCandidate candidate;
  std::uint64_t matches = 0;  // observations routed to their observed node
  std::uint64_t keys = 0;     // observations
  double agreement() const noexcept {
    return keys == 0 ? 0.0 : static_cast<double>(matches) / static_cast<double>(keys);
  }
};

struct DetectOptions {
  double threshold = 0.99;  // (0, 1]
  std::size_t top = 5;
};

struct DetectResult {
  // Best first, at most `top`: every candidate at or above the threshold that is among the best
  // `top`, then (when there are fewer) the closest below it. Exact over all observations.
  std::vector<DetectMatch> best;
  std::uint64_t candidates = 0;  // searched: scored, or ruled out without being built
  std::uint64_t ruled_out = 0;   // ring specs whose hash orders the keys too unlike the nodes
  // Candidates with exactly the best agreement when it reaches the threshold (more than one: the
  // observations cannot tell them apart; the simplest is shown first). At least this many when
  // tied_exact is false (counting stops after a few dozen).
  std::uint64_t tied_with_best = 0;
  bool tied_exact = true;
  // Presets that refuse this node list (or its keys), with the reason.
  std::vector<std::string> inapplicable;
};

DetectResult detect(std::span<const Node> nodes, const ObservedPlacement& observed,
                    const DetectOptions& options);

}  // namespace chash::cli
