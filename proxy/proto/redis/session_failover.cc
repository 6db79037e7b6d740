// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a Redis client's side of safe failover and return (membership/failback.h): writes
// of a down backend's keys that went to a fallback are noted (before they are sent) and their TTL
// capped (failover_ttl), and while a returned backend's last sweep runs, a request for a key it
// missed deletes that key there first, on the same connection.
#include "core/worker.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

// A step of the proxy's own whose answer nobody needs (any reply is fine).
void send_unanswered(BackendConn* b, std::string_view bytes) {
  auto s = make_ref<Msg>();
  s->parts.resize(1);
  s->outstanding = 1;
  s->then = [](Msg&) {};
  b->send({bytes}, s, 0);
}

}  // namespace

bool Client::note_fallback_write(std::string_view key, NodeId node) {
  return proxy::note_fallback_write(*pool_, key, node);
}

void Client::invalidate_first(BackendConn* b, NodeId node, std::string_view key) {
  AbsenceLog& absence = pool_->states[node]->absence;
  if (absence.phase() != AbsenceLog::Phase::kFlipped || !absence.take(key)) return;
  std::string del;
  append_command(del, {"DEL", key});
  // A DEL the server did not answer (it hangs again, its connection failed) leaves the key
  // noted: its old value is swept at the next return rather than served.
  auto s = make_ref<Msg>();
  s->parts.resize(1);
  s->outstanding = 1;
  s->then = [pool = pool_, node, k = std::string(key)](Msg& d) {
    if (!d.parts.empty() && d.parts[0].type == '-' && node < pool->states.size()) {
      pool->states[node]->absence.note(k, pool->config.failover_track_keys);
    }
  };
  b->send({del}, s, 0);
}

void Client::invalidate_args_first(NodeId node, std::span<const std::uint32_t> positions) {
  if (node == kNoNode || node >= pool_->states.size() ||
      pool_->states[node]->absence.phase() != AbsenceLog::Phase::kFlipped) {
    return;  // the common case: one load
  }
  std::vector<std::string_view> keys;
  for (const std::uint32_t p : positions) keys.push_back(parser_.arg(in_, p));
  invalidate_keys_first(node, keys);
}

void Client::invalidate_keys_first(NodeId node, std::span<const std::string_view> keys) {
  if (keys.empty() || node == kNoNode || node >= pool_->states.size() ||
      pool_->states[node]->absence.phase() != AbsenceLog::Phase::kFlipped) {
    return;
  }
  std::string error;
  BackendConn* b = connection(node, error);
  if (b == nullptr) return;  // the request itself fails on it
  for (const std::string_view k : keys) invalidate_first(b, node, k);
}

void Client::cap_ttl(BackendConn* b, std::string_view key) {
  const std::uint32_t cap = pool_->config.failover_ttl_ms;
  if (cap == 0) return;
  // LT: only lowers a TTL (a key without one counts as infinite): Redis 7.0+.
  std::string out;
  const std::string ms = std::to_string(cap);
  append_command(out, {"PEXPIRE", key, ms, "LT"});
  send_unanswered(b, out);
}

}  // namespace chash::proxy::redis
