// SPDX-License-Identifier: Apache-2.0
// chash demo — the scenarios of the articles chash grew from, measured on synthetic keys: modulo
// vs consistent hashing on 4 -> 5 nodes, virtual nodes vs imbalance, weighted nodes, a node
// failing, replicas, and bounded loads under a hot key. Prints a short report and writes the
// plots to a folder.
#include <filesystem>
#include <fstream>

#include "chash/analysis.h"
#include "chash/bounded_load.h"
#include "chash/error.h"
#include "chash/svg.h"
#include "plot.h"
#include "report.h"
#include "sweep.h"

namespace chash::cli {

namespace {

std::vector<Node> cache_nodes(int n) {
  std::vector<Node> v;
  for (int i = 0; i < n; ++i) v.push_back({"cache-" + std::to_string(i), 1});
  return v;
}

struct Demo {
  std::vector<std::uint64_t> hashes;
  std::filesystem::path dir;
  Out out;
  std::vector<std::string> written;

  void save(const std::string& name, const std::string& svg_text) {
    const auto path = dir / name;
    std::ofstream f(path, std::ios::binary);
    f << svg_text;
    if (!f) throw Error(ErrorCode::kInvalidArgument, "cannot write " + path.string());
    written.push_back(path.string());
  }
  void heading(const std::string& s) {
    out.put("\n" + s + "\n" + std::string(s.size(), '-') + "\n");
  }

  void growth() {
    heading("1. Growing a cache cluster from 4 to 5 nodes");
    out.put(
        "With hash % N most keys change owner and the cache empties into the database;\n"
        "consistent hashing moves only the new node's share (optimum 1/5 = 20%).\n\n");
    TextTable t;
    t.header = {"algorithm", "keys moved", "moved/optimum", "max/mean (5 nodes)"};
    t.numeric = {false, true, true, true};
    std::vector<std::string> names;
    std::vector<double> moved;
    for (Algorithm a : {Algorithm::kModulo, Algorithm::kRing, Algorithm::kJump, Algorithm::kMemento,
                        Algorithm::kRendezvous, Algorithm::kMaglev, Algorithm::kMultiProbe}) {
      const auto four = build_table(a, cache_nodes(4));
      const auto five = build_table(a, cache_nodes(5));
      MoveCounter m(cache_nodes(4), cache_nodes(5));
      LoadCounter load(5);
      for (auto h : hashes) {
        const NodeId b = pick(five, h);
        m.add(pick(four, h), b);
        load.add(b);
      }
      const auto s = load_stats(load.counts(), cache_nodes(5));
      t.add({std::string(algorithm_name(a)), percent(m.moved_fraction(), 1),
             fixed(m.moved_fraction() / 0.2, 2), fixed(s.max_over_mean, 3)});
      names.emplace_back(algorithm_name(a));
      moved.push_back(m.moved_fraction());
    }
    out.put(t.render());
    save("algorithms-4-to-5.svg",
         svg::bars("Keys moved when a 5th node joins 4", "keys moved", names, {{"moved", moved}},
                   std::vector<double>(names.size(), 0.2), "optimum (1/5)", true));
    RingOptions few;
    few.vnodes = 8;
    const auto r4 = RingTable::build(cache_nodes(4), few),
               r5 = RingTable::build(cache_nodes(5), few);
    save("ring-4-to-5.svg", svg::table_ring(AnyTable(r5), cache_nodes(5),
                                            "Ring, 8 vnodes each: what cache-4 takes over",
                                            moved_ranges(r4, cache_nodes(4), r5, cache_nodes(5))));
  }

  void vnodes() {
    heading("2. Virtual nodes vs imbalance (ring, 10 nodes)");
    out.put(
        "One point per node is badly skewed. More virtual nodes even the load out: the\n"
        "spread (stddev of load/fair) falls roughly as 1/sqrt(vnodes); the common advice of\n"
        "150-200 leaves it near 8%, with the busiest node at ~1.1-1.15x the mean.\n\n");
    TextTable t;
    t.header = {"vnodes", "max/mean", "stddev", "moved on +1 / optimum", "build ms"};
    t.numeric = {true, true, true, true, true};
    std::vector<double> xs, mm, mv;
    for (std::uint32_t v : {1u, 10u, 50u, 100u, 150u, 200u, 500u, 1000u}) {
      TableOptions opt;
      opt.ring.vnodes = v;
      const SweepPoint p = measure_point(Algorithm::kRing, cache_nodes(10), opt, hashes);
      t.add({std::to_string(v), fixed(p.max_over_mean, 3), fixed(p.stddev, 4),
             fixed(p.moved_on_add / p.optimal_on_add, 2), fixed(p.build_ms, 2)});
      xs.push_back(v);
      mm.push_back(p.max_over_mean);
      mv.push_back(p.moved_on_add / p.optimal_on_add);
    }
    out.put(t.render());
    save(
        "vnodes-sweep.svg",
        svg::lines("Ring with 10 nodes: balance vs virtual nodes", "virtual nodes per node",
                   "ratio", xs, {{"max/mean load", mm}, {"moved on +1 node / optimum", mv}}, true));
    TableOptions four_vn;
    four_vn.ring.vnodes = 4;
    save("ring.svg", svg::table_ring(build_table(Algorithm::kRing, cache_nodes(4), four_vn),
                                     cache_nodes(4), "A ring: 4 nodes x 4 virtual nodes", {}));
  }

  void weighted() {
    heading("3. Weighted nodes (ring, 160 vnodes per unit of weight)");
    out.put("A machine with twice the memory gets twice the points and about twice the keys.\n\n");
    const std::vector<Node> ns = {{"small-1", 1}, {"small-2", 1}, {"medium", 2}, {"large", 4}};
    const auto t = build_table(Algorithm::kRing, ns);
    LoadCounter load(ns.size());
    for (auto h : hashes) load.add(pick(t, h));
    const auto s = load_stats(load.counts(), ns);
    TextTable tt;
    tt.header = {"node", "weight", "share", "fair", "ratio"};
    tt.numeric = {false, true, true, true, true};
    for (std::size_t i = 0; i < ns.size(); ++i) {
      tt.add({ns[i].name, std::to_string(ns[i].weight), percent(s.share[i], 1),
              percent(s.fair_share[i], 1), fixed(s.load_ratio[i], 3)});
    }
    out.put(tt.render());
    save("weighted-load.svg",
         plot_load(s, ns, "Weighted ring: share of keys vs weight-fair share"));
  }

  void failover() {
    heading("4. A node fails (5 nodes, cache-2 down)");
    out.put(
        "The ring sends only cache-2's keys to their next node clockwise; modulo over the\n"
        "4 survivors would move most keys. cache-2's keys come back when it recovers.\n\n");
    Cluster cluster(Algorithm::kRing, cache_nodes(5));
    const auto before = cluster.snapshot();
    cluster.mark_down("cache-2");
    const auto after = cluster.snapshot();
    MoveCounter m(before->nodes(), after->nodes());
    std::uint64_t strays = 0, on_failed = 0;
    for (auto h : hashes) {
      const NodeId a = before->pick(h), b = after->pick(h);
      m.add(a, b);
      strays += a != b && a != 2;
      on_failed += a == 2;
    }
    const auto mod5 = build_table(Algorithm::kModulo, cache_nodes(5));
    auto survivors = cache_nodes(5);
    survivors.erase(survivors.begin() + 2);
    const auto mod4 = build_table(Algorithm::kModulo, survivors);
    MoveCounter mm(cache_nodes(5), survivors);
    for (auto h : hashes) mm.add(pick(mod5, h), pick(mod4, h));
    out.put("ring:   " + percent(m.moved_fraction(), 1) + " of keys moved (cache-2 held " +
            percent(static_cast<double>(on_failed) / static_cast<double>(hashes.size()), 1) +
            "); keys moved that were not on cache-2: " + std::to_string(strays) + "\n");
    out.put("modulo: " + percent(mm.moved_fraction(), 1) + " of keys moved\n");
    out.put("where cache-2's keys went:");
    std::vector<std::string> to;
    std::vector<double> counts;
    for (const auto& [k, v] : m.matrix()) {
      out.put(" " + k.second + " " +
              percent(static_cast<double>(v) / static_cast<double>(m.keys()), 1));
      to.push_back(k.second);
      counts.push_back(static_cast<double>(v) / static_cast<double>(m.keys()));
    }
    out.put("\n");
    save("failover.svg",
         svg::bars("cache-2 fails: where its keys go (share of all keys)", "share of all keys", to,
                   {{"keys taken over", counts}}, {}, {}, true));
  }

  void replicas() {
    heading("5. Replicas: each key written to the next 3 distinct nodes clockwise (ring, 6 nodes)");
    Cluster cluster(Algorithm::kRing, cache_nodes(6));
    std::vector<NodeId> out3(3);
    std::vector<std::uint64_t> primary(6, 0), copies(6, 0);
    std::uint64_t lost = 0;
    cluster.mark_down("cache-1");
    const auto down1 = cluster.snapshot();
    Cluster healthy(Algorithm::kRing, cache_nodes(6));
    const auto snap = healthy.snapshot();
    for (auto h : hashes) {
      snap->pick_n(h, out3);
      ++primary[out3[0]];
      for (NodeId id : out3) ++copies[id];
      // With cache-1 down, the key's first live choice must be one of its replicas.
      const NodeId live = down1->pick(h);
      lost += std::find(out3.begin(), out3.end(), live) == out3.end();
    }
    std::uint64_t mx = 0, mn = ~0ull;
    for (auto c : copies) {
      mx = std::max(mx, c);
      mn = std::min(mn, c);
    }
    out.put("copies per node: min " + std::to_string(mn) + ", max " + std::to_string(mx) + " (of " +
            std::to_string(hashes.size() * 3) + ")\n");
    out.put("with cache-1 down, keys whose new owner holds no replica: " + std::to_string(lost) +
            "\n");
  }

  void bounded() {
    heading("6. Bounded loads under a hot key (ring, 8 nodes, every 10th request is one key)");
    out.put(
        "Consistent hashing alone piles the hot key onto one node; bounded loads (factor\n"
        "1.25, as Envoy's hash_balance_factor / HAProxy's hash-balance-factor 125) caps\n"
        "every node at 1.25x the average and spills the rest to the next choices.\n\n");
    const auto ns = cache_nodes(8);
    const auto t = RingTable::build(ns);
    std::vector<std::uint64_t> plain(8, 0), bounded(8, 0);
    BoundedLoad<RingTable> b(t, ns, 125);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      const std::uint64_t h = i % 10 == 0 ? hashes[0] : hashes[i];
      ++plain[t.pick(h)];
      ++bounded[b.pick(h, bounded, total++)];
    }
    const auto sp = load_stats(plain, ns), sb = load_stats(bounded, ns);
    out.put("max/mean without bounds " + fixed(sp.max_over_mean, 3) +
            ", with factor 125: " + fixed(sb.max_over_mean, 3) + "\n");
    std::vector<std::string> names;
    for (const auto& n : ns) names.push_back(n.name);
    std::vector<double> a, c;
    for (std::size_t i = 0; i < 8; ++i) {
      a.push_back(sp.share[i]);
      c.push_back(sb.share[i]);
    }
    save("bounded-loads.svg",
         svg::bars("A hot key: load per node without and with bounded loads (factor 125)",
                   "share of requests", names, {{"plain ring", a}, {"bounded, 125", c}},
                   std::vector<double>(8, 0.125), "mean", true));
  }
};

struct DemoArgs {
  std::string out_dir = "chash-demo";
  std::uint64_t keys = 200000;
  std::uint64_t seed = 1;
};

void run_demo(const DemoArgs& a) {
  if (a.keys < 1000 || a.keys > 100'000'000)
    throw Error(ErrorCode::kInvalidArgument, "--keys must be 1000..100000000");
  Demo d;
  d.dir = a.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(d.dir, ec);
  if (ec)
    throw Error(ErrorCode::kInvalidArgument, "cannot create " + a.out_dir + ": " + ec.message());
  d.hashes.reserve(a.keys);
  for (std::uint64_t i = 0; i < a.keys; ++i)
    d.hashes.push_back(hash::xxh3_64(synthetic_key(a.seed, i)));
  d.out.put("chash demo: " + std::to_string(a.keys) + " synthetic keys (seed " +
            std::to_string(a.seed) + "), key hash xxh3\n");
  d.growth();
  d.vnodes();
  d.weighted();
  d.failover();
  d.replicas();
  d.bounded();
  d.out.put("\nplots written to " + a.out_dir + "/:\n");
  for (const auto& w : d.written) d.out.put("  " + w + "\n");
}

}  // namespace

void add_demo(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  auto* sub = app.add_subcommand("demo",
                                 "Run the consistent-hashing scenarios on synthetic keys, print a "
                                 "report with measured numbers, and write the plots.");
  sub->add_option("--out-dir", args->out_dir, "Folder for the SVG plots (default ./chash-demo)");
  sub->add_option("--keys", args->keys, "Synthetic keys (default 200000)");
  sub->add_option("--seed", args->seed, "Seed of the synthetic keys (default 1)");
  sub->callback([args] { run_demo(*args); });
}

}  // namespace chash::cli
