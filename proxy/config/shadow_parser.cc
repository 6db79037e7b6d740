// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a memcache pool's `shadow:` (docs/MEMCACHED.md "Shadow route"):
//   shadow:
//     pool: canary           # another memcache pool of this config
//     fraction: 0.1          # of keys, by shadow_key_point(); or [0.1, 0.2] (a range)
//     # sample: 0.01         # or of requests, at random
//     commands: all          # all | reads | writes
#include <cmath>
#include <cstdlib>

#include "chash/hash.h"
#include "config/parse_util.h"

namespace chash::proxy {

const char* shadow_commands_name(ShadowCommands c) noexcept {
  switch (c) {
    case ShadowCommands::kAll:
      return "all";
    case ShadowCommands::kReads:
      return "reads";
    case ShadowCommands::kWrites:
      return "writes";
  }
  return "all";
}

double shadow_key_point(std::string_view key) noexcept {
  // The top 53 bits as a double in [0, 1): exact, and 1.0 is never reached.
  return static_cast<double>(chash::hash::xxh3_64(key, kShadowSeed) >> 11) * 0x1p-53;
}

}  // namespace chash::proxy

namespace chash::proxy::config_detail {

namespace {

constexpr std::string_view kShadowKeys[] = {"pool", "fraction", "sample", "commands"};

// A number in [lo, hi] (both ends allowed unless open_lo), as a YAML scalar.
double fraction_value(const Ctx& ctx, const YAML::Node& n, const std::string& where,
                      std::string_view key, bool open_lo) {
  const std::string s = ctx.scalar(n, key);
  char* end = nullptr;
  const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v > 1 ||
      (open_lo ? v <= 0 : v < 0)) {
    fail_at(ctx.source, line_of(n),
            where + ": shadow " + std::string(key) + " must be a number " +
                (open_lo ? "above 0" : "from 0") + " up to 1, got '" + s.substr(0, 40) + "'");
  }
  return v;
}

}  // namespace

ShadowConfig parse_shadow(const Ctx& ctx, const YAML::Node& v, const std::string& where) {
  if (!v.IsMap()) {
    fail_at(ctx.source, line_of(v),
            where + ": 'shadow' must be a map {pool: <memcache pool>, fraction or sample, "
                    "commands}");
  }
  ShadowConfig s;
  std::optional<int> fraction_line, sample_line;
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    const int line = line_of(kv.first);
    const YAML::Node& n = kv.second;
    if (k == "pool") {
      s.pool = ctx.scalar(n, "shadow pool");
      s.pool_line = line;
    } else if (k == "fraction") {
      fraction_line = line;
      if (n.IsSequence()) {
        // mcrouter's key_fraction_range: the keys whose point is in [from, to).
        if (n.size() != 2) {
          fail_at(ctx.source, line,
                  where + ": shadow fraction as a range is [from, to], two numbers");
        }
        s.from = fraction_value(ctx, n[0], where, "fraction", false);
        s.to = fraction_value(ctx, n[1], where, "fraction", true);
        if (s.from >= s.to) {
          fail_at(ctx.source, line,
                  where + ": shadow fraction range [from, to] needs from below to");
        }
      } else {
        s.from = 0;
        s.to = fraction_value(ctx, n, where, "fraction", true);
      }
    } else if (k == "sample") {
      sample_line = line;
      s.sample = fraction_value(ctx, n, where, "sample", true);
    } else if (k == "commands") {
      const std::string t = ctx.scalar(n, "shadow commands");
      if (t == "all") {
        s.commands = ShadowCommands::kAll;
      } else if (t == "reads") {
        s.commands = ShadowCommands::kReads;
      } else if (t == "writes") {
        s.commands = ShadowCommands::kWrites;
      } else {
        fail_at(ctx.source, line,
                where + ": unknown shadow commands '" + t.substr(0, 40) + "' (all, reads, writes)");
      }
    } else {
      std::vector<std::string_view> all(std::begin(kShadowKeys), std::end(kShadowKeys));
      fail_at(ctx.source, line, where + ": unknown shadow key '" + k + "'" + suggest(k, all));
    }
  }
  if (fraction_line && sample_line) {
    fail_at(ctx.source, *sample_line,
            where + ": shadow takes 'fraction' (of keys) or 'sample' (of requests), not both");
  }
  if (s.pool.empty()) {
    fail_at(ctx.source, line_of(v),
            where + ": shadow needs 'pool': the memcache pool the copies go to");
  }
  return s;
}

}  // namespace chash::proxy::config_detail

namespace chash::proxy {

void check_shadows(const ProxyConfig& config) {
  using config_detail::fail_at;
  for (const PoolConfig& p : config.pools) {
    if (!p.shadow) continue;
    const ShadowConfig& s = *p.shadow;
    if (p.protocol != PoolProtocol::kMemcache) {
      fail_at(config.source, s.line,
              "pool '" + p.name + "': 'shadow' applies to memcache pools only (this one is " +
                  protocol_name(p.protocol) + ")");
    }
    config_detail::named_memcache_pool(config, p, s.pool, s.pool_line, "shadow pool");
  }
}

}  // namespace chash::proxy
