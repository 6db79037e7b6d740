// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what every protocol's backend connection offers the Worker.
//
// A Worker keeps server_connections BackendConns per backend of a key-sharding pool (redis,
// memcache), created on first use by make_backend() (core/protocols.h). Clients queue requests
// on them through send() (no caller needs the protocol's own backend type), the worker flushes
// the dirty ones once per batch of client input, checks their timeouts on its 20 ms tick, and
// drains them when a reload removes their backend. A BackendConn hands itself to
// Worker::backend_closed() when it closes (the loop frees it).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "core/ref.h"
#include "net/event_loop.h"

namespace chash::proxy {

struct Reply;

// A client connection as the Worker sees it (ClientSession, tcp::Relay).
class ClientConn : public net::Pollable {
 public:
  // Drain (SIGTERM, a binary hand-over, its pool removed by a reload): close as soon as
  // everything the client has sent is answered and nothing more is arriving, without cutting a
  // request or a reply. A byte stream (tcp) has no such point: it runs until it ends.
  virtual void drain() = 0;
};

class BackendConn : public net::Pollable {
 public:
  // Starts connecting (and queues any handshake). False, with `error`, when it cannot start.
  virtual bool start(std::string& error) = 0;
  // Queues one request (its bytes, in pieces); the backend's reply completes part `part` of
  // `msg`, a Reply the protocol's client made (so the backend knows its concrete type).
  virtual void send(std::initializer_list<std::string_view> bytes, Ref<Reply> msg,
                    std::uint32_t part) = 0;
  // Queues a request of the proxy's own whose reply answers nobody (redis ASKING before a
  // redirected part); an error reply to it fails the connection.
  virtual void send_control(std::string_view bytes) = 0;
  // Writes what is queued (called by Worker::flush_dirty()).
  virtual void flush() = 0;
  // Fails requests (or the connect) older than the pool's timeout.
  virtual void check_timeout(net::Clock::time_point now) = 0;
  // The backend left the topology: close once nothing is in flight.
  virtual void drain() = 0;
  // Opened to an address the backend no longer has (a Sentinel failover moved its master,
  // BackendState::address_epoch): the worker drains it and connects afresh.
  virtual bool stale() const { return false; }
  // Whether the oldest request in flight is a script (EVAL, FCALL ...) sent at least `after`
  // ago: the server may be busy with it (Worker::backend's bypass).
  virtual bool busy_with_script(net::Clock::time_point, std::chrono::milliseconds) const {
    return false;
  }
  // A connection of one client's own (Worker::dedicated_backend): counted apart, and its
  // failures are that client's, never the backend's (no ejection for them: the shared
  // connections and the probes judge the backend). Called before start().
  virtual void mark_own() {}

  bool dirty() const noexcept { return dirty_; }
  void set_dirty(bool d) noexcept { dirty_ = d; }

 private:
  bool dirty_ = false;
};

}  // namespace chash::proxy
