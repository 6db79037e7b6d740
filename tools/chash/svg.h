// SPDX-License-Identifier: Apache-2.0
// Self-contained SVG pictures (no scripts, no external fonts or images): a ring with its nodes'
// virtual-node points, bar charts, and line charts. Text is XML-escaped; node names may be any
// bytes (non-UTF-8 bytes are shown as '?').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chash::cli::svg {

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
std::string ring(std::string_view title, const std::vector<std::string>& names,
                 const std::vector<RingArc>& arcs, const std::vector<RingPoint>& points,
                 const std::vector<RingArc>& highlight = {}, std::string_view highlight_label = {});

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

}  // namespace chash::cli::svg
