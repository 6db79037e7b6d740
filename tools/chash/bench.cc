// SPDX-License-Identifier: Apache-2.0
// chash bench — lookup cost for a user's own configuration: ns per lookup (hash + pick, as a
// dependent chain so lookups cannot overlap), pick alone, the key hash alone, pick_batch,
// lookups/s with several threads, build time and memory per table. `make bench` runs the Google
// Benchmark suites; this is the quick answer for "what would my setup cost". Both measure with
// the same kernels (bench_kernels.h beside this file: keys, node names, chain), so the figures
// agree.
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bench_kernels.h"
#include "chash/batch.h"
#include "chash/error.h"
#include "report.h"

namespace chash::cli {

namespace {

struct BenchArgs {
  std::string algos = "modulo,ring,jump,jumpback,memento,rendezvous,maglev,multiprobe,slots";
  std::string preset;
  std::string node_counts = "10,100,1000";
  std::string threads = "1,2";
  std::uint64_t lookups = 2'000'000;
  std::uint32_t key_size = 16;
  std::optional<std::uint32_t> vnodes;
  Format format = Format::kTable;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t c = s.find(',', start);
    if (c == std::string::npos) c = s.size();
    if (c > start) v.push_back(s.substr(start, c - start));
    start = c + 1;
  }
  return v;
}

std::uint64_t to_u64(const std::string& s, const char* what) {
  try {
    std::size_t pos = 0;
    const auto v = std::stoull(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw Error(ErrorCode::kParse, std::string(what) + ": \"" + s + "\" is not a whole number");
  }
}

struct Result {
  std::string name;
  std::uint64_t nodes = 0;
  double build_ms = 0;
  double memory_bytes = 0;
  double ns_hash_pick = 0, ns_pick = 0, ns_hash_only = 0, ns_pick_batch = 0;
  std::vector<std::pair<unsigned, double>> throughput;  // threads -> lookups/s
};

using bench::KeySet;

// Lookups/s summed over `threads` threads, each walking the keys independently (no shared
// writes: the table is read-only).
template <class RouteFn>
double threads_rate(RouteFn&& route, const KeySet& keys, std::uint64_t lookups, unsigned threads) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  std::vector<double> ns(threads);
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      ns[t] = bench::throughput_ns(keys, lookups, std::size_t{t} * 7919, route);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go = true;
  for (auto& th : ts) th.join();
  double total = 0;
  for (double x : ns) total += 1e9 / x;
  return total;
}

void run_bench(const BenchArgs& a) {
  if (a.key_size == 0 || a.key_size > 4096)
    throw Error(ErrorCode::kInvalidArgument, "--key-size must be 1..4096");
  if (a.lookups == 0 || a.lookups > 10'000'000'000ull)
    throw Error(ErrorCode::kInvalidArgument, "--lookups must be 1..1e10");
  std::vector<unsigned> thread_counts;
  for (const auto& t : split_list(a.threads)) {
    const auto v = to_u64(t, "--threads");
    if (v == 0 || v > 256)
      throw Error(ErrorCode::kInvalidArgument, "--threads values must be 1..256");
    thread_counts.push_back(static_cast<unsigned>(v));
  }
  const KeySet keys(bench::kKeyCount, a.key_size);
  std::vector<Result> results;
  const auto names = a.preset.empty() ? split_list(a.algos) : std::vector<std::string>{a.preset};
  const auto counts = split_list(a.node_counts);
  Progress progress("benchmarking", names.size() * counts.size());
  for (const auto& name : names) {
    for (const auto& c : counts) {
      const std::uint64_t n = to_u64(c, "--node-counts");
      if (n == 0 || n > kMaxNodes)
        throw Error(ErrorCode::kInvalidArgument,
                    "--node-counts values must be 1.." + std::to_string(kMaxNodes));
      const std::vector<Node> nodes = bench::make_nodes(n);
      RoutingSpec spec;
      if (a.preset.empty()) spec.algorithm = name;
      else spec.preset = name;
      if (a.vnodes && (name == "ring" || name == "ring64" || !a.preset.empty()))
        spec.vnodes = a.vnodes;
      if (spec.algorithm == "slots" && n > kRedisSlots) continue;
      Result r;
      r.name = name;
      r.nodes = n;
      const auto m0 = mallinfo2().uordblks + mallinfo2().hblkhd;
      const auto t0 = std::chrono::steady_clock::now();
      const Router router = Router::build(spec, nodes);
      r.build_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r.memory_bytes = static_cast<double>(mallinfo2().uordblks + mallinfo2().hblkhd - m0);
      const std::uint64_t lookups =
          spec.algorithm == "rendezvous"
              ? std::max<std::uint64_t>(a.lookups / std::max<std::uint64_t>(n / 10, 1), 1000)
              : a.lookups;
      auto route = [&](std::string_view k) { return router.route(k); };
      if (const AnyTable* t = router.table()) {
        // The table's own type, visited once: what a program using the library pays per key.
        std::vector<std::uint64_t> hs(keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) hs[i] = router.key_hash(keys[i]);
        std::visit(
            [&](const auto& table) {
              r.ns_hash_pick = bench::chain_ns(keys, lookups, [&](std::string_view k) {
                return table.pick(router.key_hash(k));
              });
              r.ns_pick =
                  bench::chain_ns(hs, lookups, [&](std::uint64_t h) { return table.pick(h); });
              std::vector<NodeId> out(1024);
              const std::uint64_t rounds = std::max<std::uint64_t>(lookups / out.size(), 1);
              const auto b0 = std::chrono::steady_clock::now();
              for (std::uint64_t i = 0; i < rounds; ++i) {
                const std::size_t at = (i * out.size()) & (hs.size() - 1);
                pick_batch(table, std::span<const std::uint64_t>(hs.data() + at, out.size()), out);
                bench::keep(out[i & 1023]);
              }
              r.ns_pick_batch =
                  std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - b0)
                      .count() /
                  static_cast<double>(rounds * out.size());
            },
            *t);
        r.ns_hash_only =
            bench::chain_ns(keys, lookups, [&](std::string_view k) { return router.key_hash(k); });
        for (unsigned th : thread_counts) {
          r.throughput.emplace_back(
              th, std::visit(
                      [&](const auto& table) {
                        return threads_rate(
                            [&](std::string_view k) { return table.pick(router.key_hash(k)); },
                            keys, lookups, th);
                      },
                      *t));
        }
      } else {
        r.ns_hash_pick = bench::chain_ns(keys, lookups, route);
        for (unsigned th : thread_counts)
          r.throughput.emplace_back(th, threads_rate(route, keys, lookups, th));
      }
      results.push_back(std::move(r));
      progress.tick();
    }
  }

  Out out;
  if (a.format == Format::kJson) {
    Json arr = Json::array();
    for (const auto& r : results) {
      Json j = {{"name", r.name},
                {"nodes", r.nodes},
                {"build_ms", r.build_ms},
                {"memory_bytes", r.memory_bytes},
                {"ns_per_lookup", r.ns_hash_pick}};
      if (r.ns_pick > 0) j["ns_per_pick"] = r.ns_pick;
      if (r.ns_hash_only > 0) j["ns_hash_only"] = r.ns_hash_only;
      if (r.ns_pick_batch > 0) j["ns_per_pick_batch"] = r.ns_pick_batch;
      Json tp = Json::object();
      for (const auto& [t, v] : r.throughput) tp[std::to_string(t)] = v;
      j["lookups_per_s_by_threads"] = tp;
      arr.push_back(j);
    }
    out.put(Json{{"key_size", a.key_size}, {"results", arr}}.dump(2) + "\n");
    return;
  }
  TextTable t;
  t.header = {"algorithm", "nodes",         "ns/lookup", "ns/pick",
              "ns/hash",   "ns/pick batch", "build ms",  "memory"};
  for (unsigned th : thread_counts) t.header.push_back("Mlookups/s x" + std::to_string(th));
  t.numeric.assign(t.header.size(), true);
  t.numeric[0] = false;
  for (const auto& r : results) {
    std::vector<std::string> row = {r.name,
                                    std::to_string(r.nodes),
                                    fixed(r.ns_hash_pick, 1),
                                    r.ns_pick > 0 ? fixed(r.ns_pick, 1) : "-",
                                    r.ns_hash_only > 0 ? fixed(r.ns_hash_only, 1) : "-",
                                    r.ns_pick_batch > 0 ? fixed(r.ns_pick_batch, 1) : "-",
                                    fixed(r.build_ms, 2),
                                    r.memory_bytes >= 1 << 20
                                        ? fixed(r.memory_bytes / (1 << 20), 1) + " MiB"
                                        : fixed(r.memory_bytes / 1024, 1) + " KiB"};
    for (const auto& [th, v] : r.throughput) row.push_back(fixed(v / 1e6, 1));
    t.add(std::move(row));
  }
  if (a.format == Format::kCsv) {
    out.put(t.csv());
    return;
  }
  out.put(
      "bench: " + std::to_string(a.key_size) + "-byte keys, " + std::to_string(a.lookups) +
      " lookups per measurement (ns/lookup = key hash + pick, chained; ns/pick and ns/hash the\n"
      "two parts alone, chained; ns/pick batch = pick_batch throughput; as bench/ measures "
      "them)\n\n");
  out.put(t.render());
}

}  // namespace

void add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* sub =
      app.add_subcommand("bench",
                         "ns per lookup and lookups/s per algorithm (or a preset) at chosen "
                         "node counts, single and multi-threaded; build time and memory.");
  sub->add_option("--algos", args->algos, "Comma-separated native algorithms (default: all)");
  sub->add_option("--preset", args->preset, "Benchmark a preset instead");
  sub->add_option("--node-counts", args->node_counts,
                  "Comma-separated node counts (default 10,100,1000)");
  sub->add_option("--threads", args->threads, "Comma-separated thread counts (default 1,2)");
  sub->add_option("--lookups", args->lookups, "Lookups per measurement (default 2000000)");
  sub->add_option("--key-size", args->key_size, "Key size in bytes (default 16)");
  sub->add_option("--vnodes", args->vnodes, "Ring vnodes (default 160)");
  add_format_flag(sub, args->format);
  sub->callback([args] { run_bench(*args); });
}

}  // namespace chash::cli
