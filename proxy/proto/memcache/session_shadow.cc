// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the shadow route (`shadow:`, docs/MEMCACHED.md "Shadow route"; mcrouter's
// ShadowRoute): a copy of some requests goes to another memcache pool, to test it with
// production traffic.
//
// The copy is sent after the request itself, as a Msg of the proxy's own (`then` discards its
// reply), on the worker's connection to the key's owner in the shadow pool. It is never in the
// client's reply order, so the client's reply never waits for it. The copy is the request's
// bytes as sent to the pool's own backend: canonical text lines without noreply, meta requests
// with the proxy's `mn` behind a quiet one, binary packets as their meta commands — each has a
// reply the shadow backend's parser can match to it, whatever the shadow server answers. A
// get/gets/gat/gats is copied key by key (one-key requests: each key is shadowed or not by
// itself). When the shadow backend is down, cannot be connected to, or already has
// kShadowMaxOutstanding copies unanswered (a stopped server), the copy is dropped and counted:
// a shadow pool in trouble costs the pool a counter increment per request, never a wait.
#include <cstdint>

#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

namespace {

// The worker thread's generator for `sample:` (splitmix64): cheap, and no lock.
double next_uniform() noexcept {
  thread_local std::uint64_t state =
      0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&state));
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-53;
}

}  // namespace

void Client::shadow(std::string_view key, std::initializer_list<std::string_view> bytes,
                    const Msg& like) {
  const ShadowConfig& sc = *pool_->config.shadow;
  if (sc.commands != ShadowCommands::kAll) {
    // Reads: retrievals, and mg/me (binary gets and touches travel as mg); the rest writes.
    const std::string_view first = *bytes.begin();
    const bool read =
        like.retrieval || (like.meta && (first.starts_with("mg ") || first.starts_with("me ")));
    if (read != (sc.commands == ShadowCommands::kReads)) return;
  }
  if (sc.sample > 0) {
    if (next_uniform() >= sc.sample) return;
  } else if (sc.from > 0 || sc.to < 1) {
    const double at = shadow_key_point(key);
    if (at < sc.from || at >= sc.to) return;
  }
  PoolShared& counts = *pool_->shared;
  const std::shared_ptr<const Pool>& sp = worker_.pool(pool_->shadow_slot);
  // Gone (a reload removed it) or no longer memcache: this pool's clients from before drain.
  if (sp == nullptr || sp->config.protocol != PoolProtocol::kMemcache) {
    counts.shadow_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const NodeId node = sp->route(key);
  if (node == kNoNode || !sp->up(node)) {
    counts.shadow_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::shared_ptr<BackendState>& state = sp->states[node];
  if (state->shadow_outstanding.load(std::memory_order_relaxed) >= kShadowMaxOutstanding) {
    counts.shadow_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::string error;
  BackendConn* b = worker_.backend(sp->slot, node, error);
  if (b == nullptr) {
    counts.shadow_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto s = make_ref<Msg>();
  s->parts.resize(1);
  s->outstanding = 1;
  s->then = [](Msg&) {};  // the reply is discarded
  // Read as the request's own reply is (VALUE blocks, a meta line, a quiet reply then MN).
  s->retrieval = like.retrieval;
  s->meta = like.meta;
  s->quiet = like.quiet;
  state->shadow_outstanding.fetch_add(1, std::memory_order_relaxed);
  s->shadow.state = state;
  b->send(bytes, s, 0);
  counts.shadow_sent.fetch_add(1, std::memory_order_relaxed);
}

void Client::shadow_retrieval(const Msg& like, const std::string& prefix,
                              std::span<const std::string_view> keys) {
  std::string line;
  for (const std::string_view key : keys) {
    line.assign(prefix);
    line += ' ';
    line += key;
    line += "\r\n";
    shadow(key, {line}, like);
  }
}

}  // namespace chash::proxy::memcache
