// SPDX-License-Identifier: Apache-2.0
// chash-proxy — hot keys in a memcache pool (proxy/hotkeys/hot_keys.h, docs/HOTKEYS.md): keys
// sampled into the worker's sketch, `get` of hot keys answered from the worker's short-TTL copy
// of the VALUE block (or of the miss), and every storage command, delete, incr, decr and touch
// invalidating its key before it is sent and again when it is answered. gets/gat/gats are always
// forwarded: their CAS and expiry are the server's.
#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

void Client::hot_note(std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  if (hot.enabled() && hot.sample()) hot.record(worker_.index(), key);
}

bool Client::hot_caching() const noexcept {
  return pool_->config.hot_cache.enabled && pool_->shared->hot.any_hot();
}

void Client::hot_wrote(std::string_view key, const Ref<Msg>& m) {
  if (!pool_->config.hot_cache.enabled) return;
  // Now (before it is sent) and when it is answered (Msg::finish): a get another worker sent
  // while the write was in flight may have read the old value after the first bump.
  pool_->shared->hot.wrote(key);
  m->hot_pool = pool_->shared;
  m->hot_written.assign(key);
}

std::optional<std::string> Client::hot_copy(std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  std::optional<std::string> copy = hot.lookup(worker_.index(), key, steady_ms());
  if (copy) hot.counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
  return copy;
}

void Client::hot_mark(const Ref<Msg>& m, std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  if (!hot.hot(worker_.index(), key)) return;
  hot.counters.cache_misses.fetch_add(1, std::memory_order_relaxed);
  m->hot_key.assign(key);
  m->hot_stamp = hot.stamp(key);  // before the get is sent: a write after it makes it stale
}

void Client::hot_fill(const Msg& m) {
  if (m.parts.size() != 1 || m.parts[0].error || m.parts[0].values.size() > 1) return;
  const Msg::Part& p = m.parts[0];
  // The VALUE block as the client gets it, or "" for a miss (END alone).
  const std::string_view block = p.values.empty() ? std::string_view() : p.values[0].block(p.own);
  pool_->shared->hot.fill(worker_.index(), m.hot_key, block, m.hot_stamp, steady_ms());
}

}  // namespace chash::proxy::memcache
