// SPDX-License-Identifier: Apache-2.0
// Self-contained SVG pictures (no scripts, no external fonts or images): a ring with its nodes'
// virtual-node points, bar charts, and line charts; and the picture of a placement (a ring's
// points, a slot map's ranges, or each node's share of sampled keys). Text is XML-escaped; node
// names may be any bytes (non-UTF-8 bytes are shown as '?'). `chash plot`, `chash demo` and
// chash-proxy's status page (GET /ui, GET /ring.svg) draw with these.
//
// Example:
//   chash::Router r = chash::Router::build(spec, nodes);
//   std::string picture = chash::svg::placement(r, "ring: " + r.describe());  // "<svg ...</svg>\n"
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/analysis.h"
#include "chash/router.h"
#include "chash/table.h"

namespace chash::svg {

struct RingPoint {
  double angle;      // position as a fraction of the circle, 0..1, clockwise from 12 o'clock
  std::size_t node;  // index into names
};
struct RingArc {
  double from, to;   // fractions of the circle (from > to wraps)
  std::size_t node;  // colour
};

// The ring: an outer band coloured by the owner of each arc, the points as ticks, a legend.
// `highlight` arcs (e.g. ranges that move) are drawn on a second, inner band.
// `centre` replaces the default text in the middle ("N points", "key -> first point clockwise").
std::string ring(std::string_view title, const std::vector<std::string>& names,
                 const std::vector<RingArc>& arcs, const std::vector<RingPoint>& points,
                 const std::vector<RingArc>& highlight = {}, std::string_view highlight_label = {},
                 std::string_view centre = {});

// The ring of a RingTable or Ring64Table over `nodes` (its points and the arcs they own), with
// `moved` ranges on an inner band coloured by their new owner. Throws Error(kUnsupported) for any
// other table.
std::string table_ring(const AnyTable& table, std::span<const Node> nodes, std::string_view title,
                       const std::vector<MovedRange>& moved = {});

// What `router` does with the key space, drawn honestly for its kind of placement:
//  - a ring (ring, ring64, and the presets whose peer uses one: ketama, libmemcached's
//    continuum, nginx's consistent hash, Envoy's ring_hash ...; Preset::ring32/ring64):
//    its points and the arcs they own;
//  - a slot table (Redis Cluster's 16384 slots): one arc per run of slots with one owner, slot 0
//    at 12 o'clock (unserved slots are left blank);
//  - anything else (jump, maglev, modulo, rendezvous, other presets): no positions to draw, so each
//    node's share of kShareSamples synthetic keys ("key:0", "key:1", ...) routed by the router,
//    one arc per node in node order.
inline constexpr std::size_t kShareSamples = 8192;
std::string placement(const Router& router, std::string_view title);

struct Series {
  std::string name;
  std::vector<double> values;
};

// Grouped vertical bars: one group per category, one bar per series; an optional dashed
// reference line per category (e.g. the fair share).
std::string bars(std::string_view title, std::string_view y_label,
                 const std::vector<std::string>& categories, const std::vector<Series>& series,
                 const std::vector<double>& reference = {}, std::string_view reference_label = {},
                 bool percent = false);

// Lines over x values (log-scaled x when log_x and all x > 0).
std::string lines(std::string_view title, std::string_view x_label, std::string_view y_label,
                  const std::vector<double>& x, const std::vector<Series>& series, bool log_x,
                  bool percent = false);

std::string escape(std::string_view s);
std::string colour(std::size_t i);

}  // namespace chash::svg
