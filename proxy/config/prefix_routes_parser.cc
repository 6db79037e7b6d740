// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a memcache pool's `prefix_routes:` (docs/MEMCACHED.md "Prefix routes"):
//   prefix_routes:
//     "user:": users       # a key starting with "user:" goes to pool 'users'
//     "sess:": sessions
// and the pools that `shadow:` and `prefix_routes:` name (named_memcache_pool).
#include <algorithm>

#include "config/parse_util.h"

namespace chash::proxy::config_detail {

std::vector<PrefixRoute> parse_prefix_routes(const Ctx& ctx, const YAML::Node& v,
                                             const std::string& where) {
  if (!v.IsMap() || v.size() == 0) {
    fail_at(ctx.source, line_of(v),
            where + ": 'prefix_routes' must be a map of key prefix to memcache pool, e.g. "
                    "{\"user:\": users}");
  }
  std::vector<PrefixRoute> routes;
  for (const auto& kv : v) {
    PrefixRoute r;
    r.line = line_of(kv.first);
    if (!kv.first.IsScalar() || kv.first.Scalar().empty()) {
      fail_at(ctx.source, r.line, where + ": a prefix_routes prefix must be a non-empty string");
    }
    r.prefix = kv.first.Scalar();
    // A memcached key has no space or control character (text protocol): a prefix with one
    // would match nothing a text client can send.
    if (std::any_of(r.prefix.begin(), r.prefix.end(),
                    [](char c) { return static_cast<unsigned char>(c) <= 32 || c == 127; })) {
      fail_at(ctx.source, r.line,
              where + ": prefix_routes prefix '" + r.prefix.substr(0, 40) +
                  "' has a space or control character, which no memcached key has");
    }
    if (r.prefix.size() > 250) {
      fail_at(ctx.source, r.line,
              where + ": prefix_routes prefix is longer than memcached's 250-byte keys");
    }
    for (const PrefixRoute& o : routes) {
      if (o.prefix == r.prefix) {
        fail_at(ctx.source, r.line,
                where + ": prefix_routes has prefix '" + r.prefix + "' twice (line " +
                    std::to_string(o.line) + ")");
      }
    }
    r.pool = ctx.scalar(kv.second, "prefix_routes pool");
    if (r.pool.empty()) {
      fail_at(ctx.source, r.line,
              where + ": prefix_routes prefix '" + r.prefix + "' needs a pool name");
    }
    routes.push_back(std::move(r));
  }
  return routes;
}

const PoolConfig& named_memcache_pool(const ProxyConfig& config, const PoolConfig& from,
                                      const std::string& name, int line,
                                      const std::string& what) {
  const std::string where = "pool '" + from.name + "'";
  if (name == from.name) {
    fail_at(config.source, line,
            where + ": " + what + " is the pool itself; name another memcache pool");
  }
  const PoolConfig* target = nullptr;
  std::vector<std::string_view> names;
  for (const PoolConfig& q : config.pools) {
    names.push_back(q.name);
    if (q.name == name) target = &q;
  }
  if (target == nullptr) {
    fail_at(config.source, line,
            where + ": " + what + " '" + name + "' is not a pool of this config" +
                suggest(name, names));
  }
  if (target->protocol != PoolProtocol::kMemcache) {
    fail_at(config.source, line,
            where + ": " + what + " '" + name + "' is a " + protocol_name(target->protocol) +
                " pool; memcache requests go to a memcache pool");
  }
  return *target;
}

}  // namespace chash::proxy::config_detail

namespace chash::proxy {

void check_prefix_routes(const ProxyConfig& config) {
  using config_detail::fail_at;
  for (const PoolConfig& p : config.pools) {
    if (p.prefix_routes.empty()) continue;
    if (p.protocol != PoolProtocol::kMemcache) {
      fail_at(config.source, p.prefix_routes_line,
              "pool '" + p.name + "': 'prefix_routes' applies to memcache pools only (this one is " +
                  protocol_name(p.protocol) + ")");
    }
    for (const PrefixRoute& r : p.prefix_routes) {
      const PoolConfig& target =
          config_detail::named_memcache_pool(config, p, r.pool, r.line, "prefix_routes pool");
      // One level: a routed key is placed by the target's own servers, never routed on again
      // (no loops, and one pool's router per key).
      if (!target.prefix_routes.empty()) {
        fail_at(config.source, r.line,
                "pool '" + p.name + "': prefix_routes pool '" + r.pool +
                    "' has prefix_routes of its own; a key is routed by prefix once");
      }
    }
  }
}

}  // namespace chash::proxy
