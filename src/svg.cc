// SPDX-License-Identifier: Apache-2.0
#include "chash/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <variant>

#include "chash/error.h"
#include "chash/preset.h"
#include "chash/ring.h"

namespace chash::svg {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string header(int w, int h, std::string_view title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(w) + "\" height=\"" +
         std::to_string(h) + "\" viewBox=\"0 0 " + std::to_string(w) + " " + std::to_string(h) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<title>" + escape(title) +
         "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n<text x=\"" +
         std::to_string(w / 2) +
         "\" y=\"28\" text-anchor=\"middle\" font-size=\"18\" font-weight=\"bold\" fill=\"#222\">" +
         escape(title) + "</text>\n";
}

std::string label_value(double v, bool percent) {
  char buf[32];
  if (percent) {
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * v);
  } else if (std::fabs(v) >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

// A "nice" upper bound for an axis.
double nice_max(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

std::string arc_path(double cx, double cy, double r_out, double r_in, double a0, double a1) {
  // Angles as fractions of the circle, clockwise from 12 o'clock.
  auto pt = [&](double r, double a) {
    const double t = 2 * kPi * a - kPi / 2;
    return num(cx + r * std::cos(t)) + "," + num(cy + r * std::sin(t));
  };
  const bool large = a1 - a0 > 0.5;
  return "M" + pt(r_out, a0) + " A" + num(r_out) + "," + num(r_out) + " 0 " + (large ? "1" : "0") +
         " 1 " + pt(r_out, a1) + " L" + pt(r_in, a1) + " A" + num(r_in) + "," + num(r_in) + " 0 " +
         (large ? "1" : "0") + " 0 " + pt(r_in, a0) + " Z";
}

std::string legend(const std::vector<std::string>& names, int x, int y, int max_rows) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(names.size(), static_cast<std::size_t>(max_rows));
  for (std::size_t i = 0; i < shown; ++i) {
    const int yy = y + static_cast<int>(i) * 20;
    s += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(yy - 11) +
         "\" width=\"14\" height=\"14\" fill=\"" + colour(i) + "\"/>\n<text x=\"" +
         std::to_string(x + 20) + "\" y=\"" + std::to_string(yy) +
         "\" font-size=\"13\" fill=\"#222\">" + escape(names[i]) + "</text>\n";
  }
  if (shown < names.size()) {
    s += "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y + max_rows * 20) +
         "\" font-size=\"12\" fill=\"#666\">+" + std::to_string(names.size() - shown) +
         " more</text>\n";
  }
  return s;
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += '?';
        } else if (c < 0x80) {
          out += static_cast<char>(c);
        } else {
          // Keep well-formed UTF-8, replace anything else.
          const std::size_t len = c >= 0xF0 && c <= 0xF4   ? 4
                                  : c >= 0xE0              ? 3
                                  : c >= 0xC2 && c <= 0xDF ? 2
                                                           : 0;
          bool ok = len > 0 && i + len <= s.size();
          for (std::size_t k = 1; ok && k < len; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
          if (ok) {
            out.append(s.substr(i, len));
            i += len - 1;
          } else {
            out += '?';
          }
        }
    }
  }
  return out;
}

std::string colour(std::size_t i) {
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                             "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                             "#9c755f", "#bab0ac", "#1f77b4", "#d62728"};
  if (i < std::size(kPalette)) return kPalette[i];
  char buf[32];
  std::snprintf(buf, sizeof buf, "hsl(%zu,55%%,55%%)", (i * 137) % 360);
  return buf;
}

namespace {

// At most this many band segments and ticks are drawn: a picture is ~250 bytes a segment, and a
// ring of 1000 ketama servers has 160,000 points (38 MB of SVG, most of it thinner than a pixel).
constexpr std::size_t kMaxDrawnArcs = 2048;

// Arcs as drawn: neighbours of one node merged, and past kMaxDrawnArcs the circle resampled in
// kMaxDrawnArcs equal steps, each coloured by the node owning its middle — the picture at a
// resolution of 1/kMaxDrawnArcs of the circle (the real shares are in the legend's sources).
std::vector<RingArc> drawn_arcs(const std::vector<RingArc>& arcs) {
  std::vector<RingArc> out;
  for (const RingArc& a : arcs) {
    if (!out.empty() && out.back().node == a.node && out.back().to == a.from && a.from <= a.to) {
      out.back().to = a.to;
    } else {
      out.push_back(a);
    }
  }
  if (out.size() <= kMaxDrawnArcs) return out;
  // The owner of a position: the arc whose [from, to) holds it (a wrapping arc holds both ends).
  std::vector<RingArc> sorted = out;
  std::sort(sorted.begin(), sorted.end(),
            [](const RingArc& x, const RingArc& y) { return x.to < y.to; });
  auto owner = [&](double at) {
    const auto it = std::upper_bound(sorted.begin(), sorted.end(), at,
                                     [](double v, const RingArc& x) { return v < x.to; });
    return it == sorted.end() ? sorted.front().node : it->node;  // past the last: it wraps
  };
  std::vector<RingArc> coarse;
  for (std::size_t i = 0; i < kMaxDrawnArcs; ++i) {
    const double from = static_cast<double>(i) / kMaxDrawnArcs;
    const double to = static_cast<double>(i + 1) / kMaxDrawnArcs;
    const std::size_t node = owner((from + to) / 2);
    if (!coarse.empty() && coarse.back().node == node) {
      coarse.back().to = to;
    } else {
      coarse.push_back({from, to, node});
    }
  }
  return coarse;
}

}  // namespace

std::string ring(std::string_view title, const std::vector<std::string>& names,
                 const std::vector<RingArc>& all_arcs, const std::vector<RingPoint>& points,
                 const std::vector<RingArc>& all_highlight, std::string_view highlight_label,
                 std::string_view centre) {
  const std::vector<RingArc> arcs = drawn_arcs(all_arcs);
  const std::vector<RingArc> highlight = drawn_arcs(all_highlight);
  const bool coarse = all_arcs.size() > kMaxDrawnArcs || all_highlight.size() > kMaxDrawnArcs;
  const int w = 860, h = 640;
  const double cx = 320, cy = 340, r = 230;
  std::string s = header(w, h, title);
  s += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) +
       "\" fill=\"none\" stroke=\"#ddd\" stroke-width=\"1\"/>\n";
  // One band segment; SVG cannot draw an arc whose ends meet, so a long one is drawn in halves.
  auto band = [&](double r_out, double r_in, double f, double t, const std::string& fill,
                  std::string_view extra) {
    auto segment = [&](double a0, double a1) {
      s += "<path d=\"" + arc_path(cx, cy, r_out, r_in, a0, a1) + "\" fill=\"" + fill + "\"" +
           std::string(extra) + "/>\n";
    };
    if (t - f > 0.5) {
      segment(f, (f + t) / 2);
      segment((f + t) / 2, t);
    } else {
      segment(f, t);
    }
  };
  auto arc = [&](const RingArc& a, double r_out, double r_in, std::string_view extra) {
    if (a.from <= a.to) {
      band(r_out, r_in, a.from, a.to, colour(a.node), extra);
    } else {  // wraps past 12 o'clock
      band(r_out, r_in, a.from, 1.0, colour(a.node), extra);
      band(r_out, r_in, 0.0, a.to, colour(a.node), extra);
    }
  };
  for (const RingArc& a : arcs) arc(a, r + 14, r, {});
  for (const RingArc& a : highlight) arc(a, r - 6, r - 22, " stroke=\"#222\" stroke-width=\"0.4\"");
  // Past kMaxDrawnArcs the ticks would be a solid ring: the count says it instead.
  for (const RingPoint& p : points.size() <= kMaxDrawnArcs ? points : std::vector<RingPoint>{}) {
    const double t = 2 * kPi * p.angle - kPi / 2;
    s += "<line x1=\"" + num(cx + (r + 16) * std::cos(t)) + "\" y1=\"" +
         num(cy + (r + 16) * std::sin(t)) + "\" x2=\"" + num(cx + (r + 26) * std::cos(t)) +
         "\" y2=\"" + num(cy + (r + 26) * std::sin(t)) + "\" stroke=\"" + colour(p.node) +
         "\" stroke-width=\"1.5\"/>\n";
  }
  if (centre.empty()) {
    s += "<text x=\"" + num(cx) + "\" y=\"" + num(cy - 6) +
         "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#444\">" +
         std::to_string(points.size()) + " points</text>\n<text x=\"" + num(cx) + "\" y=\"" +
         num(cy + 14) +
         "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#777\">" +
         (coarse ? "drawn at 1/" + std::to_string(kMaxDrawnArcs) + " of the circle"
                 : std::string("key → first point clockwise")) +
         "</text>\n";
  } else {
    s += "<text x=\"" + num(cx) + "\" y=\"" + num(cy + 4) +
         "\" text-anchor=\"middle\" font-size=\"13\" fill=\"#444\">" + escape(centre) + "</text>\n";
  }
  s += "<text x=\"" + num(cx) + "\" y=\"" + num(cy - r - 34) +
       "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#777\">0</text>\n";
  s += legend(names, 640, 90, 24);
  if (!highlight.empty()) {
    s += "<text x=\"40\" y=\"" + std::to_string(h - 16) +
         "\" font-size=\"12\" fill=\"#444\">inner band: " + escape(highlight_label) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

std::string bars(std::string_view title, std::string_view y_label,
                 const std::vector<std::string>& categories, const std::vector<Series>& series,
                 const std::vector<double>& reference, std::string_view reference_label,
                 bool percent) {
  const int w = 900, h = 520;
  const double left = 80, right = 30, top = 60, bottom = 110;
  const double pw = w - left - right, ph = h - top - bottom;
  double vmax = 0;
  for (const auto& se : series)
    for (double v : se.values) vmax = std::max(vmax, v);
  for (double v : reference) vmax = std::max(vmax, v);
  vmax = nice_max(vmax);
  std::string s = header(w, h, title);
  for (int i = 0; i <= 5; ++i) {
    const double v = vmax * i / 5, y = top + ph - ph * i / 5;
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) +
         "\" y2=\"" + num(y) + "\" stroke=\"#eee\"/>\n<text x=\"" + num(left - 8) + "\" y=\"" +
         num(y + 4) + "\" text-anchor=\"end\" font-size=\"12\" fill=\"#555\">" +
         label_value(v, percent) + "</text>\n";
  }
  s += "<text transform=\"translate(18," + num(top + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" fill=\"#333\">" + escape(y_label) +
       "</text>\n";
  const std::size_t n = std::max<std::size_t>(categories.size(), 1);
  const double group = pw / static_cast<double>(n);
  const double bw =
      std::max(1.0, group * 0.8 / static_cast<double>(std::max<std::size_t>(series.size(), 1)));
  for (std::size_t c = 0; c < categories.size(); ++c) {
    const double gx = left + group * static_cast<double>(c) + group * 0.1;
    for (std::size_t k = 0; k < series.size(); ++k) {
      const double v = c < series[k].values.size() ? series[k].values[c] : 0;
      const double bh = ph * v / vmax;
      s += "<rect x=\"" + num(gx + bw * static_cast<double>(k)) + "\" y=\"" + num(top + ph - bh) +
           "\" width=\"" + num(bw * 0.92) + "\" height=\"" + num(bh) + "\" fill=\"" +
           colour(series.size() == 1 ? c : k) + "\"><title>" + escape(categories[c]) + ": " +
           label_value(v, percent) + "</title></rect>\n";
      if (categories.size() * series.size() <= 24) {
        s += "<text x=\"" + num(gx + bw * (static_cast<double>(k) + 0.46)) + "\" y=\"" +
             num(top + ph - bh - 4) + "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">" +
             label_value(v, percent) + "</text>\n";
      }
    }
    if (c < reference.size()) {
      const double y = top + ph - ph * reference[c] / vmax;
      s += "<line x1=\"" + num(gx - group * 0.05) + "\" y1=\"" + num(y) + "\" x2=\"" +
           num(gx + group * 0.85) + "\" y2=\"" + num(y) +
           "\" stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"/>\n";
    }
    if (categories.size() <= 40) {
      const double lx = gx + group * 0.4, ly = top + ph + 16;
      s += "<text x=\"" + num(lx) + "\" y=\"" + num(ly) +
           "\" text-anchor=\"end\" font-size=\"12\" fill=\"#333\" transform=\"rotate(-35 " +
           num(lx) + " " + num(ly) + ")\">" + escape(categories[c]) + "</text>\n";
    }
  }
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(left + pw) +
       "\" y2=\"" + num(top + ph) + "\" stroke=\"#333\"/>\n";
  double lx = left;
  if (series.size() > 1) {
    for (std::size_t k = 0; k < series.size(); ++k) {
      s += "<rect x=\"" + num(lx) + "\" y=\"" + std::to_string(h - 24) +
           "\" width=\"12\" height=\"12\" fill=\"" + colour(k) + "\"/><text x=\"" + num(lx + 16) +
           "\" y=\"" + std::to_string(h - 14) + "\" font-size=\"12\" fill=\"#333\">" +
           escape(series[k].name) + "</text>\n";
      lx += 24 + 7.5 * static_cast<double>(series[k].name.size());
    }
  }
  if (!reference.empty()) {
    s += "<line x1=\"" + num(lx) + "\" y1=\"" + std::to_string(h - 18) + "\" x2=\"" + num(lx + 24) +
         "\" y2=\"" + std::to_string(h - 18) +
         "\" stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"/><text x=\"" +
         num(lx + 30) + "\" y=\"" + std::to_string(h - 14) + "\" font-size=\"12\" fill=\"#333\">" +
         escape(reference_label) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

std::string lines(std::string_view title, std::string_view x_label, std::string_view y_label,
                  const std::vector<double>& x, const std::vector<Series>& series, bool log_x,
                  bool percent) {
  const int w = 900, h = 520;
  const double left = 80, right = 40, top = 60, bottom = 90;
  const double pw = w - left - right, ph = h - top - bottom;
  bool use_log = log_x && !x.empty();
  for (double v : x) use_log = use_log && v > 0;
  const double x0 = x.empty() ? 0 : *std::min_element(x.begin(), x.end());
  const double x1 = x.empty() ? 1 : *std::max_element(x.begin(), x.end());
  auto fx = [&](double v) {
    if (x1 == x0) return left + pw / 2;
    if (use_log) return left + pw * (std::log(v) - std::log(x0)) / (std::log(x1) - std::log(x0));
    return left + pw * (v - x0) / (x1 - x0);
  };
  double vmax = 0;
  for (const auto& se : series)
    for (double v : se.values) vmax = std::max(vmax, v);
  vmax = nice_max(vmax);
  auto fy = [&](double v) { return top + ph - ph * v / vmax; };
  std::string s = header(w, h, title);
  for (int i = 0; i <= 5; ++i) {
    const double v = vmax * i / 5;
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(fy(v)) + "\" x2=\"" + num(left + pw) +
         "\" y2=\"" + num(fy(v)) + "\" stroke=\"#eee\"/>\n<text x=\"" + num(left - 8) + "\" y=\"" +
         num(fy(v) + 4) + "\" text-anchor=\"end\" font-size=\"12\" fill=\"#555\">" +
         label_value(v, percent) + "</text>\n";
  }
  double last_label = -1e9;
  for (double v : x) {
    s += "<line x1=\"" + num(fx(v)) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(fx(v)) +
         "\" y2=\"" + num(top + ph + 5) + "\" stroke=\"#333\"/>\n";
    if (fx(v) - last_label < 34) continue;  // would overlap the previous label
    last_label = fx(v);
    char buf[32];
    std::snprintf(buf, sizeof buf, v == std::floor(v) ? "%.0f" : "%.2g", v);
    s += "<text x=\"" + num(fx(v)) + "\" y=\"" + num(top + ph + 20) +
         "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">" + std::string(buf) +
         "</text>\n";
  }
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(left + pw) +
       "\" y2=\"" + num(top + ph) + "\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(top + ph + 44) +
       "\" text-anchor=\"middle\" font-size=\"13\" fill=\"#333\">" + escape(x_label) +
       (use_log ? " (log scale)" : "") + "</text>\n";
  s += "<text transform=\"translate(18," + num(top + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" fill=\"#333\">" + escape(y_label) +
       "</text>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    std::string pts;
    for (std::size_t i = 0; i < x.size() && i < series[k].values.size(); ++i) {
      pts += num(fx(x[i])) + "," + num(fy(series[k].values[i])) + " ";
    }
    s += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + colour(k) +
         "\" stroke-width=\"2.5\"/>\n";
    for (std::size_t i = 0; i < x.size() && i < series[k].values.size(); ++i) {
      s += "<circle cx=\"" + num(fx(x[i])) + "\" cy=\"" + num(fy(series[k].values[i])) +
           "\" r=\"3.5\" fill=\"" + colour(k) + "\"><title>" + escape(series[k].name) + " @ " +
           label_value(x[i], false) + ": " + label_value(series[k].values[i], percent) +
           "</title></circle>\n";
    }
  }
  double lx = left;
  for (std::size_t k = 0; k < series.size(); ++k) {
    s += "<rect x=\"" + num(lx) + "\" y=\"" + std::to_string(h - 24) +
         "\" width=\"12\" height=\"12\" fill=\"" + colour(k) + "\"/><text x=\"" + num(lx + 16) +
         "\" y=\"" + std::to_string(h - 14) + "\" font-size=\"12\" fill=\"#333\">" +
         escape(series[k].name) + "</text>\n";
    lx += 24 + 7.5 * static_cast<double>(series[k].name.size());
  }
  s += "</svg>\n";
  return s;
}

// ---- Pictures of a placement ---------------------------------------------------------------------

namespace {

// A ring position as a fraction of the circle (positions are the ring's full-width unsigned).
template <class Pos>
double fraction(Pos pos) {
  return static_cast<double>(pos) / (static_cast<double>(std::numeric_limits<Pos>::max()) + 1.0);
}

std::vector<std::string> names_of(std::span<const Node> nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const Node& n : nodes) names.push_back(n.name);
  return names;
}

}  // namespace

namespace {

// A ring's points and the arcs they own, with `moved` ranges on the inner band.
template <class Pos>
std::string ring_of(const BasicRing<Pos>& r, std::span<const Node> nodes, std::string_view title,
                    const std::vector<MovedRange>& moved) {
  const std::vector<std::string> names = names_of(nodes);
  const double space = static_cast<double>(std::numeric_limits<Pos>::max()) + 1.0;
  std::vector<RingArc> arcs;
  std::vector<RingPoint> points;
  const auto pos = r.positions();
  const auto own = r.owners();
  for (std::size_t i = 0; i < pos.size(); ++i) {
    points.push_back({fraction(pos[i]), own[i]});
    // A point owns the arc from the point before it (the last, for the first) up to itself.
    arcs.push_back({fraction(i == 0 ? pos.back() : pos[i - 1]), fraction(pos[i]), own[i]});
  }
  std::vector<RingArc> highlight;
  for (const MovedRange& m : moved) {
    std::size_t to = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == m.to) to = i;
    }
    highlight.push_back(
        {static_cast<double>(m.first) / space, static_cast<double>(m.last) / space, to});
  }
  return ring(title, names, arcs, points, highlight,
              "ranges that move, coloured by their new owner");
}

}  // namespace

std::string table_ring(const AnyTable& table, std::span<const Node> nodes, std::string_view title,
                       const std::vector<MovedRange>& moved) {
  if (const auto* r = std::get_if<RingTable>(&table)) return ring_of(*r, nodes, title, moved);
  if (const auto* r = std::get_if<Ring64Table>(&table)) return ring_of(*r, nodes, title, moved);
  throw Error(ErrorCode::kUnsupported, "a ring picture needs a ring or ring64 table");
}

std::string placement(const Router& router, std::string_view title) {
  const AnyTable* table = router.table();
  if (table != nullptr &&
      (std::holds_alternative<RingTable>(*table) || std::holds_alternative<Ring64Table>(*table))) {
    return table_ring(*table, router.nodes(), title);
  }
  if (const Preset* p = router.preset(); p != nullptr && p->ring32() != nullptr) {
    return ring_of(*p->ring32(), router.nodes(), title, {});
  }
  if (const Preset* p = router.preset(); p != nullptr && p->ring64() != nullptr) {
    return ring_of(*p->ring64(), router.nodes(), title, {});
  }
  const std::vector<std::string> names = names_of(router.nodes());
  std::vector<RingArc> arcs;
  if (table != nullptr && std::holds_alternative<SlotTable>(*table)) {
    // Runs of slots with one owner, in slot order; an unserved slot (kNoNode) ends a run.
    const auto& slots = std::get<SlotTable>(*table);
    std::uint32_t start = 0;
    std::size_t served = 0;
    for (std::uint32_t slot = 1; slot <= kRedisSlots; ++slot) {
      const NodeId owner = slots.pick(start);
      if (slot < kRedisSlots && slots.pick(slot) == owner) continue;
      if (owner != kNoNode && owner < names.size()) {
        arcs.push_back({static_cast<double>(start) / kRedisSlots,
                        static_cast<double>(slot) / kRedisSlots, owner});
        served += slot - start;
      }
      start = slot;
    }
    return ring(title, names, arcs, {}, {}, {},
                std::to_string(served) + " of " + std::to_string(kRedisSlots) +
                    " slots served, slot 0 at the top");
  }
  // No positions to draw: each node's share of sampled keys, as one arc per node.
  std::vector<std::uint64_t> count(names.size(), 0);
  std::uint64_t routed = 0;
  for (std::size_t i = 0; i < kShareSamples; ++i) {
    const NodeId id = router.route("key:" + std::to_string(i));
    if (id < count.size()) {
      ++count[id];
      ++routed;
    }
  }
  double at = 0;
  for (std::size_t id = 0; id < count.size(); ++id) {
    if (count[id] == 0) continue;
    const double share = static_cast<double>(count[id]) / static_cast<double>(kShareSamples);
    arcs.push_back({at, std::min(1.0, at + share), id});
    at += share;
  }
  return ring(title, names, arcs, {}, {}, {},
              "share of " + std::to_string(kShareSamples) + " sampled keys per node" +
                  (routed < kShareSamples ? " (some unrouted)" : ""));
}

}  // namespace chash::svg
