// SPDX-License-Identifier: Apache-2.0
#include "chash/table.h"

#include <string>

#include "chash/error.h"

namespace chash {

namespace {
constexpr std::string_view kNames[] = {"modulo",  "ring",       "ring64",          "jump",
                                       "memento", "rendezvous", "maglev",          "multiprobe",
                                       "slots",   "jumpback",   "memento-jumpback"};
}

std::string_view algorithm_name(Algorithm a) noexcept { return kNames[static_cast<int>(a)]; }

Algorithm parse_algorithm(std::string_view name) {
  for (Algorithm a : kAllAlgorithms) {
    if (algorithm_name(a) == name) return a;
  }
  std::string valid;
  for (Algorithm a : kAllAlgorithms) {
    if (!valid.empty()) valid += ", ";
    valid += algorithm_name(a);
  }
  throw Error(ErrorCode::kParse, "unknown algorithm \"" + std::string(name.substr(0, 64)) +
                                     "\" (valid: " + valid + ")");
}

AnyTable build_table(Algorithm algorithm, std::span<const Node> nodes, const TableOptions& o) {
  switch (algorithm) {
    case Algorithm::kModulo:
      return ModuloTable::build(nodes);
    case Algorithm::kRing:
      return RingTable::build(nodes, o.ring);
    case Algorithm::kRing64:
      return Ring64Table::build(nodes, o.ring);
    case Algorithm::kJump:
      return JumpTable::build(nodes);
    case Algorithm::kMemento:
      return MementoTable::build(nodes, o.memento);
    case Algorithm::kRendezvous:
      return RendezvousTable::build(nodes, o.rendezvous);
    case Algorithm::kMaglev:
      return MaglevTable::build(nodes, o.maglev);
    case Algorithm::kMultiProbe:
      return MultiProbeTable::build(nodes, o.multiprobe);
    case Algorithm::kSlots:
      return SlotTable::build(nodes, o.slots);
    case Algorithm::kJumpBack:
      return JumpBackTable::build(nodes);
    case Algorithm::kMementoJumpBack:
      return MementoJumpBackTable::build(nodes, o.memento);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown algorithm");
}

Algorithm algorithm_of(const AnyTable& table) noexcept {
  // The variant's alternatives are listed in Algorithm order.
  return static_cast<Algorithm>(table.index());
}

}  // namespace chash
