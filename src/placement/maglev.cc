// SPDX-License-Identifier: Apache-2.0
#include "chash/maglev.h"

#include <algorithm>

#include "chash/error.h"

namespace chash {

bool is_prime(std::uint64_t n) noexcept {
  if (n < 2) return false;
  if (n % 2 == 0) return n == 2;
  for (std::uint64_t d = 3; d * d <= n; d += 2) {
    if (n % d == 0) return false;
  }
  return true;
}

namespace {
std::uint64_t seeded(KeyHash h, std::string_view name, std::uint64_t seed) {
  // xxh64/xxh3 take the seed directly (as Envoy's maglev hashes host names with seeds 0 and 1);
  // other hashes get the seed mixed in afterwards.
  switch (h) {
    case KeyHash::kXxh64:
      return hash::xxh64(name, seed);
    case KeyHash::kXxh3:
      return hash::xxh3_64(name, seed);
    default:
      return seed == 0 ? hash_key(h, name) : hash::mix64(hash_key(h, name) + seed);
  }
}
}  // namespace

MaglevTable MaglevTable::build(std::span<const Node> nodes, const Options& options) {
  validate_nodes(nodes);
  const std::uint64_t m = options.table_size;
  if (m > kMaxMaglevTableSize || !is_prime(m)) {
    throw Error(ErrorCode::kInvalidArgument,
                "maglev table size must be a prime <= " + std::to_string(kMaxMaglevTableSize) +
                    ", got " + std::to_string(m) + " (65537 and 655373 are good choices)");
  }
  struct Entry {
    NodeId id;
    std::uint64_t offset, skip, next = 0;
    std::uint64_t weight, target = 0;
  };
  std::vector<Entry> entries;
  std::uint64_t max_weight = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight == 0) continue;
    entries.push_back(Entry{static_cast<NodeId>(i), seeded(options.node_hash, nodes[i].name, 0) % m,
                            seeded(options.node_hash, nodes[i].name, 1) % (m - 1) + 1, 0,
                            nodes[i].weight, 0});
    max_weight = std::max<std::uint64_t>(max_weight, nodes[i].weight);
  }
  if (entries.size() > m) {
    throw Error(ErrorCode::kInvalidArgument,
                "maglev table size " + std::to_string(m) + " is smaller than the " +
                    std::to_string(entries.size()) + " nodes; use a prime well above it");
  }

  MaglevTable t;
  t.node_count_ = nodes.size();
  t.drawable_ = entries.size();
  std::vector<NodeId> table(static_cast<std::size_t>(m), kNoNode);
  t.mod_ = internal::FastMod64(m);
  // Population (paper, Pseudocode 1), with Envoy's weighting: in round r a node of weight w takes
  // a turn when r * w has reached its target, which then grows by max_weight — so a node of the
  // largest weight fills every round and one of a third of it every third round.
  std::uint64_t filled = 0;
  for (std::uint64_t round = 1; filled < m; ++round) {
    for (Entry& e : entries) {
      if (filled == m) break;
      if (round * e.weight < e.target) continue;
      e.target += max_weight;
      std::uint64_t c = (e.offset + e.next * e.skip) % m;
      while (table[c] != kNoNode) {
        ++e.next;
        c = (e.offset + e.next * e.skip) % m;
      }
      table[c] = e.id;
      ++e.next;
      ++filled;
    }
  }
  t.table_.assign(table.size(), nodes.size(), [&](std::size_t i) { return table[i]; });
  return t;
}

void MaglevTable::pick_batch(std::span<const std::uint64_t> hashes,
                             std::span<NodeId> out) const noexcept {
  constexpr std::size_t kGroup = 16;  // keys whose entries are fetched together
  // A local view (data, size, width), not the members: the stores to out[] are NodeIds and may
  // alias the table's own 32-bit fields, which would be reloaded after every store (measured
  // 1.28x slower at 10,000 nodes).
  const NodeIdsView entries = table_.view();
  const auto* bytes = static_cast<const char*>(entries.data());
  const unsigned width = entries.width();
  const std::uint64_t* h = hashes.data();
  NodeId* o = out.data();
  const std::size_t n = hashes.size();
  const std::size_t full = n - n % kGroup;
  for (std::size_t i = 0; i < full; i += kGroup) {
    std::uint64_t at[kGroup];
    for (std::size_t j = 0; j < kGroup; ++j) {
      at[j] = entry_of(h[i + j]);  // the same reduction as pick()
      __builtin_prefetch(bytes + at[j] * width);
    }
    for (std::size_t j = 0; j < kGroup; ++j) o[i + j] = entries[at[j]];
  }
  for (std::size_t i = full; i < n; ++i) o[i] = entries[entry_of(h[i])];
}

}  // namespace chash
