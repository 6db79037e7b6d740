// SPDX-License-Identifier: Apache-2.0
// chash route / slot / presets — the stable contract users' scripts call.
#include <string>

#include "chash/error.h"
#include "chash/preset.h"
#include "chash/ring_spec.h"
#include "commands.h"

#if CHASH_CLI_FLEET
#include "config/config.h"
#endif

namespace chash::cli {

std::vector<Node> NodesArg::load() const {
  if (!nodes_file.empty()) return read_nodes_file(nodes_file);
  return parse_nodes_list(nodes);
}

void add_routing_flags(CLI::App* sub, RoutingSpec& spec, NodesArg& nodes) {
  auto* preset =
      sub->add_option("--preset", spec.preset, "Route as a peer does (see `chash presets`)");
  auto* algo = sub->add_option("--algo", spec.algorithm,
                               "Native algorithm: modulo, ring, ring64, jump, jumpback, memento, "
                               "memento-jumpback, rendezvous, maglev, multiprobe, slots");
  auto* ring =
      sub->add_option("--ring", spec.ring,
                      "A hand-written ring, exactly: a ring spec such as "
                      "'points={name}_v{i}; vnodes=150; hash=md5-int32' (docs/CLI.md, "
                      "\"Ring specs\"; `chash presets` prints the articles' rings as specs)");
  preset->excludes(algo);
  ring->excludes(preset);
  ring->excludes(algo);
  sub->add_option("--nodes-file", nodes.nodes_file,
                  "Node list: one 'NAME [WEIGHT]' per line; blank lines and # comments ignored");
  // Not CLI::ExistingFile: an unreadable file is bad input (exit 1, docs/CLI.md), not a usage
  // error (2); the reader names the file and the reason.
  sub->add_option("--nodes", nodes.nodes, "Comma-separated node names (weight 1 each)");
  sub->add_option("--hash", spec.hash,
                  "Key hash: the peer's own setting for --preset (e.g. twemproxy's fnv1a_64), or "
                  "one of chash's for --algo (xxh3 default, xxh64, murmur3_32, md5, crc32, ...)");
  sub->add_option("--hash-tag", spec.hash_tag,
                  "Two characters, as twemproxy's hash_tag: hash only the bytes between them");
  sub->add_option("--vnodes", spec.vnodes, "Points / replicas per node (ring: default 160)");
  sub->add_option("--table-size", spec.table_size, "Maglev table size, a prime (default 65537)");
  sub->add_option("--probes", spec.probes, "Multi-probe probes per key (default 21)");
  sub->add_option("--point-format", spec.point_format,
                  "Ring point names, with {name} and {i} (default '{name}#VN{i}')");
  sub->add_option_function<std::vector<std::string>>(
         "--preset-option",
         [&spec](const std::vector<std::string>& items) {
           for (const auto& item : items) {
             const auto eq = item.find('=');
             if (eq == std::string::npos || eq == 0) {
               throw CLI::ValidationError("--preset-option",
                                          "expected KEY=VALUE, got \"" + item.substr(0, 64) + "\"");
             }
             spec.preset_settings.emplace_back(item.substr(0, eq), item.substr(eq + 1));
           }
         },
         "A --preset's own behaviour setting, KEY=VALUE in the peer's spelling (repeatable; e.g. "
         "libmemcached's distribution=CONSISTENT_KETAMA_SPY)")
      ->type_name("KEY=VALUE");
}

void add_balance_flag(CLI::App* sub, RoutingSpec& spec) {
  sub->add_option("--balance-factor", spec.balance_factor,
                  "Bounded loads (HAProxy's and Envoy's hash_balance_factor, a percent >= 100, "
                  "e.g. 125): each key stays assigned, and a node already holding more than "
                  "factor x the average passes the next key to its next choice (0 = off)");
}

void add_key_flags(CLI::App* sub, KeyInput& keys, const char* keys_file_help) {
  sub->add_option("--keys-file", keys.keys_file, keys_file_help);
  sub->add_option("--synthetic", keys.synthetic, "Use N synthetic keys instead of reading any");
  sub->add_option("--seed", keys.seed, "Seed of the synthetic keys (default 1)");
}

CLI::Option* add_format_option(CLI::App* sub, Format& format,
                               std::vector<std::pair<std::string, Format>> choices,
                               const std::string& help) {
  std::string names;
  for (const auto& c : choices) names += (names.empty() ? "" : "|") + c.first;
  return sub
      ->add_option_function<std::string>(
          "--format",
          [&format, choices, names](const std::string& v) {
            for (const auto& [name, f] : choices) {
              if (std::equal(name.begin(), name.end(), v.begin(), v.end(), [](char a, char b) {
                    return a == static_cast<char>(std::tolower(static_cast<unsigned char>(b)));
                  })) {
                format = f;
                return;
              }
            }
            throw CLI::ValidationError("--format", "'" + v.substr(0, 40) + "' is not one of " + names);
          },
          help)
      ->type_name(names);
}

void add_format_flag(CLI::App* sub, Format& format) {
  add_format_option(sub, format,
                    {{"table", Format::kTable}, {"csv", Format::kCsv}, {"json", Format::kJson}},
                    "Output format: table, csv or json");
}

void require_routing(const RoutingSpec& spec, const NodesArg& nodes) {
  if (spec.preset.empty() && spec.algorithm.empty() && !spec.ring) {
    throw CLI::RequiredError("--preset, --algo or --ring");
  }
  if (nodes.nodes_file.empty() == nodes.nodes.empty()) {
    throw CLI::RequiredError("exactly one of --nodes-file and --nodes");
  }
}

namespace {

struct RouteArgs {
  RoutingSpec spec;
  NodesArg nodes;
  KeyInput keys;
  std::uint32_t replicas = 1;
  Format format = Format::kTable;
  std::string nutcracker, pool;  // --nutcracker FILE --pool P
};

// --nutcracker FILE [--pool P]: the pool's routing and servers as chash-proxy reads that file —
// the same parser, so hash, distribution, hash_tag, weights and server names are nutcracker's
// (docs/compat/twemproxy.md) — in place of --preset/--algo/--ring and --nodes/--nodes-file.
void nutcracker_routing(const RouteArgs& a, RoutingSpec& spec, std::vector<Node>& nodes) {
  if (!a.spec.preset.empty() || !a.spec.algorithm.empty() || a.spec.ring ||
      !a.nodes.nodes.empty() || !a.nodes.nodes_file.empty()) {
    throw CLI::ValidationError("--nutcracker",
                               "the file gives the routing and the servers: drop --preset, "
                               "--algo, --ring, --nodes and --nodes-file");
  }
#if CHASH_CLI_FLEET
  const proxy::ProxyConfig config = proxy::load_config(a.nutcracker);
  std::string names;
  for (const proxy::PoolConfig& p : config.pools) names += (names.empty() ? "" : ", ") + p.name;
  const proxy::PoolConfig* pool = nullptr;
  if (a.pool.empty()) {
    if (config.pools.size() != 1) {
      throw Error(ErrorCode::kInvalidArgument, a.nutcracker + " has " +
                                                   std::to_string(config.pools.size()) +
                                                   " pools: name one with --pool (" + names + ")");
    }
    pool = &config.pools.front();
  } else {
    for (const proxy::PoolConfig& p : config.pools) {
      if (p.name == a.pool) pool = &p;
    }
    if (pool == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  a.nutcracker + " has no pool '" + a.pool + "' (its pools: " + names + ")");
    }
  }
  if (pool->is_cluster() || pool->servers.empty()) {
    throw Error(ErrorCode::kUnsupported, "pool '" + pool->name +
                                             "' has no server list to route by (Redis Cluster "
                                             "or Sentinel pools are routed by their servers)");
  }
  spec = pool->routing;
  if (a.spec.balance_factor != 0) spec.balance_factor = a.spec.balance_factor;
  nodes = pool->nodes();
#else
  (void)spec;
  (void)nodes;
  throw Error(ErrorCode::kUnsupported,
              "--nutcracker needs chash-proxy's config reader: this chash was built without it");
#endif
}

void run_route(const RouteArgs& a) {
  RoutingSpec spec = a.spec;
  std::vector<Node> nodes;
  if (!a.nutcracker.empty()) {
    nutcracker_routing(a, spec, nodes);
  } else {
    if (!a.pool.empty()) throw CLI::ValidationError("--pool", "needs --nutcracker FILE");
    require_routing(a.spec, a.nodes);
    nodes = a.nodes.load();
  }
  if (a.replicas == 0) throw Error(ErrorCode::kInvalidArgument, "--replicas must be at least 1");
  if (spec.balance_factor != 0 && a.replicas != 1) {
    throw Error(ErrorCode::kUnsupported, "--balance-factor takes one node per key (no --replicas)");
  }
  const Router router = Router::build(spec, nodes);
  KeySource src(a.keys);
  Out out;
  Progress progress("routing", src.expected());
  if (a.format == Format::kCsv) out.put(a.replicas == 1 ? "key,node\n" : "key,nodes\n");
  std::string line;
  // One output line for `key` routed to ids[0..n), read from line `at` of the input.
  auto emit = [&](std::string_view key, const NodeId* ids, std::size_t n, std::uint64_t at) {
    if (n == 0 || ids[0] == kNoNode) {
      throw Error(ErrorCode::kInvalidArgument,
                  "line " + std::to_string(at) + ": cannot route key \"" +
                      std::string(key.substr(0, 64)) + "\"" +
                      (spec.preset == "nginx-ip-hash" ? " (not an IP address)" : ""));
    }
    line.clear();
    switch (a.format) {
      case Format::kTable:
        for (std::size_t i = 0; i < n; ++i) {
          if (i) line += '\t';
          line += nodes[ids[i]].name;
        }
        break;
      case Format::kCsv:
        line = csv_field(key) + ",";
        {
          std::string names;
          for (std::size_t i = 0; i < n; ++i) {
            if (i) names += ' ';
            names += nodes[ids[i]].name;
          }
          line += csv_field(names);
        }
        break;
      case Format::kJson:
        line = "{\"key\":" + json_string(key) + ",\"node\":" + json_string(nodes[ids[0]].name);
        if (a.replicas > 1) {
          line += ",\"replicas\":[";
          for (std::size_t i = 0; i < n; ++i) {
            if (i) line += ',';
            line += json_string(nodes[ids[i]].name);
          }
          line += ']';
        }
        line += '}';
        break;
    }
    line += '\n';
    out.put(line);
    progress.tick();
  };

  if (spec.balance_factor == 0 && a.replicas == 1) {
    // One owner per key: keys in batches (Router::route_batch overlaps their hashing and lookups).
    constexpr std::size_t kBatch = 256;
    std::string_view keys[kBatch];
    NodeId owners[kBatch];
    // The plain format is a node name a line: each name is kept with its newline and copied
    // straight into the output buffer (a third of the process's time went to building lines).
    std::vector<std::string> name_lines;
    if (a.format == Format::kTable) {
      for (const Node& n : nodes) name_lines.push_back(n.name + '\n');
    }
    for (std::size_t n; (n = src.next_batch(keys)) > 0;) {
      router.route_batch(std::span<const std::string_view>(keys, n), std::span<NodeId>(owners, n));
      const std::uint64_t first_line = src.line() - n + 1;
      for (std::size_t k = 0; k < n; ++k) {
        if (name_lines.empty() || owners[k] == kNoNode) {
          emit(keys[k], &owners[k], 1, first_line + k);
        } else {
          out.put(name_lines[owners[k]]);
        }
      }
      if (!name_lines.empty()) progress.tick(n);
    }
    return;
  }
  std::vector<NodeId> ids(std::min<std::size_t>(a.replicas, nodes.size()));
  // Bounded loads: every key routed so far counts as one unit of load on its node.
  std::vector<std::uint64_t> loads(spec.balance_factor != 0 ? nodes.size() : 0, 0);
  std::string_view key;
  while (src.next(key)) {
    std::size_t n;
    if (spec.balance_factor != 0) {
      ids[0] = router.route_bounded(key, loads);
      if (ids[0] != kNoNode) ++loads[ids[0]];
      n = 1;
    } else {
      n = router.route_n(key, ids);
    }
    emit(key, ids.data(), n, src.line());
  }
}

}  // namespace

void add_route(CLI::App& app) {
  auto args = std::make_shared<RouteArgs>();
  auto* sub = app.add_subcommand(
      "route",
      "Read keys (one per line) and print the node each goes to, one line per key: the node's "
      "name exactly as given (with --replicas R, R names separated by tabs).");
  add_routing_flags(sub, args->spec, args->nodes);
  add_balance_flag(sub, args->spec);
  add_key_flags(sub, args->keys);
  sub->add_option("--replicas", args->replicas,
                  "Print the first R distinct nodes in preference order");
  sub->add_option("--nutcracker", args->nutcracker,
                  "Route as the pool of this nutcracker.yml (or chash-proxy config) does: its "
                  "hash, distribution, hash_tag and servers, read by chash-proxy's parser");
  sub->add_option("--pool", args->pool,
                  "With --nutcracker: the pool (needed when the file has more than one)");
  add_format_option(sub, args->format,
                    {{"table", Format::kTable}, {"csv", Format::kCsv}, {"json", Format::kJson}},
                    "table (default: one line per key, the contract), csv (key,node) or json (one "
                    "object per line)");
  sub->callback([args] { run_route(*args); });
}

void add_slot(CLI::App& app) {
  auto keys = std::make_shared<KeyInput>();
  auto* sub = app.add_subcommand(
      "slot",
      "Read keys and print each one's Redis Cluster hash slot (CRC16 of the key or its "
      "{hash tag}, & 16383), one per line.");
  add_key_flags(sub, *keys);
  sub->callback([keys] {
    KeySource src(*keys);
    Out out;
    std::string_view key;
    while (src.next(key)) {
      out.put(std::to_string(redis_key_slot(key)));
      out.put('\n');
    }
  });
}

void add_presets(CLI::App& app) {
  auto format = std::make_shared<Format>(Format::kTable);
  auto* sub =
      app.add_subcommand("presets", "List the compatibility presets and the peer each matches.");
  add_format_flag(sub, *format);
  sub->callback([format] {
    Out out;
    const auto list = preset_list();
    // The presets that are ring specs (the articles' rings), as `--ring` takes them.
    auto spec_of = [](std::string_view name) {
      const auto spec = preset_ring_spec(name);
      return spec ? to_string(*spec) : std::string();
    };
    switch (*format) {
      case Format::kTable: {
        std::size_t w = 0;
        for (const auto& p : list) w = std::max(w, p.name.size());
        for (const auto& p : list) {
          out.put(p.name);
          out.put(std::string(w + 2 - p.name.size(), ' '));
          out.put(p.peer);
          out.put('\n');
          const std::string spec = spec_of(p.name);
          if (!spec.empty()) out.put(std::string(w + 2, ' ') + "= --ring '" + spec + "'\n");
        }
        break;
      }
      case Format::kCsv:
        out.put("name,peer,ring_spec\n");
        for (const auto& p : list) {
          out.put(csv_field(p.name) + "," + csv_field(p.peer) + "," + csv_field(spec_of(p.name)) +
                  "\n");
        }
        break;
      case Format::kJson: {
        out.put("[");
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (i) out.put(",");
          const std::string spec = spec_of(list[i].name);
          out.put(
              "{\"name\":" + json_string(list[i].name) + ",\"peer\":" + json_string(list[i].peer) +
              ",\"keys_are_addresses\":" + (list[i].keys_are_addresses ? "true" : "false") +
              ",\"ring_spec\":" + (spec.empty() ? std::string("null") : json_string(spec)) + "}");
        }
        out.put("]\n");
        break;
      }
    }
  });
}

}  // namespace chash::cli
