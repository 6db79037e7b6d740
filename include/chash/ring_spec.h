// SPDX-License-Identifier: Apache-2.0
// chash — ring specs: any hand-written consistent-hash ring, described exactly.
//
// Rings written by hand (a Java TreeMap over String.hashCode, a Python dict over MD5, ...) differ
// from each other, and from every library, in small choices that each move keys: how a point is
// named, whether the bare node name is a point too, which hash and how a position is cut from
// it, signed or unsigned order, >= or > on lookup, which of two equal points wins. A RingSpec
// names every one of these choices, so such a ring can be reproduced key for key — by the CLI
// (`chash route --ring SPEC`), chash-proxy (`ring:` in a pool) and the Python package.
//
// Text form (docs/CLI.md has the grammar): fields `name=value` separated by ';' (write "\;" for
// a ';' and "\\" for a '\' inside a value), any order, each at most once, spaces around names
// and values ignored. Example, article 000's Java TreeMap ring over Guava murmur3_128:
//
//   points={name}#VN{i}; bare=first; vnodes=150; hash=guava-long; order=signed
//
//   points=FORMAT   point i of a node is FORMAT with {name} -> the node's name, {i} -> i
//                   (default "{name}#{i}")
//   from=N          the first i (default 0): i runs from N to N + count - 1
//   vnodes=N        points per node (per unit of weight with weights=scale), 0..65536 (default
//                   160); 0 leaves only the bare points (bare=first|last)
//   bare=no|first|last  the node's own name is a point too, written before / after its named
//                   points (default no)
//   weights=scale|ignore  count = vnodes x weight, or vnodes for every node of weight > 0
//                   (default scale)
//   hash=H          how a position is computed from bytes (default xxh3):
//                     java-hashcode  Java String.hashCode() of the UTF-8 text, int (32-bit signed)
//                     guava-long     Guava murmur3_128().hashString(s, UTF_8).asLong() (64 signed)
//                     guava-int      the same, asInt() (32 signed)
//                     murmur64a      MurmurHash64A with seed=, as a Java long (64 signed)
//                     md5-int32      Python int(md5(s).hexdigest(), 16) % 2**32: the digest's last
//                                    four bytes, big-endian (32 unsigned)
//                     md5-int64      ... % 2**64 (64 unsigned)
//                     any key hash of chash (xxh3, fnv1a_64, md5, crc32, ...; chash/hash.h), at its
//                     width (32 bits for the 32-bit hashes, else 64), unsigned
//   seed=N          murmur64a's seed, decimal or 0x-hex (default 0)
//   abs=yes|no      Java Math.abs() of the signed position at its width (MIN_VALUE stays
//                   negative, as in Java) (default no)
//   order=signed|unsigned  how positions compare (default: signed for the Java hashes, unsigned
//                   for the others)
//   successor=ge|gt the first point >= the key's position (TreeMap.tailMap/ceilingEntry, bisect)
//                   or > it (higherEntry) (default ge); past the last point, the first
//   collision=first|last  of two points at one position, the first or the last written owns it
//                   (TreeMap.put and dict assignment: last) (default last)
//
// Points are written node by node in list order; a node's bare point (if any) and its named
// points in the order bare= says. Keys are hashed as the points are (the whole key).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "chash/hash.h"
#include "chash/node.h"
#include "chash/preset.h"

namespace chash {

enum class RingPositionHash : std::uint8_t {
  kJavaHashCode,  // "java-hashcode"
  kGuavaLong,     // "guava-long"
  kGuavaInt,      // "guava-int"
  kMurmur64A,     // "murmur64a"
  kMd5Int32,      // "md5-int32"
  kMd5Int64,      // "md5-int64"
  kKeyHash,       // a chash KeyHash (RingSpec::key_hash)
};

struct RingSpec {
  std::string points = "{name}#{i}";
  std::uint64_t from = 0;
  std::uint32_t vnodes = 160;
  enum class Bare : std::uint8_t { kNo, kFirst, kLast } bare = Bare::kNo;
  bool scale_by_weight = true;
  RingPositionHash hash = RingPositionHash::kKeyHash;
  KeyHash key_hash = KeyHash::kXxh3;  // when hash == kKeyHash
  std::uint64_t seed = 0;             // murmur64a
  bool java_abs = false;
  std::optional<bool> signed_order;  // unset: the hash's default (RingSpec::is_signed)
  bool successor_greater = false;    // successor=gt
  bool last_wins = true;             // collision=last

  // The position's width in bits (32 or 64) and whether it is compared as a signed number.
  unsigned width() const noexcept;
  bool is_signed() const noexcept;

  friend bool operator==(const RingSpec&, const RingSpec&) = default;
};

// Parses the text form. Throws Error(kParse) naming the field for an unknown field, a repeated
// one, or a bad value; Error(kInvalidArgument) for a spec that can have no point (vnodes=0 and
// bare=no) or a format without {i} when a node gets more than one named point.
RingSpec parse_ring_spec(std::string_view text);

// The canonical text form: every field, in the order of the grammar above;
// parse_ring_spec(to_string(s)) == s (with signed_order made explicit).
std::string to_string(const RingSpec& spec);

// A ring built from `spec` for `nodes` (list order is the write order; a node of weight 0 has
// no point). Routes with the usual Preset contract: route() noexcept and allocation-free,
// route_n() the next distinct nodes clockwise. `hash_tag` (two characters, e.g. "{}") hashes
// only the key's tag, as twemproxy does — chash's addition; the articles' rings have none.
// Throws Error for an empty node set, too many points (kMaxRingPoints) or a spec
// parse_ring_spec would refuse.
std::unique_ptr<Preset> make_ring_spec_preset(const RingSpec& spec, std::span<const Node> nodes,
                                              std::optional<std::string> hash_tag = std::nullopt);

// Checks what parse_ring_spec checks after parsing (for specs built in code). Throws Error.
void validate_ring_spec(const RingSpec& spec);

// The spec an article preset routes with ("guava-treemap", "java-hashcode-ring",
// "python-md5-ring", "murmur64a-treemap"), with `vnodes` overriding its count; nullopt for any
// other preset (none of them is a ring spec; guava-iphash is a modulo).
std::optional<RingSpec> preset_ring_spec(std::string_view preset,
                                         std::optional<std::uint32_t> vnodes = std::nullopt);

}  // namespace chash
