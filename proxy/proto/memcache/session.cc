// SPDX-License-Identifier: Apache-2.0
#include "proto/memcache/session.h"

#include <algorithm>

#include "core/worker.h"

namespace chash::proxy::memcache {

namespace {

// Why each refused memcached command is not proxied.
std::string_view refusal(std::string_view name) noexcept {
  if (name == "flush_all" || name == "stats" || name == "cache_memlimit" || name == "lru_crawler" ||
      name == "slabs" || name == "lru" || name == "extstore") {
    return "it acts on every server; ask the memcached servers directly";
  }
  return "a server command; ask the memcached servers directly";
}

void append_uint(std::string& out, std::uint64_t v) { out += std::to_string(v); }

// memcached reads an exptime above 30 days as a Unix time.
constexpr std::int64_t kRelativeMax = 60 * 60 * 24 * 30;

}  // namespace

std::string server_error(std::string_view text) {
  std::string out = "SERVER_ERROR ";
  for (const char c : text) out += (c == '\r' || c == '\n') ? ' ' : c;  // one line
  out += "\r\n";
  return out;
}

// ---- Msg ----------------------------------------------------------------------------------------

void Msg::Part::settle() {
  // A part that waits (another part, an earlier reply) keeps its blocks in the backend's chunks
  // only when they are many bytes; small ones are copied out so that they pin nothing.
  if (held == 0 || held >= net::kHoldMin) {
    line.settle();
    return;
  }
  own.reserve(own.size() + held);
  for (Value& v : values) {
    if (v.data == nullptr) continue;
    v.off = own.size();
    own.append(v.data, v.len);
    v.data = nullptr;
    v.chunk.reset();
  }
  held = 0;
  line.settle();
}

void Msg::add_value(std::uint32_t part, net::Slice block, memcache::Span key) {
  Part& p = parts[part];
  Value v;
  v.data = block.bytes.data();
  v.len = block.bytes.size();
  v.key_off = static_cast<std::uint32_t>(key.off);
  v.key_len = static_cast<std::uint32_t>(key.len);
  v.chunk = std::move(block.chunk);
  p.held += v.len;
  p.values.push_back(std::move(v));
}

void Msg::end_part(std::uint32_t part) {
  if (!reads.empty() && read_on(part)) return;
  if (--outstanding == 0) {
    finish();
  } else {
    parts[part].settle();
  }
}

void Msg::line_part(std::uint32_t part, net::Slice line, bool error) {
  Part& p = parts[part];
  p.line.hold(std::move(line));
  p.values.clear();
  p.own.clear();
  p.held = 0;
  p.error = error || retrieval;  // a retrieval answered by one line is an error
  if (!reads.empty() && read_on(part)) return;
  if (--outstanding == 0) {
    finish();
  } else {
    p.settle();
  }
}

void Msg::quiet_reply(std::uint32_t part, net::Slice line, bool error) {
  Part& p = parts[part];
  p.line.hold(std::move(line));
  p.error = error;
}

void Msg::quiet_end(std::uint32_t part) {
  if (!reads.empty() && read_on(part)) return;
  if (--outstanding == 0) {
    finish();
  } else {
    parts[part].settle();
  }
}

Client* Msg::owner() const noexcept {
  if (client != nullptr) return static_cast<Client*>(client);
  return parent ? parent->owner() : nullptr;
}

void Msg::fail_part(std::uint32_t part, std::string_view error) {
  Part& p = parts[part];
  p.line.copy(error);
  p.values.clear();
  p.own.clear();
  p.held = 0;
  p.error = true;
  if (!reads.empty() && read_on(part)) return;
  if (--outstanding == 0) finish();
}

void Msg::answer_part(std::uint32_t part, std::string_view bytes) {
  Part& p = parts[part];
  p.values.clear();
  p.own.clear();
  p.held = 0;
  p.error = false;
  if (retrieval) {
    if (!bytes.empty()) {
      // "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n": the key is the second token.
      const std::size_t key_end = bytes.find(' ', 6);
      Value v;
      v.off = 0;
      v.len = bytes.size();
      v.key_off = 6;
      v.key_len = static_cast<std::uint32_t>(key_end == std::string_view::npos ? 0 : key_end - 6);
      p.own.assign(bytes);
      p.values.push_back(std::move(v));
    }
  } else {
    p.line.copy(bytes);
  }
  if (--outstanding == 0) finish();
}

void Msg::answer_part_from(std::uint32_t part, const Msg& from) {
  for (const Part& p : from.parts) {
    if (p.error) {
      fail_part(part, p.line.view());
      return;
    }
  }
  Part& to = parts[part];
  to.values.clear();
  to.own.clear();
  to.held = 0;
  to.error = false;
  auto take = [&to](const Part& p, const Value& v) {
    const std::string_view block = v.block(p.own);
    Value c;
    c.off = to.own.size();
    c.len = block.size();
    c.key_off = v.key_off;
    c.key_len = v.key_len;
    to.own.append(block);
    to.values.push_back(c);
  };
  if (from.parts.size() == 1) {
    for (const Value& v : from.parts[0].values) take(from.parts[0], v);
  } else {
    // As emit() merges them: a key its part did not return is a miss.
    std::vector<std::size_t> cursor(from.parts.size(), 0);
    for (const auto& [at, key] : from.key_map) {
      const Part& p = from.parts[at];
      std::size_t& c = cursor[at];
      if (c >= p.values.size()) continue;
      const Value& v = p.values[c];
      if (v.block(p.own).substr(v.key_off, v.key_len) == key.in(from.keys)) {
        take(p, v);
        ++c;
      }
    }
  }
  if (--outstanding == 0) finish();
}

void Msg::finish() {
  if (write != nullptr) answer_write();
  if (hot_pool != nullptr) {  // a write is answered: see hot_written
    hot_pool->hot.wrote(hot_written);
    for (const std::string& k : hot_written_more) hot_pool->hot.wrote(k);
    hot_pool.reset();
  }
  if (then) {  // a step of the proxy's own: its parts are for `then`
    auto f = std::move(then);
    then = nullptr;
    f(*this);
    return;
  }
  if (retrieval && !silent) {
    // The first failed part answers the whole request, as one backend would (memcached
    // clients read a SERVER_ERROR line in place of VALUE ... END).
    const auto failed =
        std::find_if(parts.begin(), parts.end(), [](const Part& p) { return p.error; });
    if (failed != parts.end()) failed_ = &*failed;
  }
  if (!hot_key.empty() && client != nullptr) static_cast<Client*>(client)->hot_fill(*this);
  finish_now();
}

void Msg::emit(net::OutQueue& out) {
  if (!fixed_reply.empty()) {
    if (!silent) out.append(fixed_reply);
  } else if (is_binary) {
    emit_binary(out);
  } else if (silent) {
    // noreply: nothing
  } else if (!retrieval) {
    out.append(parts[0].line);
  } else if (failed_ != nullptr) {
    out.append(failed_->line);
  } else if (parts.size() == 1) {
    const Part& p = parts[0];
    for (const Value& v : p.values) out.append(v.chunk, v.block(p.own));
    out.append("END\r\n");
  } else {
    // Merged in the client's key order: a key the backend did not return is a miss.
    std::vector<std::size_t> cursor(parts.size(), 0);
    for (const auto& [part, key] : key_map) {
      const Part& p = parts[part];
      std::size_t& c = cursor[part];
      if (c >= p.values.size()) continue;
      const Value& v = p.values[c];
      const std::string_view block = v.block(p.own);
      if (block.substr(v.key_off, v.key_len) == key.in(keys)) {
        out.append(v.chunk, block);
        ++c;
      }
    }
    out.append("END\r\n");
  }
  parts.clear();  // the chunks go now
  failed_ = nullptr;
}

void Msg::settle() {
  for (Part& p : parts) p.settle();
}

// ---- Backend ------------------------------------------------------------------------------------

Backend::Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node)
    : BackendSession(worker, std::move(pool), node),
      parser_(std::max(pool_->config.max_value_bytes, pool_->config.max_request_bytes)) {}

std::string Backend::failure_reply(const std::string& why) const {
  return server_error("backend " + name() + ": " + why);
}

void Backend::on_input() {
  for (;;) {
    if (queue_.empty()) {
      if (!nothing_unasked(parser_.start())) return;  // failed the connection
      break;
    }
    auto& m =
        static_cast<Msg&>(*queue_.front().msg);  // memcache backends send no requests of their own
    if (!parser_started_) {
      parser_.expect_values(m.retrieval);
      parser_.expect_meta(m.meta);
      parser_started_ = true;
    }
    const memcache::ParseResult r = parser_.parse(in_.view());
    if (r == memcache::ParseResult::kNeedMore) break;
    if (r == memcache::ParseResult::kError) {
      fail(parser_.error());
      return;
    }
    const memcache::Span span = parser_.span();
    const bool quiet_mn = m.quiet && span.in(in_.view()) == "MN\r\n";
    // Replies stay in the read chunk: the Msg holds slices of it (no copy).
    net::Slice raw = in_.slice(span.off, span.len);
    if (parser_.kind() == memcache::ReplyKind::kValue) {
      m.add_value(queue_.front().part, std::move(raw),
                  {parser_.key().off - span.off, parser_.key().len});
      parser_.next();
      continue;
    }
    if (m.quiet && !quiet_mn) {
      // The quiet request's own reply (an error, a hit, ...): the part waits for our MN.
      m.quiet_reply(queue_.front().part, std::move(raw), parser_.is_error());
      parser_.next();
      continue;
    }
    Pending p = take_front();
    parser_started_ = false;
    record_success(*state_);
    if (m.quiet) {
      m.quiet_end(p.part);
    } else if (parser_.kind() == memcache::ReplyKind::kEnd) {
      m.end_part(p.part);
    } else {
      m.line_part(p.part, std::move(raw), parser_.is_error());
    }
    if (closed_) return;
    parser_.next();
  }
  drop_consumed(in_, parser_);
}

// ---- Client -------------------------------------------------------------------------------------

Client::Client(Worker& worker, std::size_t pool_index, int fd)
    : ClientSession(worker, pool_index, fd),
      limits_{pool_->config.max_value_bytes,
              std::min<std::size_t>(pool_->config.max_request_bytes, std::size_t{1} << 20)},
      parser_(limits_),
      bin_parser_(limits_) {}

void Client::process() {
  if (wire_ == Wire::kUnknown) {
    if (in_.empty()) return;
    wire_ =
        static_cast<unsigned char>(in_[0]) == binary::kRequestMagic ? Wire::kBinary : Wire::kText;
  }
  if (wire_ == Wire::kBinary) {
    parse_requests(
        bin_parser_, [&] { return std::string(bin_parser_.error()); },
        [&] { dispatch_binary_routed(); });
    return;
  }
  parse_requests(
      parser_, [&] { return std::string(parser_.error()); }, [&] { dispatch_routed(); });
}

// ---- Prefix routes ------------------------------------------------------------------------------
// mcrouter's PrefixSelectorRoute: a pool's `prefix_routes:` send a key to another memcache pool
// of the config by its prefix (Pool::prefix_route, the longest that matches). The request is
// dispatched as that pool's listener would dispatch it, with the session's pool switched to it
// meanwhile, so its router, health, absence logs, warm-up, replicas, failover, hot keys and
// shadow all apply as there. Replies keep the client's order whichever pool answers.

Client::PoolSwitch::PoolSwitch(Client& c, std::size_t slot) : c_(c), saved_index_(c.pool_index_) {
  if (slot == c.pool_index_) return;
  const std::shared_ptr<const Pool>& to = c.worker_.pool(slot);
  // Gone (a reload removed it) or no longer memcache: the request cannot go there.
  if (to == nullptr || to->config.protocol != PoolProtocol::kMemcache) {
    ok_ = false;
    return;
  }
  saved_ = c.pool_;
  c.pool_ = to;
  c.pool_index_ = slot;
  switched_ = true;
}

Client::PoolSwitch::~PoolSwitch() {
  if (!switched_) return;
  c_.pool_ = std::move(saved_);
  c_.pool_index_ = saved_index_;
}

void Client::dispatch_in(std::size_t slot, void (Client::*handler)()) {
  const PoolSwitch to(*this, slot);
  if (!to.ok()) {
    count_request();
    reply_local(server_error("prefix route: its pool is gone (reloaded away)"), true);
    return;
  }
  (this->*handler)();
}

void Client::dispatch_routed() {
  if (pool_->prefix_slots.empty()) {  // the common case: every key is the pool's own
    dispatch();
    return;
  }
  const std::string_view in(in_);
  std::string_view key;
  switch (parser_.command()) {
    case memcache::Command::kGet:
    case memcache::Command::kGets:
    case memcache::Command::kGat:
    case memcache::Command::kGats: {
      keys_.clear();
      key_slots_.clear();
      bool one = true;
      for (std::size_t i = parser_.first_key(); i < parser_.key_end(); ++i) {
        keys_.push_back(parser_.token(in, i));
        key_slots_.push_back(pool_->prefix_route(keys_.back()));
        one = one && key_slots_.back() == key_slots_.front();
      }
      if (keys_.empty()) break;  // "gat <exptime>": answered END
      if (!one) {
        count_request();
        retrieve_routed(keys_, key_slots_);
        return;
      }
      dispatch_in(key_slots_.front(), &Client::dispatch);
      return;
    }
    case memcache::Command::kSet:
    case memcache::Command::kAdd:
    case memcache::Command::kReplace:
    case memcache::Command::kAppend:
    case memcache::Command::kPrepend:
    case memcache::Command::kCas:
    case memcache::Command::kDelete:
    case memcache::Command::kIncr:
    case memcache::Command::kDecr:
    case memcache::Command::kTouch:
      key = parser_.token(in, 1);
      break;
    case memcache::Command::kMetaGet:
    case memcache::Command::kMetaSet:
    case memcache::Command::kMetaDelete:
    case memcache::Command::kMetaArithmetic:
    case memcache::Command::kMetaDebug:
      key = parser_.meta_key(in);  // a `b` key decoded: the key memcached stores
      break;
    case memcache::Command::kNone:
      if (parser_.unlink()) key = parser_.meta_key(in);  // deleted where it lives
      break;
    default:
      break;
  }
  if (key.empty()) {
    dispatch();
    return;
  }
  dispatch_in(pool_->prefix_route(key), &Client::dispatch);
}

void Client::dispatch_binary_routed() {
  const std::string_view key = bin_parser_.key(std::string_view(in_));
  if (pool_->prefix_slots.empty() || key.empty()) {
    dispatch_binary();
    return;
  }
  dispatch_in(pool_->prefix_route(key), &Client::dispatch_binary);
}

void Client::retrieve_routed(std::span<const std::string_view> keys,
                             std::span<const std::size_t> slots) {
  // One part per pool, answered by that pool's own retrieval of its keys (a Msg of the proxy's
  // whose `then` fills the part: Msg::answer_part_from); the blocks merge in the client's key
  // order under one END, and a key that failed answers the whole request, as in one pool. Per
  // key only what a one-pool get keeps (its place in key_map), whatever the number of keys.
  std::vector<std::size_t> group_slot;  // a handful: the pools named, in first-key order
  std::vector<std::uint32_t> key_group(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto g = std::find(group_slot.begin(), group_slot.end(), slots[i]);
    key_group[i] = static_cast<std::uint32_t>(g - group_slot.begin());
    if (g == group_slot.end()) group_slot.push_back(slots[i]);
  }
  const auto groups = static_cast<std::uint32_t>(group_slot.size());
  auto whole = new_msg(groups);
  whole->retrieval = true;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    whole->key_map.emplace_back(key_group[i], memcache::Span{whole->keys.size(), keys[i].size()});
    whole->keys += keys[i];
  }
  std::vector<std::string_view> its;
  for (std::uint32_t g = 0; g < groups; ++g) {
    its.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (key_group[i] == g) its.push_back(keys[i]);
    }
    auto share = make_ref<Msg>();
    share->parent = whole;
    share->then = [whole, g](Msg& d) {
      if (!d.hot_key.empty()) {
        if (Client* c = d.owner()) c->hot_fill(d);
      }
      whole->answer_part_from(g, d);
    };
    const PoolSwitch to(*this, group_slot[g]);
    if (!to.ok()) {
      whole->fail_part(g, server_error("prefix route: its pool is gone (reloaded away)"));
      continue;
    }
    share->slot = pool_index_;
    retrieve(its, share);
  }
}

Ref<Msg> Client::new_msg(std::uint32_t parts) {
  auto m = make_ref<Msg>();
  m->silent = parser_.noreply();
  m->slot = pool_index_;
  m->parts.resize(parts);
  m->outstanding = parts;
  push(m);
  return m;
}

bool Client::route(std::string_view key, const Ref<Msg>& m, NodeId& node) {
  node = pool_->route(key);
  // The common case without building the error text (a string per key of a multi-get).
  if (node != kNoNode && !pool_->states[node]->down.load(std::memory_order_relaxed)) return true;
  std::string why;
  if (backend_usable(*pool_, node, "key '" + std::string(key) + "'", why)) return true;
  pool_->shared->errors.fetch_add(1, std::memory_order_relaxed);
  count_forward_error();
  // The whole request fails (a multi-get's other parts are not sent).
  m->parts.assign(1, {});
  m->outstanding = 1;
  m->fail_part(0, server_error(why));
  return false;
}

void Client::forward(NodeId node, const Ref<Msg>& m, std::uint32_t part,
                     std::initializer_list<std::string_view> bytes,
                     std::span<const std::string_view> keys) {
  std::string error;
  BackendConn* b = worker_.backend(pool_index_, node, error);
  if (b == nullptr) {
    count_forward_error();
    m->fail_part(part, server_error("backend " + pool_->states[node]->name + ": " + error));
    return;
  }
  // Safe return (membership/failback.h): a key a returned backend missed is deleted there first.
  // A replicated pool's home that is up may have missed a write too (it failed it, or answered
  // otherwise: session_replicas.cc), and so may a failover pool's owner that failed a write that
  // its next owner took: their noted keys are deleted the same way.
  AbsenceLog& absence = pool_->states[node]->absence;
  const AbsenceLog::Phase phase = absence.phase();
  if (phase == AbsenceLog::Phase::kFlipped ||
      (phase == AbsenceLog::Phase::kNormal && (replicated() || failing_over()) &&
       absence.any_noted())) {
    for (const std::string_view k : keys) {
      if (!absence.take(k)) continue;
      auto s = make_ref<Msg>();
      s->parts.resize(1);
      s->outstanding = 1;
      // The server may still be failing (stopped, timing out): a delete it did not answer
      // leaves the key noted, or the value it missed would be served once it answers again.
      s->then = [pool = pool_, node, key = std::string(k)](Msg& d) {
        if (!d.parts.empty() && d.parts[0].error && node < pool->states.size()) {
          pool->states[node]->absence.note(key, pool->config.failover_track_keys);
        }
      };
      if (memcache::text_key_ok(k)) {
        b->send({"delete " + std::string(k) + "\r\n"}, s, 0);
      } else {  // a meta request's binary key (b flag): only md can name it
        std::string line = "md ";
        memcache::base64_encode(k, line);
        line += " b\r\n";
        s->meta = true;
        b->send({line}, s, 0);
      }
    }
  }
  b->send(bytes, m, part);
  // Shadow route: a copy once per request, after the request itself (a replicated pool's other
  // homes and next tries are the same request: not copied again). Retrievals: retrieve().
  if (pool_->shadow_slot != Pool::kNoShadow && keys.size() == 1 &&
      (m->reads.empty() ? part == 0 : m->reads[part].at == 0)) [[unlikely]] {
    shadow(keys[0], bytes, *m);
  }
}

std::int64_t Client::capped_exptime(std::int64_t exptime) const {
  const std::int64_t cap = (pool_->config.failover_ttl_ms + 999) / 1000;  // whole seconds
  if (exptime < 0) return exptime;                                        // expired at once already
  std::int64_t left = exptime;
  if (exptime > kRelativeMax) {
    left = exptime - std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  }
  return exptime == 0 || left > cap ? cap : exptime;
}

bool Client::note_fallback_write(std::string_view key, NodeId node) {
  return proxy::note_fallback_write(*pool_, key, node);
}

void Client::dispatch() {
  count_request();
  const std::string_view in(in_);
  const memcache::Command cmd = parser_.command();
  switch (cmd) {
    case memcache::Command::kNone:
      // Answered by the parser, as memcached would (or silenced by noreply).
      if (parser_.unlink()) {
        unlink_refused(parser_.meta_key(in));
        return;
      }
      if (!parser_.reply().empty()) reply_local(std::string(parser_.reply()), true);
      return;
    case memcache::Command::kVersion:
      reply_local(std::string(kVersionReply));
      return;
    case memcache::Command::kQuit:
      read_closed_ = true;
      reply_local({}, false, true);
      return;
    case memcache::Command::kUnsupported: {
      if (parser_.noreply()) return;
      const std::string_view name = parser_.token(in, 0);
      reply_local(server_error("unsupported command '" + std::string(name) +
                               "': " + std::string(refusal(name)) + " (chash-proxy)"),
                  true);
      return;
    }
    case memcache::Command::kMetaNoop:
      // Every earlier reply is in before this one goes out (the client's order), and each quiet
      // request was followed by an mn of the proxy's: its backend has said all it will.
      reply_local("MN\r\n");
      return;
    case memcache::Command::kMetaGet:
    case memcache::Command::kMetaSet:
    case memcache::Command::kMetaDelete:
    case memcache::Command::kMetaArithmetic:
    case memcache::Command::kMetaDebug:
      meta();
      return;
    case memcache::Command::kGet:
    case memcache::Command::kGets:
    case memcache::Command::kGat:
    case memcache::Command::kGats:
      retrieve();
      return;
    case memcache::Command::kSet:
    case memcache::Command::kAdd:
    case memcache::Command::kReplace:
    case memcache::Command::kAppend:
    case memcache::Command::kPrepend:
    case memcache::Command::kCas: {
      // Re-written from the parsed numbers (canonical, without noreply): the backend accepts
      // exactly what the proxy accepted, so it always reads the data block.
      const std::string_view key = parser_.token(in, 1);
      hot_note(key);
      auto m = new_msg(1);
      hot_wrote(key, m);  // before it is sent: no copy read under the old generation is served
      const bool rep = replicated();
      NodeId node = kNoNode;
      if (!rep && !route(key, m, node)) return;
      std::string line(parser_.token(in, 0));
      line += ' ';
      line += key;
      line += ' ';
      append_uint(line, parser_.flags());
      line += ' ';
      // Safe failover: a write that goes to a fallback is noted, and gets failover_ttl at most.
      std::int64_t exptime = parser_.exptime();
      if (!rep && note_fallback_write(key, node) && pool_->config.failover_ttl_ms != 0 &&
          cmd != memcache::Command::kAppend && cmd != memcache::Command::kPrepend) {
        exptime = capped_exptime(exptime);
      }
      const std::size_t exptime_at = line.size();
      line += std::to_string(exptime);
      const std::size_t exptime_end = line.size();
      line += ' ';
      const std::string_view data = parser_.data(in);
      append_uint(line, data.size());
      if (cmd == memcache::Command::kCas) {
        line += ' ';
        append_uint(line, parser_.cas_unique());
      }
      line += "\r\n";
      if (rep) {
        replicate(m, key, {line, data, "\r\n"},
                  cmd == memcache::Command::kCas ? ReplicaOp::kCas : ReplicaOp::kWrite);
        return;
      }
      if (pool_->warming() && warm(cmd, key, node, m, 0, line + std::string(data) + "\r\n")) return;
      // A cas compares the owner's cas value: no other server can take it (the owner's error
      // answers, and the client reads again).
      if (failing_over() && cmd != memcache::Command::kCas) {
        std::string retry;  // the next owners keep it failover_ttl at most, as safe failover does
        if (pool_->config.failover_ttl_ms != 0 && cmd != memcache::Command::kAppend &&
            cmd != memcache::Command::kPrepend) {
          retry = line.substr(0, exptime_at);
          retry += std::to_string(capped_exptime(parser_.exptime()));
          retry.append(line, exptime_end);
          retry += data;
          retry += "\r\n";
        }
        fail_over(m, key, node, {line, data, "\r\n"}, true, std::move(retry));
        return;
      }
      forward(node, m, 0, {line, data, "\r\n"}, {&key, 1});
      return;
    }
    case memcache::Command::kDelete:
    case memcache::Command::kIncr:
    case memcache::Command::kDecr:
    case memcache::Command::kTouch: {
      auto m = new_msg(1);
      const bool rep = replicated();
      NodeId node = kNoNode;
      if (!rep && !route(parser_.token(in, 1), m, node)) return;
      std::string line(parser_.token(in, 0));
      for (std::size_t i = 1; i < parser_.forward_end(); ++i) {
        line += ' ';
        line += parser_.token(in, i);
      }
      if (parser_.forward_zero()) line += " 0";
      line += "\r\n";
      const std::string_view key = parser_.token(in, 1);
      hot_note(key);
      hot_wrote(key, m);
      if (rep) {
        replicate(m, key, {line}, ReplicaOp::kWrite);
        return;
      }
      if (cmd != memcache::Command::kTouch) note_fallback_write(key, node);
      if (pool_->warming() && warm(cmd, key, node, m, 0, line)) return;
      if (failing_over()) {
        fail_over(m, key, node, {line}, true);
        return;
      }
      forward(node, m, 0, {line}, {&key, 1});
      return;
    }
  }
}

std::string Client::retrieval_prefix() const {
  const std::string_view in(in_);
  std::string prefix(parser_.token(in, 0));  // "get", or "gat <exptime>"
  for (std::size_t i = 1; i < parser_.first_key(); ++i) {
    prefix += ' ';
    prefix += parser_.token(in, i);
  }
  return prefix;
}

void Client::unlink_refused(std::string_view key) {
  auto m = new_msg(1);  // silent under noreply, as the refusal is
  m->fixed_reply = parser_.reply();
  hot_wrote(key, m);
  std::string line;
  if (memcache::text_key_ok(key)) {
    line = "delete " + std::string(key) + "\r\n";
  } else {  // a meta request's binary key: only md can name it
    line = "md ";
    memcache::base64_encode(key, line);
    line += " b\r\n";
    m->meta = true;
  }
  if (replicated()) {
    replicate(m, key, {line}, ReplicaOp::kWrite);
    return;
  }
  NodeId node = kNoNode;
  if (!route(key, m, node)) return;
  note_fallback_write(key, node);
  forward(node, m, 0, {line}, {&key, 1});
}

void Client::retrieve() {
  const std::string_view in(in_);
  const std::size_t first = parser_.first_key(), end = parser_.key_end();
  if (first == end) {  // "gat <exptime>" with no keys: memcached answers END
    reply_local("END\r\n");
    return;
  }
  keys_.clear();
  for (std::size_t i = first; i < end; ++i) keys_.push_back(parser_.token(in, i));
  retrieve(keys_, {});
}

void Client::retrieve(std::span<const std::string_view> keys, Ref<Msg> into) {
  Ref<Msg> m = into ? std::move(into) : new_msg(0);
  m->retrieval = true;
  // A failover pool asks each key's owners in turn (one part per key); while warming, a key
  // that moved is read through from its previous owner instead (warm(), in retrieve_replicated).
  if (replicated() || failing_over()) {
    retrieve_replicated(keys, m);
    return;
  }
  const std::string prefix = retrieval_prefix();
  // Group the keys by backend, keeping their order within each part; a backend's keys are cut
  // into lines of at most kMaxBackendLine bytes (one part each).
  constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::vector<std::uint32_t> open_part(pool_->states.size(),
                                       kNone);  // node -> its part being filled
  std::vector<NodeId> part_node;
  std::vector<std::string> lines;
  // A key that moved: a part of its own, answered by the warm-up (1); a hot key answered from
  // the worker's copy (2, its VALUE block in part_copy, "" for a miss).
  std::vector<char> warm_part;
  std::vector<std::string> part_copy;
  const bool copies = hot_retrieval(m, keys);
  const bool warming = pool_->warming();
  NodeId olds[kMaxPreviousRoutings];
  key_parts_.clear();
  for (const std::string_view key : keys) {
    hot_note(key);
    if (copies) {
      if (std::optional<std::string> copy = hot_copy(key)) {
        const auto part = static_cast<std::uint32_t>(part_node.size());
        key_parts_.push_back(part);
        part_node.push_back(kNoNode);
        lines.emplace_back();
        warm_part.push_back(2);
        part_copy.resize(part + 1);
        part_copy[part] = std::move(*copy);
        continue;
      }
    }
    NodeId node = kNoNode;
    if (!route(key, m, node)) return;
    if (warming && moved(key, node, olds) > 0) {
      key_parts_.push_back(static_cast<std::uint32_t>(part_node.size()));
      part_node.push_back(node);
      lines.push_back(prefix + " " + std::string(key));
      warm_part.push_back(1);
      continue;
    }
    std::uint32_t& part = open_part[node];
    if (part == kNone || lines[part].size() + 1 + key.size() + 2 > kMaxBackendLine) {
      part = static_cast<std::uint32_t>(part_node.size());
      part_node.push_back(node);
      lines.push_back(prefix);
      warm_part.push_back(0);
    }
    lines[part] += ' ';
    lines[part] += key;
    key_parts_.push_back(part);
  }
  const auto nparts = static_cast<std::uint32_t>(part_node.size());
  m->parts.resize(nparts);
  m->outstanding = nparts;
  count_fragments(nparts);
  if (nparts > 1) {
    // Merged in the client's key order (a single part comes back in that order already).
    for (std::size_t i = 0; i < keys.size(); ++i) {
      m->key_map.emplace_back(key_parts_[i], memcache::Span{m->keys.size(), keys[i].size()});
      m->keys += keys[i];
    }
  }
  if (copies && nparts == 1 && keys.size() == 1 && warm_part[0] == 0) hot_mark(m, keys[0]);
  std::vector<std::string_view> its;  // a part's keys, for a server with keys noted
  for (std::uint32_t p = 0; p < nparts; ++p) {
    if (warm_part[p] == 2) {
      m->answer_part(p, part_copy[p]);
      continue;
    }
    lines[p] += "\r\n";
    if (warm_part[p]) {
      const std::string key =
          lines[p].substr(prefix.size() + 1, lines[p].size() - prefix.size() - 3);
      if (warm(parser_.command(), key, part_node[p], m, p, lines[p])) continue;
    }
    // A server back from an absence (or a failover pool's owner that missed writes) has its
    // noted keys deleted before it answers for them (forward()): the part's keys, gathered only
    // when that server has any noted.
    its.clear();
    const AbsenceLog& absence = pool_->states[part_node[p]]->absence;
    if (absence.phase() == AbsenceLog::Phase::kFlipped || absence.any_noted()) {
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (key_parts_[i] == p) its.push_back(keys[i]);
      }
    }
    forward(part_node[p], m, p, {lines[p]}, its);
  }
  if (pool_->shadow_slot != Pool::kNoShadow) [[unlikely]] shadow_retrieval(*m, prefix, keys);
}

}  // namespace chash::proxy::memcache
