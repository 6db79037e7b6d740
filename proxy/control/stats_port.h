// SPDX-License-Identifier: Apache-2.0
// chash-proxy — nutcracker's stats port: every connection gets one JSON document and is closed.
//
// The document has nutcracker 0.5.0's field names and nesting (nc_stats.c), so twemproxy
// dashboards and exporters read it unchanged:
//   {"service":"nutcracker", "source":"<hostname>", "version":"0.2.0", "uptime":12,
//    "timestamp":1796083213, "total_connections":4, "curr_connections":2,
//    "alpha": {"client_eof":2, ..., "fragments":0, "127.0.0.1:7001": {"server_eof":0, ...}}}
// As in nutcracker, the header (uptime, timestamp, connection counts) is live and the pool and
// server values are an aggregated snapshot, refreshed when older than stats_interval. Served on
// the control loop without blocking it: nothing is read from the client (what it sends is
// discarded), the document is written as the socket allows, and a deadline and a connection cap
// bound what a client that never reads can hold. docs/REFERENCE.md lists every difference from
// nutcracker.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "membership/topology.h"
#include "net/event_loop.h"

namespace chash::proxy {

// The live part of the document.
struct StatsHeader {
  std::string source;                   // the host name
  std::string version;                  // chash's version (CHASH_VERSION_STRING), not nutcracker's
  std::int64_t uptime = 0;              // seconds since the proxy started
  std::int64_t timestamp = 0;           // seconds since the epoch, now
  std::uint64_t total_connections = 0;  // listeners + clients + backend connections ever opened
  std::uint64_t curr_connections = 0;   // of which open now
};

// `"<pool>": {pool stats..., "<server>": {server stats...}, ...}` for every pool, separated by
// ", " (the part of the document that is a snapshot).
std::string render_stats_pools(const Topology& topology);
// The whole document, newline-terminated, from a header and render_stats_pools()'s text.
std::string render_stats_json(const StatsHeader& header, const std::string& pools);

// The text of `nutcracker -D` (--describe-stats): every pool and server stat, described.
std::string describe_stats();

class StatsPort : public net::Pollable {
 public:
  struct Handlers {
    std::function<StatsHeader()> header;  // called per connection
    std::function<std::string()> pools;   // render_stats_pools(now), called once per interval
  };
  struct Limits {
    std::chrono::milliseconds interval{30000};  // snapshot age limit (stats_interval)
    std::chrono::milliseconds deadline{5000};   // accept to last byte written
    std::size_t max_connections = 64;           // more are closed at once
  };
  // Serves `listen_fd` (non-blocking, listening) on `loop`; the caller keeps the fd.
  StatsPort(net::EventLoop& loop, int listen_fd, Handlers handlers, Limits limits);
  ~StatsPort() override;
  StatsPort(const StatsPort&) = delete;
  StatsPort& operator=(const StatsPort&) = delete;

  void on_event(std::uint32_t events) override;  // the listener: accept every pending client
  std::size_t open_connections() const noexcept { return conns_.size(); }
  // The document a client connecting now gets.
  std::string document();

 private:
  class Conn;
  void finish(Conn* c);

  net::EventLoop& loop_;
  int fd_;
  Handlers handlers_;
  Limits limits_;
  std::string snapshot_;
  net::Clock::time_point snapshot_at_{};
  bool have_snapshot_ = false;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
};

}  // namespace chash::proxy
