// SPDX-License-Identifier: Apache-2.0
// chash-proxy — Redis client and backend connections.
//
// A Client parses requests (pipelined: many per read), turns each into a Msg at the back of its
// in-order queue, and writes replies strictly in request order as Msgs complete. A Msg is
// answered locally, forwarded whole to one backend, or split into one part per backend (MGET,
// MSET, DEL, ...) and merged when every part has answered.
//
// A Backend is one connection to one redis-server, owned by one worker: requests are written
// in order and its replies complete the queued parts in the same order (RESP has no ids). When
// it fails (connect error, timeout, closed mid-reply, unparsable reply) every queued part gets
// "-ERR backend <name>: <why>" and the connection is dropped; the next request reconnects.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/session.h"
#include "membership/topology.h"
#include "net/event_loop.h"
#include "proto/redis/acl.h"
#include "proto/redis/commands.h"
#include "proto/redis/resp.h"
#include "proto/redis/transaction.h"

namespace chash::proxy::redis {

class Client;
struct WarmOp;

struct Msg final : Reply {
  Merge merge = Merge::kNone;
  struct Part {
    net::HeldBytes raw;  // the backend's whole reply, in its read chunk (or copied: errors)
    char type = 0;
    std::vector<Span> elements;  // of raw, for kArray merges
    // A part that may have to be sent again (a cluster pool's: MOVED, ASK, TRYAGAIN; a read
    // sent to a replica: LOADING): its request as sent, the member it went to (in routed_by),
    // its slot, and the redirections and retries it has followed. member kNoNode: not kept.
    std::string request;
    NodeId member = kNoNode;
    std::uint16_t slot = 0;
    std::uint8_t hops = 0, tries = 0;
  };
  std::vector<Part> parts;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> key_map;  // MGET: key -> (part, element)
  std::shared_ptr<const Pool> routed_by;  // the snapshot the kept parts' members belong to
  // kScan: the backend this SCAN step went to, of how many (the cursor names it).
  std::uint32_t scan_node = 0, scan_nodes = 0;
  // A blocking command (BLPOP ...): its client reads no further request until it is answered,
  // as Redis blocks the client (proto/redis/session_own.cc).
  bool blocking = false;
  // A Msg of the proxy's own (a warm-up step, proto/redis/session_warmup.cc): when every part
  // is in, `then` gets it instead of a client.
  std::function<void(Msg&)> then;
  // A GET of a hot key (hot_cache, proto/redis/session_hot.cc): its reply fills the worker's
  // copy if the key's write generation is still `hot_stamp`. Empty: not such a read.
  std::string hot_key;
  std::uint64_t hot_stamp = 0;
  // A write with hot_cache on: its keys' generations (or every key's, hot_all) are bumped again
  // when it is answered, so that a read another worker sent while it was in flight — which
  // may have read the old value after the first bump — cannot leave a copy that outlives it.
  std::shared_ptr<PoolShared> hot_pool;
  std::vector<std::string> hot_written;
  bool hot_all = false;

  // Called by Backend for each part; finishes the Msg when it was the last. `elements` (kArray
  // merges) is taken over (swapped with the part's).
  void complete_part(std::uint32_t part, net::Slice raw, char type, std::vector<Span>* elements);
  void fail_part(std::uint32_t part, std::string_view error) override;
  // Completes part `part` with a reply the proxy has (copied): `type` its first byte, and for
  // kArray merges its elements (relative to `bytes`).
  void answer_part(std::uint32_t part, std::string_view bytes, char type,
                   std::vector<Span> elements);
  void finish();
  void finish_merged();
  // The reply: one backend's bytes as they are, or an MGET merged from the parts' elements
  // (gathered, not concatenated), or what finish() made (`reply`: sums, OK, errors).
  void emit(net::OutQueue& out) override;
  void settle() override;

 private:
  bool merged_ = false;  // emit() gathers the kArray merge (else `reply`, or parts[0] as is)
  bool whole_ = false;   // emit() sends parts[whole_part_].raw
  std::uint32_t whole_part_ = 0;
};

class Backend final : public BackendSession {
 public:
  Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node);

  // A dedicated connection (WATCH, a client's own) tells `owner` when it closes; null: nobody.
  void set_owner(Client* owner) noexcept { owner_ = owner; }
  // The request sent next is a blocking one that may wait `block_ms` (0: for ever) before the
  // server answers: the pool's timeout counts from the end of that wait.
  void expect_block(std::int64_t block_ms) noexcept {
    blocking_ = true;
    block_ms_ = block_ms;
  }
  // A subscriber connection of `owner` (proto/redis/session_pubsub.cc): the message pushes it
  // receives go to the owner as they come (dropped once it has none); the other replies answer
  // its (un)subscribe requests in order.
  void set_subscriber(Client* owner) noexcept {
    owner_ = owner;
    subscriber_ = true;
  }
  // Closes now, whatever is in flight (a blocked request never answers): the client went away.
  void abandon() { BackendSession::abandon(); }
  void check_timeout(net::Clock::time_point now) override;

 private:
  void handshake() override;  // AUTH / SELECT
  void on_closed() override;
  void on_input() override;
  std::string failure_reply(const std::string& why) const override;

  ReplyParser parser_;
  bool parser_started_ = false;
  Client* owner_ = nullptr;
  bool subscriber_ = false;  // set_subscriber
  bool blocking_ = false;    // a blocking request is in flight (expect_block)
  std::int64_t block_ms_ = 0;
};

// Whether `raw` (a whole RESP2 reply) is a Pub/Sub message push: message, pmessage, smessage.
bool is_pubsub_message(std::string_view raw) noexcept;
// The server's ids of each client's subscriber connections, by server name: what a CLIENT
// TRACKING REDIRECT to that client is on each backend (proto/redis/session_tracking.cc).
// `server` null: all of the client's.
void note_subscriber_id(std::uint64_t client, const PoolShared* pool, const std::string& server,
                        std::int64_t backend_id);
void forget_subscriber_ids(std::uint64_t client, const std::string* server);
struct PubSubState;
struct PubSubAt;

// The client's reply for the kSame, kConcat, kMinInts and kScan merges of `m`'s parts (every
// part a reply, none an error): proto/redis/session_keyspace.cc.
std::string merge_replies(const Msg& m);

// Whether a reply merged by `m` is parsed into its top-level elements.
constexpr bool records_elements(Merge m) noexcept {
  return m == Merge::kArray || m == Merge::kConcat || m == Merge::kMinInts || m == Merge::kScan;
}

class Client final : public ClientSession {
 public:
  Client(Worker& worker, std::size_t pool_index, int fd);
  ~Client() override;

  // A connection of this client's closed: the dedicated (WATCH) one before EXEC (its WATCH
  // state is gone with it, so EXEC answers a null reply, as for a touched key), one of its own.
  void dedicated_closed(Backend* b) noexcept;
  // Whether a request for `node` goes to it even while it is down: nutcracker without
  // auto_eject_hosts sends every request to the key's server, so one that answers again is used
  // on the next request, not after the next health probe. Not cluster nodes, nor replicas
  // (their reads go to the master meanwhile).
  static bool retries_down(const Pool& pool, NodeId node) noexcept {
    return node != kNoNode && node < pool.servers.size() && !pool.config.auto_eject_hosts &&
           !pool.config.is_cluster() && pool.servers[node].role != ServerRole::kReplica;
  }
  bool retry_down(NodeId node) const noexcept { return retries_down(*pool_, node); }
  // A blocking command's reply is in: the client reads its next requests.
  void blocking_done() noexcept;
  // A blocking command's reply `m` is in, but the client closed its connection meanwhile (its
  // EOF waits unread: this worker took the reply first). What the server popped for it is put
  // back, as when the close is seen first (release_blocking), and the reply is not sent: true.
  bool blocked_reply_for_departed(Msg& m);
  // Then: the connection closes, its requests after the blocking one unrun (as Redis frees a
  // client that leaves while blocked).
  void close_departed();
  // hot_cache: `reply` (the whole RESP reply) answered a GET of hot `key` read under `stamp`.
  void hot_fill(std::string_view key, std::string_view reply, std::uint64_t stamp);
  // The protocol the client speaks (HELLO): 2 or 3.
  int resp() const noexcept { return resp_; }
  // A message one of its subscriber connections received, in that connection's read chunk
  // (proto/redis/session_pubsub.cc); false when it was not delivered (not subscribed any more).
  // `from`: the server it came from (a cluster pool's patterns are on every master: see
  // session_pubsub.cc).
  bool pubsub_message(const net::Slice& raw, std::string_view from);
  // A RESP3 push one of its own connections received: CLIENT TRACKING's invalidations
  // (proto/redis/session_tracking.cc).
  void backend_push(std::string_view raw);
  enum class SubKind : std::uint8_t { kChannel, kPattern, kShard };

  // A backend answered kept part `part` of `m` with the error reply `raw` (proto/redis/
  // session_cluster.cc): a MOVED or ASK is followed to the node it names, a TRYAGAIN retried,
  // a replica's LOADING sent to its master, a CLUSTERDOWN given its slot. True when the part was
  // taken over (sent again, scheduled, or failed with another error); false: `raw` answers it.
  // `sent_epoch`: the BackendState::address_epoch of the address the part was sent to.
  bool redirect(const Ref<Msg>& m, std::uint32_t part, std::string_view raw,
                std::uint64_t sent_epoch);
  // The connection to the replica a kept read was sent to failed: true when the read was sent
  // to the replica's master instead (a read is safe to send twice).
  bool replica_lost(const Ref<Msg>& m, std::uint32_t part);

 private:
  void process() override;
  void on_closing() override;
  void dispatch();
  Ref<Msg> new_msg();

  // Local commands (Route::kLocal): run_local finds the handler by the command's name.
  void run_local(const Command& cmd, std::size_t argc);
  void local_auth(std::size_t argc);
  void local_command(std::size_t argc);
  void local_echo(std::size_t argc);
  void local_hello(std::size_t argc);
  void local_ping(std::size_t argc);
  void local_quit(std::size_t argc);
  void local_client(std::size_t argc);
  void local_info(std::size_t argc);
  void local_select(std::size_t argc);
  void local_readonly(std::size_t argc);  // READONLY / READWRITE
  void local_reset(std::size_t argc);

  // Transactions (proto/redis/transaction.cc): MULTI/EXEC/DISCARD/WATCH/UNWATCH, and every
  // command queued between MULTI and EXEC.
  void run_transaction(const Command& cmd, std::size_t argc);
  void queue_in_transaction(const Command& cmd, std::size_t argc);
  void exec();
  void watch(std::size_t argc);
  // Drains the dedicated connection (it closes once its replies are in) and forgets it.
  void release_dedicated();
  // The backend of every key of the request being dispatched; kNoNode with `error` set when
  // they map to several backends or the request names its keys wrongly.
  NodeId keys_node(const Command& cmd, std::size_t argc, std::string& error);
  // Cluster pools: the slot the transaction's keys are in, from the request being dispatched.
  void note_tx_slot(const Command& cmd, std::size_t argc);
  // The request being dispatched as RESP bytes (an inline request is re-encoded into scratch).
  std::string_view request_bytes(std::string& scratch);
  // The connection for `node`: the dedicated one while it is the WATCHed backend (so that the
  // client's commands on it stay in order with its WATCH), else a shared one.
  // A replica that cannot be connected to is taken out of the reads and `node` becomes its
  // master.
  BackendConn* connection(NodeId& node, std::string& error);
  // An error reply for the request being dispatched; inside MULTI it also aborts the
  // transaction (Redis's flagTransaction).
  void reject(std::string_view error);

  // Keys found as Redis finds them (proto/redis/session_keys.cc). key_pos_ gets the request's
  // key positions (kSpecKeys, kSubKey, kBlocking, kEval); false with `error` when they are
  // malformed in a way the proxy must answer itself.
  bool find_keys(const Command& cmd, std::size_t argc, std::string& error);
  // The backend of every key in key_pos_ (any one when there is none); kNoNode with `error` when
  // they span several (naming them) or the command cannot go to a pool of several backends.
  NodeId keys_backend(const Command& cmd, std::size_t argc, std::string& error);
  void spec_keys(const Command& cmd, std::size_t argc);  // kSpecKeys, kSubKey, kEval
  // Whether the pool is one redis-server (not a cluster): it holds the whole keyspace, and every
  // command is exact there.
  bool one_server() const noexcept { return pool_->nodes == 1 && !pool_->config.is_cluster(); }
  // The error for keys of `name` on several backends: Redis Cluster's words, and who they are.
  std::string cross_backend(std::string_view name, NodeId a, NodeId b) const;
  // The backend error for `node` when no connection could be had (`error`): a backend that is
  // down says so with the OS error that put it there.
  std::string backend_error(NodeId node, const std::string& error) const;

  // Keyspace-wide commands and broadcasts (proto/redis/session_keyspace.cc).
  void keyspace(const Command& cmd, std::size_t argc);
  void scan_backends(std::size_t argc);
  // The members that hold keys: the routed nodes, and during warm-up the retired ones a removal
  // left (their keys are still read through, so DBSIZE, KEYS and SCAN count them too).
  std::vector<NodeId> keyspace_members() const;
  // The request (or `bytes` instead) to every backend of the pool, merged by `merge`.
  // `keyspace`: to keyspace_members() (DBSIZE, KEYS, FLUSH*), else to the routed nodes.
  // `own`: each on a connection of its own, closed once answered (SCRIPT KILL: the shared ones
  // wait behind a busy script).
  void broadcast(Merge merge, std::string_view bytes = {}, bool keyspace = false, bool own = false);
  void info_forward(std::size_t argc);

  // Connections of the client's own and blocking commands (proto/redis/session_own.cc).
  // A RESP3 client or one that SELECTed another database has its own connection per backend
  // (that state is the server's, per connection); a blocking command waits on one.
  // CLIENT TRACKING too (session_tracking.cc): the server tracks the keys a connection read.
  bool own_mode() const noexcept { return resp_ == 3 || db_ != 0 || tracking_.on; }
  Backend* own_connection(NodeId node, std::string& error);
  // Once per backend: CONFIG GET maxclients on a shared connection, into
  // BackendState::maxclients (what bounds clients' own connections, core/worker.h).
  void learn_maxclients(NodeId node);
  void release_own(bool abandon);
  void open_own_now();
  void blocking(const Command& cmd, std::size_t argc);
  void release_blocking(bool abandon);
  void client_unblock(std::size_t argc);  // CLIENT UNBLOCK id [TIMEOUT|ERROR]
  void uncount_blocked() noexcept;
  std::size_t blocked_now() const noexcept;  // the pool's blocked clients (INFO)

  // Hot keys (proto/redis/session_hot.cc, docs/HOTKEYS.md). hot_note: a key of a request, for
  // the sketch (sampled). hot_caching: whether copies may answer this client's reads now.
  // hot_get: answers `m` (GET key) from a fresh copy (true), or marks it to fill one when the
  // key is hot. hot_copy: the copy of `key` for an MGET's part, counted as a hit. hot_read_target:
  // a hot key's read to the owner or one of its replicas in turn (hot_reads: replicas).
  // hot_invalidate: the request being dispatched writes these keys (or all of them).
  void hot_note(std::string_view key);
  bool hot_caching() const noexcept;
  bool hot_get(std::string_view key, const Ref<Msg>& m);
  std::optional<std::string> hot_copy(std::string_view key);
  NodeId hot_read_target(NodeId node, std::string_view key, const Command& cmd);
  void hot_invalidate(const Command& cmd, std::size_t argc);

  // Pub/Sub (proto/redis/session_pubsub.cc, docs/REDIS.md "Pub/Sub"). subscribed(): a channel,
  // pattern or shard channel is (RESP2 then allows only the Pub/Sub commands, PING, QUIT, RESET).
  void pubsub(const Command& cmd, std::size_t argc);
  void subscribe(SubKind kind, std::size_t argc);
  void unsubscribe(SubKind kind, std::size_t argc);
  void pubsub_info(std::size_t argc);
  bool pubsub_ping(std::size_t argc);  // answered when subscribed in RESP2
  bool subscribed() const noexcept;
  NodeId channel_node(std::string_view channel) const noexcept;
  std::vector<NodeId> sub_targets(SubKind kind, std::string_view name) const;
  // `throttled`: not again within a second of a refusal (the reconcile's retries).
  Backend* sub_connection(NodeId node, std::string& error, bool throttled);
  bool send_sub(NodeId node, std::string_view verb, std::string_view name,
                std::function<void(bool)> done, std::string& error);
  bool place_sub(SubKind kind, const std::string& name, NodeId node, const Ref<Reply>& reply,
                 std::string& error);
  void unplace_sub(SubKind kind, const std::string& name, const PubSubAt& at,
                   const Ref<Reply>& reply);
  void reconcile_subscriptions();
  void arm_pubsub_timer();
  // Closes the subscriber connections (abandoned: at once). `reply` (RESET's) waits until each
  // server has said RESET on them.
  void release_pubsub(bool abandon, const Ref<Reply>& reply = nullptr);
  bool pubsub_conn_closed(Backend* b) noexcept;
  void append_confirmation(std::string& out, std::string_view verb, const std::string* channel,
                           std::size_t count) const;

  // Client-side caching (proto/redis/session_tracking.cc). The options of CLIENT TRACKING on,
  // said on each connection of the client's own as it opens (tracking_opened); CLIENT CACHING's
  // yes (1) / no (0) for the next command, sent before it on each connection it uses
  // (caching_before).
  struct Tracking {
    bool on = false, bcast = false, optin = false, optout = false, noloop = false;
    std::vector<std::string> prefixes;
    std::uint64_t redirect = 0;  // the proxy's CLIENT ID of the client invalidations go to
    int caching_next = -1, caching_now = -1;
    // A backend said the REDIRECT client is gone ("tracking-redir-broken"): TRACKINGINFO's
    // broken_redirect, until tracking is set again.
    bool broken_redirect = false;
  };
  void client_tracking(std::size_t argc);
  void client_caching(std::size_t argc);
  void client_tracking_info(bool getredir);
  // `prefixes`: these instead of every prefix the client gave (a connection told before).
  bool tracking_request(const std::string& server, std::string& out,
                        const std::vector<std::string>* prefixes = nullptr) const;
  void tracking_opened(Backend* b, NodeId node);
  void caching_before(BackendConn* b);
  void send_quietly(BackendConn* b, std::string_view bytes);

  // Forwarded commands.
  void same_node(const Command& cmd, std::size_t argc);  // kKeysSameNode
  void split(const Command& cmd);                        // kSplitKeys, kSplitPairs
  // Sends the request being dispatched, unchanged, to member `node` (or fails `m` when no
  // connection); `slot` is its keys' (cluster pools).
  // `key` (a single-key command's) and `write`: safe failover's notes, TTL cap and first delete
  // (proto/redis/session_failover.cc).
  void forward_one(NodeId node, const Ref<Msg>& m, std::uint16_t slot = 0,
                   std::string_view key = {}, bool write = false);

  // Safe failover and return (proto/redis/session_failover.cc, membership/failback.h). A write of
  // `key` going to `node` while its owner is another backend is noted in that one's absence log;
  // true when it is such a fallback write.
  bool note_fallback_write(std::string_view key, NodeId node);
  // `node` is back and its last sweep runs: a key it missed is deleted there first, on `b`.
  void invalidate_first(BackendConn* b, NodeId node, std::string_view key);
  // The same for every argument of the current request at `positions` (a multi-key command,
  // a script's keys) going to `node` as one request; nothing unless `node` is in its last sweep.
  void invalidate_args_first(NodeId node, std::span<const std::uint32_t> positions);
  void invalidate_keys_first(NodeId node, std::span<const std::string_view> keys);
  // A fallback write's TTL capped at failover_ttl (PEXPIRE key ms LT), on `b` after it.
  void cap_ttl(BackendConn* b, std::string_view key);

  // Cluster pools and replica reads (proto/redis/session_cluster.cc).
  // The member a request routed to `node` (not kNoNode) goes to: for a read-only command under
  // read_policy, one of its replicas (kNoNode: read_policy replica and none is up, `m` failed).
  NodeId read_target(NodeId node, const Command& cmd, const Ref<Msg>& m);
  // Whether part requests must be kept for a resend to `member`.
  bool keep_request(NodeId member) const noexcept;
  // Keeps part `part`'s request and where it goes.
  void keep(const Ref<Msg>& m, std::uint32_t part, std::string_view request, NodeId member,
            std::uint16_t slot);
  // Sends kept part `part` to `member` of the current pool (after ASKING for an ASK).
  void send_part(const Ref<Msg>& m, std::uint32_t part, NodeId member, bool asking);
  // A Sentinel shard's demoted master refused part `part`: sent again once `state`'s address
  // has moved from the one it was sent to (`sent_epoch`; it may have moved already, while the
  // refusal was on its way), or failed with `error` after a wait (membership/sentinel.h).
  void retry_on_new_master(const Ref<Msg>& m, std::uint32_t part, std::string error,
                           std::shared_ptr<BackendState> state, std::uint64_t sent_epoch);
  void await_new_master(const Ref<Msg>& m, std::uint32_t part, std::string error,
                        std::shared_ptr<BackendState> state, std::uint64_t epoch,
                        net::Clock::time_point deadline);
  // Routes kept part `part` again by its slot after `ms` (the map may have been refreshed).
  void retry_later(const Ref<Msg>& m, std::uint32_t part, int ms);
  void reroute(const Ref<Msg>& m, std::uint32_t part);
  // Warm-up on resize (proto/redis/session_warmup.cc). The previous owners of `key` (routed to
  // `owner` now) that may hold it; 0 when it did not move or no warm-up runs.
  std::size_t moved(std::string_view key, NodeId owner, std::span<NodeId> olds) const;
  std::shared_ptr<WarmOp> warm_op(std::string_view key, NodeId owner, std::span<const NodeId> olds);
  // EXEC during a warm-up window, on a shared connection: each moved key of tx_keys_ is migrated
  // to `node` (session_warmup.cc "migrate k"), then `requests` (MULTI, the commands, EXEC) go
  // to it as parts 0.. of `m`. False (nothing sent) when no key moved.
  bool warm_transaction_then_send(NodeId node, const Ref<Msg>& m,
                                  std::vector<std::string> requests);
  // Part `part` of `m` is `cmd` for one `key` (`request`, its bytes): when the key moved, the
  // warm-up answers it (true); else false and the caller sends it as usual. `shape` kArray: the
  // part of a split MGET.
  bool warm_key(const Command& cmd, std::string_view key, NodeId owner, const Ref<Msg>& m,
                std::uint32_t part, Merge shape, std::string_view request);
  // A command with several keys on `node` (kKeysSameNode, kEval): when some moved, they are
  // migrated first and the command sent after (true, `m` answered then).
  bool warm_keys_then_forward(const Command& cmd, std::size_t argc, NodeId node, const Ref<Msg>& m);
  // The same for the keys at positions key_pos_.
  bool warm_positions_then_forward(NodeId node, const Ref<Msg>& m);
  // A cluster pool's answer for a key whose slot no node serves (or no map is known yet).
  void cluster_down(const Ref<Msg>& m, std::uint16_t slot);
  // The key's slot (cluster pools) or backend (others): where "same place" is checked.
  std::uint32_t place(std::string_view key) const noexcept;
  // Whether `node` (routed for `what`) can take a request; if not, `m` is failed with why.
  bool usable_or_fail(NodeId node, std::string_view what, const Ref<Msg>& m, bool count_error);
  // Answers `m` with the one error reply `error` (text without "-" and CRLF), whatever parts
  // it had; `count_error` counts it in chash_proxy_errors_total.
  void fail_msg(const Ref<Msg>& m, std::string_view error, bool count_error);

  // ACL users (proto/redis/acl.h). acl_ is the pool's user list this client was checked
  // against; a reload brings a new one, and refresh_acl() finds the client's user in it again.
  void refresh_acl();
  bool authed() const noexcept { return acl_ == nullptr || user_ != nullptr; }
  // AUTH / HELLO AUTH: true when the pair is good (the client is then that user); else counts
  // the failure.
  bool authenticate(std::string_view user, std::string_view password);
  // Whether the authenticated user may run the request being dispatched: its command and keys
  // (Redis's ACLCheckAllPerm); if not, answers -NOPERM as Redis words it.
  bool permitted(const Command& cmd, std::size_t argc);

  std::shared_ptr<const Acl> acl_;
  const AclUser* user_ = nullptr;  // in *acl_; null: not authenticated (or no acl)
  std::string user_name_;          // the user's name, to find it again after a reload
  RequestParser parser_;
  const Command* last_command_ = nullptr;  // the previous request's (dispatch: names_command)

  // CLIENT ID / SETNAME / SETINFO: what the client said of itself (kept by the proxy, not sent
  // to the shared backend connections).
  std::uint64_t id_;
  net::Clock::time_point created_;
  std::string name_, lib_name_, lib_ver_;

  Transaction tx_;
  // The keys the queued commands touch, and whether by a write. At EXEC the written ones are
  // noted for safe failover (note_fallback_write) — never before: a DISCARDed write must not get
  // a server's copy swept — and, while the pool warms up, every moved one is migrated to its
  // owner first (warm_transaction_then_send).
  std::vector<std::pair<std::string, bool>> tx_keys_;
  std::int64_t tx_slot_ = -1;    // cluster pools: the slot of the transaction's keys (-1: none)
  std::uint32_t read_turn_ = 0;  // spreads this client's reads over replicas
  // hot_invalidate()'s keys (or all) for the request being dispatched: new_msg() hands them to
  // its Msg, which bumps them again when answered (Msg::hot_written).
  std::vector<std::string> hot_pending_;
  bool hot_pending_all_ = false;
  Backend* dedicated_ = nullptr;  // WATCH ... EXEC/DISCARD/UNWATCH: this client's own connection
  NodeId dedicated_node_ = kNoNode;
  bool watch_lost_ = false;  // the dedicated connection closed while WATCHing

  std::vector<std::uint32_t> key_pos_;  // find_keys(): reused, no allocation per request
  bool eval_bad_numkeys_ = false;       // find_keys(): EVAL's numkeys is not a count of keys
  int resp_ = 2;                        // HELLO 3: RESP3 (own connections speak it too)
  std::int64_t db_ = 0;                 // SELECT: the database, 0 being the pool's redis_db
  std::vector<Backend*> own_;           // by NodeId; null: not opened (yet)
  Backend* blocking_conn_ = nullptr;    // a blocking command's own connection (not in own_)
  // The blocking command waiting on blocking_conn_, and what its departure needs
  // (release_blocking): the server's id for the connection, what to put back.
  struct BlockedWait {
    std::string server, name;  // the member it waits on; the command, lower-case
    bool right = false;        // BLMPOP ... RIGHT
    std::int64_t backend_id = 0;
    bool abandoned = false;
  };
  Ref<Msg> blocking_msg_;
  std::shared_ptr<BlockedWait> blocking_wait_;
  bool blocked_counted_ = false;         // in PoolShared::blocked_clients
  std::shared_ptr<PubSubState> pubsub_;  // null until the first SUBSCRIBE (session_pubsub.cc)
  Tracking tracking_;
  bool dispatching_script_ = false;  // the request being dispatched is EVAL, FCALL ... (Reply::script)
  // CLIENT REPLY OFF / SKIP (session_local.cc): the replies dispatch() silences.
  bool reply_off_ = false, skip_next_reply_ = false;
};

}  // namespace chash::proxy::redis
