// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a raw TCP relay: one client connection, one backend connection of its own.
//
// At accept the relay takes the pool's current snapshot (a reload affects new connections
// only), picks a backend by the pool's `balance` (proto/tcp/balance.h) and connects to it
// without blocking. A refused or timed-out connect (pool `timeout`, else 5 s) counts as a
// failure of that backend (record_failure: enough of them eject it) and the relay tries the
// next candidate, each backend at most once; when none is left the client is closed.
//
// Connected, it writes the PROXY header if the pool asks for one, then copies bytes both ways
// through one fixed buffer per direction (kBufferBytes): a side is read only while its buffer
// has room, so a slow reader stops the writer at the other end (backpressure, bounded memory).
// Client bytes that arrive while connecting wait in the buffer and survive a retry.
// An EOF from one side is passed on after its buffered bytes (shutdown(SHUT_WR) on the other
// side) and the other direction keeps flowing until it ends too; an error or reset on either
// side closes both. With idle_timeout, a relay that moved no byte either way for that long is
// closed. BackendState::active counts relays connecting or open (least-conn, /metrics);
// BackendState::requests counts connects tried (errors and timeouts: the failed ones).
//
// TLS (net/tls.h). Without `tls:`/`server_tls:` the bytes are relayed as they are, a client's
// TLS session included (the backend terminates it). With `tls:` the relay terminates TLS: the
// client's handshake completes (within handshake_timeout) before a backend is chosen, so a
// client that never finishes one costs no backend connection. With the server's `server_tls:`
// the relay speaks TLS to the backend: the handshake is part of connecting (bounded by the
// same timeout), and a refused certificate counts as that backend's failure, is logged naming
// it, and the next candidate is tried. A PROXY header goes before the backend's handshake, as
// HAProxy sends it. A TLS read may need the socket writable and a write readable: each side
// remembers which (TlsWait) and asks epoll for it.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <string>

#include "core/connection.h"
#include "membership/topology.h"
#include "net/event_loop.h"
#include "net/tls.h"
#include "proto/tcp/balance.h"

namespace chash::proxy {
class Worker;
}

namespace chash::proxy::tcp {

constexpr std::size_t kBufferBytes = 16 * 1024;  // per direction (nginx's proxy_buffer_size)
constexpr std::uint32_t kDefaultConnectTimeoutMs = 5000;

class Relay final : public ClientConn {
 public:
  void drain() override {}  // a relay runs until either side closes it (or the process exits)
  // Takes `fd` (non-blocking, accepted on pool `pool_index`); owns itself from here on.
  Relay(Worker& worker, std::size_t pool_index, int fd, const sockaddr_storage& peer);
  ~Relay() override;
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Registers with the worker and starts the first connect (may close at once: no backend).
  void start();
  void on_event(std::uint32_t events) override;  // the client socket

 private:
  class BackendSide final : public net::Pollable {
   public:
    explicit BackendSide(Relay& r) : relay_(r) {}
    void on_event(std::uint32_t events) override { relay_.on_backend_event(events); }

   private:
    Relay& relay_;
  };

  // One direction: bytes read from `src` wait in buf[off, len) until written to the other side.
  struct Pipe {
    std::unique_ptr<char[]> buf{new char[kBufferBytes]};
    std::size_t off = 0, len = 0;
    bool src_ready = false;  // the source may have bytes (epoll said so; cleared on EAGAIN)
    bool dst_ready = false;  // the destination may take bytes
    bool eof = false;        // the source ended
    bool shut = false;       // ... and that was passed on (shutdown(SHUT_WR) of the destination)
    bool pending() const noexcept { return len > off; }
  };

  // A TLS call that returned EAGAIN because it needs the socket's other direction.
  struct TlsWait {
    bool read_wants_write = false;
    bool write_wants_read = false;
  };

  void on_backend_event(std::uint32_t events);
  void client_handshake();
  void backend_handshake();
  void connect_next();
  void connect_failed(const std::string& why, bool timed_out);
  void connected();
  // Moves bytes in both directions; false when the relay closed.
  bool pump();
  bool pump_one(Pipe& p, bool to_backend);
  // The client's (client) or the backend's socket, through TLS when that side has it: recv(),
  // send() and shutdown(SHUT_WR)'s contract.
  ssize_t recv_side(bool client, char* buf, std::size_t len);
  ssize_t send_side(bool client, const char* buf, std::size_t len);
  void shut_side(bool client);
  // Reads stopped at kRoundsPerEvent with decrypted bytes held by OpenSSL, which epoll cannot
  // report: pump again from a timer.
  void schedule_resume();
  // n bytes read from the client (to_backend) or from the backend: the pool's request/response
  // bytes and, once a backend is chosen, the backend's.
  void count_bytes(bool to_backend, std::uint64_t n) noexcept;
  void update_events();
  void set_events(int fd, std::uint32_t want, std::uint32_t& have, net::Pollable* p);
  void arm_idle_timer(std::chrono::milliseconds after);
  void on_idle_timer();
  void close_backend_fd();
  void close(const char* why);

  Worker& worker_;
  std::size_t pool_index_;
  std::shared_ptr<const Pool> pool_;
  int client_fd_;
  int backend_fd_ = -1;
  std::unique_ptr<net::TlsStream> client_tls_;   // the pool's `tls:` (null: as it is)
  std::unique_ptr<net::TlsStream> backend_tls_;  // the server's `server_tls:` (null: as it is)
  bool client_handshaking_ = false;              // before the backend is chosen
  bool backend_handshaking_ = false;             // part of connecting
  TlsWait client_wait_, backend_wait_;
  bool resume_ = false;                                   // set by pump_one: see schedule_resume
  std::uint32_t client_events_ = 0, backend_events_ = 0;  // registered with epoll (0: not)
  BackendSide backend_side_{*this};
  Chooser chooser_;
  NodeId node_ = kNoNode;
  std::shared_ptr<BackendState> counted_;  // the backend whose `active` we hold
  bool connecting_ = false;
  bool closed_ = false;
  std::string header_;  // PROXY header, written first
  std::size_t header_off_ = 0;
  Pipe up_;    // client -> backend
  Pipe down_;  // backend -> client
  net::EventLoop::TimerId connect_timer_ = 0;
  net::EventLoop::TimerId idle_timer_ = 0;
  net::EventLoop::TimerId handshake_timer_ = 0;
  net::EventLoop::TimerId resume_timer_ = 0;
  net::Clock::time_point last_activity_;
  sockaddr_storage peer_{};
  sockaddr_storage local_{};
};

}  // namespace chash::proxy::tcp
