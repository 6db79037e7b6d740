// SPDX-License-Identifier: Apache-2.0
// Ring specs (chash/ring_spec.h): parsing, the canonical text form, and the ring they build.
#include "chash/ring_spec.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ring.h"
#include "chash/router.h"
#include "common.h"
#include "java_text.h"

namespace chash {
namespace {

constexpr std::uint32_t kMaxVnodes = 65536;

struct HashName {
  std::string_view name;
  RingPositionHash hash;
};
constexpr std::array<HashName, 6> kHashNames{{
    {"java-hashcode", RingPositionHash::kJavaHashCode},
    {"guava-long", RingPositionHash::kGuavaLong},
    {"guava-int", RingPositionHash::kGuavaInt},
    {"murmur64a", RingPositionHash::kMurmur64A},
    {"md5-int32", RingPositionHash::kMd5Int32},
    {"md5-int64", RingPositionHash::kMd5Int64},
}};

constexpr std::string_view kFields =
    "points, from, vnodes, bare, weights, hash, seed, abs, order, successor, collision";

[[noreturn]] void bad(std::string_view field, const std::string& why) {
  throw Error(ErrorCode::kParse, "ring spec: " + std::string(field) + ": " + why);
}

std::string shown(std::string_view v) {
  return "\"" + std::string(v.substr(0, 64)) + (v.size() > 64 ? "...\"" : "\"");
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Unsigned decimal or 0x-hex; a leading '-' for decimal gives the two's complement (a Java long
// seed may be negative).
bool parse_number(std::string_view v, std::uint64_t& out) noexcept {
  const bool neg = !v.empty() && v.front() == '-';
  if (neg) v.remove_prefix(1);
  int base = 10;
  if (!neg && v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    v.remove_prefix(2);
    base = 16;
  }
  if (v.empty()) return false;
  std::uint64_t x = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x, base);
  if (ec != std::errc() || p != v.data() + v.size()) return false;
  if (neg && x > (std::uint64_t{1} << 63)) return false;
  out = neg ? ~x + 1 : x;
  return true;
}

std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

bool is_32bit(KeyHash h) noexcept {
  switch (h) {
    case KeyHash::kXxh3:
    case KeyHash::kXxh64:
    case KeyHash::kMurmur3_128:
    case KeyHash::kMurmur64A:
    case KeyHash::kFnv1_64:
    case KeyHash::kFnv1a_64:
      return false;
    default:
      return true;
  }
}

// Splits on unescaped ';' and unescapes "\;" and "\\" (any other '\' is kept as written).
std::vector<std::string> split_fields(std::string_view text) {
  std::vector<std::string> out(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ';' || text[i + 1] == '\\')) {
      out.back().push_back(text[++i]);
    } else if (c == ';') {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

std::string escape(std::string_view v) {
  std::string s;
  for (const char c : v) {
    if (c == ';' || c == '\\') s.push_back('\\');
    s.push_back(c);
  }
  return s;
}

bool yes_no(std::string_view field, std::string_view v) {
  if (v == "yes") return true;
  if (v == "no") return false;
  bad(field, "expected yes or no, got " + shown(v));
}

// ---- Positions --------------------------------------------------------------------------------

// How one spec turns bytes into a ring position, as the unsigned 32/64-bit value the ring sorts
// (signed order becomes unsigned order by flipping the sign bit).
struct Position {
  RingPositionHash hash = RingPositionHash::kKeyHash;
  KeyHash key_hash = KeyHash::kXxh3;
  std::uint64_t seed = 0;
  unsigned width = 64;
  bool java_abs = false;
  bool is_signed = false;
  char tag_open = 0;  // hash tag (keys only)
  char tag_close = 0;

  std::uint64_t raw(std::string_view s) const noexcept {
    switch (hash) {
      case RingPositionHash::kJavaHashCode:
        // Decodes as new String(bytes, UTF_8) does (malformed -> U+FFFD), then String.hashCode.
        return static_cast<std::uint32_t>(hash::java_string_hashcode(s));
      case RingPositionHash::kGuavaLong:
        return presets::guava_key_hash(s);
      case RingPositionHash::kGuavaInt:
        return static_cast<std::uint32_t>(presets::guava_key_hash(s));
      case RingPositionHash::kMurmur64A: {
        // key.getBytes(UTF_8) of the String decoded from the bytes: the bytes themselves unless
        // malformed (then a per-thread buffer: no allocation after its first growth).
        if (presets::java_utf8_clean(s)) return hash::murmur64a(s, seed);
        thread_local std::string buf;
        presets::java_utf8_reencode(s, buf);
        return hash::murmur64a(buf, seed);
      }
      case RingPositionHash::kMd5Int32:
      case RingPositionHash::kMd5Int64:
        return md5_cut(hash::md5(s));
      case RingPositionHash::kKeyHash:
        break;
    }
    const std::uint64_t v = hash_key(key_hash, s);
    return width == 32 ? static_cast<std::uint32_t>(v) : v;
  }

  // Positions computed from an MD5 digest (md5-int32, md5-int64, the key hash md5).
  bool md5_based() const noexcept {
    return hash == RingPositionHash::kMd5Int32 || hash == RingPositionHash::kMd5Int64 ||
           (hash == RingPositionHash::kKeyHash && key_hash == KeyHash::kMd5);
  }
  // raw() of the bytes whose digest is d, for md5_based() positions.
  std::uint64_t md5_cut(const hash::Md5Digest& d) const noexcept {
    if (hash == RingPositionHash::kKeyHash) return hash::ketama_point(d, 0);  // hash_key(kMd5)
    // int(hexdigest, 16) % 2**w: the digest's last w/8 bytes, big-endian.
    std::uint64_t v = 0;
    for (std::size_t i = 16 - width / 8; i < 16; ++i) v = v << 8 | d[i];
    return v;
  }

  std::uint64_t operator()(std::string_view s) const noexcept { return finish(raw(s)); }

  // Math.abs and the signed order, applied to a raw position.
  std::uint64_t finish(std::uint64_t v) const noexcept {
    const std::uint64_t sign = std::uint64_t{1} << (width - 1);
    const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
    // Math.abs: negate a negative value, except MIN_VALUE, which Java leaves negative.
    if (java_abs && (v & sign) != 0 && v != sign) v = (~v + 1) & mask;
    if (is_signed) v ^= sign;
    return v;
  }
};

// Keys: the hash tag first, then the spec's position.
struct KeyPosition {
  Position pos;
  std::string_view hashed(std::string_view key) const noexcept {
    return pos.tag_open != 0 ? hash_tag(key, pos.tag_open, pos.tag_close) : key;
  }
  std::uint64_t operator()(std::string_view key) const noexcept { return pos(hashed(key)); }
  // MD5 positions a chunk at a time (multi-buffer MD5); the others key by key.
  void batch(std::span<const std::string_view> keys, std::uint64_t* out) const noexcept {
    if (!pos.md5_based()) {
      for (std::size_t i = 0; i < keys.size(); ++i) out[i] = (*this)(keys[i]);
      return;
    }
    assert(keys.size() <= presets::kBatchChunk);
    std::string_view h[presets::kBatchChunk];
    for (std::size_t i = 0; i < keys.size(); ++i) h[i] = hashed(keys[i]);
    presets::md5_positions(std::span<const std::string_view>(h, keys.size()), out,
                           [&](const hash::Md5Digest& d) { return pos.finish(pos.md5_cut(d)); });
  }
};

template <class Ring>
std::unique_ptr<Preset> build(const RingSpec& spec, const Position& pos,
                              std::span<const Node> nodes) {
  using Point = typename Ring::Point;
  using Pos = decltype(Point::position);
  struct Written {
    Pos position;
    std::uint64_t order;
    NodeId node;
  };
  std::uint64_t total = 0;
  for (const Node& n : nodes) {
    if (n.weight == 0) continue;
    total += (spec.scale_by_weight ? std::uint64_t{n.weight} : 1) * spec.vnodes;
    total += spec.bare != RingSpec::Bare::kNo ? 1 : 0;
  }
  if (total > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded, "ring spec: the ring would have " +
                                               std::to_string(total) + " points; at most " +
                                               std::to_string(kMaxRingPoints));
  }
  std::vector<Written> written;
  written.reserve(static_cast<std::size_t>(total));
  std::string name;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.weight == 0) continue;  // drained: no point
    auto put = [&](std::string_view point) {
      written.push_back(
          Written{static_cast<Pos>(pos(point)), written.size(), static_cast<NodeId>(id)});
    };
    if (spec.bare == RingSpec::Bare::kFirst) put(n.name);
    const std::uint64_t count = (spec.scale_by_weight ? std::uint64_t{n.weight} : 1) * spec.vnodes;
    for (std::uint64_t i = 0; i < count; ++i) {
      internal::format_point_name(spec.points, n.name, spec.from + i, name);
      put(name);
    }
    if (spec.bare == RingSpec::Bare::kLast) put(n.name);
  }
  if (written.empty()) throw Error(ErrorCode::kEmptyNodeSet, "ring spec: no node has a point");
  // One point per position: the first or the last written, as the spec's map kept it; the
  // losers are gone for next choices (route_n) too, as from the peer's map.
  std::stable_sort(written.begin(), written.end(),
                   [](const Written& a, const Written& b) { return a.position < b.position; });
  std::vector<Point> points;
  points.reserve(written.size());
  for (std::size_t i = 0; i < written.size();) {
    std::size_t j = i;
    while (j + 1 < written.size() && written[j + 1].position == written[i].position) ++j;
    const Written& w = spec.last_wins ? written[j] : written[i];
    points.push_back(Point{w.position, w.node});
    i = j + 1;
  }
  return presets::make_ring_preset(
      Ring::from_points(
          std::move(points), nodes.size(),
          spec.successor_greater ? RingSuccessor::kGreater : RingSuccessor::kGreaterOrEqual),
      KeyPosition{pos});
}

}  // namespace

unsigned RingSpec::width() const noexcept {
  switch (hash) {
    case RingPositionHash::kJavaHashCode:
    case RingPositionHash::kGuavaInt:
    case RingPositionHash::kMd5Int32:
      return 32;
    case RingPositionHash::kGuavaLong:
    case RingPositionHash::kMurmur64A:
    case RingPositionHash::kMd5Int64:
      return 64;
    case RingPositionHash::kKeyHash:
      break;
  }
  return is_32bit(key_hash) ? 32 : 64;
}

bool RingSpec::is_signed() const noexcept {
  if (signed_order) return *signed_order;
  return hash == RingPositionHash::kJavaHashCode || hash == RingPositionHash::kGuavaLong ||
         hash == RingPositionHash::kGuavaInt || hash == RingPositionHash::kMurmur64A;
}

void validate_ring_spec(const RingSpec& spec) {
  if (spec.vnodes > kMaxVnodes) {
    bad("vnodes",
        "expected 0.." + std::to_string(kMaxVnodes) + ", got " + std::to_string(spec.vnodes));
  }
  if (spec.vnodes == 0 && spec.bare == RingSpec::Bare::kNo) {
    throw Error(ErrorCode::kInvalidArgument,
                "ring spec: vnodes=0 leaves no point; add bare=first or bare=last (the node's own "
                "name as its point), or give vnodes >= 1");
  }
  if (spec.vnodes > 0 && spec.points.find("{name}") == std::string::npos) {
    bad("points", "the format " + shown(spec.points) +
                      " has no {name}: every node's points would be the same");
  }
  if (spec.vnodes > 1 && spec.points.find("{i}") == std::string::npos) {
    bad("points",
        "the format " + shown(spec.points) + " has no {i}: a node's points would all be the same");
  }
  if (spec.seed != 0 && spec.hash != RingPositionHash::kMurmur64A) {
    bad("seed", "applies to hash=murmur64a only");
  }
}

RingSpec parse_ring_spec(std::string_view text) {
  if (trim(text).empty()) {
    throw Error(ErrorCode::kParse,
                "ring spec is empty (e.g. \"points={name}#VN{i}; vnodes=150; hash=guava-long\")");
  }
  if (text.size() > 4096) throw Error(ErrorCode::kParse, "ring spec: longer than 4096 bytes");
  RingSpec spec;
  std::vector<std::string> seen;
  for (const std::string& raw : split_fields(text)) {
    const std::string_view field = trim(raw);
    if (field.empty()) continue;
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      throw Error(ErrorCode::kParse, "ring spec: " + shown(field) + " is not name=value (fields: " +
                                         std::string(kFields) + ")");
    }
    const std::string_view name = trim(field.substr(0, eq));
    const std::string_view v = trim(field.substr(eq + 1));
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      bad(name, "given twice");
    }
    seen.emplace_back(name);
    std::uint64_t num = 0;
    if (name == "points") {
      if (v.empty()) bad(name, "empty format");
      spec.points = std::string(v);
    } else if (name == "from") {
      if (!parse_number(v, num) || num > (std::uint64_t{1} << 32)) {
        bad(name, "expected a number 0..4294967296, got " + shown(v));
      }
      spec.from = num;
    } else if (name == "vnodes") {
      if (!parse_number(v, num) || num > kMaxVnodes || (!v.empty() && v[0] == '-')) {
        bad(name, "expected 0.." + std::to_string(kMaxVnodes) + ", got " + shown(v));
      }
      spec.vnodes = static_cast<std::uint32_t>(num);
    } else if (name == "bare") {
      if (v == "no") {
        spec.bare = RingSpec::Bare::kNo;
      } else if (v == "first") {
        spec.bare = RingSpec::Bare::kFirst;
      } else if (v == "last") {
        spec.bare = RingSpec::Bare::kLast;
      } else {
        bad(name, "expected no, first or last, got " + shown(v));
      }
    } else if (name == "weights") {
      if (v != "scale" && v != "ignore") bad(name, "expected scale or ignore, got " + shown(v));
      spec.scale_by_weight = v == "scale";
    } else if (name == "hash") {
      const auto it = std::find_if(kHashNames.begin(), kHashNames.end(),
                                   [&](const HashName& h) { return h.name == v; });
      if (it != kHashNames.end()) {
        spec.hash = it->hash;
      } else {
        try {
          spec.key_hash = parse_key_hash(v);
          spec.hash = RingPositionHash::kKeyHash;
        } catch (const Error&) {
          // Each name once: a position hash and a key hash may share one (murmur64a).
          std::vector<std::string_view> names;
          for (const HashName& h : kHashNames) names.push_back(h.name);
          for (const KeyHash h : kAllKeyHashes) {
            const std::string_view n = key_hash_name(h);
            if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
          }
          std::string valid;
          for (const std::string_view n : names) valid += std::string(n) + ", ";
          valid.resize(valid.size() - 2);
          bad(name, "unknown hash " + shown(v) + " (valid: " + valid + ")");
        }
      }
    } else if (name == "seed") {
      if (!parse_number(v, num))
        bad(name, "expected a number (decimal or 0x-hex), got " + shown(v));
      spec.seed = num;
    } else if (name == "abs") {
      spec.java_abs = yes_no(name, v);
    } else if (name == "order") {
      if (v != "signed" && v != "unsigned")
        bad(name, "expected signed or unsigned, got " + shown(v));
      spec.signed_order = v == "signed";
    } else if (name == "successor") {
      if (v != "ge" && v != "gt") bad(name, "expected ge or gt, got " + shown(v));
      spec.successor_greater = v == "gt";
    } else if (name == "collision") {
      if (v != "first" && v != "last") bad(name, "expected first or last, got " + shown(v));
      spec.last_wins = v == "last";
    } else {
      throw Error(ErrorCode::kParse, "ring spec: unknown field " + shown(name) +
                                         " (fields: " + std::string(kFields) + ")");
    }
  }
  validate_ring_spec(spec);
  return spec;
}

std::string to_string(const RingSpec& spec) {
  std::string s = "points=" + escape(spec.points);
  s += "; from=" + std::to_string(spec.from);
  s += "; vnodes=" + std::to_string(spec.vnodes);
  s += "; bare=";
  s += spec.bare == RingSpec::Bare::kNo      ? "no"
       : spec.bare == RingSpec::Bare::kFirst ? "first"
                                             : "last";
  s += spec.scale_by_weight ? "; weights=scale" : "; weights=ignore";
  s += "; hash=";
  if (spec.hash == RingPositionHash::kKeyHash) {
    s += key_hash_name(spec.key_hash);
  } else {
    for (const HashName& h : kHashNames) {
      if (h.hash == spec.hash) s += h.name;
    }
  }
  if (spec.hash == RingPositionHash::kMurmur64A) s += "; seed=" + hex(spec.seed);
  s += spec.java_abs ? "; abs=yes" : "; abs=no";
  s += spec.is_signed() ? "; order=signed" : "; order=unsigned";
  s += spec.successor_greater ? "; successor=gt" : "; successor=ge";
  s += spec.last_wins ? "; collision=last" : "; collision=first";
  return s;
}

std::unique_ptr<Preset> make_ring_spec_preset(const RingSpec& spec, std::span<const Node> nodes,
                                              std::optional<std::string> tag) {
  validate_ring_spec(spec);
  validate_nodes(nodes);
  Position pos;
  pos.hash = spec.hash;
  pos.key_hash = spec.key_hash;
  pos.seed = spec.seed;
  pos.width = spec.width();
  pos.java_abs = spec.java_abs;
  pos.is_signed = spec.is_signed();
  if (tag) {
    check_hash_tag(*tag);
    pos.tag_open = (*tag)[0];
    pos.tag_close = (*tag)[1];
  }
  if (pos.width == 32) return build<RingTable>(spec, pos, nodes);
  return build<Ring64Table>(spec, pos, nodes);
}

}  // namespace chash
