// SPDX-License-Identifier: Apache-2.0
// chash-proxy — hot keys in a memcache pool (proxy/hotkeys/hot_keys.h, docs/HOTKEYS.md): keys
// sampled into the worker's sketch; reads of hot keys answered from the worker's short-TTL copy
// of the item (or of the miss) — text `get`, `mg` with the flags a copy can answer, and binary
// get/getq/getk/getkq; and every write (storage commands, delete, incr, decr, touch, gat/gats,
// ms/md/ma, mg with T/N/R, every binary write) invalidating its key before it is sent and again
// when it is answered. gets, and mg flags only the server knows (c, t, h, l, ...) are forwarded.
//
// A copy is stored (HotKeys keeps opaque bytes) as "" for a miss, else a kHead-byte header and
// then the VALUE block a text `get` answers with:
//   [0]      what the reply it came from showed (kHasCas, kPlain, kKeyKnown, kKeyBinary below)
//   [1..8]   the item's CAS (big-endian), when kHasCas
//   [9..12]  its client flags; [13..16] its value's length
// A text get's reply shows neither the CAS nor the item's meta state, so a copy filled from one
// answers text gets only; one filled from an mg reply (`f` and `v` asked) can answer mg and, when
// the reply carried `c`, binary gets too.
#include <algorithm>
#include <charconv>

#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

namespace {

constexpr std::size_t kHead = 17;
// The reply carried `c`: bytes 1..8 are the item's CAS (a binary get's response needs it).
constexpr std::uint8_t kHasCas = 1;
// An mg reply without Z, X or W: the item was neither stale (md/ms with I) nor had a recache
// token out. memcached appends those to every mg hit it applies to (protocol.txt, "Meta Get":
// "W: client has "won" the recache flag", "X: item is stale", "Z: item has already sent a
// winning flag"), so a copy may answer an mg only when it knows they are absent.
constexpr std::uint8_t kPlain = 2;
// The reply carried `k`: whether the item's key is binary (stored with ms `b`) is known. An mg
// hit's `k` returns the key base64-encoded, followed by ` b`, exactly when it is (memcached
// prints the item's own state, not the request's `b`).
constexpr std::uint8_t kKeyKnown = 4;
constexpr std::uint8_t kKeyBinary = 8;

void put_be(char* p, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}
std::uint64_t get_be(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

// A copy as stored (see the top). A miss has `miss` set and nothing else.
struct Record {
  bool miss = true;
  std::uint8_t tags = 0;
  std::uint64_t cas = 0;
  std::uint32_t flags = 0;
  std::string_view data;
};
Record parse_record(std::string_view copy) {
  Record r;
  if (copy.size() < kHead) return r;
  r.miss = false;
  r.tags = static_cast<std::uint8_t>(copy[0]);
  r.cas = get_be(copy.data() + 1, 8);
  r.flags = static_cast<std::uint32_t>(get_be(copy.data() + 9, 4));
  const std::size_t size = get_be(copy.data() + 13, 4);
  // The block ends "<data>\r\n".
  if (copy.size() >= kHead + size + 2) r.data = copy.substr(copy.size() - 2 - size, size);
  return r;
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

// `k`'s output: " k<key>", or " k<base64> b" for a binary key (memcached's META_KEY).
void append_key(std::string& out, std::string_view key, bool binary) {
  out += " k";
  if (!binary) {
    out += key;
    return;
  }
  base64_encode(key, out);
  out += " b";
}

// A number flag's value in a meta reply line's tokens (`f`, `c`); false when absent.
bool reply_number(std::string_view token, char flag, std::uint64_t& out) {
  return token.size() > 1 && token[0] == flag && parse_u64(token.substr(1), out);
}

}  // namespace

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
  if (m->hot_written.empty()) {
    m->hot_written.assign(key);
  } else {
    m->hot_written_more.emplace_back(key);  // a gat of several keys
  }
}

bool Client::hot_retrieval(const Ref<Msg>& m, std::span<const std::string_view> keys) {
  const Command cmd = parser_.command();
  if ((cmd == Command::kGat || cmd == Command::kGats) && pool_->config.hot_cache.enabled) {
    // gat/gats set a new exptime: one in the past (or -1) ends the item now, which a copy would
    // outlive by up to its ttl; touch and the binary gat/touch and mg T invalidate for the same
    // reason (a TTL that keeps the item changes nothing a copy answers, but the proxy cannot
    // tell the two apart without the server's clock).
    for (const std::string_view key : keys) hot_wrote(key, m);
  }
  return cmd == Command::kGet && hot_caching();
}

std::optional<std::string> Client::hot_copy(std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  std::optional<std::string> copy = hot.lookup(worker_.index(), key, steady_ms());
  if (!copy) return copy;
  hot.counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
  if (!copy->empty()) copy->erase(0, kHead);  // the VALUE block (no reallocation)
  return copy;
}

void Client::hot_mark(const Ref<Msg>& m, std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  if (!hot.hot(worker_.index(), key)) return;
  hot.counters.cache_misses.fetch_add(1, std::memory_order_relaxed);
  m->hot_key.assign(key);
  m->hot_stamp = hot.stamp(key);  // before the get is sent: a write after it makes it stale
}

bool Client::hot_meta_get(const Ref<Msg>& m, std::string_view key) {
  const std::string_view in(in_);
  // The flags a copy answers alone (memcached 1.6.18 protocol.txt, "Meta Get"): v (value),
  // f (client flags), s (item size), k (key), O (opaque, echoed), q (noreply semantics for
  // EN: a hit is still answered), b (the key is base64). Every other flag needs the server's
  // item: c (CAS), t (TTL left), h (fetched before), l (seconds since last access), u (no LRU
  // bump: harmless, but kept to the server with the rest), and T/N/R, which change the item
  // (handled as writes in meta()). An opaque over 32 bytes is memcached's error to answer.
  bool want_key = false;
  for (std::size_t i = 2; i < parser_.token_count(); ++i) {
    const std::string_view t = parser_.token(in, i);
    switch (t[0]) {
      case 'v':
      case 'f':
      case 's':
      case 'q':
      case 'b':
        break;
      case 'k':
        want_key = true;
        break;
      case 'O':
        if (t.size() > 32) return false;
        break;
      default:
        return false;
    }
  }
  hotkeys::HotKeys& hot = pool_->shared->hot;
  const std::optional<std::string> copy = hot.lookup(worker_.index(), key, steady_ms());
  if (!copy) return false;
  const Record rec = parse_record(*copy);
  if (!rec.miss && ((rec.tags & kPlain) == 0 || (want_key && (rec.tags & kKeyKnown) == 0))) {
    return false;  // a text get's copy (or one that never showed the key): the server answers
  }
  hot.counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
  if (rec.miss && parser_.quiet()) {
    m->answer_part(0, {});  // q: memcached leaves out EN
    return true;
  }
  // What memcached's process_mget_command writes: "VA <size>" (v) or "HD" on a hit, "EN" on a
  // miss, then each flag's output in the order the request gives them, then the data block.
  const bool value = parser_.has_flag('v');
  std::string reply;
  reply.reserve(64 + key.size() * 2 + (value ? rec.data.size() : 0));
  if (rec.miss) {
    reply = "EN";
  } else if (value) {
    reply = "VA ";
    append_number(reply, rec.data.size());
  } else {
    reply = "HD";
  }
  for (std::size_t i = 2; i < parser_.token_count(); ++i) {
    const std::string_view t = parser_.token(in, i);
    switch (t[0]) {
      case 'O':  // the token as given
        reply += ' ';
        reply += t;
        break;
      case 'k':  // a miss prints the key as the request gave it, a hit as the item has it
        append_key(reply, key, rec.miss ? parser_.key_binary() : (rec.tags & kKeyBinary) != 0);
        break;
      case 'f':
        if (rec.miss) break;
        reply += " f";
        append_number(reply, rec.flags);
        break;
      case 's':
        if (rec.miss) break;
        reply += " s";
        append_number(reply, rec.data.size());
        break;
      default:
        break;
    }
  }
  reply += "\r\n";
  if (!rec.miss && value) {
    reply += rec.data;
    reply += "\r\n";
  }
  m->answer_part(0, reply);
  return true;
}

bool Client::hot_binary_get(const Ref<Msg>& m, std::string_view key) {
  hotkeys::HotKeys& hot = pool_->shared->hot;
  const std::optional<std::string> copy = hot.lookup(worker_.index(), key, steady_ms());
  if (!copy) return false;
  const Record rec = parse_record(*copy);
  // A binary get's response carries the item's CAS (memcached's protocol_binary.h: every
  // response header has one). A copy from a text get has none, and a made-up one would make the
  // client's next CAS store fail or, worse, look like a value it never read: such a copy is not
  // used, the get goes to the server, and its reply (mg ... c) refills the copy with the CAS.
  // The CAS kept is the server's as of the read: any write through this proxy changes it and
  // invalidates the copy first; a write made elsewhere is seen within ttl, as the value is.
  if (!rec.miss && (rec.tags & kHasCas) == 0) return false;
  hot.counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
  // Answered as the server's meta reply would be (Msg::emit_binary turns it into the response:
  // flags in extras, the key for getk, the client's opaque, a quiet miss left out).
  std::string reply;
  if (rec.miss) {
    reply = "EN\r\n";
  } else {
    reply.reserve(64 + rec.data.size());
    reply = "VA ";
    append_number(reply, rec.data.size());
    reply += " f";
    append_number(reply, rec.flags);
    reply += " c";
    append_number(reply, rec.cas);
    reply += "\r\n";
    reply += rec.data;
    reply += "\r\n";
  }
  m->answer_part(0, reply);
  return true;
}

void Client::hot_fill(const Msg& m) {
  if (m.parts.size() != 1 || m.parts[0].error) return;
  const PoolSwitch to(*this, m.slot);  // the pool it was read in (a prefix route's)
  if (!to.ok()) return;
  const Msg::Part& p = m.parts[0];
  std::string copy;  // "" for a miss
  if (m.meta) {
    // An mg's reply (a text client's, or a binary get's `mg <key> f v c`).
    const std::string_view r = p.line.view();
    if (r.starts_with("EN")) {
      // A miss is a miss whatever the flags (N, which would create the item, is not marked).
    } else if (r.starts_with("VA ")) {
      const std::size_t nl = r.find("\r\n");
      if (nl == std::string_view::npos) return;
      const std::string_view line = r.substr(0, nl);
      std::size_t at = 3;
      std::size_t end = std::min(line.find(' ', at), line.size());
      std::uint64_t size = 0;
      if (!parse_u64(line.substr(at, end - at), size) || r.size() < nl + 2 + size + 2) return;
      std::uint8_t tags = kPlain;
      std::uint64_t cas = 0, flags = 0, v = 0;
      bool have_flags = false;
      for (at = end; at < line.size(); at = end) {
        while (at < line.size() && line[at] == ' ') ++at;
        end = std::min(line.find(' ', at), line.size());
        const std::string_view t = line.substr(at, end - at);
        if (t == "W" || t == "X" || t == "Z") {
          tags &= static_cast<std::uint8_t>(~kPlain);
        } else if (t == "b") {
          tags |= kKeyBinary;
        } else if (!t.empty() && t[0] == 'k') {
          tags |= kKeyKnown;
        } else if (reply_number(t, 'c', v)) {
          tags |= kHasCas;
          cas = v;
        } else if (reply_number(t, 'f', v)) {
          have_flags = true;
          flags = v;
        }
      }
      // The copy must answer a text get too, which prints the client flags.
      if (!have_flags || flags > 0xffffffffu) return;
      const std::string_view data = r.substr(nl + 2, size);
      copy.resize(kHead);
      copy[0] = static_cast<char>(tags);
      put_be(copy.data() + 1, cas, 8);
      put_be(copy.data() + 9, flags, 4);
      put_be(copy.data() + 13, size, 4);
      copy += "VALUE ";
      copy += m.hot_key;
      copy += ' ';
      append_number(copy, flags);
      copy += ' ';
      append_number(copy, size);
      copy += "\r\n";
      copy += data;
      copy += "\r\n";
    } else {
      return;  // HD (no value asked), an error, a quiet miss's silence
    }
  } else {
    if (p.values.size() > 1) return;
    // The VALUE block as the client gets it, or "" for a miss (END alone). Its header says
    // nothing is known beyond it: such a copy answers text gets only.
    if (!p.values.empty()) {
      const std::string_view block = p.values[0].block(p.own);
      copy.reserve(kHead + block.size());
      copy.assign(kHead, '\0');
      copy += block;
    }
  }
  pool_->shared->hot.fill(worker_.index(), m.hot_key, copy, m.hot_stamp, steady_ms());
}

}  // namespace chash::proxy::memcache
