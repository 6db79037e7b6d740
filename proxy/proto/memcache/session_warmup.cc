// SPDX-License-Identifier: Apache-2.0
// chash-proxy — warm-up on resize for memcache pools (the Redis side and the design are in
// proto/redis/session_warmup.cc). memcached's meta commands give what the text protocol
// cannot: a value with its remaining TTL and flags (`mg k v t f`), and a set that keeps a newer
// value (`ms k <n> T<ttl> F<flags> ME`: add mode). For a key whose owner a reload changed:
//   get/gets/gat/gats   new: the same retrieval of that key; a miss: old: `mg k v t f`; found:
//                       new: `ms ... ME`, then old: `md k`; get answers with the old value at once,
//                       gets/gat/gats with the new owner's after the copy (its cas, its TTL);
//   set                 new: set, old: `md k`, at once;
//   delete              at both: DELETED when either had it;
//   add/replace/append/prepend/cas/incr/decr/touch, and the meta commands mg/ms/md/ma/me
//                       migrate k (new: `mg k`, old: `mg k v t f`; copied when only an old owner
//                       has it; the old copy deleted), then the command at the new owner (a
//                       meta request as the client sent it, a quiet one followed by our mn).
// TTLs are memcached's whole seconds; `t-1` (no expiry) is copied as T0.
#include <charconv>

#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

namespace {

// A VA reply ("VA 3 t12 f5\r\nabc\r\n"): the value, its TTL (-1: none) and flags.
struct Found {
  std::string_view data;
  std::int64_t ttl = -1;
  std::uint32_t flags = 0;
};

bool found(std::string_view reply, Found& out) {
  if (!reply.starts_with("VA ")) return false;
  const std::size_t nl = reply.find("\r\n");
  if (nl == std::string_view::npos) return false;
  const std::string_view line = reply.substr(0, nl);
  std::size_t size = 0;
  std::size_t i = 3;
  std::size_t end = std::min(line.find(' ', i), line.size());
  std::from_chars(line.data() + i, line.data() + end, size);
  for (i = end; i < line.size();) {
    while (i < line.size() && line[i] == ' ') ++i;
    end = std::min(line.find(' ', i), line.size());
    const std::string_view tok = line.substr(i, end - i);
    if (tok.size() > 1 && tok[0] == 't')
      std::from_chars(tok.data() + 1, tok.data() + tok.size(), out.ttl);
    if (tok.size() > 1 && tok[0] == 'f')
      std::from_chars(tok.data() + 1, tok.data() + tok.size(), out.flags);
    i = end;
  }
  if (reply.size() < nl + 2 + size + 2) return false;
  out.data = reply.substr(nl + 2, size);
  return true;
}

}  // namespace

struct WarmOp : std::enable_shared_from_this<WarmOp> {
  Worker* worker = nullptr;
  std::size_t pool_index = 0;
  std::shared_ptr<PoolShared> shared;
  Command cmd = Command::kNone;
  std::string key;
  std::string owner;
  std::vector<std::string> olds;
  Ref<Msg> answer_to;
  std::uint32_t answer_part = 0;
  std::string request;  // the command for this key alone, as the new owner gets it
  bool quiet = false;  // a meta request with q: `request` ends in our mn (Msg::quiet)
  // The owner is a server back from an absence that may still hold a stale copy of the key
  // (AbsenceLog::kFlipped, the key noted): the op deletes it there before anything else.
  bool purge_first = false;
  // Where the key was noted (and the log's bound): a purge the owner did not answer notes it
  // again, or its stale copy would be served once it answers.
  std::shared_ptr<BackendState> purge_state;
  std::size_t purge_track = 0;

  // Runs `go`, after the owner's stale copy is deleted when purge_first (the step waits for the
  // delete's answer: the op's own requests may go out on other connections).
  void begin(std::function<void()> go) {
    if (!purge_first) return go();
    auto purged = [go = std::move(go), state = purge_state, k = key, track = purge_track](Msg& d) {
      if (state != nullptr && !d.parts.empty() && d.parts[0].error) state->absence.note(k, track);
      go();
    };
    send(step(1, false, std::move(purged)), 0, owner, "md " + key + "\r\n");
  }

  void send(const Ref<Msg>& s, std::uint32_t part, const std::string& name, std::string bytes) {
    std::string error;
    BackendConn* b = worker->backend_named(pool_index, name, error);
    if (b == nullptr) {
      s->fail_part(part, server_error("backend " + name + ": " + error));
      return;
    }
    b->send({bytes}, s, part);
  }
  // A step of `parts` requests: meta commands, or (retrieval) one classic retrieval.
  Ref<Msg> step(std::uint32_t parts, bool retrieval, std::function<void(Msg&)> then) {
    auto s = make_ref<Msg>();
    s->parts.resize(parts);
    s->outstanding = parts;
    s->retrieval = retrieval;
    s->meta = !retrieval;
    s->then = std::move(then);
    return s;
  }
  void answer(std::string_view bytes) {
    if (answer_to == nullptr) return;
    auto m = std::move(answer_to);
    m->answer_part(answer_part, bytes);
  }
  void answer_error(std::string_view line) {
    shared->warmup_errors.fetch_add(1, std::memory_order_relaxed);
    if (answer_to == nullptr) return;
    auto m = std::move(answer_to);
    m->fail_part(answer_part, line);
  }
  // A retrieval step's one VALUE block ("" for a miss), or an error line.
  static std::string block_of(const Msg::Part& p) {
    if (p.error) return {};
    return p.values.empty() ? std::string() : std::string(p.values[0].block(p.own));
  }

  // ---- Retrievals -------------------------------------------------------------------------------
  void retrieve() {
    auto self = shared_from_this();
    auto s = step(1, true, [self](Msg& r) {
      const Msg::Part& p = r.parts[0];
      if (p.error) return self->answer_error(p.line.view());
      if (!p.values.empty()) return self->answer(p.values[0].block(p.own));
      self->retrieve_from(0);
    });
    send(s, 0, owner, request);
  }
  void retrieve_from(std::size_t i) {
    // A miss everywhere: the new owner once more (another reader copies there before it deletes
    // the old copy, so a value that was only moving is found).
    if (i == olds.size()) return retrieve_again();
    shared->warmup_reads.fetch_add(1, std::memory_order_relaxed);
    auto self = shared_from_this();
    auto s = step(1, false, [self, i](Msg& r) {
      // The old owner failed: it may hold the newest value, and a miss would be a stale read.
      if (r.parts[0].error) return self->answer_error(r.parts[0].line.view());
      Found f;
      if (!found(r.parts[0].line.view(), f)) return self->retrieve_from(i + 1);
      const std::string value(f.data);
      if (self->cmd == Command::kGet) {
        self->answer("VALUE " + self->key + " " + std::to_string(f.flags) + " " +
                     std::to_string(value.size()) + "\r\n" + value + "\r\n");
      }
      self->copy(i, f, [self] {
        if (self->cmd != Command::kGet) self->retrieve_again();  // its cas / TTL: the new owner's
      });
    });
    send(s, 0, olds[i], "mg " + key + " v t f\r\n");
  }
  void retrieve_again() {
    auto self = shared_from_this();
    send(step(1, true,
              [self](Msg& r) {
                const Msg::Part& p = r.parts[0];
                if (p.error) return self->answer_error(p.line.view());
                self->answer(block_of(p));
              }),
         0, owner, request);
  }

  // ---- Copy found at old owner `i` to the new owner (add: a newer value there stays), then
  // ---- delete it there; then `done`.
  void copy(std::size_t i, const Found& f, std::function<void()> done) {
    shared->warmup_copies.fetch_add(1, std::memory_order_relaxed);
    shared->warmup_removed.fetch_add(1, std::memory_order_relaxed);
    auto self = shared_from_this();
    const std::string ttl = std::to_string(f.ttl < 0 ? 0 : f.ttl);
    std::string ms = "ms " + key + " " + std::to_string(f.data.size()) + " T" + ttl + " F" +
                     std::to_string(f.flags) + " ME\r\n";
    ms.append(f.data);
    ms += "\r\n";
    auto s = step(1, false, [self, i, done = std::move(done)](Msg& r) {
      // Not copied (the owner failed): the old copy is the only one and stays.
      if (r.parts[0].error) {
        self->shared->warmup_errors.fetch_add(1, std::memory_order_relaxed);
        return done();
      }
      self->send(self->step(1, false, [done](Msg&) { done(); }), 0, self->olds[i],
                 "md " + self->key + "\r\n");
    });
    send(s, 0, owner, std::move(ms));
  }

  // ---- Writes -----------------------------------------------------------------------------------
  // set: the new owner's answer; delete: DELETED when any had it. Old copies deleted at once.
  void write_blind() {
    auto self = shared_from_this();
    const auto n = static_cast<std::uint32_t>(olds.size());
    auto s = step(1 + n, false, [self](Msg& r) {
      const std::string_view first = r.parts[0].line.view();
      if (r.parts[0].error) return self->answer_error(first);
      // A previous copy that could not be removed would be read back on a later miss (in a
      // fleet's prepare: by every proxy once it commits), so the write is not acknowledged.
      for (std::size_t k = 1; k < r.parts.size(); ++k) {
        if (!r.parts[k].error) continue;
        return self->answer_error(server_error("warm-up: written at " + self->owner +
                                               ", but its previous copy at " + self->olds[k - 1] +
                                               " could not be removed: " +
                                               std::string(r.parts[k].line.view())));
      }
      if (self->cmd != Command::kDelete) return self->answer(first);
      bool any = first.starts_with("DELETED");
      for (std::size_t k = 1; k < r.parts.size(); ++k)
        any |= r.parts[k].line.view().starts_with("HD");
      self->answer(any ? "DELETED\r\n" : "NOT_FOUND\r\n");
    });
    send(s, 0, owner, request);
    for (std::uint32_t k = 0; k < n; ++k) {
      shared->warmup_removed.fetch_add(1, std::memory_order_relaxed);
      send(s, 1 + k, olds[k], "md " + key + "\r\n");
    }
  }
  void migrate_then_run() {
    auto self = shared_from_this();
    const auto n = static_cast<std::uint32_t>(olds.size());
    auto s = step(1 + n, false, [self, n](Msg& r) {
      const bool at_owner = r.parts[0].line.view().starts_with("HD");
      for (std::uint32_t k = 0; k < n; ++k) {
        Found f;
        if (!found(r.parts[1 + k].line.view(), f)) continue;
        if (at_owner) {  // the new owner has a newer one: the old copy goes
          self->shared->warmup_removed.fetch_add(1, std::memory_order_relaxed);
          self->send(self->step(1, false, [self](Msg&) { self->run_at_owner(); }), 0, self->olds[k],
                     "md " + self->key + "\r\n");
          return;
        }
        return self->copy(k, f, [self] { self->run_at_owner(); });
      }
      self->run_at_owner();
    });
    send(s, 0, owner, "mg " + key + "\r\n");
    for (std::uint32_t k = 0; k < n; ++k) send(s, 1 + k, olds[k], "mg " + key + " v t f\r\n");
  }
  void run_at_owner() {
    auto self = shared_from_this();
    auto s = step(1, false, [self](Msg& r) {
      if (r.parts[0].error) return self->answer_error(r.parts[0].line.view());
      self->answer(r.parts[0].line.view());
    });
    s->meta = is_meta_keyed(cmd);  // else a classic command: one line
    s->quiet = quiet;
    send(s, 0, owner, request);
  }
};

std::size_t Client::moved(std::string_view key, NodeId node, std::span<NodeId> olds) const {
  if (!pool_->warming() || node == kNoNode) return 0;
  return pool_->previous_owners(key, node, steady_ms(), olds);
}

bool Client::warm(Command cmd, std::string_view key, NodeId node, const Ref<Msg>& m,
                  std::uint32_t part, std::string request) {
  NodeId olds[kMaxPreviousRoutings];
  const std::size_t n = moved(key, node, olds);
  if (n == 0) return false;
  auto op = std::make_shared<WarmOp>();
  op->worker = &worker_;
  op->pool_index = pool_index_;
  op->shared = pool_->shared;
  op->cmd = cmd;
  op->key = std::string(key);
  op->owner = pool_->servers[node].name;
  for (std::size_t i = 0; i < n; ++i) op->olds.push_back(pool_->servers[olds[i]].name);
  op->answer_to = m;
  op->answer_part = part;
  op->request = std::move(request);
  op->quiet = m->quiet;
  // As the forwarding path does for a returned server's noted keys (session.cc).
  AbsenceLog& absence = pool_->states[node]->absence;
  op->purge_first = absence.phase() == AbsenceLog::Phase::kFlipped && absence.take(key);
  if (op->purge_first) {
    op->purge_state = pool_->states[node];
    op->purge_track = pool_->config.failover_track_keys;
  }
  switch (cmd) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats:
      op->begin([op] { op->retrieve(); });
      break;
    case Command::kSet:
    case Command::kDelete:
      op->begin([op] { op->write_blind(); });
      break;
    default:
      op->begin([op] { op->migrate_then_run(); });
      break;
  }
  return true;
}

}  // namespace chash::proxy::memcache
