// SPDX-License-Identifier: Apache-2.0
// chash-proxy — hot keys in a Redis pool (proxy/hotkeys/hot_keys.h, docs/HOTKEYS.md): requests
// sampled into the worker's sketch, GET and MGET of hot keys answered from the worker's short-TTL
// copy (hot_cache), reads of hot keys spread over the owner's replicas (hot_reads: replicas), and
// every write's keys invalidated before it is sent and again when it is answered.
//
// What is cached: a RESP2 bulk reply (a value or the null bulk) of a GET from a client in the
// shared-connection mode (RESP2, database 0: an own-mode client's replies depend on its own
// connection's state, proto/redis/session_own.cc). What invalidates: any command that is not
// read-only names its keys (as the routing finds them); one whose keys cannot be known (EXEC,
// FLUSHALL, FLUSHDB, SWAPDB, a script without keys) invalidates every copy of the pool.
#include "core/worker.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

void Client::hot_note(std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  if (hot.enabled() && hot.sample()) hot.record(worker_.index(), key);
}

bool Client::hot_caching() const noexcept {
  return pool_->config.hot_cache.enabled && !own_mode() && pool_->shared->hot.any_hot();
}

bool Client::hot_get(std::string_view key, const Ref<Msg>& m) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  const unsigned w = worker_.index();
  if (std::optional<std::string> copy = hot.lookup(w, key, steady_ms())) {
    hot.counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
    m->parts.resize(1);
    m->outstanding = 1;
    pool_->shared->local_replies.fetch_add(1, std::memory_order_relaxed);
    m->answer_part(0, *copy, '$', {});
    return true;
  }
  if (!hot.hot(w, key)) return false;
  hot.counters.cache_misses.fetch_add(1, std::memory_order_relaxed);
  m->hot_key.assign(key);
  m->hot_stamp = hot.stamp(key);  // before the read is sent: a write after it makes it stale
  return false;
}

void Client::hot_fill(std::string_view key, std::string_view reply, std::uint64_t stamp) {
  if (reply.empty() || reply[0] != '$') return;  // values and the null bulk only, never errors
  pool_->shared->hot.fill(worker_.index(), key, reply, stamp, steady_ms());
}

std::optional<std::string> Client::hot_copy(std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  std::optional<std::string> copy = hot.lookup(worker_.index(), key, steady_ms());
  if (copy) hot.counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
  return copy;
}

NodeId Client::hot_read_target(NodeId node, std::string_view key, const Command& cmd) {
  if (pool_->config.hot_reads != hotkeys::Reads::kReplicas || node >= pool_->nodes ||
      pool_->replicas[node].empty() || !read_only(cmd) || !pool_->shared->hot.any_hot() ||
      !pool_->shared->hot.hot(worker_.index(), key)) {
    return node;
  }
  // The owner and its replicas that are up, in turn (as read_policy: any).
  const auto& reps = pool_->replicas[node];
  std::uint32_t usable = 0;
  for (const NodeId r : reps) usable += pool_->up(r) ? 1 : 0;
  std::uint32_t k = read_turn_++ % (usable + 1);
  if (k == usable) return node;
  for (const NodeId r : reps) {
    if (pool_->up(r) && k-- == 0) {
      pool_->shared->hot.counters.replica_reads.fetch_add(1, std::memory_order_relaxed);
      return r;
    }
  }
  return node;
}

void Client::hot_invalidate(const Command& cmd, std::size_t argc) {
  // Bumped now (before the request is sent: no copy filled before is served again) and again
  // when it is answered (Msg::hot_written: none filled while it was in flight outlives it).
  hot_pending_.clear();
  hot_pending_all_ = false;
  hotkeys::HotKeys& hot = pool_->shared->hot;
  const auto wrote = [&](std::string_view k) {
    hot.wrote(k);
    hot_pending_.emplace_back(k);
  };
  const auto wrote_all = [&] {
    hot.wrote_all();
    hot_pending_all_ = true;
  };
  const auto keys = [&](std::size_t first, std::size_t last, std::size_t step) {
    for (std::size_t i = first; i <= last && i < argc; i += step) wrote(parser_.arg(in_, i));
  };
  switch (cmd.route) {
    case Route::kKey:
      if (!read_only(cmd)) keys(1, 1, 1);
      return;
    case Route::kKeysSameNode:
    case Route::kSplitKeys:
    case Route::kSplitPairs: {
      if (read_only(cmd)) return;
      const std::size_t first = static_cast<std::size_t>(std::max(cmd.key_first, 1));
      const std::size_t last = cmd.key_last < 0 ? argc - 1 : static_cast<std::size_t>(cmd.key_last);
      const std::size_t step =
          cmd.route == Route::kSplitPairs ? 2 : static_cast<std::size_t>(std::max(cmd.key_step, 1));
      keys(first, cmd.route == Route::kKeysSameNode ? last : argc - 1, step);
      return;
    }
    case Route::kEval:
    case Route::kSpecKeys:
    case Route::kSubKey:
    case Route::kBlocking: {
      if (read_only(cmd)) return;
      std::string error;
      find_keys(cmd, argc, error);
      // A script may write any key it was given and, without keys, any at all.
      if (key_pos_.empty() && (cmd.route == Route::kEval || writes(cmd))) wrote_all();
      for (const std::uint32_t p : key_pos_) wrote(parser_.arg(in_, p));
      return;
    }
    case Route::kKeyspace:
    case Route::kBroadcast:
      if (writes(cmd)) wrote_all();  // FLUSHALL, FLUSHDB, SWAPDB ...
      return;
    case Route::kTransaction:
      // The queued commands invalidated their keys when queued; EXEC runs them now, after any
      // read filled a copy in between.
      if (cmd.name == "exec") wrote_all();
      return;
    case Route::kLocal:
    case Route::kPubSub:
    case Route::kUnsupported:
      return;
  }
}

}  // namespace chash::proxy::redis
