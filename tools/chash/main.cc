// SPDX-License-Identifier: Apache-2.0
// chash — the command-line tool: route keys, analyse balance, plan migrations, sweep parameters,
// benchmark, draw pictures, detect the mapping behind live placements. `chash --help` lists the
// subcommands, `chash CMD --help` each one.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "chash/error.h"
#include "chash/internal/did_you_mean.h"
#include "chash/version.h"
#include "commands.h"

namespace {

// After a usage error: "did you mean" for a misspelt subcommand (`chash rout`) or long flag
// (`chash route --node a`), from the names the parser knows; empty when nothing is near.
std::string usage_hint(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return {};
  const std::string_view first = argv[1];
  if (first.empty() || first[0] == '-') return {};
  const CLI::App* sub = nullptr;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (s->get_name() == first) sub = s;
    names.push_back(s->get_name());
  }
  if (sub == nullptr) {
    const std::vector<std::string_view> valid(names.begin(), names.end());
    const std::string_view near = chash::internal::nearest_name(first, valid);
    return near.empty() ? std::string()
                        : "chash: unknown subcommand '" + std::string(first) +
                              "' (did you mean '" + std::string(near) + "'?)";
  }
  std::vector<std::string> flags;
  for (const CLI::Option* o : sub->get_options()) {
    for (const std::string& l : o->get_lnames()) flags.push_back("--" + l);
  }
  const std::vector<std::string_view> valid(flags.begin(), flags.end());
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("--")) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(valid.begin(), valid.end(), arg) != valid.end()) continue;
    const std::string_view near = chash::internal::nearest_name(arg, valid);
    if (!near.empty()) {
      return "chash " + std::string(first) + ": unknown option '" + std::string(arg) +
             "' (did you mean '" + std::string(near) + "'?)";
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "chash — consistent hashing: route keys exactly as your clients do, and see what "
      "adding, removing or failing a node will do."};
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success; 1 bad input (unreadable file, invalid node list, a key that cannot "
      "be routed); 2 usage error (unknown flag or subcommand, missing argument); 3 `chash detect` "
      "found no mapping that reproduces the observations.");
  app.set_version_flag("--version", "chash " CHASH_VERSION_STRING);
  chash::cli::add_route(app);
  chash::cli::add_slot(app);
  chash::cli::add_presets(app);
  chash::cli::add_analyze(app);
  chash::cli::add_migrate(app);
  chash::cli::add_sweep(app);
  chash::cli::add_plot(app);
  chash::cli::add_bench(app);
  chash::cli::add_demo(app);
  chash::cli::add_detect(app);
  chash::cli::add_rebalance(app);
  chash::cli::add_fleet(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const chash::cli::ExitWith& e) {
    return e.code;
  } catch (const CLI::ParseError& e) {
    const std::string hint = usage_hint(app, argc, argv);
    if (hint.starts_with("chash: unknown subcommand")) {
      // CLI11 would say "A subcommand is required": the word given is not one.
      std::fprintf(stderr, "%s\nRun with --help for more information.\n", hint.c_str());
      return chash::cli::kExitUsage;
    }
    app.exit(e);  // prints the message
    if (!hint.empty()) std::fprintf(stderr, "%s\n", hint.c_str());
    return chash::cli::kExitUsage;
  } catch (const chash::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "chash: %s\n", e.what());
    return chash::cli::kExitFailure;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "chash: %s\n", e.what());
    return chash::cli::kExitFailure;
  }
  return 0;
}
