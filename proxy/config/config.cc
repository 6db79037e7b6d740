// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
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

std::vector<Node> PoolConfig::nodes() const {
  std::vector<Node> out;
  out.reserve(servers.size());
  for (const auto& s : servers) out.push_back({s.name, s.weight});
  return out;
}

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

// `chash_proxy:` — process settings.
void parse_global_section(const Ctx& ctx, const YAML::Node& name, const YAML::Node& body,
                          ProxyConfig& cfg) {
  if (!body.IsMap()) fail_at(ctx.source, line_of(name), "'chash_proxy' must be a map");
  for (const auto& kv : body) {
    const std::string k = kv.first.Scalar();
    if (k == "workers") {
      cfg.workers = ctx.number<unsigned>(kv.second, k, 0, 1024);
    } else if (k == "admin") {
      try {
        cfg.admin = parse_address(ctx.scalar(kv.second, k), "admin");
      } catch (const Error& e) {
        fail_at(ctx.source, line_of(kv.second), e.what());
      }
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
    } else {
      fail_at(ctx.source, line_of(kv.first),
              "unknown key '" + k + "' in chash_proxy" + suggest(k, kGlobalKeys));
    }
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
  for (const auto& top : root) {
    if (top.first.Scalar() == kGlobalSection) {
      parse_global_section(ctx, top.first, top.second, cfg);
    } else {
      PoolConfig pool = parse_pool(ctx, top.first, top.second, cfg);
      cfg.pools.push_back(std::move(pool));
    }
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
