#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include "chash/error.h"

namespace chash::proxy {

namespace {

[[noreturn]] void fail_at(const std::string& source, int line, const std::string& message) {
  throw Error(ErrorCode::kParse, source + ":" + std::to_string(line) + ": " + message);
}

int line_of(const YAML::Node& n) { return n.Mark().line + 1; }

// Edit distance, for "did you mean" on misspelt keys.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

constexpr std::string_view kPoolKeys[] = {
    // nutcracker 0.5.0
    "listen", "hash", "hash_tag", "distribution", "timeout", "backlog", "preconnect", "redis",
    "redis_auth", "redis_db", "server_connections", "auto_eject_hosts", "server_retry_timeout",
    "server_failure_limit", "servers", "client_connections", "tcpkeepalive",
    // chash
    "preset", "algorithm", "vnodes", "client_auth", "server_auth", "max_request_bytes",
    "max_pipeline", "protocol", "max_value_bytes", "balance", "proxy_protocol", "idle_timeout",
    "health_check_interval", "rise", "fall"};

constexpr std::string_view kGlobalKeys[] = {"workers", "admin"};

constexpr std::string_view kGlobalSection = "chash_proxy";

std::string suggest(std::string_view key, std::span<const std::string_view> valid) {
  std::string_view best;
  std::size_t best_d = 3;
  for (const auto v : valid) {
    const std::size_t d = distance(key, v);
    if (d < best_d) {
      best_d = d;
      best = v;
    }
  }
  return best.empty() ? std::string() : " (did you mean '" + std::string(best) + "'?)";
}

struct Ctx {
  const std::string& source;

  std::string scalar(const YAML::Node& n, std::string_view key) const {
    if (!n.IsScalar()) fail_at(source, line_of(n), "'" + std::string(key) + "' must be a single value");
    return n.Scalar();
  }
  template <class T>
  T number(const YAML::Node& n, std::string_view key, T lo, T hi) const {
    const std::string s = scalar(n, key);
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < static_cast<std::uint64_t>(lo) ||
        v > static_cast<std::uint64_t>(hi)) {
      fail_at(source, line_of(n), "'" + std::string(key) + "' must be a whole number from " +
                                      std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                                      s.substr(0, 40) + "'");
    }
    return static_cast<T>(v);
  }
  bool boolean(const YAML::Node& n, std::string_view key) const {
    const std::string s = scalar(n, key);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail_at(source, line_of(n), "'" + std::string(key) + "' must be true or false, got '" + s.substr(0, 40) + "'");
  }
};

std::uint16_t parse_port(std::string_view text, std::string_view what) {
  std::uint32_t port = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || p != text.data() + text.size() || port > 65535) {
    throw Error(ErrorCode::kParse, std::string(what) + ": port '" + std::string(text.substr(0, 16)) +
                                       "' is not a number from 0 to 65535");
  }
  return static_cast<std::uint16_t>(port);
}

// "host:port:weight [name]" or "/path:weight [name]" (nutcracker conf_add_server: the weight
// after the last ':', the port before it).
ServerConfig parse_server(std::string_view text, std::string_view what) {
  ServerConfig s;
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const std::size_t sp = text.find(' ');
  std::string_view addr = text.substr(0, sp);
  if (sp != std::string_view::npos) {
    std::string_view name = text.substr(sp + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    if (name.find(' ') != std::string_view::npos) {
      throw Error(ErrorCode::kParse, std::string(what) + ": expected 'host:port:weight [name]', got '" +
                                         std::string(text.substr(0, 80)) + "'");
    }
    s.name = std::string(name);
  }
  const std::size_t c = addr.rfind(':');
  if (c == std::string_view::npos || c == 0) {
    throw Error(ErrorCode::kParse, std::string(what) + ": expected 'host:port:weight [name]', got '" +
                                       std::string(text.substr(0, 80)) + "'");
  }
  const std::string_view w = addr.substr(c + 1);
  const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), s.weight);
  if (ec != std::errc() || p != w.data() + w.size() || s.weight == 0 || s.weight > kMaxWeight) {
    throw Error(ErrorCode::kParse, std::string(what) + ": weight '" + std::string(w.substr(0, 16)) +
                                       "' must be a whole number from 1 to " + std::to_string(kMaxWeight));
  }
  addr = addr.substr(0, c);
  s.address = parse_address(addr, what);
  if (s.name.empty()) s.name = s.address.text();
  return s;
}

}  // namespace

std::string Address::text() const {
  if (!unix_path.empty()) return unix_path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);  // IPv6
  return host + ":" + std::to_string(port);
}

Address parse_address(std::string_view text, std::string_view what) {
  Address a;
  if (!text.empty() && text.front() == '/') {
    const std::size_t sp = text.find(' ');
    a.unix_path = std::string(text.substr(0, sp));
    if (sp != std::string_view::npos) {
      const std::string_view m = text.substr(sp + 1);
      const auto [p, ec] = std::from_chars(m.data(), m.data() + m.size(), a.mode, 8);
      if (ec != std::errc() || p != m.data() + m.size() || a.mode > 0777) {
        throw Error(ErrorCode::kParse, std::string(what) + ": '" + std::string(m.substr(0, 16)) +
                                           "' is not an octal permission mode");
      }
    }
    return a;
  }
  const std::size_t c = text.rfind(':');
  if (c == std::string_view::npos || c == 0) {
    throw Error(ErrorCode::kParse, std::string(what) + ": expected host:port or /unix/path, got '" +
                                       std::string(text.substr(0, 80)) + "'");
  }
  a.host = std::string(text.substr(0, c));
  // IPv6 as "[::1]:6379" (the brackets are the usual form; a bare "::1:6379" also splits at the
  // last colon).
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
  a.port = parse_port(text.substr(c + 1), what);
  return a;
}

std::vector<Node> PoolConfig::nodes() const {
  std::vector<Node> out;
  out.reserve(servers.size());
  for (const auto& s : servers) out.push_back({s.name, s.weight});
  return out;
}

const char* protocol_name(PoolProtocol p) noexcept {
  switch (p) {
    case PoolProtocol::kRedis: return "redis";
    case PoolProtocol::kMemcache: return "memcache";
    case PoolProtocol::kTcp: return "tcp";
  }
  return "?";
}

const char* balance_name(Balance b) noexcept {
  switch (b) {
    case Balance::kHash: return "hash";
    case Balance::kIpHash: return "ip-hash";
    case Balance::kRoundRobin: return "round-robin";
    case Balance::kWeightedRoundRobin: return "weighted-round-robin";
    case Balance::kLeastConn: return "least-conn";
  }
  return "?";
}

ProxyConfig parse_config(std::string_view yaml, const std::string& source) {
  ProxyConfig cfg;
  cfg.source = source;
  const Ctx ctx{source};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    fail_at(source, e.mark.line + 1, "not valid YAML: " + e.msg);
  }
  if (!root.IsMap() || root.size() == 0) fail_at(source, 1, "expected one or more pools (a YAML map)");
  for (const auto& top : root) {
    const std::string pool_name = top.first.Scalar();
    const YAML::Node& body = top.second;
    if (pool_name == kGlobalSection) {
      if (!body.IsMap()) fail_at(source, line_of(top.first), "'chash_proxy' must be a map");
      for (const auto& kv : body) {
        const std::string k = kv.first.Scalar();
        if (k == "workers") {
          cfg.workers = ctx.number<unsigned>(kv.second, k, 0, 1024);
        } else if (k == "admin") {
          try {
            cfg.admin = parse_address(ctx.scalar(kv.second, k), "admin");
          } catch (const Error& e) {
            fail_at(source, line_of(kv.second), e.what());
          }
        } else {
          fail_at(source, line_of(kv.first), "unknown key '" + k + "' in chash_proxy" + suggest(k, kGlobalKeys));
        }
      }
      continue;
    }
    PoolConfig p;
    p.name = pool_name;
    p.line = line_of(top.first);
    const std::string where = "pool '" + pool_name + "'";
    if (!body.IsMap()) fail_at(source, p.line, where + ": expected a map of settings");
    bool have_listen = false, have_servers = false;
    std::optional<YAML::Node> distribution, preset, algorithm;
    std::optional<std::string> redis_auth, client_auth, server_auth;
    std::optional<PoolProtocol> redis_flag, protocol;
    std::optional<std::uint32_t> fall;
    std::optional<int> balance_line;
    for (const auto& kv : body) {
      const std::string k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      const int line = line_of(kv.first);
      try {
        if (k == "listen") {
          p.listen = parse_address(ctx.scalar(v, k), "listen");
          have_listen = true;
        } else if (k == "hash") {
          p.routing.hash = ctx.scalar(v, k);
        } else if (k == "hash_tag") {
          const std::string t = ctx.scalar(v, k);
          if (t.size() != 2) fail_at(source, line, where + ": hash_tag must be exactly two characters, e.g. \"{}\"");
          p.routing.hash_tag = t;
        } else if (k == "distribution") {
          distribution = v;
        } else if (k == "preset") {
          preset = v;
        } else if (k == "algorithm") {
          algorithm = v;
        } else if (k == "vnodes") {
          p.routing.vnodes = ctx.number<std::uint32_t>(v, k, 1, 1u << 16);
        } else if (k == "timeout") {
          p.timeout_ms = ctx.number<std::uint32_t>(v, k, 1, 3600u * 1000u);
        } else if (k == "backlog") {
          p.backlog = ctx.number<int>(v, k, 1, 65535);
        } else if (k == "preconnect") {
          p.preconnect = ctx.boolean(v, k);
        } else if (k == "tcpkeepalive") {
          p.tcpkeepalive = ctx.boolean(v, k);
        } else if (k == "redis") {
          redis_flag = ctx.boolean(v, k) ? PoolProtocol::kRedis : PoolProtocol::kMemcache;
        } else if (k == "protocol") {
          const std::string t = ctx.scalar(v, k);
          if (t == "redis") {
            protocol = PoolProtocol::kRedis;
          } else if (t == "memcache" || t == "memcached") {
            protocol = PoolProtocol::kMemcache;
          } else if (t == "tcp") {
            protocol = PoolProtocol::kTcp;
          } else {
            fail_at(source, line, where + ": unknown protocol '" + t.substr(0, 40) + "' (redis, memcache, tcp)");
          }
        } else if (k == "max_value_bytes") {
          p.max_value_bytes = ctx.number<std::size_t>(v, k, 1, std::size_t{1} << 30);
        } else if (k == "balance") {
          const std::string t = ctx.scalar(v, k);
          balance_line = line;
          if (t == "hash") {
            p.balance = Balance::kHash;
          } else if (t == "ip-hash" || t == "ip_hash") {
            p.balance = Balance::kIpHash;
          } else if (t == "round-robin" || t == "roundrobin") {
            p.balance = Balance::kRoundRobin;
          } else if (t == "weighted-round-robin") {
            p.balance = Balance::kWeightedRoundRobin;
          } else if (t == "least-conn" || t == "leastconn") {
            p.balance = Balance::kLeastConn;
          } else {
            fail_at(source, line, where + ": unknown balance '" + t.substr(0, 40) +
                                      "' (hash, ip-hash, round-robin, weighted-round-robin, least-conn)");
          }
        } else if (k == "proxy_protocol") {
          const std::string t = ctx.scalar(v, k);
          if (t == "v1" || t == "1") {
            p.proxy_protocol = ProxyProtocol::kV1;
          } else if (t == "v2" || t == "2") {
            p.proxy_protocol = ProxyProtocol::kV2;
          } else if (t == "none" || t == "false" || t == "off" || t == "no") {
            p.proxy_protocol = ProxyProtocol::kNone;
          } else {
            fail_at(source, line, where + ": proxy_protocol must be v1, v2 or none, got '" + t.substr(0, 40) + "'");
          }
        } else if (k == "idle_timeout") {
          p.idle_timeout_ms = ctx.number<std::uint32_t>(v, k, 0, 7u * 24u * 3600u * 1000u);
        } else if (k == "health_check_interval") {
          p.health_check_interval_ms = ctx.number<std::uint32_t>(v, k, 0, 3600u * 1000u);
        } else if (k == "rise") {
          p.rise = ctx.number<std::uint32_t>(v, k, 1, 1000);
        } else if (k == "fall") {
          fall = ctx.number<std::uint32_t>(v, k, 1, 1000);
        } else if (k == "redis_auth") {
          redis_auth = ctx.scalar(v, k);
        } else if (k == "client_auth") {
          client_auth = ctx.scalar(v, k);
        } else if (k == "server_auth") {
          server_auth = ctx.scalar(v, k);
        } else if (k == "redis_db") {
          p.redis_db = ctx.number<int>(v, k, 0, 1 << 20);
        } else if (k == "server_connections") {
          p.server_connections = ctx.number<std::uint32_t>(v, k, 1, 1024);
        } else if (k == "auto_eject_hosts") {
          p.auto_eject_hosts = ctx.boolean(v, k);
        } else if (k == "server_retry_timeout") {
          p.server_retry_timeout_ms = ctx.number<std::uint32_t>(v, k, 1, 24u * 3600u * 1000u);
        } else if (k == "server_failure_limit") {
          p.server_failure_limit = ctx.number<std::uint32_t>(v, k, 1, 1u << 20);
        } else if (k == "client_connections") {
          p.client_connections = ctx.number<std::uint32_t>(v, k, 0, 1u << 24);
        } else if (k == "max_request_bytes") {
          p.max_request_bytes = ctx.number<std::size_t>(v, k, 1024, std::size_t{1} << 32);
        } else if (k == "max_pipeline") {
          p.max_pipeline = ctx.number<std::size_t>(v, k, 1, 1u << 20);
        } else if (k == "servers") {
          if (!v.IsSequence() || v.size() == 0) fail_at(source, line, where + ": 'servers' must be a non-empty list");
          for (const auto& item : v) {
            const int sl = line_of(item);
            ServerConfig s;
            try {
              if (item.IsMap()) {
                std::optional<std::string> spec, password;
                for (const auto& skv : item) {
                  const std::string sk = skv.first.Scalar();
                  if (sk == "server") {
                    spec = ctx.scalar(skv.second, sk);
                  } else if (sk == "password") {
                    password = ctx.scalar(skv.second, sk);
                  } else {
                    fail_at(source, line_of(skv.first), where + ": unknown server key '" + sk + "' (server, password)");
                  }
                }
                if (!spec) fail_at(source, sl, where + ": a server map needs 'server: host:port:weight [name]'");
                s = parse_server(*spec, "server");
                s.password = password;
              } else {
                s = parse_server(ctx.scalar(item, "servers"), "server");
              }
            } catch (const Error& e) {
              if (std::string_view(e.what()).starts_with(source + ":")) throw;
              fail_at(source, sl, where + ": " + e.what());
            }
            s.line = sl;
            p.servers.push_back(std::move(s));
          }
          have_servers = true;
        } else {
          std::vector<std::string_view> all(std::begin(kPoolKeys), std::end(kPoolKeys));
          fail_at(source, line, where + ": unknown key '" + k + "'" + suggest(k, all));
        }
      } catch (const Error& e) {
        if (std::string_view(e.what()).starts_with(source + ":")) throw;
        fail_at(source, line, where + ": " + e.what());
      }
    }
    if (!have_listen) fail_at(source, p.line, where + ": 'listen' is required");
    if (!have_servers) fail_at(source, p.line, where + ": 'servers' is required");
    if (redis_flag && protocol && *redis_flag != *protocol) {
      fail_at(source, p.line, where + ": 'redis' and 'protocol' disagree");
    }
    p.protocol = protocol ? *protocol : redis_flag ? *redis_flag : PoolProtocol::kMemcache;
    if (fall) p.server_failure_limit = *fall;
    if (balance_line && p.protocol != PoolProtocol::kTcp) {
      fail_at(source, *balance_line, where + ": 'balance' applies to tcp pools only (protocol: tcp)");
    }
    if (p.protocol == PoolProtocol::kTcp && (client_auth || server_auth || redis_auth)) {
      fail_at(source, p.line, where + ": tcp pools relay bytes and take no passwords");
    }
    if (p.protocol == PoolProtocol::kMemcache && (client_auth || server_auth || redis_auth)) {
      fail_at(source, p.line, where + ": memcached's text protocol has no AUTH; remove the password keys");
    }
    // Routing: nutcracker's distribution maps to the presets that reproduce it.
    const int nsel = (distribution ? 1 : 0) + (preset ? 1 : 0) + (algorithm ? 1 : 0);
    if (nsel > 1) fail_at(source, p.line, where + ": give only one of distribution, preset and algorithm");
    if (p.protocol == PoolProtocol::kTcp && p.balance == Balance::kIpHash) {
      if (nsel > 0) fail_at(source, p.line, where + ": balance ip-hash is the nginx-ip-hash preset; drop distribution/preset/algorithm");
      p.routing.preset = "nginx-ip-hash";
    } else if (p.protocol == PoolProtocol::kTcp && nsel == 0) {
      p.routing.preset = "nginx-hash-consistent";  // nginx `hash $remote_addr consistent`
    } else if (distribution) {
      const std::string d = ctx.scalar(*distribution, "distribution");
      if (d == "ketama") {
        p.routing.preset = "twemproxy";
      } else if (d == "modula") {
        p.routing.preset = "twemproxy-modula";
      } else if (d == "random") {
        fail_at(source, line_of(*distribution), where + ": distribution 'random' is not supported (it is not a key mapping); use ketama, modula, or a chash preset/algorithm");
      } else {
        fail_at(source, line_of(*distribution), where + ": unknown distribution '" + d + "' (ketama, modula)");
      }
    } else if (preset) {
      p.routing.preset = ctx.scalar(*preset, "preset");
    } else if (algorithm) {
      p.routing.algorithm = ctx.scalar(*algorithm, "algorithm");
    } else {
      p.routing.preset = "twemproxy";  // nutcracker's default distribution
    }
    // Passwords: nutcracker's redis_auth is both the client and the server password.
    p.client_password = client_auth ? client_auth : redis_auth;
    p.server_password = server_auth ? server_auth : redis_auth;
    // Build the router once so a config that parses also routes.
    try {
      (void)chash::Router::build(p.routing, p.nodes());
    } catch (const Error& e) {
      fail_at(source, p.line, where + ": " + e.what());
    }
    for (const auto& other : cfg.pools) {
      // Port 0 (any free port, as tests use) cannot collide.
      if (other.listen.text() == p.listen.text() && (!p.address_is_tcp() || p.listen.port != 0)) {
        fail_at(source, p.line, where + ": listens on " + p.listen.text() + " as pool '" + other.name + "' does");
      }
    }
    cfg.pools.push_back(std::move(p));
  }
  if (cfg.pools.empty()) fail_at(source, 1, "no pools");
  return cfg;
}

ProxyConfig load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "cannot read config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

}  // namespace chash::proxy
