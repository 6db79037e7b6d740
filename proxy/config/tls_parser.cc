// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a pool's `tls:` and `server_tls:` maps (net/tls.h). The SSL_CTX is built here,
// while the config loads, so a certificate or key that cannot be used fails the load (or the
// reload, which then keeps the running config) with a message naming the file.
#include <string>
#include <vector>

#include "config/parse_util.h"
#include "net/tls.h"

namespace chash::proxy::config_detail {

namespace {

constexpr std::string_view kTlsKeys[] = {
    "cert", "key", "ca", "require_client_cert", "protocols", "ciphers", "handshake_timeout"};
constexpr std::string_view kServerTlsKeys[] = {"ca", "verify", "sni", "cert", "key"};

}  // namespace

std::shared_ptr<const net::TlsContext> parse_tls(const Ctx& ctx, const YAML::Node& v,
                                                 const std::string& where, bool to_clients) {
  const std::string key = to_clients ? "tls" : "server_tls";
  if (!v.IsMap()) {
    fail_at(ctx.source, line_of(v),
            where + ": '" + key + "' must be a map" +
                (to_clients ? " {cert, key, ca, require_client_cert, protocols, ciphers, "
                              "handshake_timeout}"
                            : " {ca, verify, sni, cert, key}"));
  }
  net::TlsServerOptions s;
  net::TlsClientOptions c;
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    const YAML::Node& x = kv.second;
    if (k == "cert") {
      (to_clients ? s.cert : c.cert) = ctx.scalar(x, k);
    } else if (k == "key") {
      (to_clients ? s.key : c.key) = ctx.scalar(x, k);
    } else if (k == "ca") {
      (to_clients ? s.ca : c.ca) = ctx.scalar(x, k);
    } else if (to_clients && k == "require_client_cert") {
      s.require_client_cert = ctx.boolean(x, k);
    } else if (to_clients && k == "protocols") {
      s.protocols.clear();
      if (x.IsScalar()) {
        s.protocols.push_back(x.Scalar());
      } else if (x.IsSequence()) {
        for (const auto& p : x) s.protocols.push_back(ctx.scalar(p, k));
      } else {
        fail_at(ctx.source, line_of(x),
                where + ": 'protocols' must be a list like [TLSv1.2, TLSv1.3]");
      }
    } else if (to_clients && k == "ciphers") {
      s.ciphers = ctx.scalar(x, k);
    } else if (to_clients && k == "handshake_timeout") {
      s.handshake_timeout_ms = ctx.number<std::uint32_t>(x, k, 1, 3600u * 1000u);
    } else if (!to_clients && k == "verify") {
      c.verify = ctx.boolean(x, k);
    } else if (!to_clients && k == "sni") {
      c.sni = ctx.scalar(x, k);
    } else {
      std::vector<std::string_view> all;
      if (to_clients) all.assign(std::begin(kTlsKeys), std::end(kTlsKeys));
      else all.assign(std::begin(kServerTlsKeys), std::end(kServerTlsKeys));
      fail_at(ctx.source, line_of(kv.first),
              where + ": unknown " + key + " key '" + k + "'" + suggest(k, all));
    }
  }
  try {
    return to_clients ? net::TlsContext::make_server(s) : net::TlsContext::make_client(c);
  } catch (const std::exception& e) {
    fail_at(ctx.source, line_of(v), where + ": " + key + ": " + e.what());
  }
}

}  // namespace chash::proxy::config_detail
