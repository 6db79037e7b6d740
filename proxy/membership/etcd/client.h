// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a blocking client of etcd's v3 API over HTTP/JSON (the gateway every etcd 3.4
// member serves at /v3/...; Debian's etcd-server), for the membership threads and `chash fleet`.
//
// The HTTP/1.1 and TLS underneath are cpp-httplib's (Debian libcpp-httplib-dev) over OpenSSL;
// membership/etcd/json.h is the wire format. One Client is one connection at a time, used by
// one thread; stop() may be called from any thread to end a blocking call (a watch). Requests go
// to the endpoint that last answered; one that cannot be reached (or answers "unavailable") is
// left for the next, so a cluster that loses a member keeps serving. With `user`, the client
// authenticates (/v3/auth/authenticate) and sends the token; an expired token is renewed once.
//
// Example:
//   etcd::ClientOptions o;
//   o.endpoints = {{"127.0.0.1", 2379}};
//   etcd::Client c(o);
//   c.put("/chash/pools/cache/servers", R"(["127.0.0.1:6379:1 r1"])");
//   for (const auto& kv : c.range_prefix("/chash/").kvs) ...
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "membership/etcd/json.h"

namespace httplib {
class Client;
}

namespace chash::proxy::etcd {

struct Endpoint {
  std::string host;
  std::uint16_t port = 2379;
  std::string text() const { return host + ":" + std::to_string(port); }
};
// "host:port" (or "host", port 2379; "http://" / "https://" in front is accepted and dropped);
// throws EtcdError naming `text` when it is not one.
Endpoint parse_endpoint(std::string_view text);

struct ClientOptions {
  std::vector<Endpoint> endpoints;
  // TLS to every endpoint: `ca` verifies the members' certificates (empty: the system's),
  // `cert`/`key` is the client's (etcd --client-cert-auth). verify false: no check (tests).
  bool tls = false;
  std::string ca, cert, key;
  bool verify = true;
  std::string user, password;               // etcd auth (etcdctl user add); empty: none
  std::chrono::milliseconds timeout{2000};  // connect, and each request's answer
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Each throws EtcdError (unreachable, refused, unreadable) naming the endpoint and the reason.
  RangeReply get(std::string_view key);
  RangeReply range_prefix(std::string_view prefix);
  std::int64_t put(std::string_view key, std::string_view value, std::int64_t lease = 0);
  std::int64_t del(std::string_view key, std::string_view range_end = {});
  TxnReply txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
               const std::vector<Op>& failure = {});
  // A lease of `ttl` seconds (etcd raises less than its minimum, ~2 s); its ID.
  std::int64_t grant(std::int64_t ttl_seconds, std::int64_t* granted_ttl = nullptr);
  // The TTL left after renewing lease `id`; 0 when it has expired (its keys are gone).
  std::int64_t keepalive(std::int64_t id);
  void revoke(std::int64_t id);

  // Watches [key, range_end) from `start_revision` and calls `on_reply` for every message until
  // it returns false (then watch returns), or the stream breaks or stop() is called (EtcdError).
  // `idle`: how long the stream may stay silent before it counts as broken (etcd sends progress
  // notifications only every few minutes, so callers re-watch from their last revision).
  void watch(std::string_view key, std::string_view range_end, std::int64_t start_revision,
             const std::function<bool(const WatchReply&)>& on_reply,
             std::chrono::milliseconds idle = std::chrono::seconds(30));

  // Thread-safe: ends the blocking call in progress (and every later one) with EtcdError.
  void stop();
  // Thread-safe: ends the blocking call in progress only (a watch on a connection that may be
  // dead: the next call connects afresh).
  void interrupt();
  bool stopped() const noexcept { return stopped_.load(); }
  // The endpoint requests go to now ("127.0.0.1:2379").
  std::string endpoint() const;

  // What this client last heard from each endpoint, in the order given. Requests stay with the
  // endpoint that answers, so the others are only known from the last time one was tried:
  // `state` 1 answered, -1 could not be reached or answered "unavailable" (`error` says how),
  // 0 never asked. `at_ms`: wall clock of that outcome. Thread-safe (the status page reads it).
  struct EndpointStatus {
    std::string endpoint;
    int state = 0;
    std::string error;
    std::int64_t at_ms = 0;
  };
  std::vector<EndpointStatus> endpoint_status() const;

 private:
  // POSTs `body` to `path` and returns the answer's body (HTTP 200), trying every endpoint once
  // when one cannot be reached; an error object from etcd is an EtcdError with its message.
  std::string post(const std::string& path, const std::string& body);
  std::unique_ptr<httplib::Client> connect(const Endpoint& e,
                                           std::chrono::milliseconds read_timeout) const;
  // Gets a token (token_); false with `transport_error` when `e` cannot be reached, EtcdError
  // when it refuses the credentials.
  bool authenticate(httplib::Client& http, const Endpoint& e, std::string& transport_error);

  ClientOptions options_;
  std::size_t current_ = 0;  // index into endpoints
  std::string token_;
  mutable std::mutex mu_;  // http_ (stop() from another thread)
  std::unique_ptr<httplib::Client> http_;
  std::vector<EndpointStatus> heard_;                       // by endpoint index (mu_)
  void heard(std::size_t index, const std::string& error);  // empty error: it answered
  bool broken_ = false;  // http_ was left mid-reply: connect afresh
  std::atomic<bool> stopped_{false};
};

}  // namespace chash::proxy::etcd
