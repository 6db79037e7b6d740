// SPDX-License-Identifier: Apache-2.0
// chash-proxy — one pool section of the config: its keys by group (listen, protocol, routing,
// auth, health, tcp, servers), then the checks that need the whole pool. Error texts are part
// of the interface (tests/proxy/config_test.cc checks them).
#include <unordered_map>
#include <algorithm>
#include <optional>
#include <vector>

#include "config/parse_util.h"
#include "membership/fleet/state.h"

namespace chash::proxy::config_detail {

namespace {

// One pool section: its keys are read one by one (each group of keys by one member), then the
// pool is checked as a whole (finish) once every key is known, since keys may come in any order.
class PoolParser {
 public:
  PoolParser(const Ctx& ctx, const YAML::Node& name, const YAML::Node& body)
      : ctx_(ctx), body_(body) {
    p_.name = name.Scalar();
    p_.line = line_of(name);
    where_ = "pool '" + p_.name + "'";
    if (!body.IsMap()) fail_at(ctx_.source, p_.line, where_ + ": expected a map of settings");
  }

  PoolConfig parse(const ProxyConfig& so_far) {
    for (const auto& kv : body_) {
      const std::string k = kv.first.Scalar();
      const int line = line_of(kv.first);
      try {
        if (k == "shadow") {  // a map of its own (config/shadow_parser.cc)
          p_.shadow = parse_shadow(ctx_, kv.second, where_);
          p_.shadow->line = line;
          continue;
        }
        if (k == "prefix_routes") {  // config/prefix_routes_parser.cc
          p_.prefix_routes = parse_prefix_routes(ctx_, kv.second, where_);
          p_.prefix_routes_line = line;
          continue;
        }
        if (!(listen_key(k, kv.second) || protocol_key(k, kv.second, line) ||
              routing_key(k, kv.second, line) || auth_key(k, kv.second) ||
              health_key(k, kv.second) || tcp_key(k, kv.second, line) ||
              servers_key(k, kv.second, line) || sentinels_key(k, kv.second, line) ||
              redis_topology_key(k, kv.second, line) || membership_key(k, kv.second, line) ||
              hot_keys_key(k, kv.second, line) || source_key(k, kv.second, line, so_far))) {
          std::vector<std::string_view> all(std::begin(kPoolKeys), std::end(kPoolKeys));
          fail_at(ctx_.source, line, where_ + ": unknown key '" + k + "'" + suggest(k, all));
        }
      } catch (const Error& e) {
        if (std::string_view(e.what()).starts_with(ctx_.source + ":")) throw;
        fail_at(ctx_.source, line, where_ + ": " + e.what());
      }
    }
    finish_protocol();
    finish_tls();
    finish_sentinels();
    finish_cluster();
    finish_source(so_far);
    finish_routing();
    finish_replicas();
    finish_failover();
    finish_passwords();
    check_builds();
    check_listen_unique(so_far);
    return std::move(p_);
  }

 private:
  // ---- Keys, by section. Each returns false for a key that is not its own. ----

  // Where the pool listens and how it connects.
  bool listen_key(const std::string& k, const YAML::Node& v) {
    if (k == "listen") {
      p_.listen = parse_address(ctx_.scalar(v, k), "listen");
      have_listen_ = true;
    } else if (k == "backlog") {
      p_.backlog = ctx_.number<int>(v, k, 1, 65535);
    } else if (k == "preconnect") {
      p_.preconnect = ctx_.boolean(v, k);
    } else if (k == "tcpkeepalive") {
      p_.tcpkeepalive = ctx_.boolean(v, k);
    } else if (k == "timeout") {
      p_.timeout_ms = ctx_.number<std::uint32_t>(v, k, 1, 3600u * 1000u);
    } else if (k == "server_connections") {
      p_.server_connections = ctx_.number<std::uint32_t>(v, k, 1, 1024);
    } else if (k == "client_connections") {
      p_.client_connections = ctx_.number<std::uint32_t>(v, k, 0, 1u << 24);
    } else {
      return false;
    }
    return true;
  }

  // The protocol and its request bounds.
  bool protocol_key(const std::string& k, const YAML::Node& v, int line) {
    if (k == "redis") {
      redis_flag_ = ctx_.boolean(v, k) ? PoolProtocol::kRedis : PoolProtocol::kMemcache;
    } else if (k == "protocol") {
      const std::string t = ctx_.scalar(v, k);
      if (t == "redis") {
        protocol_ = PoolProtocol::kRedis;
      } else if (t == "memcache" || t == "memcached") {
        protocol_ = PoolProtocol::kMemcache;
      } else if (t == "tcp") {
        protocol_ = PoolProtocol::kTcp;
      } else {
        fail_at(ctx_.source, line,
                where_ + ": unknown protocol '" + t.substr(0, 40) + "' (redis, memcache, tcp)");
      }
    } else if (k == "max_request_bytes") {
      p_.max_request_bytes = ctx_.number<std::size_t>(v, k, 1024, std::size_t{1} << 32);
    } else if (k == "client_output_limit") {
      p_.client_output_limit = ctx_.number<std::size_t>(v, k, 0, std::size_t{1} << 40);
      if (p_.client_output_limit != 0 && p_.client_output_limit < PoolConfig::kMinClientOutputLimit) {
        fail_at(ctx_.source, line,
                where_ + ": client_output_limit must be 0 (no limit) or at least " +
                    std::to_string(PoolConfig::kMinClientOutputLimit) + " bytes");
      }
    } else if (k == "max_pipeline") {
      p_.max_pipeline = ctx_.number<std::size_t>(v, k, 1, 1u << 20);
    } else if (k == "allow_flushall") {
      p_.allow_flushall = ctx_.boolean(v, k);
    } else if (k == "allow_config_set") {
      p_.allow_config_set = ctx_.boolean(v, k);
    } else if (k == "max_own_connections") {
      p_.max_own_connections = ctx_.number<std::uint32_t>(v, k, 0, 1u << 20);
    } else if (k == "max_blocked_clients") {
      p_.max_blocked_clients = ctx_.number<std::uint32_t>(v, k, 0, 1u << 20);
    } else if (k == "max_value_bytes") {
      p_.max_value_bytes = ctx_.number<std::size_t>(v, k, 1, std::size_t{1} << 30);
    } else {
      return false;
    }
    return true;
  }

  // Key -> server: hashing and placement (resolved in finish_routing).
  bool routing_key(const std::string& k, const YAML::Node& v, int line) {
    if (k == "hash") {
      p_.routing.hash = ctx_.scalar(v, k);
    } else if (k == "hash_tag") {
      const std::string t = ctx_.scalar(v, k);
      if (t.size() != 2) {
        fail_at(ctx_.source, line,
                where_ + ": hash_tag must be exactly two characters, e.g. \"{}\"");
      }
      p_.routing.hash_tag = t;
    } else if (k == "distribution") {
      distribution_ = v;
    } else if (k == "preset") {
      preset_ = v;
    } else if (k == "algorithm") {
      algorithm_ = v;
    } else if (k == "ring") {
      // A hand-written ring, exactly (chash/ring_spec.h), e.g. an application's Java TreeMap.
      ring_ = v;
    } else if (k == "vnodes") {
      // 0: only the nodes' own points, for the presets and ring specs that have them.
      p_.routing.vnodes = ctx_.number<std::uint32_t>(v, k, 0, 1u << 16);
    } else if (k == "preset_options") {
      // The preset's own behaviour settings, in the peer's spelling (chash route --preset-option).
      if (!v.IsMap()) {
        fail_at(ctx_.source, line,
                where_ + ": preset_options must be a map, e.g. {distribution: CONSISTENT_KETAMA}");
      }
      for (const auto& kv : v) {
        p_.routing.preset_settings.emplace_back(kv.first.Scalar(),
                                                ctx_.scalar(kv.second, kv.first.Scalar()));
      }
    } else if (k == "hash_balance_factor") {
      // HAProxy's hash-balance-factor / Envoy's hash_balance_factor: a percent of the mean load
      // (include/chash/bounded_load.h); below 100 no backend could take its share.
      p_.hash_balance_factor = ctx_.number<std::uint32_t>(v, k, 0, kMaxBalanceFactor);
      if (p_.hash_balance_factor != 0 && p_.hash_balance_factor < 100) {
        fail_at(ctx_.source, line,
                where_ + ": hash_balance_factor must be 0 (off) or at least 100 " +
                    "(percent of the mean load, e.g. 125), got " +
                    std::to_string(p_.hash_balance_factor));
      }
      hash_balance_factor_line_ = line;
    } else {
      return false;
    }
    return true;
  }

  bool auth_key(const std::string& k, const YAML::Node& v) {
    if (k == "redis_auth") {
      redis_auth_ = ctx_.scalar(v, k);
    } else if (k == "client_auth") {
      client_auth_ = ctx_.scalar(v, k);
    } else if (k == "server_auth") {
      server_auth_ = ctx_.scalar(v, k);
    } else if (k == "server_user") {
      p_.server_user = ctx_.scalar(v, k);
      if (p_.server_user->empty()) fail_at(ctx_.source, line_of(v), where_ + ": empty server_user");
    } else if (k == "acl") {
      // Redis ACL users, one aclfile line per item (proto/redis/acl.h); built in finish_passwords.
      if (!v.IsSequence()) {
        fail_at(ctx_.source, line_of(v),
                where_ +
                    ": 'acl' must be a list of aclfile lines, e.g. - \"user alice on >pw ~app:* " +
                    "+@read\"");
      }
      acl_given_ = true;
      acl_line_ = line_of(v);
      for (const auto& item : v) {
        acl_lines_.push_back(ctx_.scalar(item, "acl"));
        acl_item_lines_.push_back(line_of(item));
      }
    } else if (k == "tls") {
      p_.tls = parse_tls(ctx_, v, where_);
    } else if (k == "server_tls") {
      server_tls_ = v;  // built in finish_tls, with the servers' own server_tls over it
    } else if (k == "redis_db") {
      p_.redis_db = ctx_.number<int>(v, k, 0, 1 << 20);
    } else {
      return false;
    }
    return true;
  }

  // Failure counting, ejection and probes.
  bool health_key(const std::string& k, const YAML::Node& v) {
    if (k == "auto_eject_hosts") {
      p_.auto_eject_hosts = ctx_.boolean(v, k);
    } else if (k == "server_retry_timeout") {
      p_.server_retry_timeout_ms = ctx_.number<std::uint32_t>(v, k, 1, 24u * 3600u * 1000u);
    } else if (k == "server_failure_limit") {
      p_.server_failure_limit = ctx_.number<std::uint32_t>(v, k, 1, 1u << 20);
    } else if (k == "health_check_interval") {
      p_.health_check_interval_ms = ctx_.number<std::uint32_t>(v, k, 0, 3600u * 1000u);
    } else if (k == "rise") {
      p_.rise = ctx_.number<std::uint32_t>(v, k, 1, 1000);
    } else if (k == "fall") {
      fall_ = ctx_.number<std::uint32_t>(v, k, 1, 1000);
    } else {
      return false;
    }
    return true;
  }

  // tcp pools only (checked in finish_protocol).
  bool tcp_key(const std::string& k, const YAML::Node& v, int line) {
    if (k == "balance") {
      const std::string t = ctx_.scalar(v, k);
      balance_line_ = line;
      if (t == "hash") {
        p_.balance = Balance::kHash;
      } else if (t == "ip-hash" || t == "ip_hash") {
        p_.balance = Balance::kIpHash;
      } else if (t == "round-robin" || t == "roundrobin") {
        p_.balance = Balance::kRoundRobin;
      } else if (t == "weighted-round-robin") {
        p_.balance = Balance::kWeightedRoundRobin;
      } else if (t == "least-conn" || t == "leastconn") {
        p_.balance = Balance::kLeastConn;
      } else {
        fail_at(ctx_.source, line,
                where_ + ": unknown balance '" + t.substr(0, 40) +
                    "' (hash, ip-hash, round-robin, weighted-round-robin, least-conn)");
      }
    } else if (k == "proxy_protocol") {
      const std::string t = ctx_.scalar(v, k);
      if (t == "v1" || t == "1") {
        p_.proxy_protocol = ProxyProtocol::kV1;
      } else if (t == "v2" || t == "2") {
        p_.proxy_protocol = ProxyProtocol::kV2;
      } else if (t == "none" || t == "false" || t == "off" || t == "no") {
        p_.proxy_protocol = ProxyProtocol::kNone;
      } else {
        fail_at(ctx_.source, line,
                where_ + ": proxy_protocol must be v1, v2 or none, got '" + t.substr(0, 40) + "'");
      }
    } else if (k == "idle_timeout") {
      p_.idle_timeout_ms = ctx_.number<std::uint32_t>(v, k, 0, 7u * 24u * 3600u * 1000u);
    } else {
      return false;
    }
    return true;
  }

  // `servers:`, a list of "host:port:weight [name]" or maps {server: ..., password: ...}.
  bool servers_key(const std::string& k, const YAML::Node& v, int line) {
    if (k != "servers") return false;
    if (!v.IsSequence() || v.size() == 0) {
      fail_at(ctx_.source, line, where_ + ": 'servers' must be a non-empty list");
    }
    std::unordered_map<std::string, int> lines;  // name -> the line it was given at
    for (const auto& item : v) {
      const int sl = line_of(item);
      ServerConfig s;
      try {
        s = item.IsMap() ? server_map(item, sl)
                         : parse_server(ctx_.scalar(item, "servers"), "server");
      } catch (const Error& e) {
        if (std::string_view(e.what()).starts_with(ctx_.source + ":")) throw;
        fail_at(ctx_.source, sl, where_ + ": " + e.what());
      }
      s.line = sl;
      // Named at its own line, with the first one's (the router would refuse the list later,
      // at the pool's line).
      if (const auto [at, fresh] = lines.emplace(s.name, sl); !fresh) {
        fail_at(ctx_.source, sl,
                where_ + ": server name '" + s.name.substr(0, 80) + "' is given twice (line " +
                    std::to_string(at->second) + " and line " + std::to_string(sl) + ")");
      }
      p_.servers.push_back(std::move(s));
      server_tls_nodes_.push_back(
          item.IsMap() && item["server_tls"] ? std::optional(item["server_tls"]) : std::nullopt);
    }
    have_servers_ = true;
    return true;
  }

  ServerConfig server_map(const YAML::Node& item, int line) {
    std::optional<std::string> spec, password, user, name, master;
    std::optional<std::uint32_t> weight;
    std::vector<Address> replicas;
    for (const auto& skv : item) {
      const std::string sk = skv.first.Scalar();
      if (sk == "server") {
        spec = ctx_.scalar(skv.second, sk);
      } else if (sk == "password") {
        password = ctx_.scalar(skv.second, sk);
      } else if (sk == "user") {
        user = ctx_.scalar(skv.second, sk);
      } else if (sk == "sentinel_master") {
        master = ctx_.scalar(skv.second, sk);
      } else if (sk == "name") {
        name = ctx_.scalar(skv.second, sk);
      } else if (sk == "weight") {
        weight = ctx_.number<std::uint32_t>(skv.second, sk, 1, 1000000);
      } else if (sk == "server_tls") {
        // Read in finish_tls (over the pool's server_tls, which may come later in the file).
      } else if (sk == "replicas") {
        replicas = address_list(skv.second, "replicas", 64);
      } else {
        fail_at(ctx_.source, line_of(skv.first),
                where_ + ": unknown server key '" + sk +
                    "' (server, password, user, sentinel_master, name, weight, server_tls, "
                    "replicas)");
      }
    }
    if (master) {
      // A master group's name goes into SENTINEL commands: one printable word.
      const bool word = !master->empty() && master->size() <= 128 &&
                        std::all_of(master->begin(), master->end(),
                                    [](unsigned char c) { return c > 0x20 && c < 0x7f; });
      if (!word) {
        fail_at(ctx_.source, line,
                where_ + ": 'sentinel_master' must be one printable word of at most 128 bytes");
      }
      if (spec) {
        fail_at(
            ctx_.source, line,
            where_ + ": a server has either 'server' (an address) or 'sentinel_master', not both");
      }
      if (!replicas.empty()) {
        fail_at(ctx_.source, line,
                where_ + ": a sentinel_master's replicas come from its Sentinels; drop 'replicas'");
      }
      ServerConfig s;
      s.sentinel_master = *master;
      s.address = sentinel_placeholder(*master);
      // The name is what the ring hashes: the shard keeps its keys whichever master serves it.
      s.name = name ? *name : *master;
      s.weight = weight.value_or(1);
      s.password = password;
      s.user = user;
      return s;
    }
    if (name || weight) {
      fail_at(ctx_.source, line,
              where_ + ": 'name' and 'weight' belong in the 'server' spec (host:port:weight name)");
    }
    if (!spec) {
      fail_at(
          ctx_.source, line,
          where_ + ": a server map needs 'server: host:port:weight [name]' or 'sentinel_master'");
    }
    ServerConfig s = parse_server(*spec, "server");
    s.password = password;
    s.user = user;
    s.replicas = std::move(replicas);
    return s;
  }

  // A list of 1..max "host:port" (sentinels, cluster seeds, replicas), none twice.
  std::vector<Address> address_list(const YAML::Node& v, std::string_view key, std::size_t max) {
    const std::string k(key);
    if (!v.IsSequence() || v.size() == 0 || v.size() > max) {
      fail_at(
          ctx_.source, line_of(v),
          where_ + ": '" + k + "' must be a list of 1 to " + std::to_string(max) + " host:port");
    }
    std::vector<Address> out;
    for (const auto& item : v) {
      Address a = parse_address(ctx_.scalar(item, key), key);
      if (!a.unix_path.empty() || a.port == 0) {
        fail_at(ctx_.source, line_of(item), where_ + ": " + k + ": expected host:port with a port");
      }
      for (const auto& b : out) {
        if (b.text() == a.text()) {
          fail_at(ctx_.source, line_of(item),
                  where_ + ": " + k + ": " + a.text() + " is listed twice");
        }
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  // `sentinels:`, the Sentinels (host:port) that watch the pool's sentinel_master servers.
  bool sentinels_key(const std::string& k, const YAML::Node& v, int line) {
    if (k != "sentinels") return false;
    if (!v.IsSequence() || v.size() == 0 || v.size() > 64) {
      fail_at(ctx_.source, line, where_ + ": 'sentinels' must be a list of 1 to 64 host:port");
    }
    for (const auto& item : v) {
      Address a = parse_address(ctx_.scalar(item, "sentinels"), "sentinel");
      if (!a.unix_path.empty() || a.port == 0) {
        fail_at(ctx_.source, line_of(item), where_ + ": a sentinel is host:port with a port");
      }
      for (const auto& b : p_.sentinels) {
        if (b.text() == a.text()) {
          fail_at(ctx_.source, line_of(item),
                  where_ + ": sentinel " + a.text() + " is listed twice");
        }
      }
      p_.sentinels.push_back(std::move(a));
    }
    sentinels_line_ = line;
    return true;
  }

  // Redis pools: replica reads and Redis Cluster (checked in finish_cluster).
  bool redis_topology_key(const std::string& k, const YAML::Node& v, int line) {
    if (k == "cluster") {
      p_.cluster_seeds = address_list(v, "cluster", 64);
      cluster_line_ = line;
    } else if (k == "read_policy") {
      const std::string t = ctx_.scalar(v, k);
      if (t == "master") {
        p_.read_policy = ReadPolicy::kMaster;
      } else if (t == "prefer_replica") {
        p_.read_policy = ReadPolicy::kPreferReplica;
      } else if (t == "replica") {
        p_.read_policy = ReadPolicy::kReplica;
      } else if (t == "any") {
        p_.read_policy = ReadPolicy::kAny;
      } else {
        fail_at(ctx_.source, line,
                where_ + ": unknown read_policy '" + t.substr(0, 40) +
                    "' (master, prefer_replica, replica, any)");
      }
      read_policy_line_ = line;
    } else if (k == "replica_max_lag") {
      p_.replica_max_lag_ms = ctx_.number<std::uint32_t>(v, k, 1000, 3600u * 1000u);
    } else if (k == "cluster_refresh") {
      p_.cluster_refresh_ms = ctx_.number<std::uint32_t>(v, k, 100, 3600u * 1000u);
    } else if (k == "cluster_max_redirects") {
      p_.cluster_max_redirects = ctx_.number<std::uint32_t>(v, k, 1, 100);
    } else {
      return false;
    }
    return true;
  }

  // Membership changes: warm-up on resize, safe failover and return (checked in finish_cluster
  // and finish_protocol).
  // `membership:` — where the servers come from: `file`, `etcd` (the top-level map), or a map
  // over the top-level one (config/membership_parser.cc).
  bool source_key(const std::string& k, const YAML::Node& v, int line, const ProxyConfig& so_far) {
    if (k != "membership") return false;
    source_line_ = line;
    if (v.IsScalar() && v.Scalar() == "file") {
      source_file_ = true;
    } else if (v.IsScalar() && v.Scalar() == "etcd") {
      if (!so_far.membership) {
        fail_at(ctx_.source, line,
                where_ + ": 'membership: etcd' needs chash_proxy: membership: {etcd: [...]}");
      }
      p_.etcd = so_far.membership;
    } else if (v.IsMap()) {
      p_.etcd = parse_membership(ctx_, v, where_, so_far.membership.get());
    } else {
      fail_at(ctx_.source, line, where_ + ": 'membership' must be file, etcd or a map {etcd: ...}");
    }
    return true;
  }

  // Plain pools take the top-level membership unless they say `membership: file`; a Redis
  // Cluster and Sentinel-managed servers have their own source of truth.
  void finish_source(const ProxyConfig& so_far) {
    bool own = cluster_line_.has_value();
    for (const auto& s : p_.servers) own |= !s.sentinel_master.empty() || !s.replicas.empty();
    if (own) {
      if (p_.etcd && source_line_) {
        fail_at(ctx_.source, *source_line_,
                where_ +
                    ": a Redis Cluster, Sentinel-managed or replicated servers are not "
                    "taken from etcd; drop 'membership' (or say membership: file)");
      }
      p_.etcd = nullptr;
      return;
    }
    if (!source_line_ && so_far.membership) p_.etcd = so_far.membership;
    if (source_file_) p_.etcd = nullptr;
    if (p_.etcd && !fleet::valid_segment(p_.name)) {
      fail_at(ctx_.source, p_.line,
              where_ + ": a pool taken from etcd needs a name without '/' (it is a key path)");
    }
  }

  // Hot keys (config/hot_keys_parser.cc, docs/HOTKEYS.md).
  bool hot_keys_key(const std::string& k, const YAML::Node& v, int line) {
    if (k == "hot_keys") {
      p_.hot_keys = parse_hot_keys(ctx_, v, where_);
    } else if (k == "hot_cache") {
      p_.hot_cache = parse_hot_cache(ctx_, v, where_);
      if (p_.hot_cache.enabled) hot_relief_line_ = line;
    } else if (k == "hot_reads") {
      p_.hot_reads = parse_hot_reads(ctx_, v, where_);
      if (p_.hot_reads != hotkeys::Reads::kOwner) hot_reads_line_ = line;
    } else {
      return false;
    }
    return true;
  }

  bool membership_key(const std::string& k, const YAML::Node& v, int line) {
    if (k == "warmup") {
      p_.warmup = ctx_.boolean(v, k);
      warmup_line_ = line;
    } else if (k == "warmup_window") {
      p_.warmup_window_ms = ctx_.number<std::uint32_t>(v, k, 1000, 7u * 24u * 3600u * 1000u);
    } else if (k == "failover_ttl") {
      p_.failover_ttl_ms = ctx_.number<std::uint32_t>(v, k, 0, 30u * 24u * 3600u * 1000u);
      failover_line_ = line;
    } else if (k == "failover_invalidate") {
      p_.failover_invalidate = ctx_.boolean(v, k);
      failover_line_ = line;
    } else if (k == "failover_track_keys") {
      p_.failover_track_keys = ctx_.number<std::uint32_t>(v, k, 0, 10000000);
      failover_line_ = line;
    } else if (k == "replicas") {
      p_.replicas = ctx_.number<std::uint32_t>(v, k, 1, kMaxReplicas);
      replicas_line_ = line;
    } else if (k == "write_policy") {
      const std::string t = ctx_.scalar(v, k);
      if (t == "all") {
        p_.write_policy = WritePolicy::kAll;
      } else if (t == "majority") {
        p_.write_policy = WritePolicy::kMajority;
      } else if (t == "one") {
        p_.write_policy = WritePolicy::kOne;
      } else {
        fail_at(ctx_.source, line,
                where_ + ": unknown write_policy '" + t.substr(0, 40) + "' (all, majority, one)");
      }
      write_policy_line_ = line;
    } else if (k == "failover") {
      parse_failover(v, line);
    } else if (k == "failover_overflow") {
      const std::string t = ctx_.scalar(v, k);
      if (t != "flush" && t != "keep_ejected") {
        fail_at(ctx_.source, line,
                where_ + ": failover_overflow must be flush or keep_ejected, got '" +
                    t.substr(0, 40) + "'");
      }
      p_.failover_overflow_flush = t == "flush";
      failover_line_ = line;
    } else {
      return false;
    }
    return true;
  }

  // ---- The pool as a whole ----

  // Required keys, the protocol, and the keys that only some protocols take.
  void finish_protocol() {
    if (!have_listen_) fail_at(ctx_.source, p_.line, where_ + ": 'listen' is required");
    if (!have_servers_ && !cluster_line_) {
      fail_at(ctx_.source, p_.line,
              where_ + ": 'servers' is required (or 'cluster:' seeds for a Redis Cluster)");
    }
    if (redis_flag_ && protocol_ && *redis_flag_ != *protocol_) {
      fail_at(ctx_.source, p_.line, where_ + ": 'redis' and 'protocol' disagree");
    }
    p_.protocol = protocol_ ? *protocol_ : redis_flag_ ? *redis_flag_ : PoolProtocol::kMemcache;
    if (fall_) p_.server_failure_limit = *fall_;
    if (balance_line_ && p_.protocol != PoolProtocol::kTcp) {
      fail_at(ctx_.source, *balance_line_,
              where_ + ": 'balance' applies to tcp pools only (protocol: tcp)");
    }
    // Bounded loads bound a hash's choices: a tcp pool must hash (redis/memcache pools always do).
    if (hash_balance_factor_line_ && p_.hash_balance_factor != 0 &&
        p_.protocol == PoolProtocol::kTcp && p_.balance != Balance::kHash &&
        p_.balance != Balance::kIpHash) {
      fail_at(ctx_.source, *hash_balance_factor_line_,
              where_ +
                  ": hash_balance_factor applies to hash balancing (balance: hash or ip-hash), not "
                  "balance " +
                  balance_name(p_.balance));
    }
    const bool passwords =
        client_auth_ || server_auth_ || redis_auth_ || acl_given_ || p_.server_user.has_value();
    if (p_.protocol == PoolProtocol::kTcp && passwords) {
      fail_at(ctx_.source, p_.line,
              where_ + ": tcp pools relay bytes and take no passwords, users or acl");
    }
    if (p_.protocol == PoolProtocol::kMemcache && passwords) {
      fail_at(ctx_.source, p_.line,
              where_ + ": memcached's text protocol has no AUTH; remove the password keys");
    }
    for (const auto& s : p_.servers) {
      if ((s.password || s.user) && p_.protocol != PoolProtocol::kRedis) {
        fail_at(ctx_.source, s.line,
                where_ + ": a server's password/user applies to redis pools only");
      }
      if (!s.replicas.empty() && p_.protocol != PoolProtocol::kRedis) {
        fail_at(ctx_.source, s.line, where_ + ": a server's replicas apply to redis pools only");
      }
    }
    if ((p_.allow_flushall || p_.allow_config_set) && p_.protocol != PoolProtocol::kRedis) {
      fail_at(ctx_.source, p_.line,
              where_ + ": 'allow_flushall' and 'allow_config_set' apply to redis pools only");
    }
    if (hot_relief_line_ && p_.protocol == PoolProtocol::kTcp) {
      fail_at(ctx_.source, *hot_relief_line_,
              where_ + ": hot_cache applies to redis and memcache pools only");
    }
    if (hot_reads_line_ && p_.protocol != PoolProtocol::kRedis) {
      fail_at(ctx_.source, *hot_reads_line_,
              where_ + ": 'hot_reads: replicas' applies to redis pools only");
    }
    if (p_.protocol == PoolProtocol::kTcp) p_.hot_keys.enabled = false;  // no keys to sample
    if (read_policy_line_ && p_.protocol != PoolProtocol::kRedis) {
      fail_at(ctx_.source, *read_policy_line_,
              where_ + ": 'read_policy' applies to redis pools only");
    }
  }

  // A Redis Cluster pool: its seeds instead of servers; the cluster decides where keys go.
  void finish_cluster() {
    if (!cluster_line_) return;
    const auto refuse = [&](const std::string& why) {
      fail_at(ctx_.source, *cluster_line_, where_ + ": " + why);
    };
    if (p_.protocol != PoolProtocol::kRedis) refuse("'cluster' applies to redis pools only");
    if (have_servers_) {
      refuse("give either 'servers' or 'cluster' (a Redis Cluster's seed nodes), not both");
    }
    if (!p_.sentinels.empty()) refuse("a Redis Cluster fails over by itself: drop 'sentinels'");
    if (distribution_ || preset_ || algorithm_ || ring_ || p_.routing.hash || p_.routing.vnodes) {
      refuse(
          "a Redis Cluster routes by its own slot map: drop distribution, preset, algorithm, "
          "ring, hash and vnodes");
    }
    if (p_.routing.hash_tag && *p_.routing.hash_tag != "{}") {
      refuse("a Redis Cluster's hash tags are {...}: drop hash_tag or make it \"{}\"");
    }
    if (p_.hash_balance_factor != 0)
      refuse("hash_balance_factor does not apply to a Redis Cluster");
    if (p_.redis_db != 0) refuse("a Redis Cluster has only database 0: drop redis_db");
    if (p_.auto_eject_hosts) {
      refuse(
          "a Redis Cluster's keys have one master each: auto_eject_hosts does not apply (the "
          "cluster fails over itself)");
    }
    if (p_.server_user && !server_auth_ && !redis_auth_) {
      refuse("server_user needs server_auth (or redis_auth)");
    }
    if (warmup_line_ && p_.warmup) refuse("a Redis Cluster moves its own keys: drop warmup");
    p_.warmup = false;  // slots move with their keys (MIGRATE); the proxy follows MOVED/ASK
    p_.failover_invalidate = false;
  }

  // Each server's TLS towards it: its own server_tls (over the pool's, key by key; `false`: none),
  // else the pool's. Every backend connection and probe uses ServerConfig::tls.
  void finish_tls() {
    if (server_tls_) p_.server_tls = parse_server_tls(ctx_, *server_tls_, where_);
    for (std::size_t i = 0; i < p_.servers.size(); ++i) {
      ServerConfig& s = p_.servers[i];
      const auto& own = server_tls_nodes_[i];
      if (!own) {
        s.tls = p_.server_tls;
        continue;
      }
      const std::string where = where_ + ": server '" + s.name + "'";
      if (own->IsScalar()) {
        if (ctx_.boolean(*own, "server_tls")) {
          fail_at(ctx_.source, line_of(*own),
                  where + ": server_tls is a map {ca, verify, sni, cert, key} or false");
        }
        continue;  // false: plaintext to this server
      }
      s.tls = parse_server_tls(ctx_, *own, where, server_tls_ ? &*server_tls_ : nullptr);
    }
  }

  // Sentinel-managed servers need a redis pool that lists its Sentinels, and vice versa.
  void finish_sentinels() {
    bool managed = false;
    for (std::size_t i = 0; i < p_.servers.size(); ++i) {
      const auto& s = p_.servers[i];
      if (s.sentinel_master.empty()) continue;
      managed = true;
      for (std::size_t j = 0; j < i; ++j) {
        if (p_.servers[j].sentinel_master == s.sentinel_master) {
          fail_at(ctx_.source, s.line,
                  where_ + ": master group '" + s.sentinel_master + "' is named by two servers");
        }
      }
      if (p_.protocol != PoolProtocol::kRedis) {
        fail_at(ctx_.source, s.line, where_ + ": 'sentinel_master' applies to redis pools only");
      }
      if (p_.sentinels.empty()) {
        fail_at(ctx_.source, s.line,
                where_ + ": server '" + s.name +
                    "' names a sentinel_master but the pool lists no 'sentinels'");
      }
    }
    if (!p_.sentinels.empty() && !managed) {
      fail_at(ctx_.source, sentinels_line_,
              where_ + ": 'sentinels' is given but no server names a 'sentinel_master'");
    }
  }

  // nutcracker's distribution maps to the presets that reproduce it; tcp pools default to nginx's.
  void finish_routing() {
    if (cluster_line_) {
      // The slot map comes from the cluster (membership/cluster.h); this names it for /status.
      p_.routing.algorithm = "slots";
      p_.routing.hash = "redis_slot";
      return;
    }
    const int nsel =
        (distribution_ ? 1 : 0) + (preset_ ? 1 : 0) + (algorithm_ ? 1 : 0) + (ring_ ? 1 : 0);
    if (nsel > 1) {
      fail_at(ctx_.source, p_.line,
              where_ + ": give only one of distribution, preset, algorithm and ring");
    }
    if (p_.protocol == PoolProtocol::kTcp && p_.balance == Balance::kIpHash) {
      if (nsel > 0) {
        fail_at(ctx_.source, p_.line,
                where_ +
                    ": balance ip-hash is the nginx-ip-hash preset; drop "
                    "distribution/preset/algorithm/ring");
      }
      p_.routing.preset = "nginx-ip-hash";
    } else if (p_.protocol == PoolProtocol::kTcp && nsel == 0) {
      p_.routing.preset = "nginx-hash-consistent";  // nginx `hash $remote_addr consistent`
    } else if (distribution_) {
      p_.routing.preset = preset_of_distribution(*distribution_);
    } else if (preset_) {
      p_.routing.preset = ctx_.scalar(*preset_, "preset");
    } else if (algorithm_) {
      p_.routing.algorithm = ctx_.scalar(*algorithm_, "algorithm");
    } else if (ring_) {
      p_.routing.ring = ctx_.scalar(*ring_, "ring");
    } else {
      p_.routing.preset = "twemproxy";  // nutcracker's default distribution
    }
    p_.routing.balance_factor = p_.hash_balance_factor;
  }

  // A replicated pool's missed writes are deleted on a home before it serves again: the safe
  // return's absence logs (membership/failback.h), which need auto_eject_hosts and
  // failover_invalidate; its homes are the router's first choices, which bounded loads reorder.
  void finish_replicas() {
    if (write_policy_line_ && p_.replicas < 2) {
      fail_at(ctx_.source, *write_policy_line_, where_ + ": write_policy needs replicas: 2 or more");
    }
    if (!replicas_line_ || p_.replicas < 2) return;
    const auto refuse = [&](const std::string& why) {
      fail_at(ctx_.source, *replicas_line_, where_ + ": " + why);
    };
    if (p_.protocol != PoolProtocol::kMemcache) refuse("'replicas' applies to memcache pools only");
    if (p_.etcd != nullptr) refuse("'replicas' does not apply to a pool whose servers come from etcd");
    if (p_.replicas > p_.servers.size()) {
      refuse("replicas: " + std::to_string(p_.replicas) + " is more than the pool's " +
             std::to_string(p_.servers.size()) + " servers");
    }
    if (!p_.auto_eject_hosts || !p_.failover_invalidate) {
      refuse(
          "replicas needs auto_eject_hosts: true and failover_invalidate: true (a home that "
          "missed a write has the key deleted before it serves again)");
    }
    if (p_.hash_balance_factor != 0) refuse("replicas and hash_balance_factor do not go together");
    // Warm-up and the rebalances it ends with move a key to its one new owner and delete it at
    // the old: here that deleted the copies a returned home's other homes held (bench-memcached:
    // 8 acknowledged writes of 500 keys lost). A replicated read asks the other homes instead.
    if (warmup_line_ && p_.warmup) {
      fail_at(ctx_.source, *warmup_line_,
              where_ + ": a replicated pool reads a key from its other homes; drop warmup");
    }
    p_.warmup = false;
  }

  // `failover: {tries, on_miss, return_best_on_error}` (config.h PoolConfig::Failover).
  void parse_failover(const YAML::Node& v, int line) {
    if (!v.IsMap()) {
      fail_at(ctx_.source, line,
              where_ +
                  ": failover must be a map ({tries: 2, on_miss: false, "
                  "return_best_on_error: false})");
    }
    p_.failover.tries = 2;  // the owner, then the next one
    for (const auto& kv : v) {
      const std::string k = kv.first.Scalar();
      if (k == "tries") {
        p_.failover.tries = ctx_.number<std::uint32_t>(kv.second, k, 1, kMaxReplicas);
      } else if (k == "on_miss") {
        p_.failover.on_miss = ctx_.boolean(kv.second, k);
      } else if (k == "return_best_on_error") {
        p_.failover.return_best_on_error = ctx_.boolean(kv.second, k);
        failover_best_line_ = line_of(kv.first);
      } else {
        static constexpr std::string_view kKeys[] = {"tries", "on_miss", "return_best_on_error"};
        fail_at(ctx_.source, line_of(kv.first),
                where_ + ": failover: unknown key '" + k + "'" + suggest(k, kKeys) +
                    " (tries, on_miss, return_best_on_error)");
      }
    }
    failover_route_line_ = line;
  }

  // The failover route asks a key's next owners (route_n) and notes the key at an owner that
  // failed a write: one owner per key, and the absence logs of safe failover.
  void finish_failover() {
    if (!failover_route_line_) return;
    const auto refuse = [&](const std::string& why) {
      fail_at(ctx_.source, *failover_route_line_, where_ + ": " + why);
    };
    if (p_.protocol != PoolProtocol::kMemcache) refuse("'failover' applies to memcache pools only");
    if (p_.replicas > 1) {
      refuse(
          "'failover' is for pools with one owner per key: a replicated pool's reads already go "
          "on to the next home and its writes reach every home (drop failover or replicas)");
    }
    if (p_.etcd == nullptr && p_.failover.tries > p_.servers.size()) {
      refuse("failover tries: " + std::to_string(p_.failover.tries) + " is more than the pool's " +
             std::to_string(p_.servers.size()) + " servers");
    }
    if (p_.failover.tries > 1 && !p_.failover_invalidate) {
      refuse(
          "failover needs failover_invalidate: true (an owner that failed a write has the key "
          "deleted before it serves it again)");
    }
    if (failover_best_line_ && p_.failover.return_best_on_error && !p_.failover.on_miss) {
      fail_at(ctx_.source, *failover_best_line_,
              where_ +
                  ": return_best_on_error needs on_miss: true (without it a miss answers at "
                  "once: a request that failed everywhere saw errors only)");
    }
  }

  std::string preset_of_distribution(const YAML::Node& node) const {
    const std::string d = ctx_.scalar(node, "distribution");
    if (d == "ketama") return "twemproxy";
    if (d == "modula") return "twemproxy-modula";
    if (d == "random") {
      fail_at(ctx_.source, line_of(node),
              where_ +
                  ": distribution 'random' is not supported (it is not a key mapping); use ketama, "
                  "modula, "
                  "or a chash preset/algorithm");
    }
    fail_at(ctx_.source, line_of(node),
            where_ + ": unknown distribution '" + d + "' (ketama, modula)");
  }

  // nutcracker's redis_auth is both the client and the server password; `acl:` adds users.
  void finish_passwords() {
    p_.client_password = client_auth_ ? client_auth_ : redis_auth_;
    p_.server_password = server_auth_ ? server_auth_ : redis_auth_;
    if (p_.protocol != PoolProtocol::kRedis) return;
    // AUTH <user> <password> needs a password for every server.
    for (const auto& s : p_.servers) {
      const bool user = s.user || p_.server_user;
      const bool password = s.password || p_.server_password;
      if (user && !password) {
        fail_at(ctx_.source, s.line,
                where_ + ": server '" + s.name +
                    "' has a user but no password (server_auth, redis_auth or its password)");
      }
    }
    if (acl_given_) build_acl();
    else if (p_.client_password) p_.acl = redis::Acl::build({}, p_.client_password);
  }

  // The `acl:` lines, parsed now so that a bad rule names its line. Messages never repeat a
  // password: a rule that holds one (>pw, <pw) is shown as >*** / <***.
  void build_acl() {
    std::size_t bad = 0;
    try {
      p_.acl = redis::Acl::build(acl_lines_, p_.client_password, &bad);
    } catch (const redis::AclError& e) {
      const int line = bad < acl_item_lines_.size() ? acl_item_lines_[bad] : acl_line_;
      std::string user;
      try {
        const auto argv = redis::Acl::split_line(bad < acl_lines_.size() ? acl_lines_[bad] : "");
        if (argv.size() >= 2 && argv[0] == "user")
          user = " of user '" + argv[1].substr(0, 64) + "'";
      } catch (const redis::AclError&) {
      }
      std::string rule = e.rule.substr(0, 80);
      if (!rule.empty() && (rule[0] == '>' || rule[0] == '<')) rule = rule.substr(0, 1) + "***";
      fail_at(ctx_.source, line,
              where_ + ": acl" + (rule.empty() ? std::string() : " rule '" + rule + "'") + user +
                  ": " + e.what());
    }
    if (!p_.client_password) return;
    for (std::size_t i = 0; i < acl_lines_.size(); ++i) {
      const auto argv = redis::Acl::split_line(acl_lines_[i]);
      if (argv.size() >= 2 && argv[1] == "default") {
        // Both would say what the default user's password is.
        fail_at(ctx_.source, acl_item_lines_[i],
                where_ +
                    ": acl declares 'user default' and client_auth/redis_auth sets its password "
                    "too; give it in one place (server_auth is the backends' password)");
      }
    }
  }

  // Build the router once so a config that parses also routes.
  void check_builds() const {
    if (cluster_line_) return;  // routes by the map it learns
    if (const std::string dup = same_server(p_.servers); !dup.empty()) {
      int line = p_.line;
      for (const auto& s : p_.servers) {
        if (dup.find("'" + s.name.substr(0, 80) + "' are") != std::string::npos) line = s.line;
      }
      fail_at(ctx_.source, line, where_ + ": " + dup);
    }
    try {
      (void)chash::Router::build(p_.routing, p_.nodes());
    } catch (const Error& e) {
      fail_at(ctx_.source, p_.line, where_ + ": " + e.what());
    }
  }

  void check_listen_unique(const ProxyConfig& so_far) const {
    for (const auto& other : so_far.pools) {
      // Port 0 (any free port, as tests use) cannot collide.
      if (other.listen.text() == p_.listen.text() &&
          (!p_.address_is_tcp() || p_.listen.port != 0)) {
        fail_at(ctx_.source, p_.line,
                where_ + ": listens on " + p_.listen.text() + " as pool '" + other.name + "' does");
      }
    }
  }

  const Ctx& ctx_;
  const YAML::Node& body_;
  PoolConfig p_;
  std::string where_;
  bool have_listen_ = false, have_servers_ = false;
  std::optional<int> source_line_;  // `membership:`
  bool source_file_ = false;        // membership: file
  std::optional<YAML::Node> distribution_, preset_, algorithm_, ring_, server_tls_;
  std::vector<std::optional<YAML::Node>> server_tls_nodes_;  // by server: its own server_tls
  std::optional<std::string> redis_auth_, client_auth_, server_auth_;
  bool acl_given_ = false;
  int acl_line_ = 0;
  std::vector<std::string> acl_lines_;
  std::vector<int> acl_item_lines_;
  std::optional<PoolProtocol> redis_flag_, protocol_;
  std::optional<std::uint32_t> fall_;
  std::optional<int> balance_line_, hash_balance_factor_line_;
  int sentinels_line_ = 0;
  std::optional<int> cluster_line_, read_policy_line_, warmup_line_, failover_line_;
  std::optional<int> hot_relief_line_, hot_reads_line_, replicas_line_, write_policy_line_;
  std::optional<int> failover_route_line_, failover_best_line_;
};

}  // namespace

PoolConfig parse_pool(const Ctx& ctx, const YAML::Node& name, const YAML::Node& body,
                      const ProxyConfig& so_far) {
  return PoolParser(ctx, name, body).parse(so_far);
}

}  // namespace chash::proxy::config_detail
