// SPDX-License-Identifier: Apache-2.0
// chash — the command-line tool: route keys, analyse balance, plan migrations, sweep parameters,
// benchmark, draw pictures, detect the mapping behind live placements. `chash --help` lists the
// subcommands, `chash CMD --help` each one.
#include <cstdio>
#include <exception>

#include "chash/error.h"
#include "chash/version.h"
#include "commands.h"

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
    app.exit(e);  // prints the message
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
