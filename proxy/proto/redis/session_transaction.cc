// SPDX-License-Identifier: Apache-2.0
// chash-proxy — MULTI / EXEC / DISCARD / WATCH / UNWATCH for one Redis client (the design is in
// proto/redis/transaction.h; docs/REDIS.md "Transactions" has the rules).
#include "core/worker.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

constexpr std::string_view kMultiBytes = "*1\r\n$5\r\nMULTI\r\n";
constexpr std::string_view kExecBytes = "*1\r\n$4\r\nEXEC\r\n";

}  // namespace

void Client::reject(std::string_view error) {
  if (tx_.active()) tx_.abort();
  reply_local(error_text(error), true);
}

BackendConn* Client::connection(NodeId& node, std::string& error) {
  if (dedicated_ != nullptr && node == dedicated_node_) return dedicated_;
  if (own_mode()) {  // RESP3, SELECT, CLIENT TRACKING: session_own.cc
    Backend* b = own_connection(node, error);
    if (b != nullptr) caching_before(b);
    return b;
  }
  // A client with nothing else in flight (its request being dispatched is the newest in
  // pending_) need not queue behind another client's long script: Worker::backend bypasses it.
  BackendConn* b = worker_.backend(pool_index_, node, error, pending_.size() <= 1);
  if (b != nullptr || pool_->servers[node].role != ServerRole::kReplica) return b;
  // A replica that cannot be reached: out of the reads until its probe finds it again, and this
  // read goes to its master.
  BackendState& st = *pool_->states[node];
  st.down_since_ms.store(steady_ms(), std::memory_order_relaxed);
  st.down.store(true, std::memory_order_relaxed);
  pool_->shared->replica_fallbacks.fetch_add(1, std::memory_order_relaxed);
  node = pool_->servers[node].replica_of;
  return worker_.backend(pool_index_, node, error);
}

std::string_view Client::request_bytes(std::string& scratch) {
  if (!parser_.is_inline()) {
    return std::string_view(in_).substr(parser_.start(), parser_.end() - parser_.start());
  }
  std::vector<std::string_view> argv;
  for (std::size_t i = 0; i < parser_.argc(); ++i) argv.push_back(parser_.arg(in_, i));
  append_command(scratch, argv);
  return scratch;
}

NodeId Client::keys_node(const Command& cmd, std::size_t argc, std::string& error) {
  std::size_t first = 1, last = 1, step = 1;
  switch (cmd.route) {
    case Route::kKey:
      break;
    case Route::kKeysSameNode:
    case Route::kTransaction:  // WATCH
      first = static_cast<std::size_t>(cmd.key_first);
      last = cmd.key_last < 0 ? argc - 1 : static_cast<std::size_t>(cmd.key_last);
      step = static_cast<std::size_t>(cmd.key_step);
      break;
    case Route::kSplitKeys:
      last = argc - 1;
      break;
    case Route::kSplitPairs:
      last = argc - 1;
      step = 2;
      break;
    case Route::kEval:
    case Route::kSpecKeys:
    case Route::kSubKey:
    case Route::kBlocking: {  // inside MULTI a blocking command does not block (Redis)
      if (!find_keys(cmd, argc, error)) return kNoNode;
      const NodeId node = keys_backend(cmd, argc, error);
      if (node == kNoNode) {
        if (error.empty()) error = "ERR chash-proxy: no backend for these keys";
        return kNoNode;
      }
      std::string why;
      if (!backend_usable(*pool_, node, "these keys", why) && !retry_down(node)) {
        error = "ERR " + why;
        return kNoNode;
      }
      return node;
    }
    case Route::kKeyspace:
    case Route::kBroadcast:
      if (one_server()) return 0;  // the one server runs it with the rest
      error = "ERR chash-proxy: '" + std::string(cmd.name) +
              "' concerns every backend and cannot be queued in a transaction of a pool of "
              "several backends";
      return kNoNode;
    case Route::kLocal:
    case Route::kPubSub:  // PUBLISH: queue_in_transaction routes its channel
    case Route::kUnsupported:
      error = "ERR chash-proxy: this command has no keys to route";
      return kNoNode;
  }
  if (step == 2 && (argc - 1) % 2 != 0) {
    error = "ERR wrong number of arguments for '" + std::string(cmd.name) + "' command";
    return kNoNode;
  }
  const std::string_view first_key = parser_.arg(in_, first);
  const NodeId node = pool_->route(first_key);
  const std::uint32_t where = place(first_key);
  const bool cluster = pool_->config.is_cluster();
  for (std::size_t i = first + step; i <= last && i < argc; i += step) {
    if (place(parser_.arg(in_, i)) != where) {
      error = std::string(cluster ? kCrossSlot : kCrossBackendTransaction);
      return kNoNode;
    }
  }
  if (cluster) {
    // A transaction (and its WATCHes) runs on one slot: the cluster refuses others.
    if (tx_slot_ >= 0 && static_cast<std::uint32_t>(tx_slot_) != where) {
      error = std::string(kCrossSlot);
      return kNoNode;
    }
    if (node == kNoNode) {
      error = "CLUSTERDOWN Hash slot not served (slot " + std::to_string(where) + ")";
      return kNoNode;
    }
  }
  std::string why;
  if (!backend_usable(*pool_, node, "these keys", why) && !retry_down(node)) {
    error = "ERR " + why;
    return kNoNode;
  }
  return node;
}

void Client::note_tx_slot(const Command& cmd, std::size_t argc) {
  if (!pool_->config.is_cluster()) return;
  const std::size_t first = cmd.route == Route::kEval ? 3 : cmd.key_first > 0 ? cmd.key_first : 1;
  if (first < argc) tx_slot_ = place(parser_.arg(in_, first));
}

void Client::run_transaction(const Command& cmd, std::size_t argc) {
  if (cmd.name == "multi") {
    if (tx_.active()) {  // refused, and the transaction goes on (as Redis 7.0)
      reply_local(error_text("ERR MULTI calls can not be nested"), true);
      return;
    }
    tx_.begin(dedicated_ != nullptr ? dedicated_node_ : kNoNode, pool_->config.max_request_bytes);
    reply_local("+OK\r\n");
  } else if (cmd.name == "exec") {
    exec();
  } else if (cmd.name == "discard") {
    if (!tx_.active()) {
      reply_local(error_text("ERR DISCARD without MULTI"), true);
      return;
    }
    tx_.reset();
    tx_keys_.clear();
    release_dedicated();  // DISCARD unwatches every key
    watch_lost_ = false;
    tx_slot_ = -1;
    reply_local("+OK\r\n");
  } else if (cmd.name == "watch") {
    watch(argc);
  } else if (cmd.name == "unwatch") {
    if (tx_.active()) {  // queued, as Redis does (harmless: EXEC unwatches anyway)
      queue_in_transaction(cmd, argc);
      return;
    }
    watch_lost_ = false;
    tx_slot_ = -1;
    if (dedicated_ == nullptr) {
      reply_local("+OK\r\n");
      return;
    }
    auto m = new_msg();
    forward_one(dedicated_node_, m);  // on the dedicated connection, then let it go
    release_dedicated();
  }
}

// WATCH key ...: the keys must map to one backend, and to the same one as earlier WATCHes; the
// client gets a connection to it of its own until EXEC, DISCARD or UNWATCH.
void Client::watch(std::size_t argc) {
  if (tx_.active()) {  // refused, and the transaction goes on (as Redis 7.0)
    reply_local(error_text("ERR WATCH inside MULTI is not allowed"), true);
    return;
  }
  std::string error;
  const NodeId node = keys_node(*find_command("watch"), argc, error);
  if (node == kNoNode) {
    reply_local(error_text(error), true);
    return;
  }
  if (dedicated_ != nullptr && node != dedicated_node_) {
    reply_local(error_text(kCrossBackendTransaction), true);
    return;
  }
  note_tx_slot(*find_command("watch"), argc);
  auto m = new_msg();
  if (dedicated_ == nullptr) {
    // A client with connections of its own WATCHes on its own one (it has the client's
    // database and protocol); else on one opened for the WATCH.
    if (!own_mode()) learn_maxclients(node);
    BackendConn* b = own_mode() ? own_connection(node, error)
                                : worker_.dedicated_backend(pool_index_, node, error);
    if (b == nullptr) {
      count_forward_error();
      fail_msg(m, "ERR backend " + pool_->states[node]->name + ": " + error, false);
      return;
    }
    // A redis pool's connections are redis::Backends (core/protocols.cc make_backend).
    dedicated_ = static_cast<Backend*>(b);
    dedicated_->set_owner(this);
    dedicated_node_ = node;
  }
  forward_one(node, m);
}

void Client::queue_in_transaction(const Command& cmd, std::size_t argc) {
  NodeId node = kNoNode;
  if (cmd.route == Route::kPubSub) {
    // PUBLISH / SPUBLISH run in the transaction when their channel lives on its backend; a
    // subscription is connection state the proxy keeps, not the backend's.
    if (cmd.name != "publish" && cmd.name != "spublish") {
      reject("ERR chash-proxy: '" + std::string(cmd.name) +
             "' cannot be queued in a transaction (send it before MULTI)");
      return;
    }
    node = channel_node(parser_.arg(in_, 1));
    if (tx_.node() != kNoNode && node != tx_.node() && !one_server()) {
      reject(
          "ERR chash-proxy: PUBLISH's channel lives on another backend than the "
          "transaction's keys");
      return;
    }
  } else if (cmd.route == Route::kLocal || cmd.name == "unwatch") {
    // Key-less commands a backend answers the same way go with the others; the rest are
    // answered by the proxy and cannot be part of what the backend executes.
    if (cmd.name != "ping" && cmd.name != "echo" && cmd.name != "unwatch") {
      reject("ERR chash-proxy: '" + std::string(cmd.name) +
             "' cannot be queued in a transaction (send it before MULTI)");
      return;
    }
  } else {
    std::string error;
    node = keys_node(cmd, argc, error);
    if (node == kNoNode) {
      reject(error);
      return;
    }
    note_tx_slot(cmd, argc);
  }
  std::string scratch;
  const std::string_view error = tx_.queue(node, request_bytes(scratch));
  if (!error.empty()) {
    reply_local(error_text(error), true);  // (the transaction is aborted)
    return;
  }
  // Its keys, for EXEC: a write to keys whose owner is ejected lands on the fallback and is
  // noted then, as a write outside a transaction is (the owner's older copy is swept before it
  // returns); during a warm-up the moved ones are migrated to their owner first.
  if (node != kNoNode && cmd.route != Route::kPubSub) {
    std::string ignored;
    if (find_keys(cmd, argc, ignored)) {
      const bool write = !read_only(cmd);
      for (const std::uint32_t p : key_pos_) tx_keys_.emplace_back(parser_.arg(in_, p), write);
    }
  }
  reply_local("+QUEUED\r\n");
}

// EXEC: MULTI, the queued commands and EXEC go out back to back on one connection (the
// dedicated one after WATCH); the client's reply is the backend's reply to EXEC.
void Client::exec() {
  if (!tx_.active()) {
    reply_local(error_text("ERR EXEC without MULTI"), true);
    return;
  }
  const auto finish = [&] {
    tx_.reset();
    tx_keys_.clear();
    release_dedicated();  // EXEC unwatches every key
    watch_lost_ = false;
    tx_slot_ = -1;
  };
  if (tx_.aborted()) {
    finish();
    reply_local(error_text(kExecAbort), true);
    return;
  }
  if (watch_lost_) {
    // The WATCH connection closed: whether a watched key changed is unknown, so the
    // transaction is not run and the client is told as for a changed key (it retries).
    finish();
    reply_local("*-1\r\n");
    return;
  }
  NodeId node = tx_.node();
  if (node == kNoNode && dedicated_ != nullptr) node = dedicated_node_;
  if (node == kNoNode && tx_.size() == 0) {
    finish();
    reply_local("*0\r\n");
    return;
  }
  if (node == kNoNode) node = pool_->route("");  // only key-less commands (PING ...): anywhere
  auto m = new_msg();
  std::string error;
  BackendConn* b = nullptr;
  if (usable_or_fail(node, "the transaction's keys", m, true)) {
    b = connection(node, error);
    if (b == nullptr) {
      count_forward_error();
      fail_msg(m, "ERR backend " + pool_->states[node]->name + ": " + error, false);
    }
  }
  if (b == nullptr) {
    finish();
    return;
  }
  for (const auto& [k, write] : tx_keys_) {
    if (write) note_fallback_write(k, node);  // before it is sent
  }
  const std::size_t n = tx_.size();
  m->merge = Merge::kLast;
  m->parts.resize(n + 2);
  m->outstanding = static_cast<std::uint32_t>(n + 2);
  // A warm-up: the moved keys go home first, so that a read in the transaction finds the value
  // and a write leaves no older copy at a previous owner (a later failover would read it back).
  // With WATCH or connections of the client's own the transaction must run on the client's own
  // connection, which the migration steps cannot hold: there its keys are read as the owner
  // has them (docs/FAILURES.md, warm-up).
  if (pool_->warming() && dedicated_ == nullptr && !own_mode() && !tx_keys_.empty()) {
    std::vector<std::string> requests;
    requests.reserve(n + 2);
    requests.emplace_back(kMultiBytes);
    for (std::size_t i = 0; i < n; ++i) requests.emplace_back(tx_.command(i));
    requests.emplace_back(kExecBytes);
    if (warm_transaction_then_send(node, m, std::move(requests))) {
      finish();
      return;
    }
  }
  // Safe return: the transaction's keys the server missed are deleted there first, before MULTI
  // (a key the client WATCHes then aborts its EXEC: it retries, rather than read a stale value).
  for (const auto& [k, write] : tx_keys_) invalidate_first(b, node, k);
  b->send({kMultiBytes}, m, 0);
  for (std::size_t i = 0; i < n; ++i)
    b->send({tx_.command(i)}, m, static_cast<std::uint32_t>(i + 1));
  b->send({kExecBytes}, m, static_cast<std::uint32_t>(n + 1));
  finish();
}

void Client::release_dedicated() {
  if (dedicated_ == nullptr) return;
  Backend* b = dedicated_;
  dedicated_ = nullptr;
  dedicated_node_ = kNoNode;
  for (Backend* own : own_) {
    if (own == b) {
      // The client's own connection stays: its WATCH goes (after EXEC the server has dropped
      // it already; after DISCARD the server never saw the MULTI).
      own->send_control("*1\r\n$7\r\nUNWATCH\r\n");
      return;
    }
  }
  b->set_owner(nullptr);
  b->drain();  // closes once the replies sent on it are in
}

void Client::dedicated_closed(Backend* b) noexcept {
  if (pubsub_conn_closed(b)) return;  // placed again by the next reconcile (session_pubsub.cc)
  for (Backend*& own : own_) {
    if (own == b) own = nullptr;  // opened again on the next request for its backend
  }
  if (b == blocking_conn_) blocking_conn_ = nullptr;  // its request fails: blocking_done()
  if (b != dedicated_) return;
  dedicated_ = nullptr;
  dedicated_node_ = kNoNode;
  watch_lost_ = true;
}

}  // namespace chash::proxy::redis
