// SPDX-License-Identifier: Apache-2.0
// chash-proxy — warm-up on resize for Redis pools: a key whose owner a reload changed is served
// by its new owner, and on a miss by its previous owner (Pool::previous), as if the keys had
// already moved.
//
// For a request whose key moved (Pool::previous_owners is not empty), by command:
//   GET k                  new: GET k; a miss: old: PTTL k + GET k -> the value is the answer;
//                          then new: SET k v [PX ttl] NX (a newer write there wins), and once
//                          that is in, old: DEL k; a miss at every owner asks the new one again
//                          (a concurrent reader's copy may have landed: no miss for a value that
//                          was only moving);
//   other reads            new: EXISTS k + the command; not there: migrate k, then the command;
//   SET/SETEX/PSETEX       new: the command, old: DEL k, at once (the old copy must not come
//     (no NX/XX/GET/KEEPTTL) back); DEL/UNLINK k: at both, the answer 1 when either had it;
//   other writes           migrate k, then the command at the new owner;
//   multi-key commands     MGET, MSET, DEL, UNLINK, EXISTS, TOUCH: each moved key on its own, as
//                          above; the others (RENAME, SINTERSTORE, EVAL ...): migrate every moved
//                          key, then the command;
// where "migrate k" is new: EXISTS k, old: DUMP k + PTTL k; absent at the new owner and present
// at an old one: new: RESTORE k ttl payload (without REPLACE: a write that got there first
// wins); then old: DEL k. A transaction (EXEC) migrates every moved key it names, then runs —
// unless it runs on a connection of the client's own (WATCH, RESP3, SELECT): there its keys are
// read as the new owner has them. Each step is a Msg of the proxy's own (`then`, no client);
// members are found again by name at each step, so a reload in between cannot send a step to the
// wrong server. A race the design accepts, as any read-through cache does: a DEL of a key at the
// very moment its value is being copied to the new owner can be overtaken by the copy.
#include <cstdio>

#include "core/worker.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

std::string error_reply(std::string_view text) {
  std::string out;
  append_error(out, text);
  return out;
}

// The payload of a bulk reply ("$3\r\nabc\r\n" -> "abc"); false for nil or another type.
bool bulk_payload(const Msg::Part& p, std::string_view& out) {
  const std::string_view raw = p.raw.view();
  if (p.type != '$' || raw.size() < 4 || raw[1] == '-') return false;
  const std::size_t nl = raw.find("\r\n");
  if (nl == std::string_view::npos || raw.size() < nl + 4) return false;
  out = raw.substr(nl + 2, raw.size() - nl - 4);
  return true;
}

bool integer(const Msg::Part& p, std::int64_t& out) {
  const std::string_view raw = p.raw.view();
  return p.type == ':' && raw.size() >= 3 && parse_int(raw.substr(1, raw.size() - 3), out);
}

bool is_nil(const Msg::Part& p) { return p.type == '$' && p.raw.view().starts_with("$-1"); }

std::string command(const std::vector<std::string_view>& argv) {
  std::string out;
  append_command(out, argv);
  return out;
}

// SET's options that make it read the old value or depend on it (else: a blind overwrite).
bool blind_set(const std::vector<std::string>& argv) {
  for (std::size_t i = 3; i < argv.size(); ++i) {
    std::string o = argv[i];
    for (char& c : o) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    if (o == "NX" || o == "XX" || o == "GET" || o == "KEEPTTL") return false;
  }
  return true;
}

}  // namespace

// One warm-up operation for one key: its steps, where it answers, who holds the key.
struct WarmOp : std::enable_shared_from_this<WarmOp> {
  Worker* worker = nullptr;
  std::size_t pool_index = 0;
  std::shared_ptr<PoolShared> shared;
  std::string key;
  std::string owner;              // the member the key belongs to now (by name)
  std::vector<std::string> olds;  // its previous owners, newest first
  Ref<Msg> answer_to;             // the client's Msg (null: nobody waits)
  std::uint32_t answer_part = 0;
  Merge shape = Merge::kNone;     // the answer's shape: an MGET part is a one-element array
  std::vector<std::string> argv;  // the command, for the steps that run it
  std::string request;            // the command as sent
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
      if (state != nullptr && !d.parts.empty() && d.parts[0].type == '-') {
        state->absence.note(k, track);
      }
      go();
    };
    send(step(1, std::move(purged)), 0, owner, command({"DEL", key}));
  }

  // Sends `bytes` as part `part` of step `s` to member `name` of the pool as the worker routes
  // now (fails the part when it is gone or cannot be reached).
  void send(const Ref<Msg>& s, std::uint32_t part, const std::string& name,
            std::string_view bytes) {
    std::string error;
    BackendConn* b = worker->backend_named(pool_index, name, error);
    if (b == nullptr) {
      s->fail_part(part, error_reply("ERR backend " + name + ": " + error));
      return;
    }
    b->send({bytes}, s, part);
  }
  // A step of `parts` requests whose replies go to `then`.
  Ref<Msg> step(std::uint32_t parts, std::function<void(Msg&)> then) {
    auto s = make_ref<Msg>();
    s->parts.resize(parts);
    s->outstanding = parts;
    s->then = std::move(then);
    return s;
  }
  // Answers the client with `p`'s reply (as it is, or as an MGET part: a one-element array).
  void answer(const Msg::Part& p) {
    if (answer_to == nullptr) return;
    auto m = std::move(answer_to);
    if (p.type == '-') {
      shared->warmup_errors.fetch_add(1, std::memory_order_relaxed);
      m->fail_part(answer_part, p.raw.view());
      return;
    }
    if (shape == Merge::kArray) {
      // GET's replies are wrapped; the request's own ("MGET k", sent as it is by read_generic
      // and run_at_owner: a key of another type, an old owner's error) already is one.
      const std::string_view raw = p.raw.view();
      std::string a = raw.starts_with("*1\r\n") ? "" : "*1\r\n";
      a += raw;
      m->answer_part(answer_part, a, '*', {{4, a.size() - 4}});
      return;
    }
    m->answer_part(answer_part, p.raw.view(), p.type, {});
  }
  void answer_bytes(std::string_view bytes, char type) {
    Msg::Part p;
    p.raw.copy(bytes);
    p.type = type;
    answer(p);
  }

  // ---- GET --------------------------------------------------------------------------------------
  void get() {
    auto self = shared_from_this();
    auto s = step(1, [self](Msg& r) {
      if (!is_nil(r.parts[0])) return self->answer(r.parts[0]);  // a hit (or an error)
      self->get_from(0);
    });
    send(s, 0, owner, command({"GET", key}));
  }
  void get_from(std::size_t i) {
    if (i == olds.size()) return recheck();  // a miss everywhere (so far)
    shared->warmup_reads.fetch_add(1, std::memory_order_relaxed);
    auto self = shared_from_this();
    auto s = step(2, [self, i](Msg& r) {
      std::string_view value;
      std::int64_t ttl = 0;
      if (r.parts[1].type == '-' || r.parts[0].type == '-') {
        // WRONGTYPE: not a string there; the generic path decides (a read of the new owner
        // after migrating what can be). Anything else: the old owner failed, and it may hold
        // the newest value — a miss would be a stale read, so the client gets the error.
        if (r.parts[1].raw.view().starts_with("-WRONGTYPE")) return self->read_generic();
        return self->answer(r.parts[r.parts[0].type == '-' ? 0 : 1]);
      }
      if (!bulk_payload(r.parts[1], value)) return self->get_from(i + 1);  // not there either
      self->answer(r.parts[1]);
      if (!integer(r.parts[0], ttl) || ttl == -2) ttl = -1;
      self->shared->warmup_copies.fetch_add(1, std::memory_order_relaxed);
      // The copy: its answer is nobody's (a newer write at the new owner keeps it: NX). The old
      // copy goes only once the new one is in: a reader that finds neither then finds this one
      // at the new owner (recheck).
      std::vector<std::string_view> set = {"SET", self->key, value};
      const std::string px = std::to_string(ttl);
      if (ttl > 0) {
        set.push_back("PX");
        set.push_back(px);
      }
      set.push_back("NX");
      self->send(self->step(1,
                            [self, i](Msg& copied) {
                              // Not copied (the owner failed): the old copy is the only one.
                              if (copied.parts[0].type == '-') {
                                self->shared->warmup_errors.fetch_add(1, std::memory_order_relaxed);
                                return;
                              }
                              self->shared->warmup_removed.fetch_add(1, std::memory_order_relaxed);
                              self->send(self->step(1, [](Msg&) {}), 0, self->olds[i],
                                         command({"DEL", self->key}));
                            }),
                 0, self->owner, command(set));
    });
    send(s, 0, olds[i], command({"PTTL", key}));
    send(s, 1, olds[i], command({"GET", key}));
  }
  // Neither the new owner nor an old one had it: another reader may have moved it meanwhile (it
  // writes the new owner before it deletes the old copy), so the new owner is asked once more.
  void recheck() {
    auto self = shared_from_this();
    send(step(1, [self](Msg& r) { self->answer(r.parts[0]); }), 0, owner, command({"GET", key}));
  }

  // ---- Other reads ------------------------------------------------------------------------------
  void read_generic() {
    auto self = shared_from_this();
    auto s = step(2, [self](Msg& r) {
      std::int64_t n = 0;
      if (integer(r.parts[0], n) && n == 1) return self->answer(r.parts[1]);
      self->migrate([self] { self->run_at_owner(); });
    });
    send(s, 0, owner, command({"EXISTS", key}));
    send(s, 1, owner, request);
  }
  void run_at_owner() {
    auto self = shared_from_this();
    send(step(1, [self](Msg& r) { self->answer(r.parts[0]); }), 0, owner, request);
  }

  // ---- Writes -----------------------------------------------------------------------------------
  // The command at the new owner, DEL at every old one, at once; `del`: the answer counts a key
  // any of them had (DEL, UNLINK).
  void write_blind(bool del) {
    auto self = shared_from_this();
    const auto n = static_cast<std::uint32_t>(olds.size());
    auto s = step(1 + n, [self, del](Msg& r) {
      if (r.parts[0].type == '-') return self->answer(r.parts[0]);
      // A previous copy that could not be removed would be read back on a later miss (in a
      // fleet's prepare: by every proxy once it commits), so the write is not acknowledged.
      for (std::uint32_t k = 1; k < r.parts.size(); ++k) {
        if (r.parts[k].type != '-') continue;
        std::string text(r.parts[k].raw.view().substr(1));
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        return self->answer_bytes("-ERR warm-up: written at " + self->owner +
                                      ", but its previous copy at " + self->olds[k - 1] +
                                      " could not be removed: " + text + "\r\n",
                                  '-');
      }
      if (!del) return self->answer(r.parts[0]);
      std::int64_t any = 0, v = 0;
      for (const auto& p : r.parts) any |= integer(p, v) && v > 0 ? 1 : 0;
      self->answer_bytes(":" + std::to_string(any) + "\r\n", ':');
    });
    send(s, 0, owner, request);
    for (std::uint32_t i = 0; i < n; ++i) {
      shared->warmup_removed.fetch_add(1, std::memory_order_relaxed);
      send(s, 1 + i, olds[i], command({"DEL", key}));
    }
  }
  // EXISTS / TOUCH of one key: the new owner's answer, else the old ones' (nothing moves).
  void exists_anywhere() {
    auto self = shared_from_this();
    const auto n = static_cast<std::uint32_t>(olds.size());
    auto s = step(1 + n, [self](Msg& r) {
      std::int64_t any = 0, v = 0;
      for (const auto& p : r.parts) any |= integer(p, v) && v > 0 ? 1 : 0;
      self->answer_bytes(":" + std::to_string(any) + "\r\n", ':');
    });
    send(s, 0, owner, request);
    for (std::uint32_t i = 0; i < n; ++i) send(s, 1 + i, olds[i], command({"EXISTS", key}));
  }

  // ---- Migrate one key: then `done` -------------------------------------------------------------
  void migrate(std::function<void()> done) {
    auto self = shared_from_this();
    const auto n = static_cast<std::uint32_t>(olds.size());
    // new: EXISTS; each old: PTTL + DUMP.
    auto s = step(1 + 2 * n, [self, n, done = std::move(done)](Msg& r) {
      std::int64_t here = 0;
      const bool at_owner = integer(r.parts[0], here) && here == 1;
      std::vector<std::uint32_t> holders;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (r.parts[2 + 2 * i].type == '$' && !is_nil(r.parts[2 + 2 * i])) holders.push_back(i);
      }
      if (holders.empty()) return done();
      auto remove = [self, holders, done] {
        auto d = self->step(static_cast<std::uint32_t>(holders.size()), [done](Msg&) { done(); });
        for (std::uint32_t k = 0; k < holders.size(); ++k) {
          self->shared->warmup_removed.fetch_add(1, std::memory_order_relaxed);
          self->send(d, k, self->olds[holders[k]], command({"DEL", self->key}));
        }
      };
      if (at_owner) return remove();  // the new owner has a newer one: the old copies go
      std::string_view payload;
      bulk_payload(r.parts[2 + 2 * holders[0]], payload);
      std::int64_t ttl = 0;
      if (!integer(r.parts[1 + 2 * holders[0]], ttl) || ttl < 0) ttl = 0;  // 0: no expiry
      self->shared->warmup_copies.fetch_add(1, std::memory_order_relaxed);
      self->shared->warmup_reads.fetch_add(1, std::memory_order_relaxed);
      const std::string t = std::to_string(ttl);
      // Without REPLACE: BUSYKEY means a write got to the new owner first, which wins. Any
      // other refusal (a DUMP format the new owner cannot read) keeps the old copy.
      self->send(self->step(1,
                            [self, remove, done](Msg& restored) {
                              const std::string_view reply = restored.parts[0].raw.view();
                              if (restored.parts[0].type == '-' && !reply.starts_with("-BUSYKEY")) {
                                self->shared->warmup_errors.fetch_add(1, std::memory_order_relaxed);
                                return done();
                              }
                              remove();
                            }),
                 0, self->owner, command({"RESTORE", self->key, t, payload}));
    });
    send(s, 0, owner, command({"EXISTS", key}));
    for (std::uint32_t i = 0; i < n; ++i) {
      send(s, 1 + 2 * i, olds[i], command({"PTTL", key}));
      send(s, 2 + 2 * i, olds[i], command({"DUMP", key}));
    }
  }
};

std::shared_ptr<WarmOp> Client::warm_op(std::string_view key, NodeId owner,
                                        std::span<const NodeId> olds) {
  auto op = std::make_shared<WarmOp>();
  op->worker = &worker_;
  op->pool_index = pool_index_;
  op->shared = pool_->shared;
  op->key = std::string(key);
  op->owner = pool_->servers[owner].name;
  for (const NodeId o : olds) op->olds.push_back(pool_->servers[o].name);
  // As invalidate_first does for requests forwarded as they are (session_failover.cc).
  AbsenceLog& absence = pool_->states[owner]->absence;
  op->purge_first = absence.phase() == AbsenceLog::Phase::kFlipped && absence.take(key);
  if (op->purge_first) {
    op->purge_state = pool_->states[owner];
    op->purge_track = pool_->config.failover_track_keys;
  }
  return op;
}

std::size_t Client::moved(std::string_view key, NodeId owner, std::span<NodeId> olds) const {
  if (!pool_->warming() || owner == kNoNode) return 0;
  return pool_->previous_owners(key, owner, steady_ms(), olds);
}

bool Client::warm_key(const Command& cmd, std::string_view key, NodeId owner, const Ref<Msg>& m,
                      std::uint32_t part, Merge shape, std::string_view request) {
  NodeId olds[kMaxPreviousRoutings];
  const std::size_t n = moved(key, owner, olds);
  if (n == 0) return false;
  auto op = warm_op(key, owner, std::span<const NodeId>(olds, n));
  op->answer_to = m;
  op->answer_part = part;
  op->shape = shape;
  op->request.assign(request);
  if (cmd.route == Route::kKey) {
    for (std::size_t i = 0; i < parser_.argc(); ++i) op->argv.emplace_back(parser_.arg(in_, i));
  }
  // Safe failover: a write going to a fallback is noted before it is sent, as forward_one does
  // (the server it falls back for sweeps it on its return).
  if (!read_only(cmd)) note_fallback_write(key, owner);
  const std::string_view name = cmd.name;
  if (name == "get" || name == "mget") {
    op->begin([op] { op->get(); });
  } else if (name == "exists" || name == "touch") {
    op->begin([op] { op->exists_anywhere(); });
  } else if (name == "del" || name == "unlink") {
    op->begin([op] { op->write_blind(true); });
  } else if ((name == "set" && blind_set(op->argv)) || name == "setex" || name == "psetex" ||
             name == "mset") {
    op->begin([op] { op->write_blind(false); });
  } else if (read_only(cmd)) {
    op->begin([op] { op->read_generic(); });
  } else {
    op->begin([op] { op->migrate([op] { op->run_at_owner(); }); });
  }
  return true;
}

bool Client::warm_keys_then_forward(const Command& cmd, std::size_t argc, NodeId node,
                                    const Ref<Msg>& m) {
  if (!pool_->warming() || node == kNoNode) return false;
  // The command's keys, as permitted() finds them.
  std::size_t first = static_cast<std::size_t>(cmd.key_first), step = 1;
  std::size_t last = cmd.key_last < 0 ? argc - 1 : static_cast<std::size_t>(cmd.key_last);
  if (cmd.route == Route::kKeysSameNode) step = static_cast<std::size_t>(cmd.key_step);
  if (cmd.route == Route::kEval) {
    std::int64_t numkeys = 0;
    if (!parse_int(parser_.arg(in_, 2), numkeys) || numkeys <= 0) return false;
    first = 3;
    last = 2 + static_cast<std::size_t>(numkeys);
  }
  key_pos_.clear();
  for (std::size_t i = first; i <= last && i < argc; i += step)
    key_pos_.push_back(static_cast<std::uint32_t>(i));
  return warm_positions_then_forward(node, m);
}

bool Client::warm_transaction_then_send(NodeId node, const Ref<Msg>& m,
                                        std::vector<std::string> requests) {
  if (!pool_->warming() || node == kNoNode) return false;
  std::vector<std::shared_ptr<WarmOp>> ops;
  std::vector<std::string_view> stayed;  // not moved: a returned owner's noted ones, deleted
  NodeId olds[kMaxPreviousRoutings];
  for (std::size_t i = 0; i < tx_keys_.size(); ++i) {
    const std::string& key = tx_keys_[i].first;
    bool seen = false;
    for (std::size_t j = 0; j < i && !seen; ++j) seen = tx_keys_[j].first == key;
    if (seen) continue;
    const std::size_t n = moved(key, node, olds);
    if (n > 0) {
      ops.push_back(warm_op(key, node, std::span<const NodeId>(olds, n)));
    } else {
      stayed.push_back(key);
    }
  }
  if (ops.empty()) return false;
  invalidate_keys_first(node, stayed);
  auto sent = std::make_shared<std::vector<std::string>>(std::move(requests));
  auto left = std::make_shared<std::size_t>(ops.size());
  const std::shared_ptr<WarmOp> lead = ops.front();  // the worker, the pool, the owner's name
  for (const auto& o : ops) {
    o->begin([o, lead, left, m, sent] {
      o->migrate([lead, left, m, sent] {
        if (--*left != 0) return;
        std::string error;
        BackendConn* b = lead->worker->backend_named(lead->pool_index, lead->owner, error);
        for (std::size_t i = 0; i < sent->size(); ++i) {
          const auto part = static_cast<std::uint32_t>(i);
          if (b == nullptr) {
            m->fail_part(part, error_reply("ERR backend " + lead->owner + ": " + error));
          } else {
            b->send({(*sent)[i]}, m, part);
          }
        }
      });
    });
  }
  return true;
}

bool Client::warm_positions_then_forward(NodeId node, const Ref<Msg>& m) {
  if (!pool_->warming() || node == kNoNode) return false;
  std::vector<std::shared_ptr<WarmOp>> ops;
  std::vector<std::string_view> stayed;  // not moved: a returned owner's noted ones, deleted
  NodeId olds[kMaxPreviousRoutings];
  for (const std::uint32_t i : key_pos_) {
    const std::string_view key = parser_.arg(in_, i);
    const std::size_t n = moved(key, node, olds);
    if (n > 0) {
      ops.push_back(warm_op(key, node, std::span<const NodeId>(olds, n)));
    } else {
      stayed.push_back(key);
    }
  }
  if (ops.empty()) return false;
  invalidate_keys_first(node, stayed);
  // The command waits for every moved key to be at its owner; then it is sent as it came.
  std::string scratch;
  auto op = ops.front();
  op->answer_to = m;
  op->request.assign(request_bytes(scratch));
  auto left = std::make_shared<std::size_t>(ops.size());
  for (const auto& o : ops) {
    o->begin([o, op, left] {
      o->migrate([op, left] {
        if (--*left == 0) op->run_at_owner();
      });
    });
  }
  return true;
}

}  // namespace chash::proxy::redis
