// chash bench — lookup cost for a user's own configuration: ns per lookup (hash + pick, as a
// dependent chain so lookups cannot overlap), pick alone, lookups/s with several threads, build
// time and memory per table. `make bench` runs the Google Benchmark suites; this is the quick
// answer for "what would my setup cost".
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "chash/error.h"
#include "report.h"

namespace chash::cli {

namespace {

struct BenchArgs {
  std::string algos = "modulo,ring,jump,memento,rendezvous,maglev,multiprobe,slots";
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
  double ns_hash_pick = 0, ns_pick = 0;
  std::vector<std::pair<unsigned, double>> throughput;  // threads -> lookups/s
};

// Keys of key_size bytes in one contiguous buffer.
std::vector<char> make_keys(std::size_t count, std::uint32_t size) {
  std::vector<char> buf(count * size);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string k = synthetic_key(7, i);
    for (std::uint32_t j = 0; j < size; ++j) buf[i * size + j] = k[j % k.size()] ^ static_cast<char>(j / k.size());
  }
  return buf;
}

template <class RouteFn>
double chain_ns(RouteFn&& route, const std::vector<char>& keys, std::size_t count, std::uint32_t size,
                std::uint64_t lookups) {
  std::size_t idx = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < lookups; ++i) {
    const NodeId id = route(std::string_view(keys.data() + idx * size, size));
    idx = (idx + id + 1) & (count - 1);  // the next key depends on this result
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(lookups);
}

template <class RouteFn>
double threads_rate(RouteFn&& route, const std::vector<char>& keys, std::size_t count, std::uint32_t size,
                    std::uint64_t lookups, unsigned threads) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  std::vector<double> secs(threads);
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      const auto t0 = std::chrono::steady_clock::now();
      std::size_t idx = t * 7919;
      std::uint64_t sink = 0;
      for (std::uint64_t i = 0; i < lookups; ++i) {
        sink += route(std::string_view(keys.data() + (idx & (count - 1)) * size, size));
        ++idx;
      }
      secs[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (sink == 0xFFFFFFFFFFFFull) std::abort();  // keep the loop
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go = true;
  for (auto& th : ts) th.join();
  double total = 0;
  for (double s : secs) total += static_cast<double>(lookups) / s;
  return total;
}

void run_bench(const BenchArgs& a) {
  if (a.key_size == 0 || a.key_size > 4096) throw Error(ErrorCode::kInvalidArgument, "--key-size must be 1..4096");
  if (a.lookups == 0 || a.lookups > 10'000'000'000ull) throw Error(ErrorCode::kInvalidArgument, "--lookups must be 1..1e10");
  std::vector<unsigned> thread_counts;
  for (const auto& t : split_list(a.threads)) {
    const auto v = to_u64(t, "--threads");
    if (v == 0 || v > 256) throw Error(ErrorCode::kInvalidArgument, "--threads values must be 1..256");
    thread_counts.push_back(static_cast<unsigned>(v));
  }
  constexpr std::size_t kKeyCount = 1 << 16;
  const auto keys = make_keys(kKeyCount, a.key_size);
  std::vector<Result> results;
  const auto names = a.preset.empty() ? split_list(a.algos) : std::vector<std::string>{a.preset};
  const auto counts = split_list(a.node_counts);
  Progress progress("benchmarking", names.size() * counts.size());
  for (const auto& name : names) {
    for (const auto& c : counts) {
      const std::uint64_t n = to_u64(c, "--node-counts");
      if (n == 0 || n > kMaxNodes) throw Error(ErrorCode::kInvalidArgument, "--node-counts values must be 1.." + std::to_string(kMaxNodes));
      std::vector<Node> nodes;
      for (std::uint64_t i = 0; i < n; ++i) nodes.push_back({"10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ":11211", 1});
      RoutingSpec spec;
      if (a.preset.empty()) spec.algo = name; else spec.preset = name;
      if (a.vnodes && (name == "ring" || name == "ring64" || !a.preset.empty())) spec.vnodes = a.vnodes;
      if (spec.algo == "slots" && n > kRedisSlots) continue;
      Result r;
      r.name = name;
      r.nodes = n;
      const auto m0 = mallinfo2().uordblks + mallinfo2().hblkhd;
      const auto t0 = std::chrono::steady_clock::now();
      const KeyRouter router = KeyRouter::build(spec, nodes);
      r.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r.memory_bytes = static_cast<double>(mallinfo2().uordblks + mallinfo2().hblkhd - m0);
      auto route = [&](std::string_view k) { return router.route(k); };
      const std::uint64_t lookups = spec.algo == "rendezvous" ? std::max<std::uint64_t>(a.lookups / std::max<std::uint64_t>(n / 10, 1), 1000) : a.lookups;
      r.ns_hash_pick = chain_ns(route, keys, kKeyCount, a.key_size, lookups);
      if (const AnyTable* t = router.table()) {
        std::vector<std::uint64_t> hs(kKeyCount);
        for (std::size_t i = 0; i < kKeyCount; ++i) hs[i] = router.key_hash(std::string_view(keys.data() + i * a.key_size, a.key_size));
        std::size_t idx = 0;
        const auto p0 = std::chrono::steady_clock::now();
        std::visit(
            [&](const auto& table) {
              for (std::uint64_t i = 0; i < lookups; ++i) idx = (idx + table.pick(hs[idx]) + 1) & (kKeyCount - 1);
            },
            *t);
        r.ns_pick = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - p0).count() /
                    static_cast<double>(lookups);
        if (idx == kKeyCount) std::abort();  // keeps the chain observable
      }
      for (unsigned th : thread_counts) r.throughput.emplace_back(th, threads_rate(route, keys, kKeyCount, a.key_size, lookups, th));
      results.push_back(std::move(r));
      progress.tick();
    }
  }

  Out out;
  if (a.format == Format::kJson) {
    Json arr = Json::array();
    for (const auto& r : results) {
      Json j = {{"name", r.name}, {"nodes", r.nodes}, {"build_ms", r.build_ms}, {"memory_bytes", r.memory_bytes},
                {"ns_per_lookup", r.ns_hash_pick}};
      if (r.ns_pick > 0) j["ns_per_pick"] = r.ns_pick;
      Json tp = Json::object();
      for (const auto& [t, v] : r.throughput) tp[std::to_string(t)] = v;
      j["lookups_per_s_by_threads"] = tp;
      arr.push_back(j);
    }
    out.put(Json{{"key_size", a.key_size}, {"results", arr}}.dump(2) + "\n");
    return;
  }
  TextTable t;
  t.header = {"algorithm", "nodes", "ns/lookup", "ns/pick", "build ms", "memory"};
  for (unsigned th : thread_counts) t.header.push_back("Mlookups/s x" + std::to_string(th));
  t.numeric.assign(t.header.size(), true);
  t.numeric[0] = false;
  for (const auto& r : results) {
    std::vector<std::string> row = {r.name, std::to_string(r.nodes), fixed(r.ns_hash_pick, 1),
                                    r.ns_pick > 0 ? fixed(r.ns_pick, 1) : "-", fixed(r.build_ms, 2),
                                    r.memory_bytes >= 1 << 20 ? fixed(r.memory_bytes / (1 << 20), 1) + " MiB"
                                                              : fixed(r.memory_bytes / 1024, 1) + " KiB"};
    for (const auto& [th, v] : r.throughput) row.push_back(fixed(v / 1e6, 1));
    t.add(std::move(row));
  }
  if (a.format == Format::kCsv) {
    out.put(t.csv());
    return;
  }
  out.put("bench: " + std::to_string(a.key_size) + "-byte keys, " + std::to_string(a.lookups) +
          " lookups per measurement (ns/lookup = key hash + pick, chained)\n\n");
  out.put(t.render());
}

}  // namespace

void add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand("bench", "ns per lookup and lookups/s per algorithm (or a preset) at chosen "
                                          "node counts, single and multi-threaded; build time and memory.");
  sub->add_option("--algos", args->algos, "Comma-separated native algorithms (default: all)");
  sub->add_option("--preset", args->preset, "Benchmark a preset instead");
  sub->add_option("--node-counts", args->node_counts, "Comma-separated node counts (default 10,100,1000)");
  sub->add_option("--threads", args->threads, "Comma-separated thread counts (default 1,2)");
  sub->add_option("--lookups", args->lookups, "Lookups per measurement (default 2000000)");
  sub->add_option("--key-size", args->key_size, "Key size in bytes (default 16)");
  sub->add_option("--vnodes", args->vnodes, "Ring vnodes (default 160)");
  add_format_flag(sub, args->format);
  sub->callback([args] { run_bench(*args); });
}

}  // namespace chash::cli
