// SPDX-License-Identifier: Apache-2.0
// chash-proxy — replicated memcache pools (`replicas:`, `write_policy:`; docs/MEMCACHED.md
// "Replicated pools").
//
// A key's homes are the router's first `replicas` distinct choices (chash::Router::route_n: on a
// ring the next distinct servers clockwise), so they move with the pool as single owners do.
//   - A write (set, add, replace, append, prepend, delete, incr, decr, touch; ms md ma; their
//     binary forms) goes to every home that is up, in one round trip each. It is answered once
//     every home has answered or failed, as write_policy counts them over all `replicas` homes
//     (a home that is down counts as failed): `all` (mcrouter's AllSyncRoute), `majority`
//     (AllMajorityRoute), `one` (AllInitialRoute's acknowledgement). The reply is the first
//     answering home's; when the policy is not met, the first error, else a SERVER_ERROR saying
//     how many homes took it.
//   - A home that missed a write — down, failed, or answered otherwise than the home whose
//     reply is given (an add NOT_STORED here, STORED there) — has the key noted in its absence
//     log (membership/failback.h): a home that returns is swept before it takes traffic, and a
//     home that is up deletes a noted key on the same connection before the next request for it
//     (forward()). That log is mcrouter's asynchronous delete log, kept per server and in the
//     state file when one is configured: no home ever answers with a value older than a write
//     it missed.
//   - A compare-and-swap (cas, or a C flag) goes to the first home that is up only — cas values
//     are per server, and gets/mg read the first home — and the other homes have the key noted.
//   - A read (get gets gat gats, mg me, binary get/gat) goes to the first home that is up; on a
//     miss or an error the next home is asked (mcrouter's MissFailoverRoute), so a home that came
//     back empty, or that had a missed write deleted, does not lose the key for its readers. If
//     every home fails and one of them answered "not there", the miss is the answer.
// gat/mg T touch only the home that answers; warm-up on resize and safe failover's fallback
// writes do not apply (a write reaches the homes that are up instead).
//
// The failover route of single-owner pools (`failover:`, docs/MEMCACHED.md "Failover route")
// rides on the same reads: a request (a write too, ReplicaRead::write) starts at the key's
// owner and goes on to its next distinct owners that are up on a SERVER_ERROR, a timeout or a
// failed connection (on a miss with on_miss); an owner that failed a write has the key noted in
// its absence log, deleted there before its next request for the key (forward()).
#include <algorithm>

#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

namespace {

// The reply's first word: what a write's homes must agree on (a ms's "HD c<cas>" differs by
// server in its flags, not in what happened).
std::string_view status_word(std::string_view line) noexcept {
  return line.substr(0, line.find_first_of(" \r"));
}

}  // namespace

// ---- Msg ----------------------------------------------------------------------------------------

bool Msg::read_on(std::uint32_t part) {
  ReplicaRead& r = reads[part];
  Part& p = parts[part];
  bool miss = false;
  if (r.write && !p.error) return false;  // a failover write taken (or refused) answers
  if (!p.error) {
    if (retrieval) {
      miss = p.values.empty();
    } else {
      const std::string_view line = p.line.view();
      miss = line.empty() ? quiet : line.starts_with("EN\r\n");  // mg q leaves a miss out
    }
    if (!miss) return false;  // a hit answers
    r.saw_miss = true;
    if (r.failover && !r.on_miss) return false;
  } else if (r.failover && !p.line.view().starts_with("SERVER_ERROR")) {
    return false;  // CLIENT_ERROR, ERROR: the next owner would say the same
  }
  if (Client* c = owner(); c != nullptr && c->read_next(*this, part)) return true;
  if (p.error && r.saw_miss && r.best) {
    // Every home failed or missed: a miss, as one server that has not got the key answers.
    p.error = false;
    p.values.clear();
    p.own.clear();
    p.held = 0;
    p.line.copy(retrieval || quiet ? "" : "EN\r\n");
  }
  return false;
}

void Msg::answer_write() {
  const ReplicaWrite& w = *write;
  const PoolConfig& pc = w.pool->config;
  std::size_t need = w.total;
  if (pc.write_policy == WritePolicy::kMajority) need = w.total / 2 + 1;
  if (pc.write_policy == WritePolicy::kOne) need = 1;
  need = std::min<std::size_t>(need, w.total);
  constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t first_ok = kNone, first_error = kNone, answered = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].error) {
      if (first_error == kNone) first_error = i;
    } else {
      ++answered;
      if (first_ok == kNone) first_ok = i;
    }
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool missed =
        parts[i].error || (first_ok != kNone && status_word(parts[i].line.view()) !=
                                                    status_word(parts[first_ok].line.view()));
    if (missed) w.pool->states[w.homes[i]]->absence.note(w.key, pc.failover_track_keys);
  }
  const std::size_t chosen = answered >= need ? first_ok : first_error;
  if (chosen == kNone) {  // every home asked took it, but too few were up
    parts[0].line.copy("SERVER_ERROR chash-proxy: the write reached " + std::to_string(answered) +
                       " of " + std::to_string(w.total) + " homes (write_policy: " +
                       write_policy_name(pc.write_policy) + ")\r\n");
    parts[0].error = true;
  } else if (chosen != 0) {
    std::swap(parts[0], parts[chosen]);
  }
  parts.resize(1);
  write.reset();
}

// ---- Client -------------------------------------------------------------------------------------

std::size_t Client::homes(std::string_view key, std::array<NodeId, kMaxReplicas>& out) const {
  // A failover pool's owner may be ejected (route() skips it): its next owners go further.
  const std::size_t want = failing_over()
                               ? std::min<std::size_t>(pool_->states.size(), out.size())
                               : std::min<std::size_t>(pool_->config.replicas, out.size());
  return pool_->router.route_n(key, std::span<NodeId>(out.data(), want));
}

void Client::fail_no_home(const Ref<Msg>& m, std::string_view key) {
  pool_->shared->errors.fetch_add(1, std::memory_order_relaxed);
  count_forward_error();
  m->reads.clear();
  m->write.reset();
  m->parts.assign(1, {});
  m->outstanding = 1;
  m->fail_part(0, server_error("chash-proxy: every home of key '" + std::string(key) +
                               "' is down (replicas: " + std::to_string(pool_->config.replicas) +
                               ")"));
}

void Client::replicate(const Ref<Msg>& m, std::string_view key,
                       std::initializer_list<std::string_view> bytes, ReplicaOp op) {
  std::array<NodeId, kMaxReplicas> all{}, up{};
  const std::size_t n = homes(key, all);
  std::size_t nup = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (pool_->up(all[i])) up[nup++] = all[i];
  }
  if (nup == 0) {
    fail_no_home(m, key);
    return;
  }
  const std::string_view keys[] = {key};
  if (op == ReplicaOp::kRead) {
    m->reads.resize(1);
    ReplicaRead& r = m->reads[0];
    for (const std::string_view b : bytes) r.request += b;
    r.key = key;
    r.homes = up;
    r.count = static_cast<std::uint8_t>(nup);
    forward(up[0], m, 0, {r.request}, keys);
    return;
  }
  const std::size_t track = pool_->config.failover_track_keys;
  // The homes that will not see this write: deleted there before they serve the key again.
  for (std::size_t i = 0; i < n; ++i) {
    if (!pool_->up(all[i])) pool_->states[all[i]]->absence.note(key, track);
  }
  const std::size_t sends = op == ReplicaOp::kCas ? 1 : nup;
  for (std::size_t i = sends; i < nup; ++i) pool_->states[up[i]]->absence.note(key, track);
  auto w = std::make_unique<ReplicaWrite>();
  w->pool = pool_;
  w->key = key;
  w->homes = up;
  w->total = static_cast<std::uint8_t>(op == ReplicaOp::kCas ? 1 : n);
  m->write = std::move(w);
  m->parts.resize(sends);
  m->outstanding = static_cast<std::uint32_t>(sends);
  count_fragments(static_cast<std::uint32_t>(sends));
  for (std::size_t i = 0; i < sends; ++i) {
    forward(up[i], m, static_cast<std::uint32_t>(i), bytes, keys);
  }
}

void Client::failover_homes(ReplicaRead& r, std::string_view key, NodeId node) const {
  const PoolConfig::Failover& f = pool_->config.failover;
  r.failover = true;
  r.on_miss = f.on_miss;
  r.best = f.return_best_on_error;
  r.homes[0] = node;
  r.count = 1;
  std::array<NodeId, kMaxReplicas> all{};
  const std::size_t n = homes(key, all);
  for (std::size_t i = 0; i < n && r.count < f.tries; ++i) {
    if (all[i] != node && pool_->up(all[i])) r.homes[r.count++] = all[i];
  }
}

void Client::fail_over(const Ref<Msg>& m, std::string_view key, NodeId node,
                       std::initializer_list<std::string_view> bytes, bool write,
                       std::string retry) {
  m->reads.resize(1);
  ReplicaRead& r = m->reads[0];
  for (const std::string_view b : bytes) r.request += b;
  r.key = key;
  r.write = write;
  r.retry = std::move(retry);
  failover_homes(r, key, node);
  const std::string_view keys[] = {r.key};
  forward(node, m, 0, {r.request}, keys);
}

bool Client::read_next(Msg& m, std::uint32_t part) {
  const PoolSwitch to(*this, m.slot);  // the pool it was read in (a prefix route's)
  if (!to.ok()) return false;
  ReplicaRead& r = m.reads[part];
  if (r.write && r.at < r.count && r.homes[r.at] < pool_->states.size()) {
    // The owner that failed the write may have taken it, or still hold the value before it:
    // either is stale once the next owner takes it, so it is deleted there before its next use.
    pool_->states[r.homes[r.at]]->absence.note(r.key, pool_->config.failover_track_keys);
  }
  while (++r.at < r.count) {
    const NodeId node = r.homes[r.at];
    if (node >= pool_->states.size() || !pool_->up(node)) continue;
    Msg::Part& p = m.parts[part];
    p.values.clear();
    p.own.clear();
    p.held = 0;
    p.error = false;
    p.line.copy("");
    const std::string_view keys[] = {r.key};
    forward(node, Ref<Msg>(&m), part, {r.retry.empty() ? r.request : r.retry}, keys);
    return true;
  }
  return false;
}

void Client::retrieve_replicated(std::span<const std::string_view> keys, const Ref<Msg>& m) {
  const std::string prefix = retrieval_prefix();
  const auto n = static_cast<std::uint32_t>(keys.size());
  const bool copies = hot_retrieval(m, keys);
  std::vector<std::optional<std::string>> copy(n);
  m->reads.resize(n);
  // A failover pool's key that moved in a reload still warming: read through from its previous
  // owner (warm()), as a single-owner pool reads it; the others fail over.
  const bool warming = failing_over() && pool_->warming();
  std::vector<NodeId> warm_node(warming ? n : 0, kNoNode);  // the key's owner, for warm()
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string_view key = keys[i];
    hot_note(key);
    if (copies && (copy[i] = hot_copy(key))) continue;
    if (failing_over()) {
      // The owner as a single-owner pool finds it (and its error when it has none); the reads
      // are out of the way meanwhile: that error answers the whole request.
      std::vector<ReplicaRead> reads;
      reads.swap(m->reads);
      NodeId node = kNoNode;
      if (!route(key, m, node)) return;
      m->reads.swap(reads);
      failover_homes(m->reads[i], key, node);
      if (warming) warm_node[i] = node;
    }
    ReplicaRead& r = m->reads[i];
    if (!failing_over()) {
      std::array<NodeId, kMaxReplicas> all{};
      const std::size_t h = homes(key, all);
      for (std::size_t j = 0; j < h; ++j) {
        if (pool_->up(all[j])) r.homes[r.count++] = all[j];
      }
    }
    if (r.count == 0) {
      fail_no_home(m, key);
      return;
    }
    r.key = key;
    r.request = prefix + " " + r.key + "\r\n";
  }
  // One key per part: a key another home has is asked there alone.
  m->parts.resize(n);
  m->outstanding = n;
  count_fragments(n);
  if (n > 1) {
    for (std::uint32_t i = 0; i < n; ++i) {
      m->key_map.emplace_back(i, memcache::Span{m->keys.size(), keys[i].size()});
      m->keys += keys[i];
    }
  } else if (copies && !copy[0]) {
    hot_mark(m, keys[0]);
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (copy[i]) {
      m->answer_part(i, *copy[i]);
      continue;
    }
    const ReplicaRead& r = m->reads[i];
    if (warming && warm_node[i] != kNoNode &&
        warm(parser_.command(), r.key, warm_node[i], m, i, r.request)) {
      continue;
    }
    const std::string_view its[] = {r.key};
    forward(r.homes[0], m, i, {r.request}, its);
  }
}

}  // namespace chash::proxy::memcache
