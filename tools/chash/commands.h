// SPDX-License-Identifier: Apache-2.0
// Subcommands of the chash CLI. Each add_* registers one subcommand on the app; the callbacks
// throw chash::Error for bad input, which main() turns into a message and exit code 1.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "io.h"
#include "nodes.h"

namespace chash::cli {

// Exit codes (documented in --help): 0 success, 1 bad input or runtime failure, 2 usage error,
// 3 `chash detect` found no mapping that reproduces the observations.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoMatch = 3;

// Thrown by a subcommand that has printed its whole answer and ends with a non-zero exit code
// that is not an error (detect: no match); main() returns `code`.
struct ExitWith {
  int code;
};

enum class Format { kTable, kCsv, kJson };

// Flags shared by the subcommands that route keys.
struct NodesArg {
  std::string nodes_file;
  std::string nodes;
  std::vector<Node> load() const;  // throws Error
};

void add_routing_flags(CLI::App* sub, RoutingSpec& spec, NodesArg& nodes);
// --balance-factor (route, analyze: keys are assigned in order and stay assigned).
void add_balance_flag(CLI::App* sub, RoutingSpec& spec);
// Usage error unless exactly one of --preset/--algo and one of --nodes-file/--nodes was given.
void require_routing(const RoutingSpec& spec, const NodesArg& nodes);
// --keys-file, --synthetic, --seed. `keys_file_help`: what --keys-file's default is, when it is
// not plain stdin (sweep and plot: kMeasuredKeysHelp).
void add_key_flags(
    CLI::App* sub, KeyInput& keys,
    const char* keys_file_help = "Read keys from FILE, one per line (default: stdin)");
inline constexpr const char* kMeasuredKeysHelp =
    "Read keys from FILE, one per line (default: stdin when it is a pipe or a file; 100000 "
    "synthetic keys when stdin is a terminal)";
void add_format_flag(CLI::App* sub, Format& format);
// --format taking one of `choices` (any case): shown as "table|csv|json" in --help, refused as
// "--format: 'yaml' is not one of table|csv|json" (not CLI11's enum map text).
CLI::Option* add_format_option(CLI::App* sub, Format& format,
                               std::vector<std::pair<std::string, Format>> choices,
                               const std::string& help);

void add_route(CLI::App& app);
void add_slot(CLI::App& app);
void add_presets(CLI::App& app);
void add_analyze(CLI::App& app);
void add_migrate(CLI::App& app);
void add_sweep(CLI::App& app);
void add_fleet(CLI::App& app);  // fleet.cc: etcd-fed chash-proxy fleets
void add_plot(CLI::App& app);
void add_demo(CLI::App& app);
void add_bench(CLI::App& app);
void add_detect(CLI::App& app);
void add_rebalance(CLI::App& app);

}  // namespace chash::cli
