// SPDX-License-Identifier: Apache-2.0
// A pool's `acl:` lines are input from outside (the config file): any bytes must build users or
// be refused with AclError — never a crash, a hang or another exception. The users built are then
// asked what the proxy asks per request (AUTH, a command with arguments made from the input, for
// every selector), and every pattern is matched against a key made from the input (the glob must
// stay O(|p| * |s|)).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
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
    // Arguments for commands whose keys are found in every way Redis finds them: by index,
    // keyword, numkeys, and from the arguments (SET ... GET, BITFIELD, SORT ... STORE).
    std::vector<std::string_view> words;
    for (std::size_t i = 0; i < key.size() && words.size() < 16;) {
      const std::size_t sp = key.find(' ', i);
      words.push_back(std::string_view(key).substr(i, sp == std::string::npos ? sp : sp - i));
      if (sp == std::string::npos) break;
      i = sp + 1;
    }
    namespace r = chash::proxy::redis;
    for (const auto& u : acl->users()) {
      (void)acl->authenticate(u.name, key);
      // Containers too: their subcommand (argv[1]) is resolved and checked with its own keys.
      for (const char* name : {"get", "set", "bitfield", "sort", "sort_ro", "eval", "zunionstore",
                               "migrate", "xread", "lmove", "mset", "config", "object", "xinfo",
                               "xgroup", "client", "memory"}) {
        std::vector<std::string_view> argv{name};
        argv.insert(argv.end(), words.begin(), words.end());
        const r::AclArgSpan args(argv);
        const int index = r::acl_command_index(name);
        (void)r::acl_check(u, index, args);
        (void)r::acl_sort_denial(u, index, args);
        const int sub = r::acl_resolve_index(index, args);
        for (const auto& [pos, perms] : r::acl_keys(sub >= 0 ? sub : index, args)) {
          if (pos >= argv.size()) __builtin_trap();  // a key outside the arguments
          (void)perms;
        }
      }
      (void)r::acl_script_allowed(u);
      for (const auto& p : u.key_patterns) (void)r::glob_match(p.glob, key);
      for (const auto& s : u.selectors) {
        for (const auto& p : s.key_patterns) (void)r::glob_match(p.glob, key);
      }
    }
  } catch (const chash::proxy::redis::AclError&) {
    // refused, with a reason: fine
  }
  return 0;
}
