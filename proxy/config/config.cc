// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "chash/error.h"
#include "config/parse_util.h"

namespace chash::proxy {

using config_detail::Ctx;
using config_detail::fail_at;
using config_detail::kGlobalKeys;
using config_detail::kGlobalSection;
using config_detail::line_of;
using config_detail::parse_pool;
using config_detail::suggest;

namespace {

std::uint16_t parse_port(std::string_view text, std::string_view what) {
  std::uint32_t port = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || p != text.data() + text.size() || port > 65535) {
    throw Error(ErrorCode::kParse, std::string(what) + ": port '" +
                                       std::string(text.substr(0, 16)) +
                                       "' is not a number from 0 to 65535");
  }
  return static_cast<std::uint16_t>(port);
}

}  // namespace

std::string Address::text() const {
  if (!unix_path.empty()) return unix_path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);  // IPv6
  return host + ":" + std::to_string(port);
}

Address sentinel_placeholder(std::string_view master) {
  Address a;
  a.host = "sentinel/" + std::string(master);
  return a;
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
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  a.port = parse_port(text.substr(c + 1), what);
  return a;
}

const char* write_policy_name(WritePolicy p) noexcept {
  switch (p) {
    case WritePolicy::kAll:
      return "all";
    case WritePolicy::kMajority:
      return "majority";
    case WritePolicy::kOne:
      return "one";
  }
  return "?";
}

const char* read_policy_name(ReadPolicy p) noexcept {
  switch (p) {
    case ReadPolicy::kMaster:
      return "master";
    case ReadPolicy::kPreferReplica:
      return "prefer_replica";
    case ReadPolicy::kReplica:
      return "replica";
    case ReadPolicy::kAny:
      return "any";
  }
  return "?";
}

std::vector<Node> routing_nodes(const std::vector<ServerConfig>& servers) {
  std::vector<Node> out;
  out.reserve(servers.size());
  for (const auto& s : servers) out.push_back({s.name, s.weight});
  return out;
}

std::vector<Node> PoolConfig::nodes() const { return routing_nodes(servers); }

const char* protocol_name(PoolProtocol p) noexcept {
  switch (p) {
    case PoolProtocol::kRedis:
      return "redis";
    case PoolProtocol::kMemcache:
      return "memcache";
    case PoolProtocol::kTcp:
      return "tcp";
  }
  return "?";
}

const char* balance_name(Balance b) noexcept {
  switch (b) {
    case Balance::kHash:
      return "hash";
    case Balance::kIpHash:
      return "ip-hash";
    case Balance::kRoundRobin:
      return "round-robin";
    case Balance::kWeightedRoundRobin:
      return "weighted-round-robin";
    case Balance::kLeastConn:
      return "least-conn";
  }
  return "?";
}

namespace {

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

redis::PasswordHash hash_of_hex(std::string_view hex) {
  redis::PasswordHash h{};
  const auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<unsigned char>(v(hex[2 * i]) * 16 + v(hex[2 * i + 1]));
  }
  return h;
}

// `admin_auth: {token | token_file, basic, protect}`. Secrets never appear in messages.
void parse_admin_auth(const Ctx& ctx, const YAML::Node& body, AdminAuth& auth) {
  static constexpr std::string_view kKeys[] = {"token", "token_file", "basic", "protect"};
  if (!body.IsMap()) {
    fail_at(ctx.source, line_of(body),
            "'admin_auth' must be a map: {token: ..., token_file: ..., basic: user:password, "
            "protect: mutating|all}");
  }
  bool token = false;
  for (const auto& kv : body) {
    const std::string k = kv.first.Scalar();
    const int line = line_of(kv.second);
    if (k == "token" || k == "token_file") {
      if (token) fail_at(ctx.source, line, "admin_auth: give one of token and token_file");
      token = true;
      std::string t = ctx.scalar(kv.second, k);
      if (k == "token_file") {
        std::ifstream in(t, std::ios::binary);
        if (!in) fail_at(ctx.source, line, "admin_auth: cannot read token_file " + t);
        std::string first;
        std::getline(in, first);
        while (!first.empty() && (first.back() == '\r' || first.back() == ' ')) first.pop_back();
        if (first.empty()) fail_at(ctx.source, line, "admin_auth: token_file " + t + " is empty");
        t = std::move(first);
      }
      if (t.empty()) fail_at(ctx.source, line, "admin_auth: empty token");
      auth.token = redis::sha256(t);
    } else if (k == "basic") {
      // "user:password", or "user:#<sha256 hex>" (Redis's #hash spelling) to keep the password
      // out of the file.
      const std::string b = ctx.scalar(kv.second, k);
      const std::size_t colon = b.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == b.size()) {
        fail_at(ctx.source, line,
                "admin_auth: basic must be 'user:password' or 'user:#<sha256 hex>'");
      }
      auth.basic_user = b.substr(0, colon);
      const std::string_view pw = std::string_view(b).substr(colon + 1);
      auth.basic_password = pw.size() == 65 && pw[0] == '#' && is_hex64(pw.substr(1))
                                ? hash_of_hex(pw.substr(1))
                                : redis::sha256(pw);
    } else if (k == "protect") {
      const std::string p = ctx.scalar(kv.second, k);
      if (p == "mutating") {
        auth.protect_all = false;
      } else if (p == "all") {
        auth.protect_all = true;
      } else {
        fail_at(ctx.source, line,
                "admin_auth: protect must be 'mutating' (POST /reload) or 'all', got '" +
                    p.substr(0, 40) + "'");
      }
    } else {
      fail_at(ctx.source, line_of(kv.first),
              "unknown key '" + k + "' in admin_auth" + suggest(k, kKeys));
    }
  }
  if (!auth.enabled()) {
    fail_at(ctx.source, line_of(body), "admin_auth: give a token, token_file or basic");
  }
}

// `chash_proxy:` — process settings.
void parse_global_section(const Ctx& ctx, const YAML::Node& name, const YAML::Node& body,
                          ProxyConfig& cfg) {
  if (!body.IsMap()) fail_at(ctx.source, line_of(name), "'chash_proxy' must be a map");
  std::optional<int> admin_auth_line, admin_tls_line;
  for (const auto& kv : body) {
    const std::string k = kv.first.Scalar();
    if (k == "workers") {
      cfg.workers = ctx.number<unsigned>(kv.second, k, 0, 1024);
    } else if (k == "admin") {
      try {
        std::string text = ctx.scalar(kv.second, k);
        // A port alone binds loopback: the admin port can reload the config, so reaching it
        // from other hosts must be asked for by writing the address.
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
          text = "127.0.0.1:" + text;
        }
        cfg.admin = parse_address(text, "admin");
      } catch (const Error& e) {
        fail_at(ctx.source, line_of(kv.second), e.what());
      }
    } else if (k == "admin_auth") {
      parse_admin_auth(ctx, kv.second, cfg.admin_auth);
      admin_auth_line = line_of(kv.first);
    } else if (k == "admin_tls") {
      cfg.admin_tls = parse_tls(ctx, kv.second, "chash_proxy", "admin_tls");
      admin_tls_line = line_of(kv.first);
    } else if (k == "stats") {
      try {
        cfg.stats = parse_address(ctx.scalar(kv.second, k), "stats");
      } catch (const Error& e) {
        fail_at(ctx.source, line_of(kv.second), e.what());
      }
    } else if (k == "stats_interval") {
      cfg.stats_interval_ms = ctx.number<std::uint32_t>(kv.second, k, 1, 3600u * 1000u);
    } else if (k == "drain_timeout") {
      cfg.drain_timeout_ms = ctx.number<std::uint32_t>(kv.second, k, 0, 3600u * 1000u);
    } else if (k == "state_file") {
      cfg.state_file = ctx.scalar(kv.second, k);
      if (cfg.state_file.empty()) fail_at(ctx.source, line_of(kv.second), "state_file: empty path");
    } else if (k == "membership") {
      cfg.membership = parse_membership(ctx, kv.second, "chash_proxy", nullptr);
    } else {
      fail_at(ctx.source, line_of(kv.first),
              "unknown key '" + k + "' in chash_proxy" + suggest(k, kGlobalKeys));
    }
  }
  if (admin_auth_line && !cfg.admin) {
    fail_at(ctx.source, *admin_auth_line, "admin_auth needs admin: (the admin port's address)");
  }
  if (admin_tls_line && !cfg.admin) {
    fail_at(ctx.source, *admin_tls_line, "admin_tls needs admin: (the admin port's address)");
  }
}

YAML::Node load_yaml(std::string_view yaml, const std::string& source) {
  try {
    return YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    fail_at(source, e.mark.line + 1, "not valid YAML: " + e.msg);
  }
}

}  // namespace

ProxyConfig parse_config(std::string_view yaml, const std::string& source) {
  ProxyConfig cfg;
  cfg.source = source;
  const Ctx ctx{source};
  YAML::Node root = load_yaml(yaml, source);
  if (!root.IsMap() || root.size() == 0)
    fail_at(source, 1, "expected one or more pools (a YAML map)");
  // The process section first, wherever it is in the file: the pools take its `membership:`.
  for (const auto& top : root) {
    if (top.first.Scalar() == kGlobalSection) parse_global_section(ctx, top.first, top.second, cfg);
  }
  for (const auto& top : root) {
    if (top.first.Scalar() == kGlobalSection) continue;
    PoolConfig pool = parse_pool(ctx, top.first, top.second, cfg);
    cfg.pools.push_back(std::move(pool));
  }
  if (cfg.pools.empty()) fail_at(source, 1, "no pools");
  check_own_listeners(cfg);
  check_shadows(cfg);
  check_prefix_routes(cfg);
  return cfg;
}

ProxyConfig load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "cannot read config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

namespace {

// One server's identity for same_server(): the unix path, or the host (an IP literal as its
// 16-byte IPv6 form, IPv4 mapped; a name lower-cased) and port.
std::string server_identity(const Address& a) {
  if (!a.unix_path.empty()) return "unix:" + a.unix_path;
  std::string host = a.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned char v6[16] = {};
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    v6[10] = v6[11] = 0xff;
    std::memcpy(v6 + 12, &v4, 4);
    host = "ip:" + std::string(reinterpret_cast<const char*>(v6), 16);
  } else if (inet_pton(AF_INET6, host.c_str(), v6) == 1) {
    host = "ip:" + std::string(reinterpret_cast<const char*>(v6), 16);
  } else {
    for (char& c : host) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    host = "name:" + host;
  }
  return host + ":" + std::to_string(a.port);
}

}  // namespace

std::string same_server(const std::vector<ServerConfig>& servers) {
  std::vector<std::pair<std::string, std::size_t>> seen;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerConfig& s = servers[i];
    if (!s.sentinel_master.empty() || s.role != ServerRole::kNode) continue;
    const std::string id = server_identity(s.address);
    for (const auto& [other, j] : seen) {
      if (other != id) continue;
      return "servers '" + servers[j].name.substr(0, 80) + "' and '" + s.name.substr(0, 80) +
             "' are one server (" + servers[j].address.text() +
             (servers[j].address.text() == s.address.text() ? "" : " = " + s.address.text()) +
             "): a move between them would delete the only copy of a key";
    }
    seen.emplace_back(id, i);
  }
  return {};
}

namespace {

bool loopback(const std::string& identity) {
  // server_identity's 16-byte form: ::1, or 127.0.0.0/8 mapped.
  if (!identity.starts_with("ip:") || identity.size() < 19) return identity.starts_with("name:localhost:");
  const auto* b = reinterpret_cast<const unsigned char*>(identity.data() + 3);
  static constexpr unsigned char kV6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (std::memcmp(b, kV6Loopback, 16) == 0) return true;
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(b, kMapped, 12) == 0 && b[12] == 127;
}

// The host part of server_identity ("ip:<16 bytes>" or "name:<host>").
std::string host_of(const std::string& identity) { return identity.substr(0, identity.rfind(':')); }

bool wildcard(const std::string& identity) {
  static const std::string any4 = host_of(server_identity(Address{"0.0.0.0", 1, {}, 0}));
  static const std::string any6 = host_of(server_identity(Address{"::", 1, {}, 0}));
  return host_of(identity) == any4 || host_of(identity) == any6;
}

// Whether `member` reaches `listener`.
bool reaches(const Address& member, const Address& listener) {
  if (!member.unix_path.empty() || !listener.unix_path.empty())
    return !member.unix_path.empty() && member.unix_path == listener.unix_path;
  if (listener.port == 0 || member.port != listener.port) return false;  // port 0: any free one
  const std::string m = server_identity(member), l = server_identity(listener);
  if (host_of(m) == host_of(l)) return true;
  if (host_of(m) == "name:localhost") {  // as /etc/hosts has it
    return reaches(Address{"127.0.0.1", member.port, {}, 0}, listener) ||
           reaches(Address{"::1", member.port, {}, 0}, listener);
  }
  if (listener.host.empty() || wildcard(l)) {
    if (loopback(m)) return true;
    // Any address of this machine's interfaces reaches a wildcard listener too.
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return false;
    bool local = false;
    for (const ifaddrs* i = list; i != nullptr && !local; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (i->ifa_addr->sa_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, text, sizeof text);
      } else {
        continue;
      }
      local = host_of(server_identity(Address{text, member.port, {}, 0})) == host_of(m);
    }
    ::freeifaddrs(list);
    return local;
  }
  return false;
}

}  // namespace

std::string own_listener(const PoolConfig& pool, const std::vector<ServerConfig>& servers) {
  for (const ServerConfig& s : servers) {
    if (!s.sentinel_master.empty()) continue;
    for (const Address& l : pool.own_listeners) {
      if (reaches(s.address, l)) {
        return "server '" + s.name.substr(0, 80) + "' (" + s.address.text() +
               ") is this proxy's own listener " + l.text() +
               ": every request to it would come back to the proxy";
      }
    }
  }
  return {};
}

void check_own_listeners(ProxyConfig& config) {
  std::vector<Address> own;
  for (const PoolConfig& p : config.pools) own.push_back(p.listen);
  if (config.admin) own.push_back(*config.admin);
  if (config.stats) own.push_back(*config.stats);
  for (PoolConfig& p : config.pools) {
    p.own_listeners = own;
    if (p.is_cluster()) continue;
    if (const std::string bad = own_listener(p, p.servers); !bad.empty()) {
      int line = p.line;
      for (const ServerConfig& s : p.servers) {
        if (bad.find("'" + s.name.substr(0, 80) + "' (") != std::string::npos) line = s.line;
      }
      config_detail::fail_at(config.source, line, "pool '" + p.name + "': " + bad);
    }
  }
}

std::string listener_clash(const ProxyConfig& config) {
  std::vector<std::pair<std::string, Address>> all;
  for (const PoolConfig& p : config.pools) all.emplace_back("pool '" + p.name + "' listen", p.listen);
  if (config.admin) all.emplace_back("admin", *config.admin);
  if (config.stats) all.emplace_back("stats", *config.stats);
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      const Address& a = all[i].second;
      const Address& b = all[j].second;
      bool clash = false;
      if (!a.unix_path.empty() || !b.unix_path.empty()) {
        clash = a.unix_path == b.unix_path;
      } else if (a.port != 0 && a.port == b.port) {
        const std::string x = server_identity(a), y = server_identity(b);
        clash = host_of(x) == host_of(y) || a.host.empty() || b.host.empty() || wildcard(x) ||
                wildcard(y);
      }
      if (clash) {
        return all[i].first + " (" + a.text() + ") and " + all[j].first + " (" + b.text() +
               ") are one address: the second cannot listen";
      }
    }
  }
  return {};
}

}  // namespace chash::proxy
