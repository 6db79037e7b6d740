// SPDX-License-Identifier: Apache-2.0
// chash-proxy — what the key-sharding protocols (redis, memcache) share: a client connection
// that answers pipelined requests strictly in order, and a backend connection whose replies
// complete the queued requests in the order they were sent.
//
// A protocol derives a Client from ClientSession (it parses in_ and queues Replies on
// pending_), a Backend from BackendSession (it parses in_ and completes queue_.front()), and a
// request type from Reply. Everything about sockets, backpressure, timeouts, failures and
// draining lives here, once.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/connection.h"
#include "membership/topology.h"
#include "net/buffer.h"
#include "net/event_loop.h"
#include "net/tls.h"

namespace chash::proxy {

class Worker;
class ClientSession;

// Sends out[off..] without blocking. Returns false on a socket error (errno is kept), true when
// everything was sent or the socket is full; `off` advances past what was sent.
bool send_pending(int fd, const std::string& out, std::size_t& off);
// One recv() of up to kReadChunk bytes appended to `in`; returns recv()'s result.
ssize_t recv_append(int fd, std::string& in);
// The same through TLS (net/tls.h); the sessions call these only when a connection has a
// TlsStream, so the plaintext path stays a direct recv()/send().
bool send_pending(net::TlsStream& tls, const std::string& out, std::size_t& off);
ssize_t recv_append(net::TlsStream& tls, std::string& in);

// Whether `node` (Pool::route's answer for `what`) can take a request; if not, `why` says so
// ("no backend is up for key 'k' ..." / "backend r1 is down ..."), without the protocol's prefix.
bool backend_usable(const Pool& pool, NodeId node, std::string_view what, std::string& why);
// "backend r1 is down: Connection refused (retried every 2000 ms)": the OS error of the failure
// that put it down (BackendState::last_os_error), as nutcracker's errors carry strerror.
std::string down_text(const Pool& pool, NodeId node);

inline constexpr std::size_t kReadChunk = 64 * 1024;
inline constexpr std::size_t kMaxClientOutput = 8u << 20;  // pause reading above this much unsent
inline constexpr int kMaxReadsPerEvent = 16;               // fairness between connections
// ClientSession::hold_output(): at most this much of an unfinished read's replies waits for the
// rest of them (a read is at most kReadChunk of requests).
inline constexpr std::size_t kHoldLimit = 64 * 1024;
// Draining: a client connection not answered since the drain began closes once it has sent
// nothing for this long (ClientSession::close_if_drained says why).
inline constexpr auto kDrainQuiet = std::chrono::milliseconds(200);

// One request's place in its client's in-order reply queue.
struct Reply : RefCounted {
  virtual ~Reply() = default;
  ClientSession* client = nullptr;  // null once the client has gone
  std::string reply;                // written when done (may be empty: noreply), unless emit()
                                    // is overridden
  bool done = false;
  bool emitted = false;           // handed to the client's output queue
  bool close_after = false;       // quit / protocol error: close once this reply is written
  bool silent = false;            // answered but not written (Redis's CLIENT REPLY OFF / SKIP)
  bool script = false;            // a script or function call (BackendConn::busy_with_script)
  std::uint32_t outstanding = 0;  // parts still waiting for a backend
  net::Clock::time_point start;   // set for forwarded requests: a latency sample when written
  // A backend could not answer part `part`; `error` is a whole error reply of the protocol.
  virtual void fail_part(std::uint32_t part, std::string_view error) = 0;
  // Queues the reply's bytes on its client's output (when done and next in order). A protocol's
  // message gathers them from the backends' read chunks (net/buffer.h) instead of `reply`.
  virtual void emit(net::OutQueue& out) { out.append(reply); }
  // Done but not yet written (an earlier reply of its client is still missing): small replies
  // held in a backend's read chunk are copied out so that they do not pin it while they wait.
  virtual void settle() {}
  // Marks the reply done and lets the client write what is now in order.
  void finish_now();
};

// A reply the proxy makes itself.
struct LocalReply final : Reply {
  void fail_part(std::uint32_t, std::string_view) override {}
};

// Drops what `parser` has consumed from the front of `in` (parsers keep offsets into it).
template <class Parser>
void drop_consumed(std::string& in, Parser& parser) {
  const std::size_t n = parser.start();
  if (n == 0) return;
  in.erase(0, n);
  parser.consume(n);
}

template <class Parser>
void drop_consumed(net::RecvBuffer& in, Parser& parser) {
  const std::size_t n = parser.start();
  if (n == 0) return;
  in.consume(n);
  parser.consume(n);
}

class ClientSession : public ClientConn {
 public:
  ClientSession(Worker& worker, std::size_t pool_index, int fd);
  ~ClientSession() override;

  void on_event(std::uint32_t events) override;
  void drain() override;
  // A Reply of ours completed: queue what is now in order; the worker writes it at the end of
  // the event batch (flush_output), so a burst of completions costs one send().
  void on_done();
  // Writes what on_done() queued, unless hold_output() keeps it for the rest of its read.
  void flush_output();

 protected:
  // Parses and dispatches the requests buffered in in_ while can_take_more(); called with
  // pool_ refreshed. Sets nothing else; may close the connection (check closed_).
  virtual void process() = 0;
  // The connection is closing (before its requests are dropped): a protocol releases what it
  // holds beyond them (redis: a WATCH connection).
  virtual void on_closing() {}

  bool can_take_more() const noexcept {
    return !read_closed_ && !input_paused_ && pending_.size() < pool_->config.max_pipeline;
  }
  // The request loop every protocol runs from process(): parse, dispatch(), repeat while
  // can_take_more(). A parse error answers error_reply(), closes after it and resets `parser`.
  template <class Parser, class ErrorReply, class Dispatch>
  void parse_requests(Parser& parser, ErrorReply error_reply, Dispatch dispatch) {
    while (can_take_more()) {
      const auto r = parser.parse(in_);
      using R = std::decay_t<decltype(r)>;
      if (r == R::kNeedMore) break;
      if (r == R::kError) {
        protocol_error(error_reply());
        if (closed_) return;
        parser = Parser();
        break;
      }
      dispatch();
      if (closed_) return;
      parser.next();
    }
    drop_consumed(in_, parser);
  }
  // Queues a reply made by the proxy (after every earlier reply).
  void reply_local(std::string reply, bool count_error = false, bool close_after = false);
  // An unparsable request: counts it, answers `reply` (may be empty) and closes after it; the
  // input buffer is freed at once. The caller resets its parser.
  void protocol_error(std::string reply);
  // Replies queued while set are silent (Reply::silent): a protocol sets it per request.
  bool silent_ = false;
  // Queues bytes nobody asked for (a Pub/Sub message) after every earlier reply; never silent.
  void push_message(std::string bytes);
  // The same, but ahead of the replies not yet complete: a RESP3 push a server sent on a
  // client's own connection before the reply to that client's next request (CLIENT TRACKING's
  // invalidation of a key evicted while running it comes before its reply, as from Redis).
  void push_ahead(std::string bytes);
  // The same for `head` then `body` (held in `chunk`, a backend's read chunk): with no reply
  // owed before it, straight to the output with no copy of a large body and no Reply of its own
  // (a subscriber's usual case: a fan-out's every message passes here).
  void push_message(std::string_view head, const net::ChunkRef& chunk, std::string_view body);
  // Queues `r` (a forwarded request) at the back of the reply order.
  void push(const Ref<Reply>& r);
  // Counts one request received (process and pool); `fragments` > 1 counts a split request's
  // parts (nutcracker's fragments).
  void count_request() noexcept;
  void count_fragments(std::uint32_t parts) noexcept {
    if (parts > 1) pool_->shared->fragments.fetch_add(parts, std::memory_order_relaxed);
  }
  // A request answered with an error because no backend could take it (forward_error).
  void count_forward_error() noexcept {
    pool_->shared->forward_errors.fetch_add(1, std::memory_order_relaxed);
  }
  void close();
  // The client has closed its side (its EOF, or a reset, waits unread); TLS: never detected.
  bool peer_closed() const noexcept;

  Worker& worker_;
  std::size_t pool_index_;
  std::shared_ptr<const Pool> pool_;  // refreshed per batch from the worker
  int fd_;
  bool closed_ = false;
  bool read_closed_ = false;  // EOF, quit or protocol error: no more requests
  // A protocol holds the requests after the current one (redis: a client blocked by BLPOP reads
  // on once it is answered); set it back with resume_input().
  bool input_paused_ = false;
  void resume_input() {
    input_paused_ = false;
    if (closed_) return;
    if (!in_.empty() && !processing_) run_process();  // what arrived meanwhile
    if (!closed_) update_events();
  }
  // Why the connection ends, counted once at close (nutcracker's client_eof / client_err).
  bool saw_eof_ = false;
  bool saw_error_ = false;
  std::string in_;
  std::deque<Ref<Reply>> pending_;

 private:
  void read();
  void run_process();
  void write();
  void update_events();
  // TLS: the handshake has not finished within the pool's handshake_timeout.
  void on_handshake_timeout();
  // Draining and between requests (nothing unanswered, unsent, half-read or arriving): close.
  bool close_if_drained();
  // Replies go out in the units the client wrote its requests in: the replies to one read's
  // requests are sent together once the last of them is in, not a send() per backend as each
  // backend answers. A pipelining client (redis-benchmark -P, a driver's pipeline) waits for the
  // whole batch anyway, and every partial send woke it for nothing: a cluster pool's batch of 16
  // GETs over 3 masters cost ~1.5 sends instead of 1. True while the queued output is only part
  // of an unfinished read's replies and under kHoldLimit; never for a closing connection.
  bool hold_output();

  bool want_read_ = true;
  bool draining_ = false;
  bool replied_in_drain_ = false;      // a reply was queued since the drain began
  net::Clock::time_point last_input_;  // accepted, or last bytes read
  bool processing_ = false;            // inside process(): do not re-enter it from a completion
  bool want_write_ = false;
  bool output_scheduled_ = false;  // in the worker's list for flush_output()
  bool closing_ = false;           // a close_after reply is queued: nothing more is written
  // hold_output(): requests queued and replies emitted so far, the value of requests_queued_
  // at the end of each read's requests not yet all emitted, and whether out_ holds the replies
  // of a finished read (then it is written now).
  std::uint64_t requests_queued_ = 0, replies_emitted_ = 0;
  std::deque<std::uint64_t> read_ends_;
  bool read_finished_ = false;
  // count_request()'s requests, added to the shared counters once per read (run_process): two
  // atomic adds per request on counters every worker shares were measurable on pipelines.
  std::uint64_t requests_uncounted_ = 0;
  net::OutQueue out_;                    // replies in order, gathered from the backends' chunks
  std::unique_ptr<net::TlsStream> tls_;  // the pool's `tls:` (null: plaintext)
  net::EventLoop::TimerId handshake_timer_ = 0;
};

class BackendSession : public BackendConn {
 public:
  BackendSession(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node);
  ~BackendSession() override;

  // Starts connecting, then handshake(). False (with `error`) when it cannot start.
  bool start(std::string& error) override;
  void send(std::initializer_list<std::string_view> bytes, Ref<Reply> msg,
            std::uint32_t part) override {
    enqueue(bytes, std::move(msg), part, 0);
  }
  void send_control(std::string_view bytes) override { enqueue({bytes}, nullptr, 0, 0); }
  void flush() override;
  void check_timeout(net::Clock::time_point now) override;
  void drain() override;
  bool stale() const override {
    return epoch_ != state_->address_epoch.load(std::memory_order_relaxed);
  }
  // BackendState::address_epoch when this connection's address was read.
  std::uint64_t address_epoch() const noexcept { return epoch_; }
  void on_event(std::uint32_t events) override;
  void mark_own() override;
  bool busy_with_script(net::Clock::time_point now,
                        std::chrono::milliseconds after) const override {
    return !queue_.empty() && queue_.front().msg != nullptr && queue_.front().msg->script &&
           now - front_since() >= after;
  }
  const std::string& name() const noexcept { return state_->name; }

 protected:
  struct Pending {
    Ref<Reply> msg;  // null: the proxy's own handshake request
    std::uint32_t part = 0;
    std::uint32_t tag = 0;  // the protocol's note on how to read the reply
    net::Clock::time_point sent;
    std::uint64_t end = 0;    // enqueued_bytes_ after this request: written once sent_bytes_ >= end
    std::uint32_t bytes = 0;  // its size (in_queue_bytes / out_queue_bytes)
  };
  // How a connection failed, for nutcracker's server_eof / server_timedout / server_err.
  enum class FailKind { kError, kEof, kTimeout };
  // Queues the proxy's own first requests (AUTH, SELECT, ...) with enqueue(..., nullptr, ...).
  virtual void handshake() {}
  // New bytes are in in_: complete the queued requests they answer (in order); may fail().
  virtual void on_input() = 0;
  // The protocol's error reply for every request lost with this connection.
  virtual std::string failure_reply(const std::string& why) const = 0;
  // The connection has just closed (failed, drained or timed out), before it is freed: a
  // protocol that lent it to one client (redis WATCH) tells that client here.
  virtual void on_closed() {}

  // Queues a request's bytes; its reply completes msg's part `part` (msg null: handshake).
  void enqueue(std::initializer_list<std::string_view> bytes, Ref<Reply> msg, std::uint32_t part,
               std::uint32_t tag);
  // Removes the oldest queued request (its reply arrived); keeps BackendState::inflight.
  Pending take_front();
  // When the server's time on the oldest queued request began: when it was sent, or when the
  // reply before it was complete, whichever is later. `timeout` bounds the server's time on
  // each request, not the depth of the pipeline ahead of it: 2048 pipelined GETs of 100 KiB
  // (a slow reader's, say) take the proxy longer than 500 ms to read on a loaded machine, and
  // the request queued behind them must not have the backend judged on that.
  net::Clock::time_point front_since() const noexcept {
    return std::max(queue_.front().sent, last_reply_);
  }
  // Every queued request gets failure_reply(why); the connection closes; counts a failure.
  void fail(const std::string& why, FailKind kind = FailKind::kError);
  // With no request queued, every byte past `parsed` is a reply nobody asked for: fails the
  // connection and returns false (the stream can no longer be matched to requests).
  bool nothing_unasked(std::size_t parsed);
  void close();
  // Closes now: every queued request is dropped unanswered (its client has gone); not a
  // failure of the backend's.
  void abandon();
  bool connecting() const noexcept { return connecting_; }

  Worker& worker_;
  std::shared_ptr<const Pool> pool_;
  std::shared_ptr<BackendState> state_;
  NodeId node_;
  bool closed_ = false;
  net::RecvBuffer in_;  // replies are handed on as slices of its chunks (zero copy)
  std::deque<Pending> queue_;

 private:
  void read();
  void update_events();
  // Moves requests now wholly written from in_queue to out_queue (BackendState gauges).
  void note_sent();
  // Takes every queued request out of the queue gauges (the connection is going).
  void unqueue_all() noexcept;
  // Adds counts_ to the BackendState counters and gauges, and clears it: once per read and per
  // flush rather than several atomic adds per request (inflight, which bounded loads route by,
  // is kept per request).
  void publish_counts() noexcept;
  struct Counts {
    std::uint64_t requests = 0, request_bytes = 0, responses = 0;
    std::int64_t answered = 0, answered_bytes = 0;  // taken out of out_queue(_bytes)
    std::int64_t queued = 0, queued_bytes = 0;      // added to in_queue(_bytes)
  };
  Counts counts_;
  void uncount_connection() noexcept;
  // Why a TLS call failed, naming the backend's address (errno EPROTO), else `plain`.
  std::string io_error(const char* plain) const;

  int fd_ = -1;
  std::unique_ptr<net::TlsStream> tls_;  // the server's `server_tls:` (null: plaintext)
  std::uint64_t epoch_ = 0;              // BackendState::address_epoch when the address was read
  bool counted_ = false;                 // in BackendState::active
  bool own_ = false;                     // a client's own (mark_own), in own_connections
  std::int32_t scripts_ = 0;             // of queue_, script calls (BackendState::scripts)
  void count_script(const Pending& p, int delta) noexcept;
  std::uint64_t enqueued_bytes_ = 0, sent_bytes_ = 0;
  net::Clock::time_point last_reply_{};  // when take_front last took a request (front_since)
  std::size_t written_ = 0;  // queue_'s first written_ requests are wholly written
  bool connecting_ = true;
  bool draining_ = false;
  bool want_write_ = false;
  net::Clock::time_point connect_deadline_;
  std::string out_;
  std::size_t out_off_ = 0;
};

}  // namespace chash::proxy
