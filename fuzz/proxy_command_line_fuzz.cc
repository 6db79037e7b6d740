// SPDX-License-Identifier: Apache-2.0
// chash-proxy's command line (nutcracker's flags through getopt_long, numbers, addresses): any
// argument list is parsed or refused with a message — never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "control/command_line.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Arguments are the NUL-separated pieces of the input (at most 32).
  std::vector<std::string> args = {"chash-proxy"};
  std::string cur;
  for (std::size_t i = 0; i < size && args.size() < 32; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty() && args.size() < 32) args.push_back(cur);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  chash::proxy::CommandLine cl;
  std::string error;
  if (chash::proxy::parse_command_line(static_cast<int>(args.size()), argv.data(), cl, error)) {
    chash::proxy::ProxyConfig config;
    chash::proxy::apply_stats_flags(cl, config);
  }
  return 0;
}
