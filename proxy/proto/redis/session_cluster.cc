// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a Redis client's requests to a Redis Cluster pool, and reads sent to replicas:
// where a request goes, and what happens when the member answers that it is not the place.
//
// A cluster pool routes by the slot map its watcher learnt (membership/cluster.h). The map can be
// behind the cluster (a reshard moves slots one by one), so a node may answer a part with
//   -MOVED <slot> <ip:port>  the slot lives there now: the part is sent there, and the watcher
//                            is asked to refresh the map (so the next request goes straight);
//   -ASK <slot> <ip:port>    this key is being migrated there: the part is sent there after
//                            ASKING, the map stays;
//   -TRYAGAIN                a multi-key part whose keys are split by a migration: sent again
//                            after 50 ms, for up to a second;
//   -CLUSTERDOWN ...         passed on with the slot named; -READONLY (a master demoted): the
//                            map is refreshed and the part routed again.
// A part follows at most cluster_max_redirects MOVED/ASK hops (then "-ERR ... redirections"),
// so a cluster that points in a circle cannot hold a client. Reads under a read_policy go to
// a replica that is up; one that answers -LOADING is taken out until its probe says it is
// usable again and the part goes to the master. A Sentinel-managed master that answers
// -READONLY (demoted by a failover) gets the part once more when the Sentinels have named the
// new one (within 2 s; else the -READONLY answers it). Parts that may be resent keep their request
// bytes (Msg::Part::request); other pools' parts do not.
#include <charconv>

#include "core/worker.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

constexpr std::string_view kAskingBytes = "*1\r\n$6\r\nASKING\r\n";
constexpr int kRedirectRetryMs = 20;  // a MOVED to a node the map does not know yet
constexpr int kTryAgainMs = 50;
constexpr std::uint8_t kMaxTries = 20;  // TRYAGAIN / READONLY: about a second
constexpr int kNewMasterWaitMs = 2000;  // a Sentinel shard's -READONLY: for the new master

std::string error_reply(std::string_view text) {
  std::string out;
  append_error(out, text);
  return out;
}

// "MOVED 3999 127.0.0.1:6381": the slot and the address; false when malformed.
bool parse_redirect(std::string_view line, std::uint16_t& slot, std::string& address) {
  const std::size_t a = line.find(' ');
  const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos) return false;
  const std::string_view n = line.substr(a + 1, b - a - 1);
  unsigned v = 0;
  const auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
  if (ec != std::errc() || p != n.data() + n.size() || v >= chash::kRedisSlots) return false;
  slot = static_cast<std::uint16_t>(v);
  address = std::string(line.substr(b + 1, 300));
  return !address.empty();
}

// The routed member of `pool` at `address` ("ip:port" as the cluster spells it).
NodeId master_at(const Pool& pool, std::string_view address) {
  for (NodeId i = 0; i < pool.nodes; ++i) {
    if (pool.servers[i].name == address) return i;
  }
  return kNoNode;
}

NodeId member_named(const Pool& pool, std::string_view name) {
  for (NodeId i = 0; i < pool.servers.size(); ++i) {
    if (pool.servers[i].name == name) return i;
  }
  return kNoNode;
}

}  // namespace

std::uint32_t Client::place(std::string_view key) const noexcept {
  return pool_->config.is_cluster() ? chash::redis_key_slot(key) : pool_->route(key);
}

bool Client::keep_request(NodeId member) const noexcept {
  const ServerConfig& s = pool_->servers[member];
  return pool_->config.is_cluster() || s.role == ServerRole::kReplica || !s.sentinel_master.empty();
}

void Client::keep(const Ref<Msg>& m, std::uint32_t part, std::string_view request, NodeId member,
                  std::uint16_t slot) {
  Msg::Part& p = m->parts[part];
  p.request.assign(request);
  p.member = member;
  p.slot = slot;
  m->routed_by = pool_;
}

NodeId Client::read_target(NodeId node, const Command& cmd, const Ref<Msg>& m) {
  if (!pool_->reads_to_replicas() || !read_only(cmd)) return node;
  const NodeId target = pool_->read_member(node, read_turn_++);
  if (target == kNoNode) {
    count_forward_error();
    fail_msg(m,
             "ERR no replica of backend " + pool_->states[node]->name +
                 " is usable (read_policy: replica)",
             true);
    return kNoNode;
  }
  if (target != node) pool_->shared->replica_reads.fetch_add(1, std::memory_order_relaxed);
  return target;
}

void Client::cluster_down(const Ref<Msg>& m, std::uint16_t slot) {
  count_forward_error();
  fail_msg(m,
           pool_->cluster == nullptr
               ? "CLUSTERDOWN the cluster's slot map is not known yet (no node has answered "
                 "CLUSTER NODES; see /status)"
               : "CLUSTERDOWN Hash slot not served (slot " + std::to_string(slot) +
                     " has no master in the cluster map)",
           true);
}

bool Client::replica_lost(const Ref<Msg>& m, std::uint32_t part) {
  Msg::Part& p = m->parts[part];
  const Pool* from = m->routed_by != nullptr ? m->routed_by.get() : pool_.get();
  if (p.member >= from->servers.size() || from->servers[p.member].role != ServerRole::kReplica)
    return false;
  pool_ = worker_.pool(pool_index_);
  // Out of the reads until its probe finds it usable again (membership/health.h).
  BackendState& st = *from->states[p.member];
  st.down_since_ms.store(steady_ms(), std::memory_order_relaxed);
  st.down.store(true, std::memory_order_relaxed);
  const NodeId master =
      member_named(*pool_, from->servers[from->servers[p.member].replica_of].name);
  if (master == kNoNode) return false;
  pool_->shared->replica_fallbacks.fetch_add(1, std::memory_order_relaxed);
  send_part(m, part, master, false);
  return true;
}

bool Client::redirect(const Ref<Msg>& m, std::uint32_t part, std::string_view raw,
                      std::uint64_t sent_epoch) {
  pool_ = worker_.pool(pool_index_);  // the newest map
  Msg::Part& p = m->parts[part];
  PoolShared& shared = *pool_->shared;
  const std::string_view line = raw.substr(1, raw.size() >= 3 ? raw.size() - 3 : 0);
  const std::string_view word = line.substr(0, line.find(' '));
  const Pool* from = m->routed_by != nullptr ? m->routed_by.get() : pool_.get();
  const bool replica =
      p.member < from->servers.size() && from->servers[p.member].role == ServerRole::kReplica;
  if (replica && word == "LOADING") return replica_lost(m, part);
  const bool managed = p.member < from->nodes && !from->servers[p.member].sentinel_master.empty();
  if (managed && word == "READONLY" && p.tries == 0) {
    // A Sentinel shard's master was demoted: the watcher asks the Sentinels now (Backend
    // flagged it); the part goes once more, to the master they name.
    ++p.tries;
    retry_on_new_master(m, part, std::string(raw), from->states[p.member], sent_epoch);
    return true;
  }
  if (!pool_->config.is_cluster()) return false;
  if (word == "MOVED" || word == "ASK") {
    std::uint16_t slot = 0;
    std::string address;
    if (!parse_redirect(line, slot, address)) return false;
    const bool ask = word == "ASK";
    if (p.hops >= pool_->config.cluster_max_redirects) {
      shared.redirect_failures.fetch_add(1, std::memory_order_relaxed);
      m->fail_part(part, error_reply("ERR chash-proxy: too many cluster redirections (" +
                                     std::to_string(p.hops) +
                                     "), the last: " + std::string(line.substr(0, 200))));
      return true;
    }
    ++p.hops;
    p.slot = slot;
    (ask ? shared.ask : shared.moved).fetch_add(1, std::memory_order_relaxed);
    if (!ask) shared.cluster_refresh.store(true, std::memory_order_relaxed);
    const NodeId target = master_at(*pool_, address);
    if (target == kNoNode) {
      // A node the map does not have yet (just added): route again once it is refreshed.
      shared.cluster_refresh.store(true, std::memory_order_relaxed);
      retry_later(m, part, kRedirectRetryMs);
      return true;
    }
    send_part(m, part, target, ask);
    return true;
  }
  if (word == "TRYAGAIN" || word == "READONLY") {
    if (word == "READONLY") shared.cluster_refresh.store(true, std::memory_order_relaxed);
    if (p.tries >= kMaxTries) return false;  // the error answers it
    ++p.tries;
    shared.tryagain.fetch_add(1, std::memory_order_relaxed);
    retry_later(m, part, word == "TRYAGAIN" ? kTryAgainMs : kRedirectRetryMs);
    return true;
  }
  if (word == "CLUSTERDOWN") {
    shared.cluster_refresh.store(true, std::memory_order_relaxed);
    m->fail_part(part, error_reply(std::string(line.substr(0, 200)) + " (slot " +
                                   std::to_string(p.slot) + ")"));
    return true;
  }
  return false;
}

void Client::send_part(const Ref<Msg>& m, std::uint32_t part, NodeId member, bool asking) {
  std::string error;  // (connection() may turn a replica `member` into its master)
  BackendConn* b = connection(member, error);
  if (b == nullptr) {
    count_forward_error();
    m->fail_part(part, error_reply("ERR backend " + pool_->states[member]->name + ": " + error));
    return;
  }
  Msg::Part& p = m->parts[part];
  p.member = member;
  m->routed_by = pool_;
  if (asking) b->send_control(kAskingBytes);
  b->send({p.request}, m, part);
}

void Client::retry_on_new_master(const Ref<Msg>& m, std::uint32_t part, std::string error,
                                 std::shared_ptr<BackendState> state, std::uint64_t sent_epoch) {
  // Not the epoch now: a periodic check may have moved the master between the send and the
  // refusal, and waiting for a further move then failed a write the new master would take.
  await_new_master(m, part, std::move(error), std::move(state), sent_epoch,
                   worker_.loop().now() + std::chrono::milliseconds(kNewMasterWaitMs));
}

void Client::await_new_master(const Ref<Msg>& m, std::uint32_t part, std::string error,
                              std::shared_ptr<BackendState> state, std::uint64_t epoch,
                              net::Clock::time_point deadline) {
  // Looked at every 20 ms; the timer holds the Msg, whose client may be gone by then.
  worker_.loop().add_timer(std::chrono::milliseconds(20), [=, error = std::move(error)] {
    if (m->client == nullptr) return;
    auto* c = static_cast<Client*>(m->client);
    c->pool_ = c->worker_.pool(c->pool_index_);
    const bool moved = state->address_epoch.load() != epoch;
    if (!moved && c->worker_.loop().now() < deadline) {
      c->await_new_master(m, part, error, state, epoch, deadline);
      return;
    }
    const NodeId node = member_named(*c->pool_, state->name);
    if (!moved || node == kNoNode) {
      m->fail_part(part, error);  // the master did not move in time: the -READONLY answers
      return;
    }
    c->send_part(m, part, node, false);
  });
}

void Client::retry_later(const Ref<Msg>& m, std::uint32_t part, int ms) {
  // The timer holds the Msg; its client may be gone when it fires (Reply::client is then null).
  worker_.loop().add_timer(std::chrono::milliseconds(ms), [m, part] {
    if (m->client != nullptr) static_cast<Client*>(m->client)->reroute(m, part);
  });
}

void Client::reroute(const Ref<Msg>& m, std::uint32_t part) {
  pool_ = worker_.pool(pool_index_);
  const Msg::Part& p = m->parts[part];
  const NodeId node = pool_->cluster != nullptr ? (*pool_->cluster->owner)[p.slot] : kNoNode;
  if (node == kNoNode) {
    count_forward_error();
    m->fail_part(part, error_reply("CLUSTERDOWN Hash slot not served (slot " +
                                   std::to_string(p.slot) + " has no master in the cluster map)"));
    return;
  }
  send_part(m, part, node, false);  // written at the end of the timer batch (flush_dirty)
}

}  // namespace chash::proxy::redis
