// SPDX-License-Identifier: Apache-2.0
// chash-proxy — shard Redis keys across servers as nutcracker does, with reload, health checks
// and metrics. See docs/PROXY.md.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "chash/version.h"
#include "config/config.h"
#include "core/log.h"
#include "core/proxy.h"

namespace {

constexpr const char* kUsage =
    "usage: chash-proxy -c CONFIG [--check] [--workers N] [--log-level debug|info|warn|error]\n"
    "\n"
    "  -c, --conf-file FILE   nutcracker.yml-compatible pools (docs/PROXY.md)\n"
    "  -t, --check            validate the config (parse + build every router) and exit\n"
    "  -w, --workers N        worker threads (default: chash_proxy.workers, else one per core)\n"
    "  -v, --log-level LEVEL  debug, info (default), warn, error\n"
    "      --handover-socket PATH  serve PATH, from which a newer chash-proxy takes the\n"
    "                         listening sockets (binary upgrade without a dropped connection)\n"
    "      --takeover         start by taking the sockets from the chash-proxy serving\n"
    "                         --handover-socket; it then drains and exits\n"
    "  -h, --help             this text\n"
    "      --version          print the version (chash-proxy " CHASH_VERSION_STRING
    ") and exit\n"
    "\n"
    "Signals: SIGHUP reloads the config; SIGINT/SIGTERM drain (chash_proxy.drain_timeout) and\n"
    "stop, a second one stops at once. Exit codes: 0 ok, 1 bad config or\n"
    "cannot listen, 2 usage error.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  bool check = false;
  unsigned workers = 0;
  std::string handover_socket;
  bool takeover = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "chash-proxy: %s needs a value\n%s", what, kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::puts("chash-proxy " CHASH_VERSION_STRING);
      return 0;
    } else if (a == "-c" || a == "--conf-file" || a == "--config") {
      path = value("-c");
    } else if (a == "-t" || a == "--check" || a == "--test-conf") {
      check = true;
    } else if (a == "--handover-socket") {
      handover_socket = value("--handover-socket");
    } else if (a == "--takeover") {
      takeover = true;
    } else if (a == "-w" || a == "--workers") {
      const std::string v = value("--workers");
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n == 0 || n > 1024) {
        std::fprintf(stderr, "chash-proxy: --workers takes 1..1024, got '%s'\n", v.c_str());
        return 2;
      }
      workers = static_cast<unsigned>(n);
    } else if (a == "-v" || a == "--log-level") {
      const std::string v = value("--log-level");
      using chash::proxy::LogLevel;
      if (v == "debug") chash::proxy::set_log_level(LogLevel::kDebug);
      else if (v == "info") chash::proxy::set_log_level(LogLevel::kInfo);
      else if (v == "warn") chash::proxy::set_log_level(LogLevel::kWarn);
      else if (v == "error") chash::proxy::set_log_level(LogLevel::kError);
      else {
        std::fprintf(stderr, "chash-proxy: unknown log level '%s'\n", v.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "chash-proxy: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "chash-proxy: -c CONFIG is required\n%s", kUsage);
    return 2;
  }
  chash::proxy::ProxyConfig config;
  try {
    config = chash::proxy::load_config(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chash-proxy: %s\n", e.what());
    return 1;
  }
  if (check) {
    std::printf("chash-proxy: %s: ok (%zu pool%s)\n", path.c_str(), config.pools.size(),
                config.pools.size() == 1 ? "" : "s");
    return 0;
  }
  ::signal(SIGPIPE, SIG_IGN);
  try {
    chash::proxy::ProxyOptions options;
    options.config_path = path;
    options.handle_signals = true;
    options.workers = workers;
    options.handover_socket = handover_socket;
    options.takeover = takeover;
    chash::proxy::Proxy proxy(std::move(config), std::move(options));
    proxy.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chash-proxy: %s\n", e.what());
    return 1;
  }
  return 0;
}
