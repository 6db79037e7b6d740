// SPDX-License-Identifier: Apache-2.0
// chash — runtime choice of placement algorithm: one std::variant over the concrete tables.
//
// Generic code is templated on the PlacementTable concept; a runtime choice (config file, CLI
// flag) goes through AnyTable and is visited once per call (or once per batch), never through a
// virtual call per key.
//
// Example:
//   chash::TableOptions opt;  opt.ring.vnodes = 200;
//   auto table = chash::build_table(chash::Algorithm::kRing, nodes, opt);
//   chash::NodeId id = chash::pick(table, chash::hash::xxh3_64("user:42"));
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "chash/jump.h"
#include "chash/jumpback.h"
#include "chash/maglev.h"
#include "chash/memento.h"
#include "chash/modulo.h"
#include "chash/multiprobe.h"
#include "chash/placement.h"
#include "chash/redis_slots.h"
#include "chash/rendezvous.h"
#include "chash/ring.h"

namespace chash {

enum class Algorithm : std::uint8_t {
  kModulo,           // "modulo"
  kRing,             // "ring" (32-bit positions)
  kRing64,           // "ring64"
  kJump,             // "jump"
  kMemento,          // "memento"
  kRendezvous,       // "rendezvous"
  kMaglev,           // "maglev"
  kMultiProbe,       // "multiprobe"
  kSlots,            // "slots" (Redis Cluster slot table; feed it redis_key_slot(key))
  kJumpBack,         // "jumpback" (JumpBackHash: jump's placement in O(1) expected time)
  kMementoJumpBack,  // "memento-jumpback" (memento over JumpBackHash instead of jump)
};

// In Algorithm order (later additions last, so earlier names keep their place in lists).
inline constexpr Algorithm kAllAlgorithms[] = {
    Algorithm::kModulo,  Algorithm::kRing,       Algorithm::kRing64,         Algorithm::kJump,
    Algorithm::kMemento, Algorithm::kRendezvous, Algorithm::kMaglev,         Algorithm::kMultiProbe,
    Algorithm::kSlots,   Algorithm::kJumpBack,   Algorithm::kMementoJumpBack};

std::string_view algorithm_name(Algorithm a) noexcept;
// Parses a name as printed by algorithm_name ("anchor" is not offered: memento covers it).
// Throws Error(kParse) listing the valid names.
Algorithm parse_algorithm(std::string_view name);

struct TableOptions {
  RingOptions ring;              // ring, ring64
  MaglevOptions maglev;          // maglev
  MultiProbeOptions multiprobe;  // multiprobe
  MementoOptions memento;        // memento, memento-jumpback
  RendezvousOptions rendezvous;
  SlotTable::Options slots;
};

// Alternatives in Algorithm order (algorithm_of relies on it).
using AnyTable =
    std::variant<ModuloTable, RingTable, Ring64Table, JumpTable, MementoTable, RendezvousTable,
                 MaglevTable, MultiProbeTable, SlotTable, JumpBackTable, MementoJumpBackTable>;

AnyTable build_table(Algorithm algorithm, std::span<const Node> nodes,
                     const TableOptions& options = {});

Algorithm algorithm_of(const AnyTable& table) noexcept;

inline NodeId pick(const AnyTable& table, std::uint64_t hash) noexcept {
  return std::visit([hash](const auto& t) noexcept { return t.pick(hash); }, table);
}
inline std::size_t pick_n(const AnyTable& table, std::uint64_t hash, std::span<NodeId> out) {
  return std::visit([&](const auto& t) { return pick_n(t, hash, out); }, table);
}
inline NodeId pick_up(const AnyTable& table, std::uint64_t hash, const DownSet& down) {
  return std::visit([&](const auto& t) { return pick_up(t, hash, down); }, table);
}
inline std::size_t pick_n_up(const AnyTable& table, std::uint64_t hash, const DownSet& down,
                             std::span<NodeId> out) {
  return std::visit([&](const auto& t) { return pick_n_up(t, hash, down, out); }, table);
}
inline std::size_t node_count(const AnyTable& table) noexcept {
  return std::visit([](const auto& t) noexcept { return t.node_count(); }, table);
}

}  // namespace chash
