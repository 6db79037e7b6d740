// SPDX-License-Identifier: Apache-2.0
// A pool's `acl:` lines are input from outside (the config file): any bytes must build users or
// be refused with AclError — never a crash, a hang or another exception. The users built are then
// asked what the proxy asks per request (AUTH, a command, a key), and every pattern is matched
// against a key made from the input (the glob must stay O(|p| * |s|)).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/redis/acl.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 8 * 1024) return 0;  // acl lines are short; big inputs only slow the search
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  using chash::proxy::redis::Acl;
  try {
    const auto acl = Acl::build(lines, std::string("pw"));
    const std::string key = lines.empty() ? std::string() : lines.back().substr(0, 256);
    for (const auto& u : acl->users()) {
      (void)acl->authenticate(u.name, key);
      (void)chash::proxy::redis::acl_command_allowed(u,
                                                     chash::proxy::redis::acl_command_index("get"));
      (void)chash::proxy::redis::acl_key_allowed(u, key);
      for (const auto& p : u.key_patterns) (void)chash::proxy::redis::glob_match(p, key);
    }
  } catch (const chash::proxy::redis::AclError&) {
    // refused, with a reason: fine
  }
  return 0;
}
