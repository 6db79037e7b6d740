// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what the config parser's sections share (internal to proxy/config/): errors
// that name the file and line, typed scalar readers, "did you mean" suggestions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "chash/error.h"
#include "config/config.h"

namespace chash::proxy::config_detail {

// Throws Error(kParse) "<source>:<line>: <message>".
[[noreturn]] void fail_at(const std::string& source, int line, const std::string& message);

inline int line_of(const YAML::Node& n) { return n.Mark().line + 1; }

// " (did you mean 'x'?)" for the valid key within edit distance 2 of `key`, else "".
std::string suggest(std::string_view key, std::span<const std::string_view> valid);

inline constexpr std::string_view kPoolKeys[] = {
    // nutcracker 0.5.0
    "listen", "hash", "hash_tag", "distribution", "timeout", "backlog", "preconnect", "redis",
    "redis_auth", "redis_db", "server_connections", "auto_eject_hosts", "server_retry_timeout",
    "server_failure_limit", "servers", "client_connections", "tcpkeepalive",
    // chash
    "preset", "algorithm", "vnodes", "client_auth", "server_auth", "max_request_bytes",
    "max_pipeline", "protocol", "max_value_bytes", "balance", "proxy_protocol", "idle_timeout",
    "health_check_interval", "rise", "fall", "hash_balance_factor", "preset_options", "ring", "acl",
    "server_user", "tls", "server_tls", "sentinels", "cluster", "read_policy", "replica_max_lag",
    "cluster_refresh", "cluster_max_redirects", "warmup", "warmup_window", "failover_ttl",
    "failover_invalidate", "failover_track_keys", "failover_overflow", "allow_flushall",
    "allow_config_set", "max_blocked_clients", "client_output_limit",
    "max_own_connections", "membership", "hot_keys", "hot_cache", "hot_reads",
    "replicas", "write_policy", "failover", "shadow", "prefix_routes"};

inline constexpr std::string_view kGlobalKeys[] = {
    "workers", "admin", "admin_auth", "admin_tls", "stats", "stats_interval", "drain_timeout",
    "state_file", "membership"};

inline constexpr std::string_view kGlobalSection = "chash_proxy";

// Typed readers of one YAML scalar; a wrong value fails at its line, naming the key.
struct Ctx {
  const std::string& source;

  std::string scalar(const YAML::Node& n, std::string_view key) const {
    if (!n.IsScalar()) {
      fail_at(source, line_of(n), "'" + std::string(key) + "' must be a single value");
    }
    return n.Scalar();
  }
  template <class T>
  T number(const YAML::Node& n, std::string_view key, T lo, T hi) const {
    const std::string s = scalar(n, key);
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < static_cast<std::uint64_t>(lo) ||
        v > static_cast<std::uint64_t>(hi)) {
      fail_at(source, line_of(n),
              "'" + std::string(key) + "' must be a whole number from " + std::to_string(lo) +
                  " to " + std::to_string(hi) + ", got '" + s.substr(0, 40) + "'");
    }
    return static_cast<T>(v);
  }
  bool boolean(const YAML::Node& n, std::string_view key) const {
    const std::string s = scalar(n, key);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail_at(source, line_of(n),
            "'" + std::string(key) + "' must be true or false, got '" + s.substr(0, 40) + "'");
  }
};

// "host:port:weight [name]" or "/path:weight [name]"; throws Error(kParse) naming `what`.
ServerConfig parse_server(std::string_view text, std::string_view what);

// A pool's `tls:` map (or `admin_tls:`, named by `key`), built into an SSL_CTX
// (config/tls_parser.cc); a file that cannot be used fails at the map's line, naming the file.
std::shared_ptr<const net::TlsContext> parse_tls(const Ctx& ctx, const YAML::Node& v,
                                                 const std::string& where,
                                                 const std::string& key = "tls");
// A `server_tls:` map (a pool's, or a server's over its pool's `base`), built likewise.
std::shared_ptr<const net::TlsContext> parse_server_tls(const Ctx& ctx, const YAML::Node& v,
                                                        const std::string& where,
                                                        const YAML::Node* base = nullptr);

// A `membership:` map (config/membership_parser.cc): `{etcd: [host:port, ...], prefix, id, tls,
// auth, lease_ttl, quorum, health, ...}`; a pool's map is read over `base` (the top-level
// default, key by key). `where` names the section in messages.
std::shared_ptr<const EtcdMembership> parse_membership(const Ctx& ctx, const YAML::Node& v,
                                                       const std::string& where,
                                                       const EtcdMembership* base);

// A pool's `hot_keys:`, `hot_cache:` and `hot_reads:` (config/hot_keys_parser.cc); `where`
// names the pool in messages.
hotkeys::Config parse_hot_keys(const Ctx& ctx, const YAML::Node& v, const std::string& where);
hotkeys::CacheConfig parse_hot_cache(const Ctx& ctx, const YAML::Node& v, const std::string& where);
hotkeys::Reads parse_hot_reads(const Ctx& ctx, const YAML::Node& v, const std::string& where);

// A pool's `shadow:` map {pool, fraction | sample, commands} (config/shadow_parser.cc); the
// pool it names is checked once every pool is known (check_shadows).
ShadowConfig parse_shadow(const Ctx& ctx, const YAML::Node& v, const std::string& where);
// A pool's `prefix_routes:` map {"<prefix>": <pool>, ...} (config/prefix_routes_parser.cc); the
// pools named are checked once every pool is known (check_prefix_routes).
std::vector<PrefixRoute> parse_prefix_routes(const Ctx& ctx, const YAML::Node& v,
                                             const std::string& where);
// The memcache pool `name` of `config` that pool `from`'s `what` names at `line`: another pool,
// of the memcache protocol; throws Error(kParse) at `line` otherwise (shadow, prefix_routes).
const PoolConfig& named_memcache_pool(const ProxyConfig& config, const PoolConfig& from,
                                      const std::string& name, int line, const std::string& what);

// One pool section (`name: body`), checked as a whole; `so_far` holds the pools before it
// (listen addresses must differ).
PoolConfig parse_pool(const Ctx& ctx, const YAML::Node& name, const YAML::Node& body,
                      const ProxyConfig& so_far);

}  // namespace chash::proxy::config_detail
