// The CLI's view of "how keys are routed": either a compatibility preset or a native algorithm
// with a key hash, built from the command-line flags every subcommand shares.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash.h"
#include "chash/preset.h"

namespace chash::cli {

struct RoutingSpec {
  std::string preset;                      // --preset NAME, or
  std::string algo;                        // --algo NAME
  std::optional<std::string> hash;         // --hash H
  std::optional<std::string> hash_tag;     // --hash-tag XY
  std::optional<std::uint32_t> vnodes;     // --vnodes N
  std::optional<std::uint64_t> table_size; // --table-size M (maglev)
  std::optional<std::uint32_t> probes;     // --probes K (multiprobe)
  std::optional<std::string> point_format; // --point-format (ring)
};

class KeyRouter {
 public:
  // Throws chash::Error for unknown names or options the algorithm/preset does not take.
  static KeyRouter build(const RoutingSpec& spec, std::span<const Node> nodes);
  // The native algorithm and table options the flags ask for (throws for flags that do not
  // apply). Only for --algo.
  static TableOptions table_options(const RoutingSpec& spec, Algorithm algo);

  NodeId route(std::string_view key) const noexcept;
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const;
  // The 64-bit key hash the native table is given (natives only).
  std::uint64_t key_hash(std::string_view key) const noexcept;

  bool is_preset() const noexcept { return preset_ != nullptr; }
  const AnyTable* table() const noexcept { return table_ ? &*table_ : nullptr; }
  std::span<const Node> nodes() const noexcept { return nodes_; }
  std::string describe() const;  // "ring (xxh3, 160 vnodes)" or "preset ketama"

 private:
  std::vector<Node> nodes_;
  std::shared_ptr<const Preset> preset_;
  std::shared_ptr<const AnyTable> table_;
  KeyHash key_hash_ = KeyHash::kXxh3;
  bool slot_hash_ = false;  // slots algorithm: the key's Redis slot (CRC16 with {tags})
  char tag_open_ = 0, tag_close_ = 0;
  std::string description_;
};

// Node lists: "NAME [WEIGHT]" per line, blank lines and # comments ignored. Errors name the
// file and line.
std::vector<Node> read_nodes_file(const std::string& path);
// The same parser over text already in memory; `source` names it in errors.
std::vector<Node> parse_nodes_text(std::string_view text, const std::string& source);
std::vector<Node> parse_nodes_list(std::string_view comma_separated);
// Validates a hash tag argument: exactly two characters.
void check_hash_tag(std::string_view tag);

}  // namespace chash::cli
