// SPDX-License-Identifier: Apache-2.0
// The chash side of the peer comparison (bench/peers/run.sh).
//
//   chash_peers gen DIR NODES KEYS   writes DIR/nodes.txt (one name a line, 10.0.x.y:11211) and
//                                    DIR/keys.txt (KEYS 16-byte printable keys, one a line)
//   chash_peers run DIR ROUNDS [NAMES]
//                                    for each preset that has a peer, and each native algorithm,
//                                    prints "chash:<name>\t<ns per lookup>\t<checksum>"; the
//                                    batch rows "chash:<name>(batch)" route kBatch keys per
//                                    route_batch call, presets and native algorithms alike
//                                    (same checksum); NAMES
//                                    (comma-separated) keeps only those presets and algorithms
//                                    (e.g. at a million nodes, where rings and maglev do not fit)
//
// Every program in this folder does the same work on the same files: for key i in order,
// look up its node (the key hash included) and add node_index * (i % 1000 + 1) to a checksum;
// report the least ns per key over ROUNDS passes. Equal checksums show that a preset and its
// peer chose the same node for every key. The jump class (jump, jumpback, memento,
// memento-jumpback) is also timed on its own, "chash:pick(<name>)": the placement of key hashes
// computed before the timed pass, as GuavaBench times Hashing.consistentHash alone.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "chash/batch.h"
#include "chash/chash.h"
#include "chash/preset.h"

namespace chash::bench {
namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> v;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) v.push_back(line);
  }
  return v;
}

struct Pass {
  double ns = 0;
  std::uint64_t checksum = 0;
};

// lookup(i) is the node of key i.
template <class Lookup>
Pass measure(std::size_t count, int rounds, Lookup&& lookup) {
  Pass best{1e300, 0};
  for (int r = 0; r < rounds + 1; ++r) {  // the first pass warms the caches
    std::uint64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < count; ++i) sum += std::uint64_t{lookup(i)} * (i % 1000 + 1);
    const auto t1 = std::chrono::steady_clock::now();
    const double ns =
        std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(count);
    if (r > 0 && ns < best.ns) best = {ns, sum};
    keep(sum);
  }
  return best;
}

// Keys per route_batch call in the batch rows: what a bulk user (the CLI, route_many) passes.
constexpr std::size_t kBatch = 1024;

// measure() for a batch lookup: route(keys, out) fills out[i] for a span of keys; the checksum
// is the same sum, so it must equal the one-key row's.
template <class Route>
Pass measure_batch(const std::vector<std::string_view>& keys, int rounds, Route&& route) {
  Pass best{1e300, 0};
  std::vector<NodeId> out(kBatch);
  for (int r = 0; r < rounds + 1; ++r) {
    std::uint64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < keys.size(); i += kBatch) {
      const std::size_t n = std::min(kBatch, keys.size() - i);
      route(std::span<const std::string_view>(keys).subspan(i, n), std::span<NodeId>(out).first(n));
      for (std::size_t k = 0; k < n; ++k) sum += std::uint64_t{out[k]} * ((i + k) % 1000 + 1);
    }
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() /
                      static_cast<double>(keys.size());
    if (r > 0 && ns < best.ns) best = {ns, sum};
    keep(sum);
  }
  return best;
}

template <class Lookup>
Pass measure(const std::vector<std::string_view>& keys, int rounds, Lookup&& lookup) {
  return measure(keys.size(), rounds, [&](std::size_t i) { return lookup(keys[i]); });
}

bool is_jump_class(Algorithm a) {
  return a == Algorithm::kJump || a == Algorithm::kJumpBack || a == Algorithm::kMemento ||
         a == Algorithm::kMementoJumpBack;
}

int run(const std::string& dir, int rounds, const std::string& only) {
  auto wanted = [&](std::string_view name) {
    if (only.empty()) return true;
    const std::string list = "," + only + ",";
    return list.find("," + std::string(name) + ",") != std::string::npos;
  };
  const auto names = read_lines(dir + "/nodes.txt");
  const auto key_lines = read_lines(dir + "/keys.txt");
  std::string buf;
  for (const auto& k : key_lines) buf += k;
  std::vector<std::string_view> keys;
  std::size_t at = 0;
  for (const auto& k : key_lines) {
    keys.emplace_back(buf.data() + at, k.size());
    at += k.size();
  }
  std::vector<Node> nodes;
  for (const auto& n : names) nodes.push_back({n, 1});
  auto print = [](const std::string& name, const Pass& p) {
    std::printf("chash:%s\t%.2f\t%llu\n", name.c_str(), p.ns,
                static_cast<unsigned long long>(p.checksum));
  };
  // Presets with a peer in this folder; groupcache with 50 replicas, as groupcache_bench.go.
  // A preset the peer cannot run at this size (libmemcached: more than 100 servers) is left out.
  for (const char* preset : {"ketama", "guava", "uhashring", "node-hashring", "groupcache"}) {
    if (!wanted(preset)) continue;
    PresetOptions o;
    if (std::string(preset) == "groupcache") o.vnodes = 50;
    std::unique_ptr<Preset> p;
    try {
      p = make_preset(preset, nodes, o);
    } catch (const Error& e) {
      std::fprintf(stderr, "chash_peers: %s left out: %s\n", preset, e.what());
      continue;
    }
    print(preset, measure(keys, rounds, [&](std::string_view k) { return p->route(k); }));
    print(std::string(preset) + "(batch)",
          measure_batch(keys, rounds,
                        [&](std::span<const std::string_view> ks, std::span<NodeId> out) {
                          p->route_batch(ks, out);
                        }));
  }
  std::vector<std::uint64_t> hashes;
  for (const auto k : keys) hashes.push_back(hash::xxh3_64(k));
  for (const Algorithm a : kAllAlgorithms) {
    if (a == Algorithm::kSlots && nodes.size() > 16384) continue;
    if (!wanted(algorithm_name(a))) continue;
    const AnyTable t = build_table(a, nodes);
    std::visit(
        [&](const auto& table) {
          print(std::string(algorithm_name(a)), measure(keys, rounds, [&](std::string_view k) {
                  return table.pick(a == Algorithm::kSlots ? redis_key_slot(k) : hash::xxh3_64(k));
                }));
          if (is_jump_class(a)) {
            print("pick(" + std::string(algorithm_name(a)) + ")",
                  measure(hashes.size(), rounds,
                          [&](std::size_t i) { return table.pick(hashes[i]); }));
          }
        },
        t);
    if (a == Algorithm::kSlots) continue;  // its key hash is CRC16, not route_batch's xxh3
    print(std::string(algorithm_name(a)) + "(batch)",
          measure_batch(keys, rounds,
                        [&](std::span<const std::string_view> ks, std::span<NodeId> out) {
                          route_batch(t, KeyHash::kXxh3, ks, out);
                        }));
  }
  print("hash_only(xxh3)", measure(keys, rounds, [&](std::string_view k) {
          return static_cast<NodeId>(hash::xxh3_64(k) & 1);
        }));
  return 0;
}

int gen(const std::string& dir, std::size_t n, std::size_t count) {
  std::ofstream nodes(dir + "/nodes.txt");
  for (const Node& x : make_nodes(n)) nodes << x.name << "\n";
  std::ofstream keys(dir + "/keys.txt");
  std::size_t pow2 = 1;
  while (pow2 < count) pow2 *= 2;
  const KeySet ks(pow2, 16);
  for (std::size_t i = 0; i < count; ++i) keys << ks[i] << "\n";
  return nodes && keys ? 0 : 1;
}

}  // namespace
}  // namespace chash::bench

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() == 4 && a[0] == "gen")
      return chash::bench::gen(a[1], std::stoul(a[2]), std::stoul(a[3]));
    if ((a.size() == 3 || a.size() == 4) && a[0] == "run")
      return chash::bench::run(a[1], std::stoi(a[2]), a.size() == 4 ? a[3] : "");
    std::cerr << "usage: chash_peers gen DIR NODES KEYS | chash_peers run DIR ROUNDS [NAMES]\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "chash_peers: " << e.what() << "\n";
    return 1;
  }
}
