// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/session.h"

#include <algorithm>
#include <atomic>

#include "base/log.h"
#include "core/worker.h"
#include "proto/redis/local_replies.h"

namespace chash::proxy::redis {

namespace {

constexpr std::size_t kMaxReplyBytes = 512u << 20;  // a backend reply (Redis' own bulk limit)
constexpr std::int64_t kBlockSlackMs = 1000;        // Backend::check_timeout of a blocked request

std::string upper(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
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

// CLIENT ID / HELLO's id: unique in the process, never 0, as Redis numbers its clients.
std::atomic<std::uint64_t> next_client_id{1};

}  // namespace

// ---- Msg ----------------------------------------------------------------------------------------

void Msg::complete_part(std::uint32_t part, net::Slice raw, char type,
                        std::vector<redis::Span>* elements) {
  Part& p = parts[part];
  p.raw.hold(std::move(raw));
  p.type = type;
  if (elements != nullptr) p.elements.swap(*elements);
  if (--outstanding == 0) {
    finish();
  } else {
    p.raw.settle();  // waits for the other parts
  }
}

void Msg::fail_part(std::uint32_t part, std::string_view error) {
  Part& p = parts[part];
  // A read lost with its replica's connection goes to the master.
  if (p.member != kNoNode && client != nullptr &&
      static_cast<Client*>(client)->replica_lost(Ref<Msg>(this), part)) {
    return;
  }
  p.raw.copy(error);
  p.type = '-';
  p.elements.clear();
  if (--outstanding == 0) finish();
}

void Msg::answer_part(std::uint32_t part, std::string_view bytes, char type,
                      std::vector<Span> elements) {
  Part& p = parts[part];
  p.raw.copy(bytes);
  p.type = type;
  p.elements = std::move(elements);
  if (--outstanding == 0) finish();
}

void Msg::finish() {
  if (hot_pool != nullptr) {  // a write is answered: see hot_written
    for (const std::string& k : hot_written) hot_pool->hot.wrote(k);
    if (hot_all) hot_pool->hot.wrote_all();
    hot_pool.reset();
  }
  if (then) {  // a step of the proxy's own: its parts are for `then`
    auto f = std::move(then);
    then = nullptr;
    f(*this);
    return;
  }
  if (!hot_key.empty() && client != nullptr && parts.size() == 1 && parts[0].type == '$') {
    static_cast<Client*>(client)->hot_fill(hot_key, parts[0].raw.view(), hot_stamp);
  }
  if (blocking) {
    // Answered (or failed): its client reads on, once this reply is in its queue.
    blocking = false;
    auto* c = static_cast<Client*>(client);
    if (c != nullptr && c->blocked_reply_for_departed(*this)) {
      silent = true;  // nobody to read it: what it popped is being put back
      finish_merged();
      c->close_departed();
      return;
    }
    finish_merged();
    if (c != nullptr) c->blocking_done();
    return;
  }
  finish_merged();
}

void Msg::finish_merged() {
  if (merge == redis::Merge::kLast) {  // a transaction: EXEC's reply (or the failure's)
    whole_ = true;
    whole_part_ = static_cast<std::uint32_t>(parts.size() - 1);
    finish_now();
    return;
  }
  if (merge == redis::Merge::kAnyOk) {  // NOTBUSY from the others is no error then
    whole_ = true;
    whole_part_ = 0;
    for (std::uint32_t i = 0; i < parts.size(); ++i) {
      if (parts[i].type == '+') whole_part_ = i;
    }
    finish_now();
    return;
  }
  // The first error answers the whole request (as a single backend would have).
  for (Part& p : parts) {
    if (p.type == '-') {
      reply = p.raw.view();
      finish_now();
      return;
    }
  }
  switch (merge) {
    case redis::Merge::kNone:
      whole_ = true;  // the backend's reply, from its read chunk
      break;
    case redis::Merge::kArray: {
      bool ok = true;
      for (const Part& p : parts) ok = ok && p.type == '*';
      if (!ok) {
        reply = error_reply("ERR unexpected reply from a backend to a split MGET");
        break;
      }
      std::vector<std::uint32_t> need(parts.size(), 0);  // per part: its highest element + 1
      for (const auto& [part, elem] : key_map) need[part] = std::max(need[part], elem + 1);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (need[i] > parts[i].elements.size()) {
          reply = error_reply("ERR short reply from a backend to a split MGET");
          ok = false;
          break;
        }
      }
      merged_ = ok;
      break;
    }
    case redis::Merge::kSum: {
      std::int64_t sum = 0;
      for (const Part& p : parts) {
        std::int64_t v = 0;
        const std::string_view raw = p.raw.view();
        if (p.type != ':' || raw.size() < 3 ||
            !redis::parse_int(raw.substr(1, raw.size() - 3), v)) {
          reply = error_reply("ERR unexpected reply from a backend to a split command");
          finish_now();
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
    case redis::Merge::kSame:
    case redis::Merge::kConcat:
    case redis::Merge::kMinInts:
    case redis::Merge::kScan:
      reply = merge_replies(*this);
      break;
    case redis::Merge::kLast:
    case redis::Merge::kAnyOk:
      break;  // above
  }
  finish_now();
}

void Msg::emit(net::OutQueue& out) {
  if (whole_) {
    out.append(parts[whole_part_].raw);
  } else if (merged_) {
    std::string header;
    redis::append_array_header(header, key_map.size());
    out.append(header);
    // Each element straight from its part's bytes: adjacent ones of one chunk go out as one
    // iovec, small ones are copied once into the client's block (net::OutQueue). Consecutive
    // keys answered by one part are adjacent there: one piece for the run.
    const Part* run = nullptr;
    std::size_t run_off = 0, run_len = 0;
    auto flush = [&] {
      if (run != nullptr) out.append(run->raw.chunk(), run->raw.view().substr(run_off, run_len));
    };
    for (const auto& [part, elem] : key_map) {
      const Part& p = parts[part];
      const redis::Span e = p.elements[elem];
      if (&p == run && e.off == run_off + run_len) {
        run_len += e.len;
        continue;
      }
      flush();
      run = &p;
      run_off = e.off;
      run_len = e.len;
    }
    flush();
  } else {
    out.append(reply);
  }
  parts.clear();  // the chunks go now, not when the last holder of the Msg lets it go
}

void Msg::settle() {
  for (Part& p : parts) p.raw.settle();
}

// ---- Backend ------------------------------------------------------------------------------------

Backend::Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node)
    : BackendSession(worker, std::move(pool), node),
      // Depth: a script may return nested tables as deep as Lua lets it (scripting.tcl's
      // "recursive object"); each level costs a reply 4 bytes and the parser 8.
      parser_(redis::ParserLimits{kMaxReplyBytes, std::size_t{1} << 20, 0, std::size_t{1} << 16}) {}

void Backend::handshake() {
  const ServerConfig& s = pool_->servers[node_];
  const auto& password = s.password ? s.password : pool_->config.server_password;
  const auto& user = s.user ? s.user : pool_->config.server_user;
  std::string out;
  if (password && user) {
    redis::append_command(out, {"AUTH", *user, *password});  // Redis 6+ ACL user
    enqueue({out}, nullptr, 0, 0);
    out.clear();
  } else if (password) {
    redis::append_command(out, {"AUTH", *password});
    enqueue({out}, nullptr, 0, 0);
    out.clear();
  }
  if (pool_->config.redis_db != 0) {
    const std::string db = std::to_string(pool_->config.redis_db);
    redis::append_command(out, {"SELECT", db});
    enqueue({out}, nullptr, 0, 0);
  }
  // A cluster replica answers reads only on a connection that said READONLY (else -MOVED).
  if (pool_->config.is_cluster() && s.role == ServerRole::kReplica) {
    enqueue({"*1\r\n$8\r\nREADONLY\r\n"}, nullptr, 0, 0);
  }
}

void Backend::on_closed() {
  if (owner_ == nullptr) return;
  Client* c = owner_;
  owner_ = nullptr;
  c->dedicated_closed(this);
}

void Backend::check_timeout(net::Clock::time_point now) {
  if (!blocking_ || connecting() || queue_.empty()) {
    BackendSession::check_timeout(now);
    return;
  }
  // A blocked request waits as long as it asked (BLPOP's timeout), then the pool's timeout,
  // and a second more: redis-server checks blocked clients' timeouts in its cron, 10 times a
  // second by default, so its nil reply may come a little after the wait.
  if (block_ms_ == 0 || !pool_->config.timeout_ms) return;
  const std::int64_t ms = block_ms_ + *pool_->config.timeout_ms + kBlockSlackMs;
  if (now - front_since() >= std::chrono::milliseconds(ms)) {
    fail("timed out after " + std::to_string(ms) +
             " ms (a blocking command's wait, the pool's timeout and 1 s)",
         FailKind::kTimeout);
  }
}

std::string Backend::failure_reply(const std::string& why) const {
  // Down now (this failure may have been the one too many): nutcracker's scripts match the OS
  // error, as in "-ERR backend r1 is down: Connection refused (retried every 2000 ms)".
  if (state_->down.load(std::memory_order_relaxed))
    return error_reply("ERR " + down_text(*pool_, node_));
  return error_reply("ERR backend " + name() + ": " + why);
}

void Backend::on_input() {
  // Pub/Sub messages passed on in this read, counted once for the read (a fan-out's every
  // message passes here: an atomic add each would be shared by every worker).
  std::uint64_t delivered = 0;
  struct Count {
    std::uint64_t& n;
    PoolShared& pool;
    ~Count() {
      if (n != 0) pool.pubsub_messages.fetch_add(n, std::memory_order_relaxed);
    }
  } count{delivered, *pool_->shared};
  // Complete every whole reply in the buffer, in order.
  for (;;) {
    // A subscriber connection receives messages nobody asked for, whenever they come; so may a
    // client's own connection (RESP3 pushes: CLIENT TRACKING's invalidations).
    if (queue_.empty() && !subscriber_ && owner_ == nullptr) {
      if (!nothing_unasked(parser_.start())) return;  // failed the connection
      break;
    }
    if (!parser_started_) {
      const Reply* m = queue_.empty() ? nullptr : queue_.front().msg.get();
      parser_.set_record_elements(m != nullptr &&
                                  records_elements(static_cast<const Msg*>(m)->merge));
      parser_started_ = true;
    }
    const redis::ParseResult r = parser_.parse(in_.view());
    if (r == redis::ParseResult::kNeedMore) {
      // Nothing of a reply read yet (an idle connection of a client's own is parsed for pushes
      // with nothing queued): the next reply's first byte decides again what it records.
      if (!parser_.in_progress()) parser_started_ = false;
      break;
    }
    if (r == redis::ParseResult::kError) {
      fail(parser_.error());
      return;
    }
    if (subscriber_ || owner_ != nullptr) {
      const std::string_view raw = parser_.span().in(in_.view());
      if (subscriber_ ? is_pubsub_message(raw) : parser_.type() == '>') {
        if (owner_ != nullptr) {
          if (!subscriber_) owner_->backend_push(raw);
          else if (owner_->pubsub_message(in_.slice(parser_.start(), raw.size()), name())) ++delivered;
        }
        if (closed_) return;
        parser_.next();
        parser_started_ = false;
        continue;
      }
      if (queue_.empty() && !nothing_unasked(parser_.start())) return;  // failed the connection
    }
    Pending p = take_front();
    if (queue_.empty()) blocking_ = false;  // the blocking request (the last sent) is answered
    const std::string_view raw = parser_.span().in(in_.view());
    record_success(*state_);
    if (!pool_->config.auto_eject_hosts && state_->down.load(std::memory_order_relaxed) &&
        Client::retries_down(*pool_, node_)) {
      // Tried while down (nutcracker without auto_eject_hosts) and it answered: up again now,
      // not at the next health probe.
      state_->failures.store(0, std::memory_order_relaxed);
      state_->probe_successes.store(0, std::memory_order_relaxed);
      state_->down.store(false, std::memory_order_relaxed);
      log(LogLevel::kInfo, "backend up", {{"pool", pool_->config.name}, {"backend", name()}});
    }
    if (p.msg) {
      // A "master" that answers -READONLY is a replica now: membership/sentinel.h asks again.
      if (parser_.type() == '-' && raw.starts_with("-READONLY"))
        state_->rediscover.store(true, std::memory_order_relaxed);
      auto& m = static_cast<Msg&>(*p.msg);
      // A kept part's error may be a redirection (cluster) or a replica's refusal: its client
      // sends it on instead of answering with it.
      const bool taken = parser_.type() == '-' && m.client != nullptr &&
                         m.parts[p.part].member != kNoNode &&
                         static_cast<Client*>(m.client)->redirect(static_ref_cast<Msg>(p.msg),
                                                                  p.part, raw, address_epoch());
      // The reply stays in the read chunk: the Msg holds a slice of it (no copy).
      if (!taken) {
        m.complete_part(p.part, in_.slice(parser_.start(), raw.size()), parser_.type(),
                        records_elements(m.merge) ? &parser_.take_elements() : nullptr);
      }
    } else if (parser_.type() == '-') {
      // Our own AUTH / SELECT was refused: the connection is unusable. (The reply text is
      // the server's; it never contains the password.)
      fail("setup refused: " +
           std::string(raw.substr(1, std::min<std::size_t>(raw.size(), 120) - 1)));
      return;
    }
    if (closed_) return;
    parser_.next();
    parser_started_ = false;
  }
  drop_consumed(in_, parser_);
}

// ---- Client -------------------------------------------------------------------------------------

Client::Client(Worker& worker, std::size_t pool_index, int fd)
    : ClientSession(worker, pool_index, fd),
      parser_(redis::ParserLimits{pool_->config.max_request_bytes, std::size_t{1} << 20,
                                  std::size_t{64} << 10, 64}),
      id_(next_client_id.fetch_add(1, std::memory_order_relaxed)),
      created_(worker.loop().now()) {
  refresh_acl();
}

Client::~Client() {
  // Closed connections have released it (on_closing); a worker being destroyed frees every
  // backend connection itself.
  if (dedicated_ != nullptr) dedicated_->set_owner(nullptr);
}

void Client::on_closing() {
  release_dedicated();
  // A blocked request never answers: its connections close now (the server forgets it).
  release_blocking(true);  // forgets it for CLIENT UNBLOCK too
  release_own(true);
  release_pubsub(true);
}

void Client::refresh_acl() {
  // Same users as last time (the usual case: one pointer compare). A new client starts with
  // acl_ null, so a pool without users needs nothing here either.
  if (pool_->config.acl == acl_) return;
  acl_ = pool_->config.acl;
  user_ = nullptr;
  if (acl_ == nullptr) return;  // no users: every command allowed, no AUTH needed
  if (!user_name_.empty()) {
    // Authenticated before a reload: the same user, if it is still there and on (as Redis keeps
    // a client's user across ACL SETUSER).
    const AclUser* u = acl_->find(user_name_);
    if (u != nullptr && u->enabled) {
      user_ = u;
      return;
    }
    // Removed or turned off: the client must AUTH again (Redis disconnects such clients); it
    // does not fall back to the default user, which may be allowed more.
    user_name_.clear();
    return;
  }
  if (!acl_->auth_required()) {  // default is on with nopass: every connection is default
    user_ = &acl_->default_user();
    user_name_ = user_->name;
  }
}

bool Client::authenticate(std::string_view user, std::string_view password) {
  const AclUser* u = acl_ == nullptr ? nullptr : acl_->authenticate(user, password);
  if (u == nullptr) {
    worker_.metrics().auth_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  user_ = u;
  user_name_ = u->name;
  return true;
}

bool Client::permitted(const redis::Command& cmd, std::size_t argc) {
  if (user_ == nullptr) return true;  // no acl (an unauthenticated client never gets here)
  const AclUser& u = *user_;
  // The root selector allows everything.
  if (u.all_commands && u.all_keys && u.all_channels) return true;
  // The request's arguments, read in place (no copy).
  struct Args final : redis::AclArgs {
    Args(const RequestParser& p, std::string_view in, std::size_t n)
        : parser(p), buf(in), argc(n) {}
    std::size_t size() const noexcept override { return argc; }
    std::string_view operator[](std::size_t i) const noexcept override {
      return parser.arg(buf, i);
    }
    const RequestParser& parser;
    std::string_view buf;
    std::size_t argc;
  };
  const Args args(parser_, in_, argc);
  // A container's subcommand is the command checked, and named in the NOPERM (`config|get`).
  // (A subcommand Redis 7.0 lacks, as CLIENT SETINFO of 7.2 that the proxy answers itself, is
  // checked as its container.)
  int index = redis::spec_index(cmd);
  if (const int sub = redis::acl_resolve_index(index, args); sub >= 0) index = sub;
  switch (redis::acl_check(u, index, args)) {
    case redis::AclVerdict::kAllowed:
      break;
    case redis::AclVerdict::kDeniedCommand:
      reject(redis::noperm_command_reply(redis::acl_command_name(index)));
      return false;
    case redis::AclVerdict::kDeniedKey:
      reject(redis::kNopermKeyReply);
      return false;
    case redis::AclVerdict::kDeniedChannel:
      reject(redis::kNopermChannelReply);
      return false;
  }
  // Scripts and functions run on the backend as the proxy's user: their calls inside are not
  // checked against this user's, so only a user allowed every command on every key runs them
  // (docs/SECURITY.md "ACL").
  if (cmd.route == redis::Route::kEval && !redis::acl_script_allowed(u)) {
    reject(redis::kNopermScriptReply);
    return false;
  }
  // SORT's BY and GET patterns read other keys: Redis wants read access to every key for them.
  if (cmd.route == redis::Route::kSpecKeys) {
    const std::string_view denial = redis::acl_sort_denial(u, index, args);
    if (!denial.empty()) {
      reject(denial);
      return false;
    }
  }
  return true;
}

Ref<Msg> Client::new_msg() {
  auto m = make_ref<Msg>();
  m->script = dispatching_script_;
  if (!hot_pending_.empty() || hot_pending_all_) {
    m->hot_pool = pool_->shared;
    m->hot_written = std::move(hot_pending_);
    m->hot_all = hot_pending_all_;
    hot_pending_.clear();
    hot_pending_all_ = false;
  }
  push(m);
  return m;
}

void Client::process() {
  parse_requests(
      parser_, [&] { return error_reply("ERR " + parser_.error()); }, [&] { dispatch(); });
}

void Client::fail_msg(const Ref<Msg>& m, std::string_view error, bool count_error) {
  m->parts.assign(1, {});
  m->outstanding = 1;
  m->merge = redis::Merge::kNone;
  if (count_error) pool_->shared->errors.fetch_add(1, std::memory_order_relaxed);
  m->fail_part(0, error_reply(error));
}

bool Client::usable_or_fail(NodeId node, std::string_view what, const Ref<Msg>& m,
                            bool count_error) {
  std::string why;
  if (backend_usable(*pool_, node, what, why) || retry_down(node)) return true;
  count_forward_error();
  fail_msg(m, "ERR " + why, count_error);
  return false;
}

void Client::forward_one(NodeId node, const Ref<Msg>& m, std::uint16_t slot, std::string_view key,
                         bool write) {
  std::string error;
  BackendConn* b = connection(node, error);
  if (b == nullptr) {
    count_forward_error();
    fail_msg(m, backend_error(node, error), false);
    return;
  }
  m->parts.resize(1);
  m->outstanding = 1;
  std::string scratch;
  const std::string_view bytes = request_bytes(scratch);
  if (keep_request(node)) keep(m, 0, bytes, node, slot);
  bool fell_back = false;
  if (!key.empty()) {
    invalidate_first(b, node, key);
    fell_back = write && note_fallback_write(key, node);  // noted before it is sent
  }
  b->send({bytes}, m, 0);
  if (fell_back) cap_ttl(b, key);
}

void Client::dispatch() {
  count_request();
  dispatching_script_ = false;
  silent_ = reply_off_ || skip_next_reply_;  // CLIENT REPLY OFF / SKIP
  skip_next_reply_ = false;
  // CLIENT CACHING yes|no applies to this command (session_tracking.cc caching_before).
  tracking_.caching_now = tracking_.caching_next;
  tracking_.caching_next = -1;
  refresh_acl();
  const std::size_t argc = parser_.argc();
  const std::string_view name = parser_.arg(in_, 0);
  const redis::Command* cmd = last_command_ != nullptr && redis::names_command(name, *last_command_)
                                  ? last_command_
                                  : redis::find_command(name);
  if (cmd != nullptr) last_command_ = cmd;
  dispatching_script_ = cmd != nullptr && cmd->route == redis::Route::kEval;
  // Redis's order (server.c processCommand): unknown command, arity, NOAUTH, then the ACL.
  // Inside MULTI each of these errors also aborts the transaction (reject()), as in Redis.
  if (cmd == nullptr) {
    reject("ERR unknown or unsupported command '" + upper(name) + "'");
    return;
  }
  if (!arity_ok(*cmd, argc)) {
    reject("ERR wrong number of arguments for '" + std::string(cmd->name) + "' command");
    return;
  }
  // A container (CONFIG, CLIENT, OBJECT, XINFO ...) runs its subcommand, which Redis looks up,
  // and checks the arity of, before anything else (server.c commandCheckExistence and
  // commandCheckArity with c->cmd the subcommand).
  if (const int index = redis::spec_index(*cmd); argc >= 2 && redis::acl_has_subcommands(index)) {
    const std::string_view arg1 = parser_.arg(in_, 1);
    const int sub = redis::acl_subcommand_index(index, arg1);
    // CLIENT and COMMAND are answered by the proxy, whose handlers name what they answer (they
    // know CLIENT SETINFO, which Redis 7.2 added).
    if (sub < 0 && cmd->route != redis::Route::kLocal) {
      reject("ERR unknown subcommand '" + std::string(arg1.substr(0, 128)) + "'. Try " +
             upper(cmd->name) + " HELP.");
      return;
    }
    const int arity = redis::acl_command_arity(sub);
    const auto n = static_cast<long>(argc);
    if (sub >= 0 && (arity >= 0 ? n != arity : n < -arity)) {
      reject("ERR wrong number of arguments for '" + std::string(redis::acl_command_name(sub)) +
             "' command");
      return;
    }
  }
  if (!authed() && cmd->name != "auth" && cmd->name != "hello" && cmd->name != "quit") {
    reject(redis::kNoAuthReply);
    return;
  }
  // Redis's CMD_NO_MULTI check comes before the ACL's, and the proxy's own refusal of these
  // server commands would word it otherwise (Redis's multi.tcl "MULTI with SAVE" matches it).
  if (tx_.active() && redis::no_multi(*cmd)) {
    reject(redis::kNotInTransaction);
    return;
  }
  if (cmd->route == redis::Route::kUnsupported) {
    reject("ERR unsupported command '" + upper(name) + "': " + std::string(cmd->why) +
           " (chash-proxy)");
    return;
  }
  if (!permitted(*cmd, argc)) return;
  // A RESP2 connection in Pub/Sub mode reads only pushes: Redis allows it nothing else
  // (server.c processCommand's CLIENT_PUBSUB check, after the ACL's).
  if (resp_ == 2 && cmd->route != redis::Route::kPubSub && subscribed() && cmd->name != "ping" &&
      cmd->name != "quit" && cmd->name != "reset") {
    reject("ERR Can't execute '" + std::string(cmd->name) +
           "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
           "context");
    return;
  }
  // Before it is sent (or queued): a copy read under the old generation is never served again.
  if (pool_->config.hot_cache.enabled) hot_invalidate(*cmd, argc);
  if (tx_.active() && cmd->route != redis::Route::kTransaction && cmd->name != "quit") {
    queue_in_transaction(*cmd, argc);
    return;
  }
  switch (cmd->route) {
    case redis::Route::kLocal:
      run_local(*cmd, argc);
      return;
    case redis::Route::kTransaction:
      run_transaction(*cmd, argc);
      return;
    case redis::Route::kKey: {
      auto m = new_msg();
      const std::string_view key = parser_.arg(in_, 1);
      hot_note(key);
      if (cmd->name == "get" && hot_caching() && hot_get(key, m)) return;
      // A cluster pool's slot is hashed once: it routes the key and is kept for redirections.
      const bool cluster = pool_->config.is_cluster();
      const std::uint16_t slot = cluster ? chash::redis_key_slot(key) : 0;
      const NodeId node = cluster ? pool_->slot_owner(slot) : pool_->route(key);
      if (node == kNoNode && cluster) {
        cluster_down(m, slot);
        return;
      }
      NodeId target = node == kNoNode ? node : read_target(node, *cmd, m);
      if (node != kNoNode && target == kNoNode) return;  // read_policy replica: m failed
      if (target == node && node != kNoNode) target = hot_read_target(node, key, *cmd);
      if (!usable_or_fail(target, "this key", m, true)) return;
      if (target == node && pool_->warming()) {
        std::string scratch;
        m->parts.resize(1);
        m->outstanding = 1;
        if (warm_key(*cmd, key, node, m, 0, redis::Merge::kNone, request_bytes(scratch))) return;
      }
      forward_one(target, m, slot, key, !redis::read_only(*cmd));
      return;
    }
    case redis::Route::kKeysSameNode:
      same_node(*cmd, argc);
      return;
    case redis::Route::kEval:  // by numkeys (proto/redis/session_keys.cc)
    case redis::Route::kSpecKeys:
    case redis::Route::kSubKey:
      spec_keys(*cmd, argc);
      return;
    case redis::Route::kBlocking:
      blocking(*cmd, argc);
      return;
    case redis::Route::kKeyspace:
      keyspace(*cmd, argc);
      return;
    case redis::Route::kBroadcast: {
      // SCRIPT EXISTS: 1 where every backend has the script. FUNCTION LIST / DUMP / STATS: the
      // first backend's (each server lists a library's functions in its own dict order, so the
      // bytes differ while the libraries are the same; any backend's error answers). The rest
      // must agree.
      const std::string sub = upper(parser_.arg(in_, 1));
      const bool exists = cmd->name == "script" && sub == "EXISTS";
      const bool first =
          cmd->name == "function" && (sub == "LIST" || sub == "DUMP" || sub == "STATS");
      if (sub == "KILL") {
        // A busy server answers nothing on the shared connections until its script ends: the
        // kill goes on a connection of its own to each backend (closed once answered).
        broadcast(redis::Merge::kAnyOk, {}, false, true);
        return;
      }
      broadcast(exists ? redis::Merge::kMinInts : first ? redis::Merge::kNone : cmd->merge);
      return;
    }
    case redis::Route::kSplitKeys:
    case redis::Route::kSplitPairs:
      if (cmd->route == redis::Route::kSplitPairs && (argc - 1) % 2 != 0) {
        reply_local(error_reply("ERR wrong number of arguments for '" + std::string(cmd->name) +
                                "' command"),
                    true);
        return;
      }
      split(*cmd);
      return;
    case redis::Route::kPubSub:
      pubsub(*cmd, argc);
      return;
    case redis::Route::kUnsupported:
      return;  // handled above
  }
}

// ---- Local commands: one handler each, found by the command table's (lower-case) name --------

void Client::run_local(const redis::Command& cmd, std::size_t argc) {
  using Handler = void (Client::*)(std::size_t argc);
  static constexpr std::pair<std::string_view, Handler> kHandlers[] = {
      {"auth", &Client::local_auth},         {"client", &Client::local_client},
      {"command", &Client::local_command},   {"echo", &Client::local_echo},
      {"hello", &Client::local_hello},       {"info", &Client::local_info},
      {"ping", &Client::local_ping},         {"quit", &Client::local_quit},
      {"readonly", &Client::local_readonly}, {"readwrite", &Client::local_readonly},
      {"reset", &Client::local_reset},       {"select", &Client::local_select},
  };
  for (const auto& [local_name, handler] : kHandlers) {
    if (local_name == cmd.name) {
      (this->*handler)(argc);
      return;
    }
  }
  // A kLocal entry of the command table without a handler here (a bug, not a client's fault).
  reply_local(error_reply("ERR unsupported command '" + upper(cmd.name) + "' (chash-proxy)"), true);
}

void Client::local_ping(std::size_t argc) {
  if (argc <= 2 && pubsub_ping(argc)) return;
  // The proxy answers PING itself (as nutcracker does: a health check of the proxy must not
  // depend on a backend), except on a pool of one server busy with a script: then the server
  // answers, -BUSY as Redis does (clients and Redis's own tests wait for that to SCRIPT KILL).
  if (argc <= 2 && one_server() && !tx_.active()) {
    const BackendState& st = *pool_->states[0];
    if (st.scripts.load(std::memory_order_relaxed) > 0 &&
        steady_ms() - st.scripts_since_ms.load(std::memory_order_relaxed) >=
            kScriptBypassAfter.count()) {
      forward_one(0, new_msg());
      return;
    }
  }
  std::string out;
  if (argc == 1) redis::append_status(out, "PONG");
  else if (argc == 2) redis::append_bulk(out, parser_.arg(in_, 1));
  else out = error_reply("ERR wrong number of arguments for 'ping' command");
  reply_local(std::move(out));
}

void Client::local_echo(std::size_t) {
  std::string out;
  redis::append_bulk(out, parser_.arg(in_, 1));
  reply_local(std::move(out));
}

void Client::local_quit(std::size_t) {
  std::string out;
  redis::append_status(out, "OK");
  read_closed_ = true;
  reply_local(std::move(out), false, true);
}

void Client::local_auth(std::size_t argc) {
  std::string out;
  if (argc > 3) {
    out = error_reply("ERR syntax error");  // Redis 7.0's answer to AUTH a b c
  } else if (argc == 2 && (acl_ == nullptr || acl_->default_user().nopass)) {
    out = error_reply(
        "ERR AUTH <password> called without any password configured for the default user. Are "
        "you sure your configuration is correct?");
  } else if (!authenticate(argc == 3 ? parser_.arg(in_, 1) : std::string_view("default"),
                           parser_.arg(in_, argc - 1))) {
    out = error_reply(redis::kWrongPassReply);
  } else {
    redis::append_status(out, "OK");
  }
  reply_local(std::move(out));
}

// ---- Several keys that must live on one backend (kKeysSameNode) ------------------------------

void Client::same_node(const redis::Command& cmd, std::size_t argc) {
  const std::string_view name = parser_.arg(in_, 0);
  std::size_t first = static_cast<std::size_t>(cmd.key_first);
  std::size_t last = cmd.key_last < 0 ? argc - 1 : static_cast<std::size_t>(cmd.key_last);
  std::size_t step = static_cast<std::size_t>(cmd.key_step);
  if (cmd.key_step == 2 && (argc - 1) % 2 != 0) {
    reply_local(
        error_reply("ERR wrong number of arguments for '" + std::string(cmd.name) + "' command"),
        true);
    return;
  }
  const std::string_view first_key = parser_.arg(in_, first);
  hot_note(first_key);
  const NodeId node = pool_->route(first_key);
  const std::uint32_t where = place(first_key);
  for (std::size_t i = first + step; i <= last; i += step) {
    const std::string_view k = parser_.arg(in_, i);
    if (place(k) != where) {
      reply_local(error_reply(cross_backend(name, node, pool_->route(k))), true);
      return;
    }
  }
  auto m = new_msg();
  const auto slot = chash::redis_key_slot(first_key);
  if (node == kNoNode && pool_->config.is_cluster()) {
    cluster_down(m, slot);
    return;
  }
  const NodeId target = node == kNoNode ? node : read_target(node, cmd, m);
  if (node != kNoNode && target == kNoNode) return;  // read_policy replica: m failed
  if (!usable_or_fail(target, "these keys", m, false)) return;
  // Noted before anything is sent, the warm-up's steps included.
  if (!redis::read_only(cmd)) {
    for (std::size_t i = first; i <= last; i += step)
      note_fallback_write(parser_.arg(in_, i), node);
  }
  if (target == node && pool_->warming()) {
    m->parts.resize(1);
    m->outstanding = 1;
    if (warm_keys_then_forward(cmd, argc, node, m)) return;
  }
  if (target != kNoNode && pool_->states[target]->absence.phase() == AbsenceLog::Phase::kFlipped) {
    // Safe return: the keys the server missed are deleted there first.
    std::vector<std::uint32_t> positions;
    for (std::size_t i = first; i <= last; i += step) positions.push_back(static_cast<std::uint32_t>(i));
    invalidate_args_first(target, positions);
  }
  forward_one(target, m, slot);
}

// ---- Keys split per backend and merged (kSplitKeys, kSplitPairs) -----------------------------

void Client::split(const redis::Command& cmd) {
  const std::size_t argc = parser_.argc();
  const std::size_t step = cmd.route == redis::Route::kSplitPairs ? 2 : 1;
  auto m = new_msg();
  m->merge = cmd.merge;
  // Group the keys by backend (a cluster's: by slot, as the cluster refuses keys of several
  // slots in one command), keeping their order within each part.
  const bool cluster = pool_->config.is_cluster();
  const bool warming = pool_->warming();
  std::vector<NodeId> part_node;
  std::vector<std::uint32_t> part_place;
  std::vector<std::vector<std::string_view>> part_args;
  // A key that moved: a part of its own, answered by the warm-up (1); a hot key of an MGET
  // answered from the worker's copy (2, its bytes in part_copy).
  std::vector<char> part_warm;
  std::vector<std::string> part_copy;
  const bool copies = cmd.merge == redis::Merge::kArray && cmd.name == "mget" && hot_caching();
  NodeId olds[kMaxPreviousRoutings];
  const std::string_view verb = parser_.arg(in_, 0);
  if (cmd.merge == redis::Merge::kArray) m->key_map.reserve(argc - 1);
  for (std::size_t i = 1; i < argc; i += step) {
    const std::string_view key = parser_.arg(in_, i);
    hot_note(key);
    if (copies) {
      if (std::optional<std::string> copy = hot_copy(key)) {
        const auto part = static_cast<std::uint32_t>(part_node.size());
        part_node.push_back(kNoNode);
        part_place.push_back(~std::uint32_t{0});
        part_args.push_back({verb, key});
        part_warm.push_back(2);
        part_copy.resize(part + 1);
        part_copy[part] = "*1\r\n" + *copy;
        m->key_map.emplace_back(part, 0);
        continue;
      }
    }
    const std::uint16_t slot = cluster ? chash::redis_key_slot(key) : 0;
    NodeId node = cluster ? pool_->slot_owner(slot) : pool_->route(key);
    if (node == kNoNode && cluster) {
      cluster_down(m, slot);
      return;
    }
    // (The error text is built only for a key that cannot go: not a string per key.)
    if ((node == kNoNode || pool_->states[node]->down.load(std::memory_order_relaxed)) &&
        !usable_or_fail(node, "key '" + std::string(key.substr(0, 64)) + "'", m, true)) {
      return;
    }
    const std::uint32_t where = cluster ? slot : node;
    const bool warm = warming && moved(key, node, olds) > 0;
    std::uint32_t part = 0;
    while (part < part_node.size() && (part_place[part] != where || part_warm[part])) ++part;
    if (warm) part = static_cast<std::uint32_t>(part_node.size());
    if (part == part_node.size()) {
      if (!warm) node = read_target(node, cmd, m);
      if (node == kNoNode) return;  // read_policy replica and none is up: m failed
      part_node.push_back(node);
      part_place.push_back(where);
      part_args.push_back({verb});
      part_warm.push_back(warm ? 1 : 0);
    }
    const auto elem = static_cast<std::uint32_t>(part_args[part].size() - 1);
    part_args[part].push_back(key);
    if (step == 2) part_args[part].push_back(parser_.arg(in_, i + 1));
    m->key_map.emplace_back(part, elem);
  }
  m->parts.resize(part_node.size());
  m->outstanding = static_cast<std::uint32_t>(part_node.size());
  count_fragments(m->outstanding);
  bool counted_error = false;
  for (std::uint32_t p = 0; p < part_node.size(); ++p) {
    if (part_warm[p] == 2) {
      const std::string& bytes = part_copy[p];
      m->answer_part(p, bytes, '*', {{4, bytes.size() - 4}});
      continue;
    }
    if (part_warm[p]) {
      // One key (MSET: one pair) as its own command: "GET k" for MGET, "SET k v" for MSET.
      std::vector<std::string_view> one = part_args[p];
      if (step == 2) one[0] = "SET";
      std::string bytes;
      redis::append_command(bytes, one);
      if (warm_key(cmd, one[1], part_node[p], m, p,
                   cmd.merge == redis::Merge::kArray ? redis::Merge::kArray : redis::Merge::kNone,
                   bytes)) {
        continue;
      }
    }
    std::string error;
    BackendConn* b = connection(part_node[p], error);
    if (b == nullptr) {
      if (!counted_error) count_forward_error();
      counted_error = true;
      m->fail_part(p, error_reply(backend_error(part_node[p], error)));
      continue;
    }
    // Safe failover: deletes first for keys a returned backend missed; writes noted before they
    // are sent, their TTL capped after.
    const bool write = !redis::read_only(cmd);
    bool fell_back = false;
    for (std::size_t k = 1; k < part_args[p].size(); k += step) {
      invalidate_first(b, part_node[p], part_args[p][k]);
      if (write) fell_back |= note_fallback_write(part_args[p][k], part_node[p]);
    }
    std::string bytes;
    redis::append_command(bytes, part_args[p]);
    if (fell_back && pool_->config.failover_ttl_ms != 0 && step == 2) {
      // MSET's keys each get the cap after the part (its other commands do not write values).
      b->send({bytes}, m, p);
      for (std::size_t k = 1; k < part_args[p].size(); k += step) cap_ttl(b, part_args[p][k]);
      continue;
    }
    if (keep_request(part_node[p])) {
      keep(m, p, bytes, part_node[p], static_cast<std::uint16_t>(cluster ? part_place[p] : 0));
      b->send({m->parts[p].request}, m, p);
    } else {
      b->send({bytes}, m, p);
    }
  }
}

}  // namespace chash::proxy::redis
