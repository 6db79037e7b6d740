// SPDX-License-Identifier: Apache-2.0
// chash-proxy — Pub/Sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH,
// SPUBLISH and PUBSUB, in RESP2 and RESP3.
//
// A channel is routed like a key (hash tags honoured; a cluster pool's by its slot), so a PUBLISH
// and the SUBSCRIBEs of one channel meet on one backend. A client's subscriptions live on
// connections of its own, one per backend it subscribes on (counted and bounded as the other
// connections of a client's own: max_own_connections, the server's maxclients): a channel on its
// owner's, a pattern on every backend's (a PUBLISH goes to one backend, so a pattern subscriber
// gets each message once, and keyspace notifications — each server's own — reach it from every
// backend). Those connections always speak RESP2; a RESP3 client's messages are the same arrays
// sent as push frames ('>'), which is all RESP3 changes for them.
//
// The proxy keeps what the client is subscribed to and answers the confirmations itself, with
// the counts Redis gives (channels + patterns; shard channels apart), once every backend has
// confirmed: a PUBLISH sent after the client read its confirmation finds the subscription, as
// with one redis-server. A message is delivered only while its channel (pattern) is subscribed.
//
// Membership changes: each subscription is placed again when the pool's snapshot changes (a
// resize, a backend ejected or back) or a connection of it was lost. It is subscribed on its new
// backend first and unsubscribed from the old one only once the new one has confirmed: while it
// is on both, a message (published to one backend) arrives once. Messages published between the
// change and the new subscription (a few ms; at most kReconcileMs plus a round trip) are not
// delivered: Redis's Pub/Sub is at-most-once, and the gap is documented (docs/REDIS.md
// "Pub/Sub").
#include <algorithm>
#include <map>
#include <set>

#include "base/log.h"
#include "chash/redis_slots.h"
#include "core/worker.h"
#include "base/text.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

// How often a subscribed client checks whether its subscriptions must move (a new pool
// snapshot, a lost connection), and how soon a backend that refused a connection is tried again.
constexpr auto kReconcileMs = std::chrono::milliseconds(100);
constexpr auto kRetryAfter = std::chrono::milliseconds(1000);

constexpr std::size_t kKinds = 3;

// The command that subscribes (unsubscribes) a kind, and the confirmation's first element.
constexpr std::string_view kSubscribe[kKinds] = {"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"};
constexpr std::string_view kUnsubscribe[kKinds] = {"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"};
constexpr std::string_view kSubscribed[kKinds] = {"subscribe", "psubscribe", "ssubscribe"};
constexpr std::string_view kUnsubscribed[kKinds] = {"unsubscribe", "punsubscribe", "sunsubscribe"};

// The RESP2 message pushes a subscriber connection receives (pubsub.c addReplyPubsubMessage,
// addReplyPubsubPatMessage): their fixed beginnings.
constexpr std::string_view kMessage = "*3\r\n$7\r\nmessage\r\n";
constexpr std::string_view kPMessage = "*4\r\n$8\r\npmessage\r\n";
constexpr std::string_view kSMessage = "*3\r\n$8\r\nsmessage\r\n";

// The payload of the bulk string at `raw[off..]` ("$5\r\nhello\r\n"), advancing `off` past it;
// false when there is none.
bool bulk_at(std::string_view raw, std::size_t& off, std::string_view& out) {
  if (off >= raw.size() || raw[off] != '$') return false;
  const std::size_t nl = raw.find("\r\n", off);
  if (nl == std::string_view::npos) return false;
  std::int64_t len = 0;
  if (!parse_int(raw.substr(off + 1, nl - off - 1), len) || len < 0) return false;
  const std::size_t start = nl + 2;
  if (start + static_cast<std::size_t>(len) + 2 > raw.size()) return false;
  out = raw.substr(start, static_cast<std::size_t>(len));
  off = start + static_cast<std::size_t>(len) + 2;
  return true;
}

std::string error_reply(std::string_view text) {
  std::string out;
  append_error(out, text);
  return out;
}

}  // namespace

// Where one subscription is placed: the server (by name: NodeIds change with the pool's
// snapshot) and its connection's generation when it was sent there.
struct PubSubAt {
  std::string server;
  std::uint64_t gen = 0;
  bool confirmed = false;
};

// What a subscribed client holds. Shared with the callbacks of its requests to the backends,
// which may run after the client has gone (`client` is null then).
struct PubSubState {
  Client* client = nullptr;
  using At = PubSubAt;
  struct Subscription {
    std::vector<At> at;
  };
  // By kind (SubKind), sorted by name: UNSUBSCRIBE without arguments goes through them in order.
  std::map<std::string, Subscription, std::less<>> subs[kKinds];
  // The connections, by server name. A lost one's entry stays with conn null and a new gen.
  struct Conn {
    Backend* conn = nullptr;
    std::uint64_t gen = 0;
    net::Clock::time_point retry_at{};  // refused: not tried again before
  };
  std::map<std::string, Conn, std::less<>> conns;
  const Pool* placed_by = nullptr;  // the snapshot the subscriptions were last placed by
  bool dirty = false;               // a connection was lost or a placement failed
  net::EventLoop::TimerId timer = 0;

  std::size_t count(Client::SubKind kind) const noexcept {
    return kind == Client::SubKind::kShard ? subs[2].size() : subs[0].size() + subs[1].size();
  }
  bool any() const noexcept { return !subs[0].empty() || !subs[1].empty() || !subs[2].empty(); }
  bool live(const At& a) const {
    const auto it = conns.find(a.server);
    return it != conns.end() && it->second.conn != nullptr && it->second.gen == a.gen;
  }
};

bool Client::subscribed() const noexcept { return pubsub_ != nullptr && pubsub_->any(); }

// ---- Placement ----------------------------------------------------------------------------------

// The members a subscription belongs on in the current snapshot: a channel's owner, a pattern's
// every routed backend. On a cluster pool too: its masters pass every PUBLISH to each other, so a
// pattern gets each published message from every master (pubsub_message keeps one master's), but
// keyspace notifications stay on the master where the key changed.
std::vector<NodeId> Client::sub_targets(SubKind kind, std::string_view name) const {
  if (one_server()) return {0};
  const Pool& pool = *pool_;
  // __redis__:invalidate is where CLIENT TRACKING ... REDIRECT sends each backend's
  // invalidations (session_tracking.cc): a listener needs it on every backend.
  if (kind == SubKind::kPattern ||
      (kind == SubKind::kChannel && name == "__redis__:invalidate")) {
    std::vector<NodeId> all(pool.nodes);
    for (NodeId i = 0; i < pool.nodes; ++i) all[i] = i;
    return all;
  }
  const NodeId node = channel_node(name);
  if (node == kNoNode) return {};
  return {node};
}

NodeId Client::channel_node(std::string_view channel) const noexcept {
  if (one_server()) return 0;
  if (pool_->config.is_cluster()) return pool_->slot_owner(chash::redis_key_slot(channel));
  return pool_->route(channel);
}

Backend* Client::sub_connection(NodeId node, std::string& error, bool throttled) {
  PubSubState& ps = *pubsub_;
  const std::string& server = pool_->servers[node].name;
  PubSubState::Conn& c = ps.conns[server];
  if (c.conn != nullptr) return c.conn;
  const auto now = worker_.loop().now();
  if (throttled && c.retry_at != net::Clock::time_point{} && now < c.retry_at) {
    error = "its subscriber connection was refused less than a second ago";
    return nullptr;
  }
  learn_maxclients(node);
  BackendConn* conn = worker_.dedicated_backend(pool_index_, node, error);
  if (conn == nullptr) {
    c.retry_at = now + kRetryAfter;
    return nullptr;
  }
  auto* b = static_cast<Backend*>(conn);  // a redis pool's connections are redis::Backends
  b->set_subscriber(this);
  c.conn = b;
  c.retry_at = {};
  ++c.gen;
  // The server's id for it: what another client's CLIENT TRACKING ... REDIRECT to this one
  // becomes on this backend (session_tracking.cc). Asked first, so known by the time this
  // client has read its first confirmation there.
  auto ask = make_ref<Msg>();
  ask->parts.resize(1);
  ask->outstanding = 1;
  ask->then = [weak = std::weak_ptr<PubSubState>(pubsub_), id = id_, pool = pool_->shared.get(),
               server](Msg& r) {
    std::int64_t backend_id = 0;
    const std::string_view raw = r.parts[0].raw.view();
    if (weak.expired() || r.parts[0].type != ':' || raw.size() < 3 ||
        !parse_int(raw.substr(1, raw.size() - 3), backend_id))
      return;
    note_subscriber_id(id, pool, server, backend_id);
  };
  b->send({"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"}, ask, 0);
  return b;
}

// Sends `verb name` on member `node`'s subscriber connection; `done` (may be empty) runs with
// whether the server confirmed it. False (nothing sent) when no connection could be had.
bool Client::send_sub(NodeId node, std::string_view verb, std::string_view name,
                      std::function<void(bool)> done, std::string& error) {
  Backend* b = sub_connection(node, error, true);
  if (b == nullptr) return false;
  std::string bytes;
  append_command(bytes, {verb, name});
  auto m = make_ref<Msg>();
  m->parts.resize(1);
  m->outstanding = 1;
  m->then = [done = std::move(done)](Msg& r) {
    if (done) done(!r.parts.empty() && r.parts[0].type == '*');
  };
  b->send({bytes}, m, 0);
  return true;
}

// Sends a SUBSCRIBE of `name` to `node` and records it there (unconfirmed); `reply` (may be
// null) waits for its confirmation. False when no connection could be had.
bool Client::place_sub(SubKind kind, const std::string& name, NodeId node, const Ref<Reply>& reply,
                       std::string& error) {
  const auto k = static_cast<std::size_t>(kind);
  const std::string& server = pool_->servers[node].name;
  std::weak_ptr<PubSubState> weak = pubsub_;
  const bool sent = send_sub(
      node, kSubscribe[k], name,
      [weak, k, name, server, reply](bool ok) {
        if (const auto ps = weak.lock()) {
          const auto it = ps->subs[k].find(name);
          if (it != ps->subs[k].end()) {
            for (auto a = it->second.at.begin(); a != it->second.at.end(); ++a) {
              if (a->server != server) continue;
              if (ok) {
                a->confirmed = true;
              } else {
                it->second.at.erase(a);
              }
              break;
            }
          }
          ps->dirty = true;  // placed (drop an old place) or not (try again)
        }
        if (reply != nullptr && --reply->outstanding == 0) reply->finish_now();
      },
      error);
  if (!sent) return false;
  pubsub_->subs[k][name].at.push_back({server, pubsub_->conns[server].gen, false});
  if (reply != nullptr) ++reply->outstanding;
  return true;
}

// Sends an UNSUBSCRIBE of `name` where `at` placed it (if that connection still lives); `reply`
// (may be null) waits for the server's answer.
void Client::unplace_sub(SubKind kind, const std::string& name, const PubSubState::At& at,
                         const Ref<Reply>& reply) {
  PubSubState& ps = *pubsub_;
  if (!ps.live(at)) return;  // the connection is gone, and the subscription with it
  Backend* b = ps.conns[at.server].conn;
  std::string bytes;
  append_command(bytes, {kUnsubscribe[static_cast<std::size_t>(kind)], name});
  auto m = make_ref<Msg>();
  m->parts.resize(1);
  m->outstanding = 1;
  m->then = [reply](Msg&) {
    if (reply != nullptr && --reply->outstanding == 0) reply->finish_now();
  };
  if (reply != nullptr) ++reply->outstanding;
  b->send({bytes}, m, 0);
}

void Client::reconcile_subscriptions() {
  PubSubState& ps = *pubsub_;
  ps.placed_by = pool_.get();
  ps.dirty = false;
  for (std::size_t k = 0; k < kKinds; ++k) {
    const auto kind = static_cast<SubKind>(k);
    for (auto& [name, sub] : ps.subs[k]) {
      // Places lost with their connection first.
      std::erase_if(sub.at, [&](const PubSubState::At& a) { return !ps.live(a); });
      const std::vector<NodeId> targets = sub_targets(kind, name);
      bool all_confirmed = true;
      for (const NodeId t : targets) {
        const std::string& server = pool_->servers[t].name;
        const auto it = std::find_if(sub.at.begin(), sub.at.end(),
                                     [&](const PubSubState::At& a) { return a.server == server; });
        if (it != sub.at.end()) {
          all_confirmed = all_confirmed && it->confirmed;
          continue;
        }
        all_confirmed = false;
        std::string error;
        if (!place_sub(kind, name, t, nullptr, error)) ps.dirty = true;  // tried again
      }
      // An old place goes once every new one is confirmed (subscribed on both meanwhile).
      if (!all_confirmed) continue;
      for (auto a = sub.at.begin(); a != sub.at.end();) {
        const bool wanted = std::any_of(targets.begin(), targets.end(), [&](NodeId t) {
          return pool_->servers[t].name == a->server;
        });
        if (wanted) {
          ++a;
          continue;
        }
        unplace_sub(kind, name, *a, nullptr);
        a = sub.at.erase(a);
      }
    }
  }
  // Connections no subscription uses any more close (once their answers are in).
  for (auto it = ps.conns.begin(); it != ps.conns.end();) {
    bool used = false;
    for (std::size_t k = 0; k < kKinds && !used; ++k) {
      for (const auto& [name, sub] : ps.subs[k]) {
        for (const PubSubState::At& a : sub.at) used = used || a.server == it->first;
        if (used) break;
      }
    }
    if (used || it->second.conn == nullptr) {
      ++it;
      continue;
    }
    Backend* b = it->second.conn;
    b->set_owner(nullptr);
    b->drain();
    it = ps.conns.erase(it);
  }
}

void Client::arm_pubsub_timer() {
  PubSubState& ps = *pubsub_;
  if (ps.timer != 0 || !ps.any()) return;
  ps.timer = worker_.loop().add_timer(kReconcileMs, [this] {
    pubsub_->timer = 0;
    if (closed_) return;
    pool_ = worker_.pool(pool_index_);
    if (pubsub_->dirty || pubsub_->placed_by != pool_.get()) reconcile_subscriptions();
    arm_pubsub_timer();
  });
}

void Client::release_pubsub(bool abandon, const Ref<Reply>& reply) {
  if (pubsub_ == nullptr) return;
  PubSubState& ps = *pubsub_;
  if (ps.timer != 0) worker_.loop().cancel_timer(ps.timer);
  ps.timer = 0;
  for (auto& [server, c] : ps.conns) {
    if (c.conn == nullptr) continue;
    if (reply != nullptr) {
      // RESET: answered once each server has dropped this client's subscriptions (its RESET),
      // so that a PUBLISH after it reaches no one, as with one server.
      auto m = make_ref<Msg>();
      m->parts.resize(1);
      m->outstanding = 1;
      m->then = [reply](Msg&) {
        if (--reply->outstanding == 0) reply->finish_now();
      };
      ++reply->outstanding;
      c.conn->send({"*1\r\n$5\r\nRESET\r\n"}, m, 0);
    }
    c.conn->set_owner(nullptr);
    if (abandon) c.conn->abandon();
    else c.conn->drain();  // closes once its answers are in: confirmations still waited for
  }
  ps.client = nullptr;
  pubsub_.reset();  // the callbacks of requests in flight find nothing (weak_ptr)
  forget_subscriber_ids(id_, nullptr);
}

// A subscriber connection closed (failed, or the server went): its subscriptions are placed
// again by the next reconcile. No allocation here (called from the connection's close).
bool Client::pubsub_conn_closed(Backend* b) noexcept {
  if (pubsub_ == nullptr) return false;
  for (auto& [server, c] : pubsub_->conns) {
    if (c.conn != b) continue;
    c.conn = nullptr;
    ++c.gen;
    pubsub_->dirty = true;
    forget_subscriber_ids(id_, &server);
    return true;
  }
  return false;
}

// ---- Requests -----------------------------------------------------------------------------------

void Client::pubsub(const Command& cmd, std::size_t argc) {
  const std::string_view name = cmd.name;
  if (name == "publish" || name == "spublish") {
    auto m = new_msg();
    const std::string_view channel = parser_.arg(in_, 1);
    const NodeId node = channel_node(channel);
    if (node == kNoNode && pool_->config.is_cluster()) {
      cluster_down(m, chash::redis_key_slot(channel));
      return;
    }
    if (!usable_or_fail(node, "this channel", m, true)) return;
    forward_one(node, m);
    return;
  }
  if (name == "pubsub") {
    pubsub_info(argc);
    return;
  }
  // SUBSCRIBE and friends. Redis refuses them to a client that may not block (CLIENT_DENY_BLOCKING:
  // inside MULTI they are queued, which the proxy does not do: see queue_in_transaction).
  const bool unsub = name.find("unsubscribe") != std::string_view::npos;
  const SubKind kind = name == "psubscribe" || name == "punsubscribe"   ? SubKind::kPattern
                       : name == "ssubscribe" || name == "sunsubscribe" ? SubKind::kShard
                                                                        : SubKind::kChannel;
  if (unsub) unsubscribe(kind, argc);
  else subscribe(kind, argc);
}

// The confirmation Redis sends for each channel (pubsub.c addReplyPubsubSubscribed): in RESP3
// a push frame; `channel` null: UNSUBSCRIBE without arguments from no subscription.
void Client::append_confirmation(std::string& out, std::string_view verb,
                                 const std::string* channel, std::size_t count) const {
  out += resp_ == 3 ? ">3\r\n" : "*3\r\n";
  append_bulk(out, verb);
  if (channel != nullptr) append_bulk(out, *channel);
  else out += resp_ == 3 ? "_\r\n" : "$-1\r\n";
  append_int(out, static_cast<std::int64_t>(count));
}

void Client::subscribe(SubKind kind, std::size_t argc) {
  const auto k = static_cast<std::size_t>(kind);
  if (pubsub_ == nullptr) {
    pubsub_ = std::make_shared<PubSubState>();
    pubsub_->client = this;
    pubsub_->placed_by = pool_.get();
  }
  PubSubState& ps = *pubsub_;
  if (ps.placed_by != pool_.get() || ps.dirty) reconcile_subscriptions();
  // Every connection the new channels need first: a SUBSCRIBE that cannot be placed is refused
  // whole, before anything changes.
  std::vector<std::pair<std::string, std::vector<NodeId>>> fresh;
  for (std::size_t i = 1; i < argc; ++i) {
    std::string channel(parser_.arg(in_, i));
    if (ps.subs[k].contains(channel) ||
        std::any_of(fresh.begin(), fresh.end(), [&](const auto& f) { return f.first == channel; }))
      continue;
    std::vector<NodeId> targets = sub_targets(kind, channel);
    if (targets.empty()) {
      reject("ERR chash-proxy: no backend is up for channel '" + channel.substr(0, 128) + "'");
      return;
    }
    for (const NodeId t : targets) {
      std::string error;
      if (sub_connection(t, error, false) == nullptr) {
        // A pattern is placed where it can be now and on the rest as they come back; a channel
        // needs its owner.
        if (kind == SubKind::kPattern && targets.size() > 1) continue;
        count_forward_error();
        reject(backend_error(t, error));
        return;
      }
    }
    fresh.emplace_back(std::move(channel), std::move(targets));
  }
  auto reply = make_ref<LocalReply>();
  push(reply);
  reply->silent = false;  // a push: sent whatever CLIENT REPLY says
  std::size_t next = 0;
  for (std::size_t i = 1; i < argc; ++i) {
    const std::string channel(parser_.arg(in_, i));
    if (next < fresh.size() && fresh[next].first == channel) {
      ps.subs[k][channel];  // subscribed from now on (its messages are delivered)
      for (const NodeId t : fresh[next].second) {
        std::string error;
        if (!place_sub(kind, channel, t, reply, error))
          ps.dirty = true;  // a pattern's down backend
      }
      ++next;
    }
    append_confirmation(reply->reply, kSubscribed[k], &channel, ps.count(kind));
  }
  arm_pubsub_timer();
  if (reply->outstanding == 0) reply->finish_now();
}

void Client::unsubscribe(SubKind kind, std::size_t argc) {
  const auto k = static_cast<std::size_t>(kind);
  auto reply = make_ref<LocalReply>();
  push(reply);
  reply->silent = false;  // a push: sent whatever CLIENT REPLY says
  const auto drop = [&](const std::string& channel) {
    if (pubsub_ == nullptr) return;
    const auto it = pubsub_->subs[k].find(channel);
    if (it == pubsub_->subs[k].end()) return;
    const PubSubState::Subscription sub = std::move(it->second);
    pubsub_->subs[k].erase(it);  // its messages are no longer delivered
    for (const PubSubState::At& a : sub.at) unplace_sub(kind, channel, a, reply);
  };
  const auto count = [&] { return pubsub_ == nullptr ? 0 : pubsub_->count(kind); };
  if (argc > 1) {
    for (std::size_t i = 1; i < argc; ++i) {
      const std::string channel(parser_.arg(in_, i));
      drop(channel);
      append_confirmation(reply->reply, kUnsubscribed[k], &channel, count());
    }
  } else if (pubsub_ == nullptr || pubsub_->subs[k].empty()) {
    append_confirmation(reply->reply, kUnsubscribed[k], nullptr, count());
  } else {
    std::vector<std::string> all;
    for (const auto& [channel, sub] : pubsub_->subs[k]) all.push_back(channel);
    for (const std::string& channel : all) {
      drop(channel);
      append_confirmation(reply->reply, kUnsubscribed[k], &channel, count());
    }
  }
  if (pubsub_ != nullptr && !pubsub_->any()) {
    // Out of Pub/Sub: the connections go once they have answered (the server drops what is left).
    if (pubsub_->timer != 0) worker_.loop().cancel_timer(pubsub_->timer);
    pubsub_->timer = 0;
    reconcile_subscriptions();
  }
  if (reply->outstanding == 0) reply->finish_now();
}

// A message a subscriber connection received: to the client while it is subscribed to its
// channel (or pattern), as a push frame for RESP3.
bool Client::pubsub_message(const net::Slice& message, std::string_view from) {
  if (pubsub_ == nullptr) return false;
  const std::string_view raw = message.bytes;
  std::size_t k = 0, off = 0;
  if (raw.starts_with(kMessage)) {
    k = 0;
    off = kMessage.size();
  } else if (raw.starts_with(kPMessage)) {
    k = 1;
    off = kPMessage.size();
  } else {
    k = 2;
    off = kSMessage.size();
  }
  std::string_view name;
  if (!bulk_at(raw, off, name) || !pubsub_->subs[k].contains(name)) return false;
  if (k == 1 && pool_->config.is_cluster() && !one_server()) {
    // A cluster's masters pass each PUBLISH on to each other: a pattern's message is kept from
    // one master (slot 0's). A keyspace notification is the one master's own: kept from each.
    std::size_t at = off;
    std::string_view channel;
    if (!bulk_at(raw, at, channel)) return false;
    if (!channel.starts_with("__keyspace@") && !channel.starts_with("__keyevent@")) {
      const NodeId primary = channel_node({});
      if (primary == kNoNode || pool_->servers[primary].name != from) return false;
    }
  }
  if (resp_ == 3 && k == 0 && name == "__redis__:invalidate") {
    // A redirected invalidation reaches a RESP3 client as Redis sends it one: ">2 invalidate
    // [keys]" (tracking.c sendTrackingMessage), not as a message of the channel.
    std::string head = ">2\r\n$10\r\ninvalidate\r\n";
    push_message(head, message.chunk, raw.substr(off));
    return true;
  }
  // RESP3: the same array as a push frame.
  if (resp_ == 3) push_message(">", message.chunk, raw.substr(1));
  else push_message({}, message.chunk, raw);
  return true;
}

bool is_pubsub_message(std::string_view raw) noexcept {
  return raw.starts_with(kMessage) || raw.starts_with(kPMessage) || raw.starts_with(kSMessage);
}

// PING while subscribed (RESP2): Redis answers ["pong", arg or ""] (pubsub.c, server.c
// pingCommand).
bool Client::pubsub_ping(std::size_t argc) {
  if (resp_ != 2 || !subscribed()) return false;
  std::string out = "*2\r\n$4\r\npong\r\n";
  append_bulk(out, argc >= 2 ? parser_.arg(in_, 1) : std::string_view{});
  reply_local(std::move(out));
  return true;
}

// ---- PUBSUB -------------------------------------------------------------------------------------

// PUBSUB CHANNELS / SHARDCHANNELS [pattern]: the union of every backend's; NUMSUB / SHARDNUMSUB
// channel...: each channel's counts summed (a subscriber is on one backend, two while it moves);
// NUMPAT: the largest (a pattern is on every backend); HELP: any backend's. A pool of one server
// forwards them as they are.
void Client::pubsub_info(std::size_t) {
  const std::string_view sub = parser_.arg(in_, 1);
  const bool numsub = iequal(sub, "numsub") || iequal(sub, "shardnumsub");
  const bool channels = iequal(sub, "channels") || iequal(sub, "shardchannels");
  const bool numpat = iequal(sub, "numpat");
  if (one_server() || !(numsub || channels || numpat)) {
    auto m = new_msg();
    const NodeId node = one_server() ? 0 : pool_->route(sub);
    if (!usable_or_fail(node, "PUBSUB", m, true)) return;
    forward_one(node, m);
    return;
  }
  // The routed backends that are up: a down one's subscribers have moved on.
  std::vector<NodeId> nodes;
  for (NodeId i = 0; i < pool_->nodes; ++i) {
    if (pool_->up(i)) nodes.push_back(i);
  }
  auto reply = make_ref<LocalReply>();
  push(reply);
  if (nodes.empty()) {
    reply->reply = error_reply("ERR chash-proxy: no backend is up");
    reply->finish_now();
    return;
  }
  std::string scratch;
  const std::string bytes(request_bytes(scratch));
  struct Gather {
    std::vector<std::string> replies;
    std::string error;
  };
  auto gather = std::make_shared<Gather>();
  reply->outstanding = static_cast<std::uint32_t>(nodes.size());
  const auto merge = [gather, reply, numsub, numpat, resp = resp_] {
    if (!gather->error.empty()) {
      reply->reply = gather->error;
      reply->finish_now();
      return;
    }
    std::string out;
    if (numpat) {
      std::int64_t most = 0;
      for (const std::string& r : gather->replies) {
        std::int64_t v = 0;
        if (r.size() >= 3 && r[0] == ':' &&
            parse_int(std::string_view(r).substr(1, r.size() - 3), v))
          most = std::max(most, v);
      }
      append_int(out, most);
    } else {
      // Both are arrays of bulk strings (CHANNELS) or [channel, count] pairs (NUMSUB).
      std::vector<std::pair<std::string, std::int64_t>> pairs;  // NUMSUB, in request order
      std::set<std::string> names;                              // CHANNELS, deduplicated
      for (const std::string& r : gather->replies) {
        const std::size_t nl = r.find("\r\n");
        std::size_t off = nl == std::string::npos ? r.size() : nl + 2;
        std::size_t index = 0;
        std::string_view name;
        while (bulk_at(r, off, name)) {
          if (!numsub) {
            names.emplace(name);
            continue;
          }
          const std::size_t end = r.find("\r\n", off);
          std::int64_t v = 0;
          if (off >= r.size() || r[off] != ':' || end == std::string::npos ||
              !parse_int(std::string_view(r).substr(off + 1, end - off - 1), v))
            break;
          off = end + 2;
          if (index == pairs.size()) pairs.emplace_back(std::string(name), 0);
          pairs[index++].second += v;
        }
      }
      if (numsub) {
        // RESP3 answers a map (pubsub.c addReplyMapLen), RESP2 a flat array.
        out += resp == 3 ? "%" + std::to_string(pairs.size()) + "\r\n"
                         : "*" + std::to_string(pairs.size() * 2) + "\r\n";
        for (const auto& [name, n] : pairs) {
          append_bulk(out, name);
          append_int(out, n);
        }
      } else {
        append_array_header(out, names.size());
        for (const std::string& name : names) append_bulk(out, name);
      }
    }
    reply->reply = std::move(out);
    reply->finish_now();
  };
  for (const NodeId node : nodes) {
    std::string error;
    BackendConn* c = worker_.backend(pool_index_, node, error);
    if (c == nullptr) {
      if (gather->error.empty()) gather->error = backend_error(node, error);
      if (--reply->outstanding == 0) merge();
      continue;
    }
    auto m = make_ref<Msg>();
    m->parts.resize(1);
    m->outstanding = 1;
    m->then = [gather, reply, merge](Msg& r) {
      const std::string_view raw = r.parts[0].raw.view();
      if (r.parts[0].type == '-') {
        if (gather->error.empty()) gather->error = std::string(raw);
      } else {
        gather->replies.emplace_back(raw);
      }
      if (--reply->outstanding == 0) merge();
    };
    c->send({bytes}, m, 0);
  }
}

}  // namespace chash::proxy::redis
