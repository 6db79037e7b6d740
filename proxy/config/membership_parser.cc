// SPDX-License-Identifier: Apache-2.0
// chash-proxy — `membership:`, where a pool's servers come from when not the file (etcd), at the
// top level (`chash_proxy: membership:`, every plain pool's default) and per pool, and the
// server strings etcd holds (servers_from_strings). docs/FLEET.md lists the keys.
#include <set>
#include <string>

#include "chash/error.h"
#include "config/parse_util.h"

namespace chash::proxy {

std::string EtcdMembership::connection_key() const {
  std::string k;
  for (const auto& e : endpoints) k += e + ",";
  k += "|" + prefix + "|" + (tls ? "tls:" + ca + ":" + cert + ":" + key : "") + "|" + user;
  return k;
}

std::string server_name(std::string_view spec) {
  return config_detail::parse_server(spec, "server").name;
}

std::vector<ServerConfig> servers_from_strings(const PoolConfig& pool,
                                               const std::vector<std::string>& specs) {
  if (specs.empty()) throw Error(ErrorCode::kParse, "no servers (a pool needs at least one)");
  std::vector<ServerConfig> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ServerConfig s;
    try {
      s = config_detail::parse_server(specs[i], "server");
    } catch (const Error& e) {
      throw Error(ErrorCode::kParse, "server " + std::to_string(i + 1) + ": " + e.what());
    }
    if (!names.insert(s.name).second) {
      throw Error(ErrorCode::kParse, "server " + std::to_string(i + 1) + ": the name '" +
                                         s.name.substr(0, 80) + "' is given twice");
    }
    s.tls = pool.server_tls;
    out.push_back(std::move(s));
  }
  if (const std::string dup = same_server(out); !dup.empty()) throw Error(ErrorCode::kParse, dup);
  if (const std::string self = own_listener(pool, out); !self.empty())
    throw Error(ErrorCode::kParse, self);
  (void)chash::Router::build(pool.routing, routing_nodes(out));  // throws chash::Error naming why
  return out;
}

namespace config_detail {

namespace {

constexpr std::string_view kKeys[] = {
    "etcd",    "prefix",        "id",     "tls",    "auth",          "lease_ttl",
    "timeout", "start_timeout", "quorum", "health", "rebalance_rate"};

}  // namespace

std::shared_ptr<const EtcdMembership> parse_membership(const Ctx& ctx, const YAML::Node& v,
                                                       const std::string& where,
                                                       const EtcdMembership* base) {
  if (!v.IsMap()) {
    fail_at(ctx.source, line_of(v),
            where + ": 'membership' must be a map {etcd: [host:port, ...], prefix: /chash, ...}");
  }
  auto m = std::make_shared<EtcdMembership>(base != nullptr ? *base : EtcdMembership{});
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    const YAML::Node& x = kv.second;
    const int line = line_of(x);
    const std::string in = where + ": membership: ";
    if (k == "etcd") {
      m->endpoints.clear();
      const auto add = [&](const YAML::Node& e) {
        const std::string text = ctx.scalar(e, "etcd");
        std::string_view t = text;
        for (std::string_view scheme : {"http://", "https://"}) {
          if (t.starts_with(scheme)) t.remove_prefix(scheme.size());
        }
        const std::size_t colon = t.rfind(':');
        const std::string_view port = colon == std::string_view::npos ? "" : t.substr(colon + 1);
        if (colon == 0 || colon == std::string_view::npos || port.empty() ||
            port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5 ||
            std::stoul(std::string(port)) == 0 || std::stoul(std::string(port)) > 65535) {
          fail_at(ctx.source, line_of(e),
                  in + "etcd endpoint '" + text.substr(0, 80) + "' is not host:port");
        }
        m->endpoints.emplace_back(t);
      };
      if (x.IsScalar()) {
        add(x);
      } else if (x.IsSequence() && x.size() > 0) {
        for (const auto& e : x) add(e);
      } else {
        fail_at(ctx.source, line, in + "'etcd' must be a list of host:port (etcd's client URLs)");
      }
    } else if (k == "prefix") {
      const std::string p = ctx.scalar(x, k);
      std::string n = p;
      while (n.size() > 1 && n.back() == '/') n.pop_back();
      if (n.empty() || n[0] != '/' || n.find_first_of(" \t\r\n") != std::string::npos) {
        fail_at(ctx.source, line,
                in + "'prefix' must be a key path like /chash, got '" + p.substr(0, 60) + "'");
      }
      m->prefix = n == "/" ? "" : n;
    } else if (k == "id") {
      const std::string id = ctx.scalar(x, k);
      if (id.empty() || id.size() > 200 || id.find_first_of("/ \t\r\n") != std::string::npos) {
        fail_at(ctx.source, line,
                in + "'id' names this proxy in the fleet: a word without '/' or spaces");
      }
      m->id = id;
    } else if (k == "tls") {
      if (!x.IsMap()) fail_at(ctx.source, line, in + "'tls' must be a map {ca, cert, key, verify}");
      m->tls = true;
      for (const auto& t : x) {
        const std::string tk = t.first.Scalar();
        if (tk == "ca") m->ca = ctx.scalar(t.second, tk);
        else if (tk == "cert") m->cert = ctx.scalar(t.second, tk);
        else if (tk == "key") m->key = ctx.scalar(t.second, tk);
        else if (tk == "verify") m->verify = ctx.boolean(t.second, tk);
        else
          fail_at(ctx.source, line_of(t.first),
                  in + "tls: unknown key '" + tk + "' (ca, cert, key, verify)");
      }
      if (m->cert.empty() != m->key.empty()) {
        fail_at(ctx.source, line,
                in + "tls: give both cert and key (a client certificate), or neither");
      }
    } else if (k == "auth") {
      if (!x.IsMap()) fail_at(ctx.source, line, in + "'auth' must be a map {user, password}");
      m->user.clear();
      m->password.clear();
      for (const auto& a : x) {
        const std::string ak = a.first.Scalar();
        if (ak == "user") m->user = ctx.scalar(a.second, ak);
        else if (ak == "password") m->password = ctx.scalar(a.second, ak);
        else
          fail_at(ctx.source, line_of(a.first),
                  in + "auth: unknown key '" + ak + "' (user, password)");
      }
      if (m->user.empty()) fail_at(ctx.source, line, in + "auth: 'user' is required");
    } else if (k == "lease_ttl") {
      m->lease_ttl_ms = ctx.number<std::uint32_t>(x, k, 2000, 600000);
    } else if (k == "timeout") {
      m->timeout_ms = ctx.number<std::uint32_t>(x, k, 100, 60000);
    } else if (k == "start_timeout") {
      m->start_timeout_ms = ctx.number<std::uint32_t>(x, k, 0, 600000);
    } else if (k == "quorum") {
      const std::string q = ctx.scalar(x, k);
      m->quorum = q == "majority" ? 0 : ctx.number<std::uint32_t>(x, k, 1, 1000);
    } else if (k == "health") {
      m->health = ctx.boolean(x, k);
    } else if (k == "rebalance_rate") {
      m->rebalance_rate = static_cast<double>(ctx.number<std::uint32_t>(x, k, 0, 100000000));
    } else {
      fail_at(ctx.source, line_of(kv.first), in + "unknown key '" + k + "'" + suggest(k, kKeys));
    }
  }
  if (m->endpoints.empty()) {
    fail_at(ctx.source, line_of(v), where + ": membership: 'etcd' (its endpoints) is required");
  }
  return m;
}

}  // namespace config_detail

}  // namespace chash::proxy
