// SPDX-License-Identifier: Apache-2.0
// chash detect — which mapping put these keys where they are: given observed placements (a file
// of key<TAB>node lines, or the keys live Redis and memcached nodes hold), search every preset
// and option, native algorithm and ring family for the routing that reproduces them
// (detect_search.h), and print the best with their agreement — or say that none reaches the
// threshold (exit code 3).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "chash/error.h"
#include "detect_search.h"
#include "observations.h"
#include "report.h"
#include "scan.h"

namespace chash::cli {

namespace {

// Search time grows with the node count (every candidate ring has points per node): about 8 s
// for 100 nodes, minutes for 1,000. More is almost surely swapped columns.
constexpr std::size_t kMaxDetectNodes = 1000;

struct DetectArgs {
  std::string observed;
  std::vector<std::string> redis, memcached;
  NodesArg nodes;
  std::uint64_t max_keys = 100000;
  double timeout = 5;
  double threshold = 0.99;
  std::size_t top = 5;
  Format format = Format::kTable;
};

// 20000 -> "20,000".
std::string thousands(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (std::size_t i = s.size(); i > 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

// An argument as a POSIX shell reads it back: bare when it is plain, else in single quotes.
std::string shell_word(const std::string& a) {
  const bool plain = !a.empty() && a.find_first_not_of(
                                       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789_-.,:/=@%+") == std::string::npos;
  if (plain) return a;
  std::string q = "'";
  for (const char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_line(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ' ';
    s += shell_word(a);
  }
  return s;
}

// Observations gathered live: --max-keys split evenly over the servers.
Observations scan_servers(const DetectArgs& a, std::vector<Node>& scanned) {
  std::vector<ScanTarget> targets;
  for (const auto& r : a.redis) {
    targets.push_back(parse_scan_target(r, ScanTarget::Kind::kRedis, "--redis"));
  }
  for (const auto& m : a.memcached) {
    targets.push_back(parse_scan_target(m, ScanTarget::Kind::kMemcached, "--memcached"));
  }
  std::set<std::string> names;
  for (const auto& t : targets) {
    if (!names.insert(t.name).second) {
      throw Error(ErrorCode::kDuplicateNode,
                  "node \"" + t.name + "\" is scanned twice (--redis/--memcached)");
    }
    scanned.push_back({t.name, 1});
  }
  const std::uint64_t per = std::max<std::uint64_t>(1, a.max_keys / targets.size());
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(a.timeout * 1000));
  Observations obs;
  for (const auto& t : targets) {
    auto keys = scan_keys(t, per, timeout);
    obs.truncated = obs.truncated || keys.size() == per;  // there may be more
    for (auto& key : keys) obs.add(std::move(key), t.name);
  }
  if (obs.size() == 0) {
    throw Error(ErrorCode::kInvalidArgument, "no keys on the scanned servers: nothing to detect");
  }
  return obs;
}

void print_table(const DetectArgs& a, const DetectResult& r, const std::vector<Node>& nodes,
                 std::uint64_t keys, bool truncated, bool order_given, double seconds,
                 bool matched) {
  const std::size_t servers = std::max<std::size_t>(1, a.redis.size() + a.memcached.size());
  Out out;
  out.put("detect: " + thousands(keys) + " observations on " + thousands(nodes.size()) +
          (nodes.size() == 1 ? " node; " : " nodes; ") + thousands(r.candidates) +
          " candidates searched (" + thousands(r.ruled_out) + " ruled out by key order) in " +
          fixed(seconds, 2) + " s\n");
  if (truncated && a.observed.empty()) {
    out.put("note: read at most " + thousands(std::max<std::uint64_t>(1, a.max_keys / servers)) +
            " keys per server (--max-keys " + thousands(a.max_keys) +
            " split over the servers); some servers hold more\n");
  } else if (truncated) {
    out.put("note: stopped reading at --max-keys " + thousands(a.max_keys) + " observations\n");
  }
  if (!order_given && nodes.size() > 1) {
    out.put(
        "note: node order guessed (sorted by name); give --nodes or --nodes-file in "
        "configuration order, or order-sensitive mappings (modulo, jump, guava, maglev, "
        "redis-cluster, ...) may not be recognised\n");
  }
  if (!matched) {
    const DetectMatch& b = r.best.front();
    out.put("no mapping reproduces these placements (best: " +
            command_line(route_args(b.candidate.spec)) + " " + percent(b.agreement()) +
            "); closest:\n");
  }
  out.put("\n");
  std::vector<std::string> lines;
  std::size_t width = 0;
  for (const auto& m : r.best) {
    lines.push_back(command_line(route_args(m.candidate.spec)));
    width = std::max(width, lines.back().size());
  }
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    const std::string pct = percent(r.best[i].agreement());
    out.put(lines[i] + std::string(width - lines[i].size() + 2 + 7 - pct.size(), ' ') + pct +
            " of " + thousands(r.best[i].keys) + " keys\n");
  }
  if (matched && r.tied_with_best > 1) {
    out.put("\nnote: " + std::string(r.tied_exact ? "" : "at least ") +
            thousands(r.tied_with_best) +
            " candidates reproduce these placements equally well (the simplest first): these "
            "observations cannot tell them apart\n");
  }
  if (!r.inapplicable.empty()) {
    std::string names;
    for (const auto& why : r.inapplicable) {
      if (!names.empty()) names += ", ";
      names += why.substr(0, why.find(':'));
    }
    out.put("\npresets that refuse these nodes: " + names + "\n");
  }
}

void print_json(const DetectResult& r) {
  Json list = Json::array();
  for (const auto& m : r.best) {
    Json j;
    j["route_args"] = route_args(m.candidate.spec);
    j["agreement"] = m.agreement();
    j["keys"] = m.keys;
    list.push_back(std::move(j));
  }
  Out out;
  out.put(list.dump(2) + "\n");
}

void run_detect(const DetectArgs& a) {
  const bool live = !a.redis.empty() || !a.memcached.empty();
  if (live == !a.observed.empty()) {
    throw CLI::ValidationError("detect",
                               "give the observations: --observed FILE, or --redis/--memcached");
  }
  if (!a.nodes.nodes.empty() && !a.nodes.nodes_file.empty()) {
    throw CLI::ValidationError("detect", "give at most one of --nodes and --nodes-file");
  }
  if (a.max_keys == 0) throw Error(ErrorCode::kInvalidArgument, "--max-keys must be at least 1");
  if (!(a.timeout > 0 && a.timeout <= 3600)) {
    throw Error(ErrorCode::kInvalidArgument, "--timeout must be in (0, 3600] seconds");
  }
  if (!(a.threshold > 0 && a.threshold <= 1)) {
    throw Error(ErrorCode::kInvalidArgument, "--threshold must be in (0, 1], e.g. 0.99");
  }
  if (a.top == 0 || a.top > 1000) {
    throw Error(ErrorCode::kInvalidArgument, "--top must be 1..1000");
  }
  std::vector<Node> scanned;
  Observations obs = live ? scan_servers(a, scanned) : read_observations(a.observed, a.max_keys);
  const bool order_given = !a.nodes.nodes.empty() || !a.nodes.nodes_file.empty();
  std::vector<Node> nodes;
  if (order_given) {
    nodes = a.nodes.load();
  } else if (live) {
    nodes = std::move(scanned);
    std::sort(nodes.begin(), nodes.end(),
              [](const Node& x, const Node& y) { return x.name < y.name; });
  } else {
    nodes = nodes_seen(obs);
  }
  validate_nodes(nodes);
  if (nodes.size() > kMaxDetectNodes) {
    throw Error(ErrorCode::kLimitExceeded,
                thousands(nodes.size()) + " nodes: detect searches at most " +
                    thousands(kMaxDetectNodes) +
                    " (its time grows with the node count; are the lines KEY<TAB>NODE, key "
                    "first?)");
  }
  const bool truncated = obs.truncated;
  const ObservedPlacement placed = place_observations(std::move(obs), nodes);

  const auto t0 = std::chrono::steady_clock::now();
  DetectOptions o;
  o.threshold = a.threshold;
  o.top = a.top;
  const DetectResult r = detect(nodes, placed, o);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const bool matched = !r.best.empty() && r.best.front().agreement() >= a.threshold;
  if (a.format == Format::kJson) {
    print_json(r);
  } else {
    print_table(a, r, nodes, placed.keys.size(), truncated, order_given, seconds, matched);
  }
  if (!matched) {
    if (a.format == Format::kJson) {
      const DetectMatch& b = r.best.front();
      std::fprintf(stderr, "chash: no mapping reproduces these placements (best: %s %s)\n",
                   command_line(route_args(b.candidate.spec)).c_str(),
                   percent(b.agreement()).c_str());
    }
    throw ExitWith{kExitNoMatch};
  }
}

}  // namespace

void add_detect(CLI::App& app) {
  auto args = std::make_shared<DetectArgs>();
  auto* sub = app.add_subcommand(
      "detect",
      "Which mapping put these keys where they are: search every preset (with each hash and "
      "vnodes option), native algorithm (each key hash, ring vnodes and point formats) and ring "
      "family for the routing that reproduces observed placements, and print the best with "
      "their agreement, each as the `chash route` arguments that reproduce it. Exit code 3 when "
      "none reaches --threshold.");
  sub->add_option("--observed", args->observed,
                  "Observations: one KEY<TAB>NODE per line (the key is every byte before the "
                  "line's last tab); '-' reads stdin");
  sub->add_option("--redis", args->redis,
                  "Scan a Redis node (SCAN, database 0): NAME=HOST:PORT, NAME as the mapping "
                  "names the node (default HOST:PORT) (repeatable)")
      ->type_name("[NAME=]HOST:PORT");
  sub->add_option("--memcached", args->memcached,
                  "Scan a memcached node (lru_crawler metadump all), as --redis (repeatable)")
      ->type_name("[NAME=]HOST:PORT");
  sub->add_option("--nodes-file", args->nodes.nodes_file,
                  "The node list in configuration order: 'NAME [WEIGHT]' per line (default: the "
                  "nodes seen, sorted by name — order-sensitive mappings may then be missed)");
  sub->add_option("--nodes", args->nodes.nodes, "The node list in configuration order, A,B,C");
  sub->add_option("--max-keys", args->max_keys,
                  "Read at most N observations (live: N in all, split evenly over the servers; "
                  "default 100000)");
  sub->add_option("--timeout", args->timeout,
                  "Seconds to wait for a connect or a reply from a server (default 5)");
  sub->add_option("--threshold", args->threshold,
                  "Agreement a mapping needs to count as a match, 0..1 (default 0.99)");
  sub->add_option("--top", args->top, "How many candidates to print (default 5)");
  add_format_option(sub, args->format, {{"table", Format::kTable}, {"json", Format::kJson}},
                    "table (default) or json (a list, best first, of {route_args, agreement, "
                    "keys})");
  sub->callback([args] { run_detect(*args); });
}

}  // namespace chash::cli
