// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a pool's `tls:` and `server_tls:` maps, and a server's own `server_tls:`
// (net/tls.h). The SSL_CTX is built here, while the config loads, so a certificate or key that
// cannot be used fails the load (or the reload, which then keeps the running config) with a
// message naming the file.
#include <span>
#include <string>

#include "config/parse_util.h"
#include "net/tls.h"

namespace chash::proxy::config_detail {

namespace {

constexpr std::string_view kTlsKeys[] = {
    "cert", "key", "ca", "require_client_cert", "protocols", "ciphers", "handshake_timeout"};
constexpr std::string_view kServerTlsKeys[] = {"ca", "verify", "sni", "cert", "key"};

[[noreturn]] void not_a_map(const Ctx& ctx, const YAML::Node& v, const std::string& where,
                            const std::string& key, std::string_view keys) {
  fail_at(ctx.source, line_of(v),
          where + ": '" + key + "' must be a map {" + std::string(keys) + "}");
}

[[noreturn]] void unknown_key(const Ctx& ctx, const YAML::Node& k, const std::string& where,
                              const std::string& key, std::span<const std::string_view> all) {
  fail_at(ctx.source, line_of(k),
          where + ": unknown " + key + " key '" + k.Scalar() + "'" + suggest(k.Scalar(), all));
}

// Reads the keys of a `server_tls:` map into `c`.
void read_server_tls(const Ctx& ctx, const YAML::Node& v, const std::string& where,
                     net::TlsClientOptions& c) {
  if (!v.IsMap()) not_a_map(ctx, v, where, "server_tls", "ca, verify, sni, cert, key");
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    const YAML::Node& x = kv.second;
    if (k == "cert") {
      c.cert = ctx.scalar(x, k);
    } else if (k == "key") {
      c.key = ctx.scalar(x, k);
    } else if (k == "ca") {
      c.ca = ctx.scalar(x, k);
    } else if (k == "verify") {
      c.verify = ctx.boolean(x, k);
    } else if (k == "sni") {
      c.sni = ctx.scalar(x, k);
    } else {
      unknown_key(ctx, kv.first, where, "server_tls", kServerTlsKeys);
    }
  }
}

}  // namespace

std::shared_ptr<const net::TlsContext> parse_tls(const Ctx& ctx, const YAML::Node& v,
                                                 const std::string& where, const std::string& key) {
  if (!v.IsMap()) {
    not_a_map(ctx, v, where, key,
              "cert, key, ca, require_client_cert, protocols, ciphers, handshake_timeout");
  }
  net::TlsServerOptions s;
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    const YAML::Node& x = kv.second;
    if (k == "cert") {
      s.cert = ctx.scalar(x, k);
    } else if (k == "key") {
      s.key = ctx.scalar(x, k);
    } else if (k == "ca") {
      s.ca = ctx.scalar(x, k);
    } else if (k == "require_client_cert") {
      s.require_client_cert = ctx.boolean(x, k);
    } else if (k == "protocols") {
      s.protocols.clear();
      if (x.IsScalar()) {
        s.protocols.push_back(x.Scalar());
      } else if (x.IsSequence()) {
        for (const auto& p : x) s.protocols.push_back(ctx.scalar(p, k));
      } else {
        fail_at(ctx.source, line_of(x),
                where + ": 'protocols' must be a list like [TLSv1.2, TLSv1.3]");
      }
    } else if (k == "ciphers") {
      s.ciphers = ctx.scalar(x, k);
    } else if (k == "handshake_timeout") {
      s.handshake_timeout_ms = ctx.number<std::uint32_t>(x, k, 1, 3600u * 1000u);
    } else {
      unknown_key(ctx, kv.first, where, key, kTlsKeys);
    }
  }
  try {
    return net::TlsContext::make_server(s);
  } catch (const std::exception& e) {
    fail_at(ctx.source, line_of(v), where + ": " + key + ": " + e.what());
  }
}

std::shared_ptr<const net::TlsContext> parse_server_tls(const Ctx& ctx, const YAML::Node& v,
                                                        const std::string& where,
                                                        const YAML::Node* base) {
  net::TlsClientOptions c;
  // A server's own keys override its pool's, key by key (a per-server sni over a shared ca).
  if (base != nullptr) read_server_tls(ctx, *base, where, c);
  read_server_tls(ctx, v, where, c);
  try {
    return net::TlsContext::make_client(c);
  } catch (const std::exception& e) {
    fail_at(ctx.source, line_of(v), where + ": server_tls: " + e.what());
  }
}

}  // namespace chash::proxy::config_detail
