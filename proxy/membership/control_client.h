// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a blocking RESP conversation, for the control threads only (the Sentinel and
// Redis Cluster watchers, membership/sentinel.h and membership/cluster.h); a worker never waits
// like this.
//
// query() opens one connection (TLS with a context), writes the pipelined request, and reads
// `replies` whole replies, all within one deadline; every value is bounded (parse_resp), so a
// hostile or broken peer costs at most the deadline and kMaxControlInput bytes.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace chash::proxy {

namespace net {
class TlsContext;
}

// The AUTH [user] password and SELECT db a connection to `server` of redis pool `pool` starts
// with (as the workers' connections do), appended to `out`; how many replies they add.
std::size_t append_redis_prelude(const PoolConfig& pool, const ServerConfig& server,
                                 std::string& out);

// One RESP2 value, as Sentinels and cluster nodes answer (nil: a $-1 or *-1).
struct RespValue {
  char type = 0;  // '+', '-', ':', '$', '*'
  bool nil = false;
  std::string str;
  std::vector<RespValue> items;
};
// Parses one value of `in` from `pos`: 1 done (`pos` moves past it), 0 incomplete, -1 malformed
// or over the bounds (nesting 4, 4 MiB strings, 100,000 elements per array).
int parse_resp(std::string_view in, std::size_t& pos, RespValue& out, int depth = 0);

inline constexpr std::size_t kMaxControlInput = std::size_t{8} << 20;  // per query

// Where to connect: `address` (its host names the TLS peer), at `resolved` when given (an
// address already looked up, as the workers connect), else looked up now.
struct Endpoint {
  Endpoint(const Address& a) : address(a) {}  // NOLINT: an Address is an Endpoint
  const Address& address;
  const sockaddr_storage* resolved = nullptr;
  socklen_t len = 0;
};

struct QueryResult {
  std::vector<RespValue> replies;  // in order; fewer than asked when `error` says why
  std::string error;               // empty: every reply arrived
};

// Connects to `address` (resolving a name: control threads may block), [TLS handshake],
// sends `request` and reads `replies` replies before `timeout` has passed.
QueryResult query(const Endpoint& to, std::string_view request, std::size_t replies,
                  std::chrono::milliseconds timeout, const net::TlsContext* tls = nullptr);

// The same for a text protocol (memcached): reads until what arrived ends with `until`
// ("MN\r\n" after meta commands, "OK\r\n"); what arrived, and `error` when it ended early.
std::string exchange(const Endpoint& to, std::string_view request, std::string_view until,
                     std::chrono::milliseconds timeout, const net::TlsContext* tls,
                     std::string& error);

// A long answer read as it comes (a memcached metadump): `each` gets the bytes not consumed
// yet, may erase what it has used from the front, and returns true when the answer is over.
// At most kMaxControlInput bytes wait unconsumed.
void stream(const Endpoint& to, std::string_view request, std::chrono::milliseconds timeout,
            const net::TlsContext* tls, const std::function<bool(std::string&)>& each,
            std::string& error);

}  // namespace chash::proxy
