// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a client's own backend connections: RESP3, SELECT, and blocking commands.
//
// Shared backend connections carry many clients' requests, so they can hold no state of one
// client's. Three things are state of the connection on the server:
//   - the protocol (HELLO 3): a RESP3 client's replies must be RESP3 (maps, sets, doubles ...),
//     which only a connection that said HELLO 3 gets;
//   - the database (SELECT n);
//   - a blocked command (BLPOP, BZMPOP, XREAD BLOCK ...): the connection waits for it.
// A RESP3 client, or one that SELECTed another database, gets a connection of its own to each
// backend it touches (opened on first use with HELLO 3 / SELECT n, closed with the client); its
// replies pass through as the server wrote them. A blocking command goes to its keys' backend
// on the client's own connection, or on one opened for it and closed once it is answered; at
// most max_blocked_clients of a pool wait at once (counted in /metrics), and while
// it waits the client's next requests wait too, as Redis blocks the client.
#include <mutex>
#include <unordered_map>

#include "core/worker.h"
#include "proto/redis/local_replies.h"
#include "base/text.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

std::string error_reply(std::string_view text) {
  std::string out;
  append_error(out, text);
  return out;
}

// Redis's timeouts: seconds as a double for the B* commands (getTimeoutFromObjectOrReply),
// milliseconds for XREAD BLOCK. -1: not a number (the server answers the error at once).
std::int64_t timeout_ms(std::string_view arg, bool seconds) {
  std::string s(arg.substr(0, 64));
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0)) return -1;
  const double ms = seconds ? v * 1000.0 : v;
  if (ms > 9.0e15) return 0;  // as good as for ever
  // A positive wait below 1 ms still waits (Redis rounds up to its clock).
  return ms == 0 ? 0 : std::max<std::int64_t>(1, static_cast<std::int64_t>(ms + 0.999));
}

constexpr std::int64_t kDatabases = 16;

// CLIENT UNBLOCK: the blocked clients of the process (any worker), by the CLIENT ID the proxy
// gave them: the backend they wait on and that server's id for their connection. Touched when
// a blocking command starts and ends, never per request.
struct BlockedAt {
  const PoolShared* pool;
  NodeId node;
  std::int64_t backend_id;
};
std::mutex blocked_mu;
std::unordered_map<std::uint64_t, BlockedAt>& blocked_clients() {
  static std::unordered_map<std::uint64_t, BlockedAt> m;
  return m;
}
// The elements of an array reply as raw RESP values ("*2\r\n$1\r\nk\r\n$1\r\nv\r\n" ->
// {"$1\r\nk\r\n",
// "$1\r\nv\r\n"}); empty for anything else.
std::vector<std::string_view> elements_of(std::string_view reply) {
  ReplyParser p;
  p.set_record_elements(true);
  std::vector<std::string_view> out;
  if (reply.empty() || (reply[0] != '*' && reply[0] != '>') || p.parse(reply) != ParseResult::kDone)
    return out;
  for (const auto& e : p.elements()) out.push_back(e.in(reply));
  return out;
}

// The payload of a bulk string ("$1\r\nk\r\n" -> "k"), of a simple string or integer (":1\r\n",
// RESP3's ",1.5\r\n" -> "1.5"); false for anything else (nil, arrays).
bool scalar_of(std::string_view v, std::string& out) {
  if (v.size() < 3) return false;
  const std::size_t nl = v.find("\r\n");
  if (nl == std::string_view::npos) return false;
  if (v[0] == '$') {
    if (v[1] == '-' || v.size() < nl + 4) return false;
    out.assign(v.substr(nl + 2, v.size() - nl - 4));
    return true;
  }
  if (v[0] == '+' || v[0] == ':' || v[0] == ',') {
    out.assign(v.substr(1, nl - 1));
    return true;
  }
  return false;
}

// What puts back what a blocking pop took for a client that had gone when it was answered (the
// value was on its way when its connection closed): BLPOP/BRPOP [key, value] -> LPUSH/RPUSH,
// BLMPOP [key, [values]] -> LPUSH/RPUSH of the values in reverse (the list as it was), BZPOPMIN/
// BZPOPMAX [key, member, score] and BZMPOP [key, [[member, score] ...]] -> ZADD. The moves
// (BLMOVE, BRPOPLPUSH) and the stream reads lose nothing: empty.
std::vector<std::string> restore_of(std::string_view name, bool right, std::string_view reply) {
  const std::vector<std::string_view> top = elements_of(reply);
  std::vector<std::string> argv;
  std::string key, a, b;
  if (top.size() < 2 || !scalar_of(top[0], key)) return {};
  if (name == "blpop" || name == "brpop") {
    if (!scalar_of(top[1], a)) return {};
    return {name == "blpop" ? "LPUSH" : "RPUSH", key, a};
  }
  if (name == "bzpopmin" || name == "bzpopmax") {
    if (top.size() != 3 || !scalar_of(top[1], a) || !scalar_of(top[2], b)) return {};
    return {"ZADD", key, b, a};
  }
  if (name == "blmpop") {
    argv = {right ? "RPUSH" : "LPUSH", key};
    const auto values = elements_of(top[1]);
    for (auto it = values.rbegin(); it != values.rend(); ++it) {
      if (!scalar_of(*it, a)) return {};
      argv.push_back(a);
    }
    return argv.size() > 2 ? argv : std::vector<std::string>{};
  }
  if (name == "bzmpop") {
    argv = {"ZADD", key};
    for (const auto pair : elements_of(top[1])) {
      const auto ms = elements_of(pair);
      if (ms.size() != 2 || !scalar_of(ms[0], a) || !scalar_of(ms[1], b)) return {};
      argv.push_back(b);
      argv.push_back(a);
    }
    return argv.size() > 2 ? argv : std::vector<std::string>{};
  }
  return {};
}

// Sends `argv` to member `server` of the pool on a shared connection; its answer is nobody's.
void send_own(Worker& worker, std::size_t pool_index, const std::string& server,
              const std::vector<std::string>& argv) {
  std::string error;
  BackendConn* c = worker.backend_named(pool_index, server, error);
  if (c == nullptr) return;
  std::vector<std::string_view> views(argv.begin(), argv.end());
  std::string bytes;
  append_command(bytes, views);
  auto m = make_ref<Msg>();
  m->parts.resize(1);
  m->outstanding = 1;
  m->then = [](Msg&) {};
  c->send({bytes}, m, 0);
}

// Puts back at `server` what blocking pop `name` (`right`: the list's right end) took in `reply`
// for a client that had gone (nothing for an error or a nil reply).
void put_back(Worker& worker, std::size_t pool_index, const std::string& server,
              std::string_view name, bool right, const Msg::Part& reply) {
  if (reply.type == '-') return;
  const auto argv = restore_of(name, right, reply.raw.view());
  if (!argv.empty()) send_own(worker, pool_index, server, argv);
}

void forget_blocked(std::uint64_t id) {
  std::lock_guard lock(blocked_mu);
  blocked_clients().erase(id);
}

}  // namespace

void Client::learn_maxclients(NodeId node) {
  const std::shared_ptr<BackendState>& st = pool_->states[node];
  if (st->maxclients.load(std::memory_order_relaxed) != 0 || st->maxclients_asked.exchange(true))
    return;
  std::string error;
  BackendConn* c = worker_.backend(pool_index_, node, error);
  if (c == nullptr) {
    st->maxclients_asked.store(false);  // asked again with the next connection of a client's own
    return;
  }
  auto m = make_ref<Msg>();
  m->parts.resize(1);
  m->outstanding = 1;
  m->then = [state = st](Msg& r) {
    // *2 $10 maxclients $<n> <n>; an error (a backend user without CONFIG): -1, not asked again.
    const std::vector<std::string_view> e = elements_of(r.parts[0].raw.view());
    std::int64_t n = -1;
    std::string_view v;
    if (e.size() == 2 && e[1].starts_with("$")) {
      v = e[1].substr(e[1].find("\r\n") + 2);
      v = v.substr(0, v.find("\r\n"));
      if (!parse_int(v, n) || n <= 0) n = -1;
    }
    state->maxclients.store(n, std::memory_order_relaxed);
  };
  c->send({"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nmaxclients\r\n"}, m, 0);
}

Backend* Client::own_connection(NodeId node, std::string& error) {
  if (own_.size() <= node) own_.resize(node + 1, nullptr);
  if (own_[node] != nullptr) return own_[node];
  learn_maxclients(node);
  BackendConn* c = worker_.dedicated_backend(pool_index_, node, error);
  if (c == nullptr) return nullptr;
  auto* b = static_cast<Backend*>(c);  // a redis pool's connections are redis::Backends
  b->set_owner(this);
  if (resp_ == 3) b->send_control("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
  if (db_ != 0) {
    std::string select;
    const std::string db = std::to_string(db_);
    append_command(select, {"SELECT", db});
    b->send_control(select);
  }
  tracking_opened(b, node);  // CLIENT TRACKING on, when the client tracks
  own_[node] = b;
  return b;
}

void Client::open_own_now() {
  // A pool of one server: its connection is opened (HELLO 3 / SELECT sent) now, when the client
  // asks, as a redis-server would switch then — not at the next request, when the server may be
  // busy (a long script: BUSY refuses SELECT) and the switch would fail.
  if (!own_mode() || !one_server()) return;
  std::string error;
  own_connection(0, error);  // a failure shows at the next request, which opens it again
}

void Client::release_own(bool abandon) {
  for (Backend*& b : own_) {
    if (b == nullptr) continue;
    Backend* conn = b;
    b = nullptr;
    if (conn == dedicated_) {  // WATCHing on it: the WATCH goes with it
      dedicated_ = nullptr;
      dedicated_node_ = kNoNode;
    }
    conn->set_owner(nullptr);
    if (abandon) conn->abandon();
    else conn->drain();  // closes once the replies sent on it are in
  }
  own_.clear();
}

void Client::uncount_blocked() noexcept {
  if (!blocked_counted_) return;
  blocked_counted_ = false;
  pool_->shared->blocked_clients.fetch_sub(1, std::memory_order_relaxed);
}

std::size_t Client::blocked_now() const noexcept {
  const auto n = pool_->shared->blocked_clients.load(std::memory_order_relaxed);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

void Client::release_blocking(bool abandon) {
  if (abandon) forget_blocked(id_);
  uncount_blocked();
  auto wait = std::move(blocking_wait_);
  Ref<Msg> m = std::move(blocking_msg_);
  if (blocking_conn_ == nullptr) return;
  Backend* b = blocking_conn_;
  blocking_conn_ = nullptr;
  b->set_owner(nullptr);
  if (!abandon) {
    b->drain();
    return;
  }
  if (wait == nullptr || m == nullptr || m->done) {
    b->abandon();
    return;
  }
  // The client left while blocked. Closing its connection at once would lose a value the
  // server popped for it just before it saw the close (a push that came through the shared
  // connections first: 83 of 300 values lost that way). Instead the server is asked to unblock
  // it (CLIENT UNBLOCK on a shared connection, once its id is known), the connection is closed
  // once it has answered, and a value it took is put back.
  m->client = nullptr;
  m->blocking = false;
  m->then = [worker = &worker_, pool_index = pool_index_, server = wait->server, name = wait->name,
             right = wait->right](Msg& r) {
    if (!r.parts.empty()) put_back(*worker, pool_index, server, name, right, r.parts[0]);
  };
  wait->abandoned = true;
  if (wait->backend_id != 0) {
    send_own(worker_, pool_index_, wait->server,
             {"CLIENT", "UNBLOCK", std::to_string(wait->backend_id)});
  }
  b->drain();  // closes once the blocked request is answered
}

bool Client::blocked_reply_for_departed(Msg& m) {
  // Only a blocking pop's value needs it; its client's EOF is read after this reply when both
  // arrive in one event batch (1 value of 100 lost that way under TSan, ABlockedClients...).
  if (blocking_wait_ == nullptr || !peer_closed()) return false;
  if (!m.parts.empty()) {
    put_back(worker_, pool_index_, blocking_wait_->server, blocking_wait_->name,
             blocking_wait_->right, m.parts[0]);
  }
  return true;
}

void Client::close_departed() {
  saw_eof_ = true;
  read_closed_ = true;
  in_.clear();
  blocking_done();
  close();
}

void Client::blocking_done() noexcept {
  forget_blocked(id_);
  release_blocking(false);
  resume_input();
}

void Client::blocking(const Command& cmd, std::size_t argc) {
  const std::string_view name = cmd.name;
  // XREAD / XREADGROUP block only with BLOCK ms (before STREAMS).
  std::int64_t block_ms = -1;
  if (name == "xread" || name == "xreadgroup") {
    for (std::size_t i = 1; i + 1 < argc; ++i) {
      const std::string_view a = parser_.arg(in_, i);
      if (iequal(a, "streams")) break;
      if (iequal(a, "block")) {
        block_ms = timeout_ms(parser_.arg(in_, i + 1), false);
        break;
      }
    }
    if (block_ms < 0) {  // no BLOCK (or a bad one, the server says so): an ordinary read
      spec_keys(cmd, argc);
      return;
    }
  } else {
    const bool first = name == "blmpop" || name == "bzmpop";  // timeout numkeys key ...
    block_ms = timeout_ms(parser_.arg(in_, first ? 1 : argc - 1), true);
    if (block_ms < 0) block_ms = 1;  // the server refuses it at once: nothing to wait for
  }
  std::string error;
  if (!find_keys(cmd, argc, error)) {
    reject(error);
    return;
  }
  if (key_pos_.empty()) {  // a numkeys the server will refuse: any backend says why
    spec_keys(cmd, argc);
    return;
  }
  const NodeId node = keys_backend(cmd, argc, error);
  if (node == kNoNode) {
    reject(error.empty() ? "ERR chash-proxy: no backend for these keys" : error);
    return;
  }
  auto m = new_msg();
  if (!usable_or_fail(node, "these keys", m, false)) return;
  Backend* b = nullptr;
  if (own_mode()) {
    b = own_connection(node, error);
  } else {
    // The bound is the pool's, across workers (two may pass it at once by one: harmless).
    if (pool_->shared->blocked_clients.load(std::memory_order_relaxed) >=
        static_cast<std::int64_t>(pool_->config.max_blocked_clients)) {
      pool_->shared->blocked_refused.fetch_add(1, std::memory_order_relaxed);
      fail_msg(m,
               "ERR chash-proxy: too many blocked clients in pool '" + pool_->config.name +
                   "' (max_blocked_clients: " + std::to_string(pool_->config.max_blocked_clients) +
                   ")",
               true);
      return;
    }
    learn_maxclients(node);
    BackendConn* c = worker_.dedicated_backend(pool_index_, node, error);
    if (c != nullptr) {
      b = static_cast<Backend*>(c);
      b->set_owner(this);
      blocking_conn_ = b;
      if (db_ != 0) {
        const std::string db = std::to_string(db_);
        std::string select;
        append_command(select, {"SELECT", db});
        b->send_control(select);
      }
    }
  }
  if (b == nullptr) {
    count_forward_error();
    fail_msg(m, backend_error(node, error), false);
    return;
  }
  if (!read_only(cmd)) {
    for (const std::uint32_t p : key_pos_) note_fallback_write(parser_.arg(in_, p), node);
  }
  // Counted (and bounded) whichever connection it waits on; INFO's blocked_clients shows it.
  pool_->shared->blocked_clients.fetch_add(1, std::memory_order_relaxed);
  blocked_counted_ = true;
  m->blocking = true;
  m->parts.resize(1);
  m->outstanding = 1;
  input_paused_ = true;  // the client's next requests wait, as Redis blocks the client
  // What a departure needs (release_blocking): the server's id for the connection, what to put
  // back. Only on a connection of its own for the blocking command (own mode's connections are
  // the client's, closed with it).
  std::shared_ptr<BlockedWait> wait;
  if (b == blocking_conn_) {
    wait = std::make_shared<BlockedWait>();
    wait->server = pool_->servers[node].name;
    wait->name = std::string(name);
    for (std::size_t i = 1; i < argc; ++i) wait->right |= iequal(parser_.arg(in_, i), "right");
    blocking_wait_ = wait;
    blocking_msg_ = m;
  }
  // Safe return: the keys the server missed are deleted there first, on this connection.
  if (pool_->states[node]->absence.phase() == AbsenceLog::Phase::kFlipped) {
    for (const std::uint32_t p : key_pos_) invalidate_first(b, node, parser_.arg(in_, p));
  }
  // The server's id for this connection, for CLIENT UNBLOCK (asked first, answered first).
  auto ask = make_ref<Msg>();
  ask->parts.resize(1);
  ask->outstanding = 1;
  ask->then = [id = id_, shared = pool_->shared.get(), node, wait, worker = &worker_,
               pool_index = pool_index_](Msg& r) {
    const std::string_view raw = r.parts[0].raw.view();
    std::int64_t backend_id = 0;
    if (r.parts[0].type != ':' || raw.size() < 3 ||
        !parse_int(raw.substr(1, raw.size() - 3), backend_id)) {
      return;
    }
    if (wait != nullptr) {
      wait->backend_id = backend_id;
      // The client left before the id came: unblock it now (release_blocking).
      if (wait->abandoned) {
        send_own(*worker, pool_index, wait->server,
                 {"CLIENT", "UNBLOCK", std::to_string(backend_id)});
        return;
      }
    }
    std::lock_guard lock(blocked_mu);
    blocked_clients()[id] = BlockedAt{shared, node, backend_id};
  };
  b->send({"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"}, ask, 0);
  std::string scratch;
  b->expect_block(block_ms);
  b->send({request_bytes(scratch)}, m, 0);
}

// CLIENT UNBLOCK id [TIMEOUT|ERROR]: the client `id` (a CLIENT ID of this proxy's) blocked on
// a backend is unblocked by that server, so that what it popped is never lost on the way.
void Client::client_unblock(std::size_t argc) {
  std::int64_t id = 0;
  if (!parse_int(parser_.arg(in_, 2), id)) {
    reply_local(error_reply("ERR value is not an integer or out of range"), true);
    return;
  }
  if (argc == 4 && !iequal(parser_.arg(in_, 3), "timeout") &&
      !iequal(parser_.arg(in_, 3), "error")) {
    reply_local(error_reply("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"), true);
    return;
  }
  BlockedAt at{};
  bool found = false;
  {
    std::lock_guard lock(blocked_mu);
    const auto it = blocked_clients().find(static_cast<std::uint64_t>(id));
    if (it != blocked_clients().end() && it->second.pool == pool_->shared.get()) {
      at = it->second;
      found = true;
    }
  }
  if (!found || at.node >= pool_->states.size()) {
    reply_local(":0\r\n");  // not blocked (or not this pool's): as Redis answers
    return;
  }
  const std::string bid = std::to_string(at.backend_id);
  std::vector<std::string_view> argv = {"CLIENT", "UNBLOCK", bid};
  if (argc == 4) argv.push_back(parser_.arg(in_, 3));
  std::string bytes;
  append_command(bytes, argv);
  auto m = new_msg();
  NodeId node = at.node;
  if (!usable_or_fail(node, "the blocked client's backend", m, true)) return;
  std::string error;
  BackendConn* b = connection(node, error);
  if (b == nullptr) {
    fail_msg(m, backend_error(node, error), false);
    return;
  }
  m->parts.resize(1);
  m->outstanding = 1;
  b->send({bytes}, m, 0);
}

// HELLO [protover [AUTH user pass] [SETNAME name]] (Redis 6+). HELLO 3 makes the connection a
// RESP3 one: its requests go over connections of its own that said HELLO 3 (see above), and the
// proxy's own replies take RESP3's shapes where they differ (HELLO's map, nulls). AUTH and
// SETNAME are kept by the proxy, as AUTH and CLIENT SETNAME are.
void Client::local_hello(std::size_t argc) {
  std::int64_t version = resp_;
  if (argc >= 2) {
    if (!parse_int(parser_.arg(in_, 1), version)) {
      reply_local(error_reply("ERR Protocol version is not an integer or out of range"), true);
      return;
    }
    if (version != 2 && version != 3) {
      reply_local(error_reply("NOPROTO unsupported protocol version"), true);
      return;
    }
  }
  std::string_view user, password, setname;
  bool auth = false, has_setname = false;
  for (std::size_t j = 2; j < argc; ++j) {
    const std::string_view opt = parser_.arg(in_, j);
    const std::size_t more = argc - j - 1;
    if (iequal(opt, "auth") && more >= 2) {
      auth = true;
      user = parser_.arg(in_, j + 1);
      password = parser_.arg(in_, j + 2);
      j += 2;
    } else if (iequal(opt, "setname") && more >= 1) {
      setname = parser_.arg(in_, j + 1);
      has_setname = true;
      j += 1;
    } else {
      reply_local(
          error_reply("ERR Syntax error in HELLO option '" + std::string(opt.substr(0, 64)) + "'"),
          true);
      return;
    }
  }
  if (auth && !authenticate(user, password)) {
    reply_local(error_reply(kWrongPassReply), true);
    return;
  }
  if (!authed()) {
    reply_local(
        error_reply("NOAUTH HELLO must be called with the client already authenticated, otherwise "
                    "the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the "
                    "client and select the RESP protocol version at the same time"),
        true);
    return;
  }
  if (has_setname) {
    if (!valid_client_name(setname)) {
      reply_local(
          error_reply("ERR Client names cannot contain spaces, newlines or special characters."),
          true);
      return;
    }
    name_ = std::string(setname);
  }
  if (version != resp_ && tracking_.on) {
    // A tracking client keeps its connections (the keys they read are tracked there, as Redis
    // keeps its tracking table through HELLO): each switches protocol in place.
    resp_ = static_cast<int>(version);
    const std::string hello = version == 3 ? "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
                                           : "*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n";
    for (Backend* b : own_) {
      if (b != nullptr) send_quietly(b, hello);
    }
  } else if (version != resp_) {
    // The connections opened for the other protocol go (their replies still come in order);
    // the next requests open ones that speak this one.
    release_own(false);
    resp_ = static_cast<int>(version);
    open_own_now();
  }
  reply_local(hello_reply(id_, resp_));
}

// SELECT n: the client's database. The pool's redis_db is its database 0; another one is the
// client's connection state, so its requests go over connections of its own that said SELECT n.
// A Redis Cluster has database 0 only, and a pool pinned to a redis_db keeps to it. The index is
// checked against redis.conf's default `databases 16` (the proxy cannot ask every backend's).
void Client::local_select(std::size_t) {
  std::int64_t db = 0;
  if (!parse_int(parser_.arg(in_, 1), db) || db < 0 || db > INT32_MAX) {
    reply_local(error_reply(db < 0 ? "ERR DB index is out of range"
                                   : "ERR value is not an integer or out of range"),
                true);
    return;
  }
  if (db != 0 && (pool_->config.is_cluster() || pool_->config.redis_db != 0)) {
    reply_local(error_reply(pool_->config.is_cluster()
                                ? "ERR SELECT is not allowed in cluster mode"
                                : "ERR DB index is out of range (chash-proxy: this pool is pinned "
                                  "to its redis_db: SELECT 0)"),
                true);
    return;
  }
  if (tx_.active()) {
    reject("ERR chash-proxy: SELECT cannot be queued in a transaction (send it before MULTI)");
    return;
  }
  if (db >= kDatabases) {
    reply_local(error_reply("ERR DB index is out of range"), true);
    return;
  }
  if (db != db_) {
    // The connections of the other database go (their replies still come in order); the next
    // requests open ones that said SELECT db.
    release_own(false);
    db_ = db;
    if (own_mode() && one_server()) {
      // A pool of one server: answered by the server on the new connection, so that the client
      // reads +OK once that connection is up. Answered at once, its next request would wait for
      // the connect while another client's, sent after, overtook it (Redis's stream-cgroups
      // "Blocking XREADGROUP: key deleted" lost that race).
      std::string error;
      if (Backend* b = own_connection(0, error)) {
        auto m = new_msg();
        m->parts.resize(1);
        m->outstanding = 1;
        std::string scratch;
        b->send({request_bytes(scratch)}, m, 0);
        return;
      }
    }
  }
  reply_local("+OK\r\n");
}

// RESET (Redis 6.2): the connection as new — out of MULTI, no WATCH, RESP2, database 0, no
// name, the default user when it needs no password.
void Client::local_reset(std::size_t) {
  tx_.reset();
  tx_keys_.clear();
  release_dedicated();
  watch_lost_ = false;
  tx_slot_ = -1;
  release_own(false);
  Ref<Reply> reply;
  if (pubsub_ != nullptr) {  // unsubscribed from everything, as Redis's RESET
    reply = make_ref<LocalReply>();
    reply->reply = "+RESET\r\n";
    push(reply);
    release_pubsub(false, reply);
  }
  resp_ = 2;
  db_ = 0;
  tracking_ = Tracking{};  // RESET turns tracking off
  reply_off_ = skip_next_reply_ = false;
  name_.clear();
  user_ = nullptr;
  user_name_.clear();
  acl_ = nullptr;
  refresh_acl();
  if (reply == nullptr) reply_local("+RESET\r\n");
  else if (reply->outstanding == 0) reply->finish_now();
}

}  // namespace chash::proxy::redis
