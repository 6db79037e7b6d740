// SPDX-License-Identifier: Apache-2.0
#include "core/session.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "core/worker.h"
#include "net/socket.h"

namespace chash::proxy {

ssize_t recv_append(int fd, std::string& in) {
  // recv() into a per-thread scratch chunk and append only what arrived. Growing `in` by the
  // chunk first (resize) zero-fills 64 KiB per read — twice per proxied request, which cost
  // ~3 µs of CPU per request (make bench-proxy, GET unpipelined, 1 worker).
  static thread_local char scratch[kReadChunk];
  const ssize_t n = ::recv(fd, scratch, sizeof scratch, 0);
  if (n > 0) in.append(scratch, static_cast<std::size_t>(n));
  return n;
}

bool send_pending(int fd, const std::string& out, std::size_t& off) {
  while (off < out.size()) {
    const ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  return true;
}

ssize_t recv_append(net::TlsStream& tls, std::string& in) {
  static thread_local char scratch[kReadChunk];
  const ssize_t n = tls.recv(scratch, sizeof scratch);
  if (n > 0) in.append(scratch, static_cast<std::size_t>(n));
  return n;
}

bool send_pending(net::TlsStream& tls, const std::string& out, std::size_t& off) {
  while (off < out.size()) {
    const ssize_t n = tls.send(out.data() + off, out.size() - off);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    return n < 0 && errno == EAGAIN;
  }
  return true;
}

bool backend_usable(const Pool& pool, NodeId node, std::string_view what, std::string& why) {
  if (node == kNoNode) {
    why = "no backend is up for " + std::string(what) + " (every candidate is down)";
    return false;
  }
  BackendState& s = *pool.states[node];
  if (s.down.load(std::memory_order_relaxed)) {
    if (node < pool.fleet_out.size() && pool.config.auto_eject_hosts) {
      // The fleet routes its keys here (a quorum of proxies reaches it): writing them elsewhere
      // alone would split the fleet's truth (membership/fleet/).
      s.fleet_unreachable.fetch_add(1, std::memory_order_relaxed);
      why = "backend " + s.name + " unreachable from this proxy (fleet: up)";
      return false;
    }
    why = down_text(pool, node);
    return false;
  }
  return true;
}

std::string down_text(const Pool& pool, NodeId node) {
  const BackendState& s = *pool.states[node];
  const int e = s.last_os_error.load(std::memory_order_relaxed);
  return "backend " + s.name + " is down" + (e != 0 ? ": " + std::string(std::strerror(e)) : "") +
         " (retried every " + std::to_string(pool.config.server_retry_timeout_ms) + " ms)";
}

namespace {

// After a send: forget what was sent (at once when all of it was, else in 1 MiB steps).
void compact_sent(std::string& out, std::size_t& off) {
  if (off == out.size()) {
    out.clear();
    off = 0;
  } else if (off > (1u << 20)) {
    out.erase(0, off);
    off = 0;
  }
}

}  // namespace

void Reply::finish_now() {
  done = true;
  if (client == nullptr) return;
  client->on_done();
  if (!emitted) settle();  // waits behind an earlier reply
}

// ---- ClientSession ------------------------------------------------------------------------------

ClientSession::ClientSession(Worker& worker, std::size_t pool_index, int fd)
    : worker_(worker),
      pool_index_(pool_index),
      pool_(worker.pool(pool_index)),
      fd_(fd),
      last_input_(worker.loop().now()) {
  if (const auto& ctx = pool_->config.tls) {
    std::string error;
    tls_ = net::TlsStream::accept(*ctx, fd_, error);
    if (!tls_) {
      // Out of memory in OpenSSL: never speak plaintext here; the EOF this makes closes us.
      log(LogLevel::kWarn, "TLS accept failed", {{"pool", pool_->config.name}, {"reason", error}});
      ::shutdown(fd_, SHUT_RDWR);
    } else {
      handshake_timer_ =
          worker_.loop().add_timer(std::chrono::milliseconds(ctx->handshake_timeout_ms()),
                                   [this] { on_handshake_timeout(); });
    }
  }
  worker_.loop().add(fd_, EPOLLIN, this);
  worker_.client_opened(this, pool_index_);
}

void ClientSession::on_handshake_timeout() {
  handshake_timer_ = 0;
  if (closed_ || tls_->handshake_done()) return;
  log(LogLevel::kDebug, "TLS handshake timed out", {{"pool", pool_->config.name}});
  worker_.metrics().tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
  saw_error_ = true;
  close();
}

ClientSession::~ClientSession() {
  if (fd_ >= 0) ::close(fd_);
}

void ClientSession::on_event(std::uint32_t events) {
  if (closed_) return;
  if ((events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN)) {
    if (events & EPOLLERR) saw_error_ = true;
    else saw_eof_ = true;
    close();  // nothing can be read or written any more
    return;
  }
  if (events & EPOLLIN) {
    read();
    if (closed_) return;
  }
  if (tls_ != nullptr) {
    // TLS may need the other direction: a read waiting to write (handshake), a write waiting
    // to read (key update). Retry both; each is a no-op when it has nothing to do.
    if ((events & EPOLLOUT) && want_read_ && !read_closed_) {
      read();
      if (closed_) return;
    }
    if ((events & (EPOLLIN | EPOLLOUT)) && !out_.empty()) write();
    return;
  }
  if (events & EPOLLOUT) write();
}

void ClientSession::read() {
  if (read_closed_) {
    // Only errors/hangups get here (EPOLLIN is off): nothing more will be written either.
    close();
    return;
  }
  for (int i = 0; i < kMaxReadsPerEvent && want_read_; ++i) {
    const ssize_t n = tls_ != nullptr ? recv_append(*tls_, in_) : recv_append(fd_, in_);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && tls_ != nullptr) {
        log(LogLevel::kDebug, "TLS client failed",
            {{"pool", pool_->config.name}, {"reason", tls_->error()}});
        if (!tls_->handshake_done())
          worker_.metrics().tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
      }
      // EOF (or reset): answer what was asked, then close. Replies already made may still be
      // unsent (out_ is flushed at the end of the event batch): a client that half-closed after
      // its requests (`nc -N`, shutdown(SHUT_WR)) gets them, and write() closes once they are
      // out. Closing on an empty pending_ alone lost them whenever the EOF was read in the same
      // batch as the requests (seen as an empty answer to MEMCACHED.md's printf line).
      (n == 0 ? saw_eof_ : saw_error_) = true;
      read_closed_ = true;
      if ((pending_.empty() && out_.empty()) || input_paused_) {  // a paused (blocked) client
        close();                                                  // is answered no more
        return;
      }
      break;
    }
    last_input_ = worker_.loop().now();
    pool_->shared->request_bytes.fetch_add(static_cast<std::uint64_t>(n),
                                           std::memory_order_relaxed);
    run_process();
    if (closed_) return;
    if (static_cast<std::size_t>(n) < kReadChunk) break;
  }
  // Backends are written once per event batch (Worker: loop batch_end), not per client.
  update_events();
}

void ClientSession::run_process() {
  pool_ = worker_.pool(pool_index_);
  processing_ = true;
  process();
  processing_ = false;
  if (requests_uncounted_ != 0) {  // once per read, not per request (see count_request)
    worker_.metrics().requests.fetch_add(requests_uncounted_, std::memory_order_relaxed);
    pool_->shared->requests.fetch_add(requests_uncounted_, std::memory_order_relaxed);
    requests_uncounted_ = 0;
  }
  if (closed_) return;
  // Where this read's requests end (for hold_output), unless they are all answered already.
  if (requests_queued_ > replies_emitted_ &&
      (read_ends_.empty() || read_ends_.back() < requests_queued_)) {
    read_ends_.push_back(requests_queued_);
  }
  // A large buffer left from a big request is not kept for the connection's life.
  if (in_.capacity() > (1u << 20) && in_.size() < (1u << 16)) in_.shrink_to_fit();
}

void ClientSession::reply_local(std::string reply, bool count_error, bool close_after) {
  auto m = make_ref<LocalReply>();
  m->reply = std::move(reply);
  m->done = true;
  m->close_after = close_after;
  m->silent = silent_ && !close_after;
  pending_.push_back(std::move(m));
  ++requests_queued_;
  pool_->shared->local_replies.fetch_add(1, std::memory_order_relaxed);
  if (count_error) pool_->shared->errors.fetch_add(1, std::memory_order_relaxed);
  on_done();
}

void ClientSession::push_message(std::string bytes) {
  auto m = make_ref<LocalReply>();
  m->reply = std::move(bytes);
  m->done = true;
  pending_.push_back(std::move(m));
  ++requests_queued_;  // emitted like a reply: hold_output() counts both
  on_done();
}

void ClientSession::push_ahead(std::string bytes) {
  auto m = make_ref<LocalReply>();
  m->reply = std::move(bytes);
  m->done = true;
  auto at = pending_.begin();
  while (at != pending_.end() && (*at)->done) ++at;
  pending_.insert(at, std::move(m));
  ++requests_queued_;
  on_done();
}

void ClientSession::push_message(std::string_view head, const net::ChunkRef& chunk,
                                 std::string_view body) {
  if (closed_ || closing_) return;
  if (!pending_.empty()) {  // after the replies still owed
    std::string bytes(head);
    bytes.append(body);
    push_message(std::move(bytes));
    return;
  }
  if (!head.empty()) out_.append(head);
  out_.append(chunk, body);
  if (!output_scheduled_) {
    output_scheduled_ = true;
    worker_.schedule_output(this);
  }
}

void ClientSession::count_request() noexcept { ++requests_uncounted_; }

void ClientSession::protocol_error(std::string reply) {
  worker_.metrics().protocol_errors.fetch_add(1, std::memory_order_relaxed);
  saw_error_ = true;
  read_closed_ = true;
  reply_local(std::move(reply), true, true);
  if (closed_) return;
  in_.clear();
  in_.shrink_to_fit();  // a hostile client's buffer goes now, not at close
}

void ClientSession::push(const Ref<Reply>& r) {
  r->client = this;
  r->start = worker_.loop().now();
  r->silent = silent_;
  pending_.push_back(r);
  ++requests_queued_;
}

void ClientSession::on_done() {
  if (closed_ || closing_) return;
  net::Clock::time_point now{};  // read once for the replies this completion releases
  LatencyBatch latency;
  while (!pending_.empty() && pending_.front()->done) {
    Reply& m = *pending_.front();
    if (!m.silent) m.emit(out_);
    m.emitted = true;
    if (m.start != net::Clock::time_point{}) {
      if (now == net::Clock::time_point{}) now = net::Clock::now();
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - m.start).count();
      latency.observe(static_cast<std::uint64_t>(std::max<std::int64_t>(us, 0)));
    }
    m.client = nullptr;
    ++replies_emitted_;
    closing_ = m.close_after;
    replied_in_drain_ |= draining_;
    pending_.pop_front();
    if (closing_) break;
  }
  latency.publish(pool_->shared->latency);
  if (!output_scheduled_) {
    output_scheduled_ = true;
    worker_.schedule_output(this);
  }
}

bool ClientSession::hold_output() {
  while (!read_ends_.empty() && read_ends_.front() <= replies_emitted_) {
    read_ends_.pop_front();
    read_finished_ = true;
  }
  if (read_finished_ || closing_ || read_ends_.empty() || out_.empty()) return false;
  return out_.charge() < kHoldLimit;
}

void ClientSession::flush_output() {
  output_scheduled_ = false;
  if (closed_) return;
  if (!hold_output()) {
    write();
    if (closed_) return;
  }
  // The shared backend connections are read on whatever this client does (one slow reader must
  // not stall, or get ejected, a backend every client shares), so its unread replies are
  // bounded here instead, as Redis bounds a client's output buffer (networking.c
  // checkClientOutputBufferLimits): past the limit the client is closed, at most one event
  // batch of reads (kMaxReadsPerEvent chunks per backend) over it.
  const std::size_t limit = pool_->config.client_output_limit;
  if (limit != 0 && out_.charge() > limit) {
    pool_->shared->output_limit_closes.fetch_add(1, std::memory_order_relaxed);
    const std::string held = std::to_string(out_.charge()), max = std::to_string(limit);
    log(LogLevel::kWarn, "client closed: unread replies over client_output_limit",
        {{"pool", pool_->config.name}, {"bytes", held}, {"client_output_limit", max}});
    saw_error_ = true;
    close();
    return;
  }
  if (closing_ || (read_closed_ && pending_.empty())) {
    if (out_.empty()) {
      close();
      return;
    }
    // Unsent output: close once write() has drained it.
    for (auto& m : pending_) m->client = nullptr;
    pending_.clear();
    read_closed_ = true;
  }
  update_events();
}

void ClientSession::write() {
  std::size_t sent = 0;
  const bool ok =
      tls_ == nullptr
          ? out_.send(fd_, sent)
          : out_.send_with([this](const iovec* v, int n) { return tls_->writev(v, n); }, sent);
  if (sent != 0) pool_->shared->response_bytes.fetch_add(sent, std::memory_order_relaxed);
  if (!ok) {
    saw_error_ = true;
    close();  // the client went away
    return;
  }
  if (out_.empty()) {
    read_finished_ = false;
    if (read_closed_ && pending_.empty()) {
      close();
      return;
    }
  }
  update_events();
}

bool ClientSession::peer_closed() const noexcept {
  if (tls_ != nullptr || fd_ < 0) return false;  // a TLS close_notify is a record: not seen here
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE));
}

void ClientSession::drain() {
  draining_ = true;
  update_events();
}

bool ClientSession::close_if_drained() {
  if (!pending_.empty() || !out_.empty() || !in_.empty()) return false;
  // Between requests. Neither RESP nor the memcached protocol can tell a client "this is the
  // last reply", so the close goes where a client expects one least to race its next request:
  // right after a reply (a client between requests sees the FIN before it sends, and clients
  // that check the connection first — go-redis's connCheck — reconnect without a failure), or,
  // for a connection not answered since the drain began (just connected, or idle), after it has
  // been quiet for kDrainQuiet. A request that still races the close sees it without a reply,
  // as with any server's idle close, and its client retries on a new connection. The worker
  // re-checks quiet connections on its tick.
  if (!replied_in_drain_ && worker_.loop().now() - last_input_ < kDrainQuiet) return false;
  char c;
  if (::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0) return false;  // already on its way
  close();
  return true;
}

void ClientSession::update_events() {
  if (closed_) return;
  if (draining_ && close_if_drained()) return;
  // Backpressure: stop reading while too much is in flight or unsent to this client.
  auto readable = [this] {
    // A paused client (redis: blocked by BLPOP) is still read, up to kHoldLimit of requests, so
    // that its going away is seen (and its blocked request given up) while nothing answers it.
    if (input_paused_) return !read_closed_ && in_.size() < kHoldLimit;
    return !read_closed_ && pending_.size() < pool_->config.max_pipeline &&
           out_.charge() < kMaxClientOutput;
  };
  bool r = readable();
  if (r && !want_read_ && !in_.empty() && !processing_) {
    // Requests buffered while paused: parse them now (what they leave incomplete waits for
    // more bytes). want_read_ keeps describing the epoll registration, so the comparison below
    // re-arms EPOLLIN whenever reading may go on (a bug once set the flag without re-arming:
    // a client whose buffered requests ran out while paused hung).
    run_process();
    if (closed_) return;
    r = readable();
  }
  const bool w = (!out_.empty() && !hold_output()) || (tls_ != nullptr && tls_->wants_write());
  if (r == want_read_ && w == want_write_) return;
  want_read_ = r;
  want_write_ = w;
  worker_.loop().modify(fd_, (r ? EPOLLIN : 0u) | (w ? EPOLLOUT : 0u), this);
}

void ClientSession::close() {
  if (closed_) return;
  closed_ = true;
  on_closing();
  if (saw_error_) {
    pool_->shared->client_err.fetch_add(1, std::memory_order_relaxed);
  } else if (saw_eof_) {
    pool_->shared->client_eof.fetch_add(1, std::memory_order_relaxed);
  }
  for (auto& m : pending_) m->client = nullptr;
  pending_.clear();
  out_.clear();  // the backends' chunks it holds go now
  if (output_scheduled_) worker_.cancel_output(this);
  if (handshake_timer_ != 0) worker_.loop().cancel_timer(handshake_timer_);
  worker_.loop().remove(fd_);
  if (tls_ != nullptr) tls_->shutdown();
  ::close(fd_);
  fd_ = -1;
  worker_.client_closed(this);
  worker_.loop().defer_delete(std::unique_ptr<net::Pollable>(this));
}

// ---- BackendSession -----------------------------------------------------------------------------

BackendSession::BackendSession(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node)
    : worker_(worker), pool_(std::move(pool)), state_(pool_->states[node]), node_(node) {}

BackendSession::~BackendSession() {
  if (fd_ >= 0) ::close(fd_);
  publish_counts();
  uncount_connection();
  unqueue_all();
  state_->inflight.fetch_sub(static_cast<std::int64_t>(queue_.size()), std::memory_order_relaxed);
  state_->scripts.fetch_sub(std::exchange(scripts_, 0), std::memory_order_relaxed);
}

void BackendSession::count_script(const Pending& p, int delta) noexcept {
  if (!p.msg || !p.msg->script) return;
  scripts_ += delta;
  if (delta > 0 && state_->scripts.fetch_add(delta, std::memory_order_relaxed) == 0)
    state_->scripts_since_ms.store(steady_ms(), std::memory_order_relaxed);
  if (delta < 0) state_->scripts.fetch_add(delta, std::memory_order_relaxed);
}

BackendSession::Pending BackendSession::take_front() {
  Pending p = std::move(queue_.front());
  queue_.pop_front();
  last_reply_ = worker_.loop().now();
  count_script(p, -1);
  state_->inflight.fetch_sub(1, std::memory_order_relaxed);  // bounded loads read it: at once
  const auto b = static_cast<std::int64_t>(p.bytes);
  if (written_ > 0) {
    --written_;
    ++counts_.answered;
    counts_.answered_bytes += b;
  } else {  // answered before we knew it was written (cannot happen with a sane server)
    --counts_.queued;
    counts_.queued_bytes -= b;
  }
  if (p.msg) ++counts_.responses;
  return p;
}

void BackendSession::publish_counts() noexcept {
  Counts& c = counts_;
  if (c.requests != 0) {
    state_->requests.fetch_add(c.requests, std::memory_order_relaxed);
    state_->request_bytes.fetch_add(c.request_bytes, std::memory_order_relaxed);
  }
  if (c.responses != 0) state_->responses.fetch_add(c.responses, std::memory_order_relaxed);
  if (c.queued != 0 || c.queued_bytes != 0) {
    state_->in_queue.fetch_add(c.queued, std::memory_order_relaxed);
    state_->in_queue_bytes.fetch_add(c.queued_bytes, std::memory_order_relaxed);
  }
  if (c.answered != 0) {
    state_->out_queue.fetch_sub(c.answered, std::memory_order_relaxed);
    state_->out_queue_bytes.fetch_sub(c.answered_bytes, std::memory_order_relaxed);
  }
  c = Counts{};
}

void BackendSession::note_sent() {
  // One update of the shared gauges per flush, not per request (pipelines flush many at once).
  std::int64_t n = 0, bytes = 0;
  while (written_ < queue_.size() && queue_[written_].end <= sent_bytes_) {
    bytes += static_cast<std::int64_t>(queue_[written_].bytes);
    ++n;
    ++written_;
  }
  if (n == 0) return;
  state_->in_queue.fetch_sub(n, std::memory_order_relaxed);
  state_->in_queue_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  state_->out_queue.fetch_add(n, std::memory_order_relaxed);
  state_->out_queue_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void BackendSession::unqueue_all() noexcept {
  publish_counts();  // in_queue holds every request below before they are taken out
  std::int64_t out_n = 0, out_b = 0, in_n = 0, in_b = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const auto b = static_cast<std::int64_t>(queue_[i].bytes);
    if (i < written_) {
      ++out_n;
      out_b += b;
    } else {
      ++in_n;
      in_b += b;
    }
  }
  written_ = 0;
  if (out_n != 0) {
    state_->out_queue.fetch_sub(out_n, std::memory_order_relaxed);
    state_->out_queue_bytes.fetch_sub(out_b, std::memory_order_relaxed);
  }
  if (in_n != 0) {
    state_->in_queue.fetch_sub(in_n, std::memory_order_relaxed);
    state_->in_queue_bytes.fetch_sub(in_b, std::memory_order_relaxed);
  }
}

void BackendSession::uncount_connection() noexcept {
  if (own_) {
    own_ = false;  // counted from mark_own() to the close, whatever the connect did
    state_->own_connections.fetch_sub(1, std::memory_order_relaxed);
  }
  if (!counted_) return;
  counted_ = false;
  state_->active.fetch_sub(1, std::memory_order_relaxed);
}

void BackendSession::mark_own() {
  if (own_) return;
  own_ = true;
  state_->own_connections.fetch_add(1, std::memory_order_relaxed);
}

bool BackendSession::start(std::string& error) {
  const ServerConfig& s = pool_->servers[node_];
  // The resolver's address (membership/resolver.h): a worker never looks a name up itself. The
  // epoch first (membership/sentinel.h publishes the address, then the epoch).
  epoch_ = state_->address_epoch.load();
  const auto address = state_->resolved();
  if (address == nullptr) {
    error = "its address is not resolved";
    return false;
  }
  fd_ = net::connect_addr(address->addr, address->len, s.address.text(), error);
  if (fd_ < 0) {
    state_->last_os_error.store(errno, std::memory_order_relaxed);
    state_->conn_errors.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // An open connection from here to close (nutcracker counts server_connections from the
  // connect, too).
  counted_ = true;
  state_->active.fetch_add(1, std::memory_order_relaxed);
  worker_.metrics().backend_connects.fetch_add(1, std::memory_order_relaxed);
  if (pool_->config.tcpkeepalive) net::set_keepalive(fd_);
  if (const auto& ctx = s.tls) {
    tls_ = net::TlsStream::connect(*ctx, fd_, s.address.host, error);
    if (!tls_) return false;
  }
  want_write_ = true;
  if (!worker_.loop().add(fd_, EPOLLIN | EPOLLOUT, this)) {
    error = std::string("epoll: ") + std::strerror(errno);
    return false;
  }
  connect_deadline_ =
      net::Clock::now() + std::chrono::milliseconds(pool_->config.timeout_ms.value_or(0));
  handshake();
  return true;
}

void BackendSession::enqueue(std::initializer_list<std::string_view> bytes, Ref<Reply> msg,
                             std::uint32_t part, std::uint32_t tag) {
  std::size_t size = 0;
  for (const std::string_view b : bytes) {
    out_ += b;
    size += b.size();
  }
  if (msg) {
    ++counts_.requests;
    counts_.request_bytes += size;
  }
  enqueued_bytes_ += size;
  const auto bytes32 = static_cast<std::uint32_t>(std::min<std::size_t>(size, 0xFFFFFFFFu));
  queue_.push_back({std::move(msg), part, tag, worker_.loop().now(), enqueued_bytes_, bytes32});
  count_script(queue_.back(), 1);
  ++counts_.queued;  // in_queue: published by the flush (before note_sent takes them out)
  counts_.queued_bytes += bytes32;
  state_->inflight.fetch_add(1, std::memory_order_relaxed);
  worker_.mark_dirty(this);
}

void BackendSession::update_events() {
  if (closed_) return;
  const bool w = connecting_ || out_off_ < out_.size() || (tls_ != nullptr && tls_->wants_write());
  if (w == want_write_) return;
  want_write_ = w;
  worker_.loop().modify(fd_, EPOLLIN | (w ? EPOLLOUT : 0u), this);
}

void BackendSession::flush() {
  publish_counts();
  if (closed_ || connecting_) return;
  const std::size_t before = out_off_;
  const bool ok =
      tls_ == nullptr ? send_pending(fd_, out_, out_off_) : send_pending(*tls_, out_, out_off_);
  if (out_off_ != before) {
    sent_bytes_ += out_off_ - before;
    note_sent();
  }
  if (!ok) {
    fail(io_error("write: "));
    return;
  }
  compact_sent(out_, out_off_);
  update_events();
}

void BackendSession::on_event(std::uint32_t events) {
  if (closed_) return;
  if (connecting_ && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
    const int err = net::socket_error(fd_);
    if (err != 0) {
      state_->last_os_error.store(err, std::memory_order_relaxed);
      fail(std::string("connect: ") + std::strerror(err));
      return;
    }
    connecting_ = false;
    state_->last_os_error.store(0, std::memory_order_relaxed);
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    read();
    if (closed_) return;
  }
  if (!connecting_) flush();
}

void BackendSession::read() {
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    std::size_t asked = 0;
    const ssize_t n =
        tls_ == nullptr
            ? in_.recv_from(fd_, asked)
            : in_.read_with([this](char* b, std::size_t len) { return tls_->recv(b, len); }, asked);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n == 0) {
        fail("connection closed by the server", FailKind::kEof);
      } else {
        state_->last_os_error.store(errno, std::memory_order_relaxed);
        fail(io_error("read: "));
      }
      return;
    }
    state_->response_bytes.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    on_input();
    if (closed_) break;
    if (static_cast<std::size_t>(n) < asked) break;
  }
  publish_counts();
  if (closed_) return;
  if (draining_ && queue_.empty()) close();
}

std::string BackendSession::io_error(const char* plain) const {
  if (tls_ == nullptr || errno != EPROTO || tls_->error().empty()) {
    return plain + std::string(std::strerror(errno));
  }
  const std::string why = tls_->error() + " (" + pool_->servers[node_].address.text() + ")";
  // A refused certificate is a configuration problem a person must see, not a debug detail.
  log(LogLevel::kWarn, "backend TLS failed",
      {{"pool", pool_->config.name}, {"backend", name()}, {"reason", why}});
  return why;
}

bool BackendSession::nothing_unasked(std::size_t parsed) {
  if (in_.size() <= parsed) return true;
  fail("reply with no request outstanding");
  return false;
}

void BackendSession::check_timeout(net::Clock::time_point now) {
  if (closed_ || !pool_->config.timeout_ms) return;
  const auto t = std::chrono::milliseconds(*pool_->config.timeout_ms);
  if (connecting_ && now >= connect_deadline_) {
    state_->last_os_error.store(ETIMEDOUT, std::memory_order_relaxed);
    fail("connect timed out", FailKind::kTimeout);
    return;
  }
  if (!queue_.empty() && now - front_since() >= t) {
    state_->last_os_error.store(ETIMEDOUT, std::memory_order_relaxed);
    fail("timed out after " + std::to_string(*pool_->config.timeout_ms) + " ms",
         FailKind::kTimeout);
  }
}

void BackendSession::drain() {
  draining_ = true;
  if (queue_.empty()) close();
}

void BackendSession::fail(const std::string& why, FailKind kind) {
  if (closed_) return;
  switch (kind) {
    case FailKind::kEof:
      state_->eofs.fetch_add(1, std::memory_order_relaxed);
      break;
    case FailKind::kTimeout:
      state_->timeouts.fetch_add(1, std::memory_order_relaxed);
      break;
    case FailKind::kError:
      state_->conn_errors.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  // A client's own connection failing says nothing the shared ones would not (a server that
  // is down fails them too): counting it would let clients eject a healthy backend — one
  // WATCH connection past the server's maxclients ("max number of clients reached"), a
  // blocking command's connection timed out.
  if (!own_) record_failure(*state_, pool_->config, why);
  // A cluster node that fails may have been failed over: the watcher looks at the map now.
  if (pool_->config.is_cluster()) pool_->shared->cluster_refresh.store(true);
  log(LogLevel::kDebug, "backend connection failed",
      {{"pool", pool_->config.name}, {"backend", name()}, {"reason", why}});
  const std::string err = failure_reply(why);
  unqueue_all();
  std::deque<Pending> q;
  q.swap(queue_);
  state_->inflight.fetch_sub(static_cast<std::int64_t>(q.size()), std::memory_order_relaxed);
  state_->scripts.fetch_sub(std::exchange(scripts_, 0), std::memory_order_relaxed);
  close();  // before completing: a completion may send more to this backend's slot
  for (auto& p : q) {
    if (p.msg) {
      state_->errors.fetch_add(1, std::memory_order_relaxed);
      pool_->shared->forward_errors.fetch_add(1, std::memory_order_relaxed);
      p.msg->fail_part(p.part, err);
    }
  }
}

void BackendSession::abandon() {
  if (closed_) return;
  unqueue_all();
  state_->inflight.fetch_sub(static_cast<std::int64_t>(queue_.size()), std::memory_order_relaxed);
  state_->scripts.fetch_sub(std::exchange(scripts_, 0), std::memory_order_relaxed);
  queue_.clear();
  close();
}

void BackendSession::close() {
  if (closed_) return;
  closed_ = true;
  worker_.loop().remove(fd_);
  if (tls_ != nullptr) tls_->shutdown();
  ::close(fd_);
  fd_ = -1;
  uncount_connection();
  on_closed();
  worker_.backend_closed(this);  // hands ownership to the loop's deferred delete
}

}  // namespace chash::proxy
