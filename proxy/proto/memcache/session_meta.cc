// SPDX-License-Identifier: Apache-2.0
// chash-proxy — memcached's meta commands (mg ms md ma me; memcached 1.6 doc/protocol.txt).
//
// Each request goes whole — its line as the client wrote it and, for ms, its data block — to
// the backend that owns its key, the key `get` routes the same bytes by: for a `b` request the
// decoded key, which is what memcached stores (so `mg <base64 of foo> b` and `get foo` find the
// same item on the same server). Flags are the server's business and pass through unread
// (opaque O, k, the stale-while-revalidate W/X/Z answers, leases N/R, I, ...).
//
// Quiet mode (`q`): the server leaves out the nominal reply (mg: EN, ms: HD, md: HD/NF, ...),
// so a backend connection cannot tell which queued request a reply belongs to. The proxy sends
// its own `mn` right behind each quiet request (same write, no extra round trip): the server
// answers with the request's reply or nothing, then MN, which the proxy drops. A client's `mn`
// is answered by the proxy in its place in the reply order: it goes out once every earlier
// request is answered, i.e. once each backend that got a quiet request has sent its MN. The
// client sees what one memcached would send: the non-suppressed replies, in request order
// across backends, then MN.
#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

void Client::meta() {
  const std::string_view in(in_);
  const Command cmd = parser_.command();
  const std::string_view key = parser_.meta_key(in);
  hot_note(key);
  auto m = new_msg(1);
  m->meta = true;
  m->quiet = parser_.quiet();
  const bool write =
      cmd == Command::kMetaSet || cmd == Command::kMetaDelete || cmd == Command::kMetaArithmetic;
  // mg with T (touch) or N (vivify on miss) changes the item too: a hot copy would be stale. So
  // may R (recache): when it wins, the item has a recache token out from then on, which every
  // later mg hit shows as Z (protocol.txt, "Meta Get") — a copy filled before would not.
  const bool changes = cmd == Command::kMetaGet &&
                       (parser_.has_flag('T') || parser_.has_flag('N') || parser_.has_flag('R'));
  // A plain mg of a hot key: answered from the copy when its flags allow (session_hot.cc), else
  // sent and, when it asks the value and client flags, its reply fills the copy.
  bool mark = false;
  if (write || changes) {
    hot_wrote(key, m);  // before it is sent, as set does
  } else if (cmd == Command::kMetaGet && hot_caching()) {
    if (hot_meta_get(m, key)) return;
    mark = parser_.has_flag('v') && parser_.has_flag('f');
  }
  const std::string_view mn = m->quiet ? std::string_view("mn\r\n") : std::string_view();
  if (replicated()) {
    // mg and me read; a C flag compares the first home's cas (session_replicas.cc).
    const ReplicaOp op = !write                  ? ReplicaOp::kRead
                         : parser_.has_flag('C') ? ReplicaOp::kCas
                                                 : ReplicaOp::kWrite;
    if (mark) hot_mark(m, key);
    replicate(m, key, {parser_.request(in), mn}, op);
    return;
  }
  NodeId node = kNoNode;
  if (!route(key, m, node)) return;
  // Safe failover: noted like set/delete/incr. A binary key that is not a valid text key is
  // not noted: the return sweep (membership/failback.cc) deletes noted keys with plain `md`.
  const bool fallback =
      write && (!parser_.key_binary() || text_key_ok(key)) && note_fallback_write(key, node);
  std::string line;
  // A store on a fallback lives failover_ttl at most, as set's exptime does there.
  const bool capped = fallback && cmd == Command::kMetaSet && pool_->config.failover_ttl_ms != 0 &&
                      capped_line(line);
  // Warm-up: a key a resize moved is migrated to its new owner first (session_warmup.cc), then
  // the request runs there. Its steps name the key in text: a binary key no text command can
  // name goes straight to the new owner.
  if (pool_->warming() && (!parser_.key_binary() || text_key_ok(key))) {
    std::string request =
        capped ? line + std::string(parser_.data(in)) + "\r\n" : std::string(parser_.request(in));
    request += mn;
    if (warm(cmd, key, node, m, 0, std::move(request))) return;
  }
  // Failover pools: on to the key's next owners on a failure (session_replicas.cc), but not a
  // compare-and-swap (C: the owner's cas value) nor a binary key no text command can name (the
  // owner's absence log deletes noted keys with plain text requests when it returns).
  const bool failover = failing_over() && (!parser_.key_binary() || text_key_ok(key)) &&
                        !(write && parser_.has_flag('C'));
  std::string retry;  // a store at the next owners lives failover_ttl at most
  if (failover && cmd == Command::kMetaSet && pool_->config.failover_ttl_ms != 0 &&
      capped_line(retry)) {
    retry += parser_.data(in);
    retry += "\r\n";
    retry += mn;
  }
  if (capped) {
    if (failover) {
      fail_over(m, key, node, {line, parser_.data(in), "\r\n", mn}, write, std::move(retry));
      return;
    }
    forward(node, m, 0, {line, parser_.data(in), "\r\n", mn}, {&key, 1});
    return;
  }
  if (mark) hot_mark(m, key);  // not a warm-up's: its reply is the request's own
  if (failover) {
    fail_over(m, key, node, {parser_.request(in), mn}, write, std::move(retry));
    return;
  }
  forward(node, m, 0, {parser_.request(in), mn}, {&key, 1});
}

bool Client::capped_line(std::string& line) const {
  const std::string_view in(in_);
  std::int64_t ttl = 0;  // no T: never expires
  std::size_t t_at = 0;  // 0: none (token 0 is the command)
  for (std::size_t i = 3; i < parser_.token_count(); ++i) {
    const std::string_view f = parser_.token(in, i);
    // Append and prepend keep the item's own TTL (set does not cap them either).
    if (f == "MA" || f == "MP") return false;
    if (f[0] != 'T') continue;
    if (!parse_i64(f.substr(1), ttl)) return false;  // memcached's laxer forms: left as sent
    t_at = i;
  }
  for (std::size_t i = 0; i < parser_.token_count(); ++i) {
    if (i == t_at && i != 0) continue;
    if (i > 0) line += ' ';
    line += parser_.token(in, i);
  }
  line += " T";
  line += std::to_string(capped_exptime(ttl));
  line += "\r\n";
  return true;
}

}  // namespace chash::proxy::memcache
