#include "proto/redis/session.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"
#include "core/worker.h"
#include "net/socket.h"

namespace chash::proxy::redis_session {

namespace {

// Sends out[off..] without blocking. Returns false on a socket error (errno is kept), true when
// everything was sent or the socket is full; `off` advances past what was sent.
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

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxClientOutput = 8u << 20;   // pause reading above this much unsent
constexpr std::size_t kMaxReplyBytes = 512u << 20;   // a backend reply (Redis' own bulk limit)
constexpr int kMaxReadsPerEvent = 16;                // fairness between connections

std::string upper(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

// Constant-time comparison: the time taken depends on the lengths only, not on where the first
// difference is (a timing side channel would reveal the password byte by byte).
bool equal_secret(std::string_view a, std::string_view b) noexcept {
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

bool arity_ok(const redis::Command& c, std::size_t argc) {
  if (c.arity >= 0) return argc == static_cast<std::size_t>(c.arity);
  return argc >= static_cast<std::size_t>(-c.arity);
}

std::string error_reply(std::string_view text) {
  std::string out;
  redis::append_error(out, text);
  return out;
}

}  // namespace

// ---- Msg ----------------------------------------------------------------------------------------

void Msg::complete_part(std::uint32_t part, std::string_view raw, char type,
                        const std::vector<redis::Span>* elements) {
  Part& p = parts[part];
  p.raw.assign(raw);
  p.type = type;
  if (elements != nullptr) p.elements = *elements;
  if (--outstanding == 0) finish();
}

void Msg::finish() {
  // The first error answers the whole request (as a single backend would have).
  for (const Part& p : parts) {
    if (p.type == '-') {
      reply = p.raw;
      done = true;
      if (client != nullptr) client->on_done();
      return;
    }
  }
  switch (merge) {
    case redis::Merge::kNone:
      reply = std::move(parts[0].raw);
      break;
    case redis::Merge::kArray: {
      bool ok = true;
      for (const Part& p : parts) ok = ok && p.type == '*';
      if (!ok) {
        reply = error_reply("ERR unexpected reply from a backend to a split MGET");
        break;
      }
      redis::append_array_header(reply, key_map.size());
      for (const auto& [part, elem] : key_map) {
        const Part& p = parts[part];
        if (elem >= p.elements.size()) {
          reply = error_reply("ERR short reply from a backend to a split MGET");
          break;
        }
        reply += p.elements[elem].in(p.raw);
      }
      break;
    }
    case redis::Merge::kSum: {
      std::int64_t sum = 0;
      for (const Part& p : parts) {
        std::int64_t v = 0;
        if (p.type != ':' || p.raw.size() < 3 ||
            !redis::parse_int(std::string_view(p.raw).substr(1, p.raw.size() - 3), v)) {
          reply = error_reply("ERR unexpected reply from a backend to a split command");
          done = true;
          if (client != nullptr) client->on_done();
          return;
        }
        sum += v;
      }
      redis::append_int(reply, sum);
      break;
    }
    case redis::Merge::kAllOk:
      redis::append_status(reply, "OK");
      break;
  }
  done = true;
  if (client != nullptr) client->on_done();
}

// ---- Backend ------------------------------------------------------------------------------------

Backend::Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node)
    : worker_(worker), pool_(std::move(pool)), state_(pool_->states[node]), node_(node),
      parser_(redis::ParserLimits{kMaxReplyBytes, std::size_t{1} << 20, 0, 64}) {}

Backend::~Backend() {
  if (fd_ >= 0) ::close(fd_);
}

bool Backend::start(std::string& error) {
  const ServerConfig& s = pool_->config.servers[node_];
  fd_ = net::connect_to(s.address, error);
  if (fd_ < 0) return false;
  if (pool_->config.tcpkeepalive) net::set_keepalive(fd_);
  want_write_ = true;
  if (!worker_.loop().add(fd_, EPOLLIN | EPOLLOUT, this)) {
    error = std::string("epoll: ") + std::strerror(errno);
    return false;
  }
  const auto now = net::Clock::now();
  connect_deadline_ = now + std::chrono::milliseconds(pool_->config.timeout_ms.value_or(0));
  const auto& password = s.password ? s.password : pool_->config.server_password;
  if (password) {
    redis::append_command(out_, {"AUTH", *password});
    queue_.push_back({nullptr, 0, now});
  }
  if (pool_->config.redis_db != 0) {
    const std::string db = std::to_string(pool_->config.redis_db);
    redis::append_command(out_, {"SELECT", db});
    queue_.push_back({nullptr, 0, now});
  }
  return true;
}

void Backend::send(std::shared_ptr<Msg> msg, std::uint32_t part, std::string_view bytes) {
  out_ += bytes;
  queue_.push_back({std::move(msg), part, worker_.loop().now()});
  state_->requests.fetch_add(1, std::memory_order_relaxed);
  worker_.mark_dirty(this);
}

void Backend::update_events() {
  if (closed_) return;
  const bool w = connecting_ || out_off_ < out_.size();
  if (w == want_write_) return;
  want_write_ = w;
  worker_.loop().modify(fd_, EPOLLIN | (w ? EPOLLOUT : 0u), this);
}

void Backend::flush() {
  if (closed_ || connecting_) return;
  if (!send_pending(fd_, out_, out_off_)) {
    fail(std::string("write: ") + std::strerror(errno));
    return;
  }
  if (out_off_ == out_.size()) {
    out_.clear();
    out_off_ = 0;
  } else if (out_off_ > (1u << 20)) {
    out_.erase(0, out_off_);
    out_off_ = 0;
  }
  update_events();
}

void Backend::on_event(std::uint32_t events) {
  if (closed_) return;
  if (connecting_ && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
    const int err = net::socket_error(fd_);
    if (err != 0) {
      fail(std::string("connect: ") + std::strerror(err));
      return;
    }
    connecting_ = false;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    read();
    if (closed_) return;
  }
  if (!connecting_) flush();
}

void Backend::read() {
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    const std::size_t old = in_.size();
    in_.resize(old + kReadChunk);
    const ssize_t n = ::recv(fd_, in_.data() + old, kReadChunk, 0);
    if (n <= 0) {
      in_.resize(old);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      fail(n == 0 ? "connection closed by the server" : std::string("read: ") + std::strerror(errno));
      return;
    }
    in_.resize(old + static_cast<std::size_t>(n));
    // Complete every whole reply in the buffer, in order.
    for (;;) {
      if (queue_.empty()) {
        if (in_.size() > parser_.start()) {
          fail("reply with no request outstanding");
          return;
        }
        break;
      }
      if (!parser_started_) {
        const Msg* m = queue_.front().msg.get();
        parser_.set_record_elements(m != nullptr && m->merge == redis::Merge::kArray);
        parser_started_ = true;
      }
      const redis::ParseResult r = parser_.parse(in_);
      if (r == redis::ParseResult::kNeedMore) break;
      if (r == redis::ParseResult::kError) {
        fail(parser_.error());
        return;
      }
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      const std::string_view raw = parser_.span().in(in_);
      record_success(*state_);
      if (p.msg) {
        p.msg->complete_part(p.part, raw, parser_.type(),
                             p.msg->merge == redis::Merge::kArray ? &parser_.elements() : nullptr);
      } else if (parser_.type() == '-') {
        // Our own AUTH / SELECT was refused: the connection is unusable. (The reply text is
        // the server's; it never contains the password.)
        fail("setup refused: " + std::string(raw.substr(1, std::min<std::size_t>(raw.size(), 120) - 1)));
        return;
      }
      if (closed_) return;
      parser_.next();
      parser_started_ = false;
    }
    if (parser_.start() > 0) {
      in_.erase(0, parser_.start());
      parser_.consume(parser_.start());
    }
    if (static_cast<std::size_t>(n) < kReadChunk) break;
  }
  if (draining_ && queue_.empty()) close();
}

void Backend::check_timeout(net::Clock::time_point now) {
  if (closed_ || !pool_->config.timeout_ms) return;
  const auto t = std::chrono::milliseconds(*pool_->config.timeout_ms);
  if (connecting_ && now >= connect_deadline_) {
    state_->timeouts.fetch_add(1, std::memory_order_relaxed);
    fail("connect timed out");
    return;
  }
  if (!queue_.empty() && now - queue_.front().sent >= t) {
    state_->timeouts.fetch_add(1, std::memory_order_relaxed);
    fail("timed out after " + std::to_string(*pool_->config.timeout_ms) + " ms");
  }
}

void Backend::drain() {
  draining_ = true;
  if (queue_.empty()) close();
}

void Backend::fail(const std::string& why) {
  if (closed_) return;
  record_failure(*state_, pool_->config, why);
  log(LogLevel::kDebug, "backend connection failed", {{"pool", pool_->config.name}, {"backend", name()}, {"reason", why}});
  const std::string err = error_reply("ERR backend " + name() + ": " + why);
  std::deque<Pending> q;
  q.swap(queue_);
  close();  // before completing: a completion may send more to this backend's slot
  for (auto& p : q) {
    if (p.msg) {
      state_->errors.fetch_add(1, std::memory_order_relaxed);
      p.msg->complete_part(p.part, err, '-', nullptr);
    }
  }
}

void Backend::close() {
  if (closed_) return;
  closed_ = true;
  worker_.loop().remove(fd_);
  ::close(fd_);
  fd_ = -1;
  worker_.backend_closed(this);  // hands ownership to the loop's deferred delete
}

// ---- Client -------------------------------------------------------------------------------------

Client::Client(Worker& worker, std::size_t pool_index, int fd)
    : worker_(worker), pool_index_(pool_index), pool_(worker.pool(pool_index)), fd_(fd),
      parser_(redis::ParserLimits{pool_->config.max_request_bytes, std::size_t{1} << 20,
                                  std::size_t{64} << 10, 64}) {
  authed_ = !pool_->config.client_password.has_value();
  worker_.loop().add(fd_, EPOLLIN, this);
  worker_.client_opened(this, pool_index_);
}

Client::~Client() {
  if (fd_ >= 0) ::close(fd_);
}

void Client::on_event(std::uint32_t events) {
  if (closed_) return;
  if ((events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN)) {
    close();  // nothing can be read or written any more
    return;
  }
  if (events & EPOLLIN) {
    read();
    if (closed_) return;
  }
  if (events & EPOLLOUT) write();
}

void Client::read() {
  if (read_closed_) {
    // Only errors/hangups get here (EPOLLIN is off): nothing more will be written either.
    close();
    return;
  }
  pool_ = worker_.pool(pool_index_);
  for (int i = 0; i < kMaxReadsPerEvent && want_read_; ++i) {
    const std::size_t old = in_.size();
    in_.resize(old + kReadChunk);
    const ssize_t n = ::recv(fd_, in_.data() + old, kReadChunk, 0);
    if (n <= 0) {
      in_.resize(old);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // EOF (or reset): answer what was asked, then close.
      read_closed_ = true;
      if (pending_.empty()) {
        close();
        return;
      }
      break;
    }
    in_.resize(old + static_cast<std::size_t>(n));
    process();
    if (closed_) return;
    if (static_cast<std::size_t>(n) < kReadChunk) break;
  }
  worker_.flush_dirty();
  update_events();
}

void Client::process() {
  pool_ = worker_.pool(pool_index_);
  processing_ = true;
  while (!read_closed_ && pending_.size() < pool_->config.max_pipeline) {
    const redis::ParseResult r = parser_.parse(in_);
    if (r == redis::ParseResult::kNeedMore) break;
    if (r == redis::ParseResult::kError) {
      worker_.metrics().protocol_errors.fetch_add(1, std::memory_order_relaxed);
      read_closed_ = true;
      reply_local(error_reply("ERR " + parser_.error()), true, true);
      if (closed_) return;
      in_.clear();
      in_.shrink_to_fit();  // a hostile client's buffer goes now, not at close
      parser_ = redis::RequestParser();
      break;
    }
    dispatch();
    if (closed_) return;
    parser_.next();
  }
  processing_ = false;
  if (parser_.start() > 0) {
    in_.erase(0, parser_.start());
    parser_.consume(parser_.start());
  }
  // A large buffer left from a big request is not kept for the connection's life.
  if (in_.capacity() > (1u << 20) && in_.size() < (1u << 16)) in_.shrink_to_fit();
}

void Client::reply_local(std::string reply, bool count_error, bool close_after) {
  auto m = std::make_shared<Msg>();
  m->reply = std::move(reply);
  m->done = true;
  m->close_after = close_after;
  pending_.push_back(std::move(m));
  worker_.metrics().local_replies.fetch_add(1, std::memory_order_relaxed);
  if (count_error) worker_.metrics().proxy_errors.fetch_add(1, std::memory_order_relaxed);
  on_done();
}

bool Client::check_node(NodeId node, std::string_view what, std::string& error) const {
  if (node == kNoNode) {
    error = "ERR no backend is up for " + std::string(what) + " (every candidate is down)";
    return false;
  }
  const BackendState& s = *pool_->states[node];
  if (s.down.load(std::memory_order_relaxed)) {
    error = "ERR backend " + s.name + " is down (retried every " +
            std::to_string(pool_->config.server_retry_timeout_ms) + " ms)";
    return false;
  }
  return true;
}

void Client::forward_one(const redis::Command& cmd, NodeId node, const std::shared_ptr<Msg>& m) {
  (void)cmd;
  std::string error;
  auto* b = static_cast<Backend*>(worker_.backend(pool_index_, node, error));  // a redis pool's
  if (b == nullptr) {
    m->parts.resize(1);
    m->outstanding = 1;
    m->complete_part(0, error_reply("ERR backend " + pool_->states[node]->name + ": " + error), '-', nullptr);
    return;
  }
  m->parts.resize(1);
  m->outstanding = 1;
  if (parser_.is_inline()) {
    std::vector<std::string_view> argv;
    for (std::size_t i = 0; i < parser_.argc(); ++i) argv.push_back(parser_.arg(in_, i));
    std::string bytes;
    redis::append_command(bytes, argv);
    b->send(m, 0, bytes);
  } else {
    b->send(m, 0, std::string_view(in_).substr(parser_.start(), parser_.end() - parser_.start()));
  }
}

void Client::dispatch() {
  Metrics& metrics = worker_.metrics();
  metrics.requests.fetch_add(1, std::memory_order_relaxed);
  const std::size_t argc = parser_.argc();
  const std::string_view name = parser_.arg(in_, 0);
  const redis::Command* cmd = redis::find_command(name);
  const bool is_auth = cmd != nullptr && cmd->name == "auth";
  if (!authed_ && !is_auth && !(cmd != nullptr && cmd->name == "quit")) {
    reply_local(error_reply("NOAUTH Authentication required."), true);
    return;
  }
  if (cmd == nullptr) {
    reply_local(error_reply("ERR unknown or unsupported command '" + upper(name) + "'"), true);
    return;
  }
  if (cmd->route == redis::Route::kUnsupported) {
    reply_local(error_reply("ERR unsupported command '" + upper(name) + "': " + std::string(cmd->why) +
                            " (chash-proxy)"),
                true);
    return;
  }
  if (!arity_ok(*cmd, argc)) {
    reply_local(error_reply("ERR wrong number of arguments for '" + std::string(cmd->name) + "' command"), true);
    return;
  }
  switch (cmd->route) {
    case redis::Route::kLocal: {
      std::string out;
      if (cmd->name == "ping") {
        if (argc == 1) redis::append_status(out, "PONG");
        else if (argc == 2) redis::append_bulk(out, parser_.arg(in_, 1));
        else out = error_reply("ERR wrong number of arguments for 'ping' command");
      } else if (cmd->name == "echo") {
        redis::append_bulk(out, parser_.arg(in_, 1));
      } else if (cmd->name == "quit") {
        redis::append_status(out, "OK");
        read_closed_ = true;
        reply_local(std::move(out), false, true);
        return;
      } else if (cmd->name == "auth") {
        const auto& pw = pool_->config.client_password;
        if (argc > 3) {
          out = error_reply("ERR wrong number of arguments for 'auth' command");
        } else if (!pw) {
          out = error_reply(
              "ERR AUTH <password> called without any password configured for the default user.");
        } else if ((argc == 3 && parser_.arg(in_, 1) != "default") ||
                   !equal_secret(parser_.arg(in_, argc - 1), *pw)) {
          metrics.auth_failures.fetch_add(1, std::memory_order_relaxed);
          out = error_reply("WRONGPASS invalid username-password pair or user is disabled.");
        } else {
          authed_ = true;
          redis::append_status(out, "OK");
        }
      } else {  // COMMAND: clients (redis-cli) ask on connect; an empty table is a valid answer
        out = "*0\r\n";
      }
      reply_local(std::move(out));
      return;
    }
    case redis::Route::kKey: {
      auto m = std::make_shared<Msg>();
      m->client = this;
      m->start = worker_.loop().now();
      pending_.push_back(m);
      const NodeId node = pool_->route(parser_.arg(in_, 1));
      std::string error;
      if (!check_node(node, "this key", error)) {
        m->parts.resize(1);
        m->outstanding = 1;
        metrics.proxy_errors.fetch_add(1, std::memory_order_relaxed);
        m->complete_part(0, error_reply(error), '-', nullptr);
        return;
      }
      forward_one(*cmd, node, m);
      return;
    }
    case redis::Route::kKeysSameNode:
    case redis::Route::kEval: {
      std::size_t first = static_cast<std::size_t>(cmd->key_first);
      std::size_t last = cmd->key_last < 0 ? argc - 1 : static_cast<std::size_t>(cmd->key_last);
      std::size_t step = static_cast<std::size_t>(cmd->key_step);
      if (cmd->route == redis::Route::kEval) {
        std::int64_t numkeys = 0;
        if (!redis::parse_int(parser_.arg(in_, 2), numkeys) || numkeys < 0 ||
            static_cast<std::uint64_t>(numkeys) > argc - 3) {
          reply_local(error_reply("ERR Number of keys can't be greater than number of args"), true);
          return;
        }
        if (numkeys == 0) {
          reply_local(error_reply("ERR " + upper(name) + " with no keys cannot be routed by chash-proxy"), true);
          return;
        }
        first = 3;
        last = 3 + static_cast<std::size_t>(numkeys) - 1;
        step = 1;
      }
      if (cmd->key_step == 2 && (argc - 1) % 2 != 0) {
        reply_local(error_reply("ERR wrong number of arguments for '" + std::string(cmd->name) + "' command"), true);
        return;
      }
      const NodeId node = pool_->route(parser_.arg(in_, first));
      for (std::size_t i = first + step; i <= last; i += step) {
        if (pool_->route(parser_.arg(in_, i)) != node) {
          reply_local(error_reply("ERR CROSSSLOT keys of '" + upper(name) +
                                  "' live on different backends (give them a common hash tag)"),
                      true);
          return;
        }
      }
      auto m = std::make_shared<Msg>();
      m->client = this;
      m->start = worker_.loop().now();
      pending_.push_back(m);
      std::string error;
      if (!check_node(node, "these keys", error)) {
        m->parts.resize(1);
        m->outstanding = 1;
        m->complete_part(0, error_reply(error), '-', nullptr);
        return;
      }
      forward_one(*cmd, node, m);
      return;
    }
    case redis::Route::kSplitKeys:
    case redis::Route::kSplitPairs:
      if (cmd->route == redis::Route::kSplitPairs && (argc - 1) % 2 != 0) {
        reply_local(error_reply("ERR wrong number of arguments for '" + std::string(cmd->name) + "' command"), true);
        return;
      }
      split(*cmd);
      return;
    case redis::Route::kUnsupported:
      return;  // handled above
  }
}

void Client::split(const redis::Command& cmd) {
  const std::size_t argc = parser_.argc();
  const std::size_t step = cmd.route == redis::Route::kSplitPairs ? 2 : 1;
  auto m = std::make_shared<Msg>();
  m->client = this;
  m->start = worker_.loop().now();
  m->merge = cmd.merge;
  pending_.push_back(m);
  // Group the keys by backend, keeping their order within each part.
  std::vector<NodeId> part_node;
  std::vector<std::vector<std::string_view>> part_args;
  const std::string_view verb = parser_.arg(in_, 0);
  for (std::size_t i = 1; i < argc; i += step) {
    const std::string_view key = parser_.arg(in_, i);
    const NodeId node = pool_->route(key);
    std::string error;
    if (!check_node(node, "key '" + std::string(key.substr(0, 64)) + "'", error)) {
      m->parts.resize(1);
      m->outstanding = 1;
      m->merge = redis::Merge::kNone;
      worker_.metrics().proxy_errors.fetch_add(1, std::memory_order_relaxed);
      m->complete_part(0, error_reply(error), '-', nullptr);
      return;
    }
    std::uint32_t part = 0;
    while (part < part_node.size() && part_node[part] != node) ++part;
    if (part == part_node.size()) {
      part_node.push_back(node);
      part_args.push_back({verb});
    }
    const auto elem = static_cast<std::uint32_t>(part_args[part].size() - 1);
    part_args[part].push_back(key);
    if (step == 2) part_args[part].push_back(parser_.arg(in_, i + 1));
    m->key_map.emplace_back(part, elem);
  }
  m->parts.resize(part_node.size());
  m->outstanding = static_cast<std::uint32_t>(part_node.size());
  for (std::uint32_t p = 0; p < part_node.size(); ++p) {
    std::string error;
    auto* b = static_cast<Backend*>(worker_.backend(pool_index_, part_node[p], error));
    if (b == nullptr) {
      m->complete_part(p, error_reply("ERR backend " + pool_->states[part_node[p]]->name + ": " + error), '-', nullptr);
      continue;
    }
    std::string bytes;
    redis::append_command(bytes, part_args[p]);
    b->send(m, p, bytes);
  }
}

void Client::on_done() {
  if (closed_) return;
  bool close_now = false;
  while (!pending_.empty() && pending_.front()->done) {
    Msg& m = *pending_.front();
    out_ += m.reply;
    if (m.start != net::Clock::time_point{}) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(net::Clock::now() - m.start).count();
      worker_.metrics().observe_latency(static_cast<std::uint64_t>(std::max<std::int64_t>(us, 0)));
    }
    m.client = nullptr;
    close_now = m.close_after;
    pending_.pop_front();
    if (close_now) break;
  }
  write();
  if (closed_) return;
  if (close_now || (read_closed_ && pending_.empty())) {
    if (out_off_ == out_.size()) {
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

void Client::write() {
  if (!send_pending(fd_, out_, out_off_)) {
    close();  // the client went away
    return;
  }
  if (out_off_ == out_.size()) {
    out_.clear();
    out_off_ = 0;
    if (out_.capacity() > (1u << 20)) out_.shrink_to_fit();
    if (read_closed_ && pending_.empty()) {
      close();
      return;
    }
  } else if (out_off_ > (1u << 20)) {
    out_.erase(0, out_off_);
    out_off_ = 0;
  }
  update_events();
}

void Client::update_events() {
  if (closed_) return;
  // Backpressure: stop reading while too much is in flight or unsent to this client.
  const bool r = !read_closed_ && pending_.size() < pool_->config.max_pipeline &&
                 out_.size() - out_off_ < kMaxClientOutput;
  const bool w = out_off_ < out_.size();
  if (r && !want_read_ && !in_.empty() && !processing_) {
    // Requests already buffered while paused: parse them now.
    want_read_ = true;
    process();
    if (closed_) return;
    worker_.flush_dirty();
    update_events();
    return;
  }
  if (r == want_read_ && w == want_write_) return;
  want_read_ = r;
  want_write_ = w;
  worker_.loop().modify(fd_, (r ? EPOLLIN : 0u) | (w ? EPOLLOUT : 0u), this);
}

void Client::close() {
  if (closed_) return;
  closed_ = true;
  for (auto& m : pending_) m->client = nullptr;
  pending_.clear();
  worker_.loop().remove(fd_);
  ::close(fd_);
  fd_ = -1;
  worker_.client_closed(this);
  worker_.loop().defer_delete(std::unique_ptr<net::Pollable>(this));
}

}  // namespace chash::proxy::redis_session
