// SPDX-License-Identifier: Apache-2.0
// chash-proxy — memcached's binary protocol for memcache pools (proto/memcache/binary.h).
//
// The backends keep speaking text: each binary packet becomes the meta command that does the
// same (meta commands carry what the classic ones cannot: CAS on delete, flags and CAS back from
// a store, vivify-on-miss for incr), routed by its key exactly as `get` routes it, so a text and
// a binary client see one placement and one set of items (flags and CAS included):
//   get getq getk getkq     mg <key> f v c            VA -> value, flags, CAS; EN -> Not found
//   gat gatq gatk gatkq     mg <key> T<exp> f v c
//   touch                   mg <key> T<exp> f c       HD -> flags; EN -> Not found
//   set add replace (+q)    ms <key> <n> F<flags> T<exp> c MS|ME|MR [C<cas>]
//   append prepend (+q)     ms <key> <n> c MA|MP [C<cas>]
//   delete(q)               md <key> [C<cas>]
//   incr decr (+q)          ma <key> v c MI|MD D<delta> [N<exp> J<initial>] [C<cas>]
//                           (exptime 0xffffffff: no N, so a miss is Not found, as memcached)
// The proxy answers noop, version and quit(q) itself, in order. flush, stat and verbosity are
// refused as their text forms are (they act on every server): status 0x0083 with the reason;
// the SASL opcodes get 0x0081 with a message saying SASL is not offered; other opcodes 0x0081.
//
// Keys: a binary key may hold any byte. One the text protocol can carry goes as it is; any
// other (a space, a control character, a byte the text parser refuses) is sent base64-encoded
// with meta's `b` flag, which memcached stores under the decoded bytes — so it is the same item
// a text client's `mg <base64> b` reads, on the server the raw key routes to. memcached checks
// the 250-byte limit on the encoded token, so such a key may have at most 187 bytes; a longer
// one, an empty one, or any key over 250 bytes is refused with 0x0004 Invalid arguments.
//
// Order: the backend is not sent `q`: it answers every request, and the proxy drops the
// nominal answers of quiet opcodes when it writes the responses in request order (Msg::emit),
// so a noop (answered locally after every earlier reply) ends a quiet batch as on memcached,
// whichever backends the batch went to.
#include <charconv>

#include "core/worker.h"
#include "proto/memcache/session.h"

namespace chash::proxy::memcache {

namespace {

using namespace binary;  // NOLINT(google-build-using-namespace): op:: and status:: read better

// The key of a meta command for `key`: as it is, or base64 with `b` (see the top).
struct MetaKey {
  bool b64 = false;
  bool ok = true;
};

MetaKey add_key(std::string& line, std::string_view key) {
  MetaKey k;
  if (key.empty() || key.size() > kMaxKeyLength) {
    k.ok = false;
  } else if (text_key_ok(key)) {
    line += key;
  } else {
    k.b64 = true;
    const std::size_t before = line.size();
    base64_encode(key, line);
    k.ok = line.size() - before <= kMaxKeyLength;
  }
  return k;
}

void add_number(std::string& line, char flag, std::uint64_t v) {
  char buf[24];
  buf[0] = ' ';
  buf[1] = flag;
  const auto r = std::to_chars(buf + 2, buf + sizeof buf, v);
  line.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

// The return flag `f` (client flags) or `c` (CAS) of a meta reply line, 0 when absent.
std::uint64_t reply_flag(std::string_view line, char flag) {
  for (std::size_t i = 0; i < line.size();) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t end = std::min(line.find(' ', i), line.size());
    if (end - i > 1 && line[i] == flag) {
      std::uint64_t v = 0;
      std::from_chars(line.data() + i + 1, line.data() + end, v);
      return v;
    }
    i = end;
  }
  return 0;
}

// A text error line as a binary status: memcached's own mapping of the same outcomes.
std::uint16_t error_status(std::string_view text) {
  if (text.starts_with("SERVER_ERROR object too large")) return status::kTooLarge;
  if (text.starts_with("SERVER_ERROR out of memory")) return status::kOutOfMemory;
  if (text.find("non-numeric") != std::string_view::npos) return status::kNonNumeric;
  if (text.starts_with("CLIENT_ERROR")) return status::kInvalidArguments;
  return status::kInternalError;  // SERVER_ERROR backend ...: down, timed out, failed
}

bool is_get(std::uint8_t loud_op) {
  return loud_op == op::kGet || loud_op == op::kGetK || loud_op == op::kGat || loud_op == op::kGatK;
}

}  // namespace

// ---- Msg: the meta reply as a binary response ----------------------------------------------------

void Msg::emit_binary(net::OutQueue& out) {
  const Part& p = parts[0];
  const std::string_view r = p.line.view();
  const std::uint8_t loud_op = loud(bin_opcode);
  const bool quiet_op = is_quiet(bin_opcode);
  // Header + extras (at most 8 bytes) + a getk's key, built on the stack: no allocation for a
  // hit's header, and the value is queued from the backend's read chunk without a copy.
  char head[kHeaderSize + 8 + kMaxKeyLength];
  auto respond = [&](std::uint16_t st, std::uint64_t cas, std::string_view extras,
                     std::string_view key, std::string_view value) {
    encode_header(head, bin_opcode, st, bin_opaque, cas, extras.size(), key.size(),
                  extras.size() + key.size() + value.size());
    std::size_t n = kHeaderSize;
    extras.copy(head + n, extras.size());
    n += extras.size();
    key.copy(head + n, key.size());
    n += key.size();
    out.append(std::string_view(head, n));
    // A value from the reply is queued from its chunk; a text of ours is copied.
    const bool in_reply = value.data() >= r.data() && value.data() + value.size() <= r.end();
    if (in_reply) {
      out.append(p.line.chunk(), value);
    } else {
      out.append(value);
    }
  };
  const std::size_t nl = r.find("\r\n");
  const std::string_view line = r.substr(0, nl);
  const std::string_view code = line.substr(0, 2);
  const std::string_view key =
      loud_op == op::kGetK || loud_op == op::kGatK ? std::string_view(bin_key) : std::string_view();
  if (bin_too_large) {
    respond(status::kTooLarge, 0, {}, {}, "Too large.");  // the md's reply does not matter
  } else if (p.error || !(line.size() == 2 || (line.size() > 2 && line[2] == ' '))) {
    respond(error_status(line), 0, {}, {}, line);  // errors answer quiet opcodes too
  } else if (code == "VA" &&
             (is_get(loud_op) || loud_op == op::kIncrement || loud_op == op::kDecrement)) {
    // VA <size> <flags>*\r\n<data>\r\n
    std::size_t size = 0;
    const std::size_t size_end = std::min(line.find(' ', 3), line.size());
    std::from_chars(line.data() + 3, line.data() + size_end, size);
    const std::string_view data = r.substr(nl + 2, size);
    const std::uint64_t cas = reply_flag(line.substr(size_end), 'c');
    if (is_get(loud_op)) {
      char flags[4];
      put_be32(flags, static_cast<std::uint32_t>(reply_flag(line.substr(size_end), 'f')));
      respond(status::kSuccess, cas, std::string_view(flags, 4), key, data);
    } else if (!quiet_op) {
      // The counter as a 64-bit big-endian number.
      std::uint64_t v = 0;
      std::from_chars(data.data(), data.data() + data.size(), v);
      encode_header(head, bin_opcode, status::kSuccess, bin_opaque, cas, 0, 0, 8);
      put_be32(head + kHeaderSize, static_cast<std::uint32_t>(v >> 32));
      put_be32(head + kHeaderSize + 4, static_cast<std::uint32_t>(v));
      out.append(std::string_view(head, kHeaderSize + 8));
    }
  } else if (code == "HD") {
    if (loud_op == op::kTouch) {
      char flags[4];
      put_be32(flags, static_cast<std::uint32_t>(reply_flag(line, 'f')));
      respond(status::kSuccess, reply_flag(line, 'c'), std::string_view(flags, 4), {}, {});
    } else if (!quiet_op) {
      respond(status::kSuccess, reply_flag(line, 'c'), {}, {}, {});
    }
  } else if (code == "EN" || code == "NF") {
    // A miss. getk answers with its key and no text, the others with "Not found".
    if (!(quiet_op && is_get(loud_op))) {
      respond(status::kKeyNotFound, 0, {}, key, key.empty() ? "Not found" : "");
    }
  } else if (code == "EX") {
    respond(status::kKeyExists, 0, {}, {}, "Data exists for key.");
  } else if (code == "NS") {
    // ms in add mode finds the key there; replace finds none; append/prepend store nothing.
    if (loud_op == op::kAdd) {
      respond(status::kKeyExists, 0, {}, {}, "Data exists for key.");
    } else if (loud_op == op::kReplace) {
      respond(status::kKeyNotFound, 0, {}, {}, "Not found");
    } else {
      respond(status::kNotStored, 0, {}, {}, "Not stored.");
    }
  } else {
    respond(status::kInternalError, 0, {}, {}, line);
  }
  parts.clear();  // the chunks go now
}

// ---- Client: a binary packet --------------------------------------------------------------------

void Client::binary_local(std::uint16_t st, std::string_view body, bool close_after) {
  std::string r;
  append_response(r, bin_parser_.opcode(), st, bin_parser_.opaque(), 0, {}, {}, body);
  reply_local(std::move(r), st != status::kSuccess, close_after);
}

void Client::dispatch_binary() {
  count_request();
  const std::string_view in(in_);
  const std::uint8_t opcode = bin_parser_.opcode();
  const std::uint8_t loud_op = loud(opcode);
  const std::string_view extras = bin_parser_.extras(in);
  const std::string_view key = bin_parser_.key(in);
  const std::string_view value = bin_parser_.value(in);
  // The shape memcached requires of each opcode: extras length, key, value.
  auto shape = [&](std::size_t ext, bool has_value) {
    return extras.size() == ext && !key.empty() && (has_value || value.empty());
  };
  constexpr std::string_view kInvalid = "Invalid arguments";
  Command cmd = Command::kMetaGet;
  std::string line;  // one allocation, for keyed requests only (noop/version make none)
  auto begin = [&](std::string_view verb) {
    line.reserve(64 + key.size() * 4 / 3);
    line = verb;
  };
  MetaKey mk;
  bool write = false;
  bool with_data = false;
  bool too_large = false;  // a set over max_value_bytes: sent as md, answered Too large
  std::int64_t ttl = -1;   // set/add/replace: the exptime, written after the key is routed
  std::string tail;        // ms: what follows T
  switch (loud_op) {
    case op::kNoop:
      // After every earlier response (reply order): the end of a quiet batch.
      binary_local(status::kSuccess, {});
      return;
    case op::kVersion:
      binary_local(status::kSuccess,
                   kVersionReply.substr(8, kVersionReply.size() - 10));  // "1.6.18-chash-proxy"
      return;
    case op::kQuit:
      read_closed_ = true;
      if (is_quiet(opcode)) {
        reply_local({}, false, true);
      } else {
        binary_local(status::kSuccess, {}, true);
      }
      return;
    case op::kFlush:
    case op::kStat:
    case op::kVerbosity:
      // As flush_all / stats / verbosity in text (session.cc's refusal).
      binary_local(status::kNotSupported,
                   "unsupported command: it acts on every server; ask the memcached servers "
                   "directly (chash-proxy)");
      return;
    case op::kSaslListMechs:
    case op::kSaslAuth:
    case op::kSaslStep:
      // memcached built without SASL answers these with Unknown command; clients that only try
      // SASL when offered go on unauthenticated. Say why, for the ones that insist.
      binary_local(status::kUnknownCommand,
                   "Unknown command: chash-proxy offers no SASL authentication (use tls: client "
                   "certificates to limit who connects)");
      return;
    case op::kGet:
    case op::kGetK:
      if (!shape(0, false)) return binary_local(status::kInvalidArguments, kInvalid);
      begin("mg ");
      if (!(mk = add_key(line, key)).ok) return binary_local(status::kInvalidArguments, kInvalid);
      line += mk.b64 ? " b f v c" : " f v c";
      break;
    case op::kGat:
    case op::kGatK:
    case op::kTouch:
      if (!shape(4, false)) return binary_local(status::kInvalidArguments, kInvalid);
      begin("mg ");
      if (!(mk = add_key(line, key)).ok) return binary_local(status::kInvalidArguments, kInvalid);
      if (mk.b64) line += " b";
      add_number(line, 'T', be32(extras.data()));
      line += loud_op == op::kTouch ? " f c" : " f v c";
      write = true;  // a new TTL: a hot copy would outlive it
      break;
    case op::kSet:
    case op::kAdd:
    case op::kReplace:
    case op::kAppend:
    case op::kPrepend: {
      const bool concat = loud_op == op::kAppend || loud_op == op::kPrepend;
      if (!shape(concat ? 0 : 8, true)) return binary_local(status::kInvalidArguments, kInvalid);
      if (value.size() > limits_.max_value_bytes) {
        if (loud_op != op::kSet) return binary_local(status::kTooLarge, "Too large.");
        // memcached unlinks the key's old value when it cannot store a set (else a later get
        // reads the value the client meant to replace): the same through an md, answered Too
        // large whatever the md finds.
        cmd = Command::kMetaDelete;
        begin("md ");
        if (!(mk = add_key(line, key)).ok) return binary_local(status::kInvalidArguments, kInvalid);
        if (mk.b64) line += " b";
        write = too_large = true;
        break;
      }
      cmd = Command::kMetaSet;
      begin("ms ");
      if (!(mk = add_key(line, key)).ok) return binary_local(status::kInvalidArguments, kInvalid);
      line += ' ';
      line += std::to_string(value.size());
      if (mk.b64) line += " b";
      if (!concat) {
        add_number(line, 'F', be32(extras.data()));
        ttl = be32(extras.data() + 4);  // T is added once the owner is known (failover_ttl)
      }
      static constexpr char kMode[] = {0, 'S', 'E', 'R', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'A', 'P'};
      tail = " c M";
      tail += kMode[loud_op];
      if (bin_parser_.cas() != 0) add_number(tail, 'C', bin_parser_.cas());
      write = with_data = true;
      break;
    }
    case op::kDelete:
      if (!shape(0, false)) return binary_local(status::kInvalidArguments, kInvalid);
      cmd = Command::kMetaDelete;
      begin("md ");
      if (!(mk = add_key(line, key)).ok) return binary_local(status::kInvalidArguments, kInvalid);
      if (mk.b64) line += " b";
      if (bin_parser_.cas() != 0) add_number(line, 'C', bin_parser_.cas());
      write = true;
      break;
    case op::kIncrement:
    case op::kDecrement: {
      if (!shape(20, false)) return binary_local(status::kInvalidArguments, kInvalid);
      cmd = Command::kMetaArithmetic;
      begin("ma ");
      if (!(mk = add_key(line, key)).ok) return binary_local(status::kInvalidArguments, kInvalid);
      if (mk.b64) line += " b";
      line += loud_op == op::kIncrement ? " v c MI" : " v c MD";
      add_number(line, 'D', be64(extras.data()));
      const std::uint32_t exptime = be32(extras.data() + 16);
      if (exptime != 0xffffffffu) {  // create a missing counter with the initial value
        add_number(line, 'N', exptime);
        add_number(line, 'J', be64(extras.data() + 8));
      }
      if (bin_parser_.cas() != 0) add_number(line, 'C', bin_parser_.cas());
      write = true;
      break;
    }
    default:
      binary_local(status::kUnknownCommand, "Unknown command");
      return;
  }
  hot_note(key);
  auto m = make_ref<Msg>();
  m->parts.resize(1);
  m->outstanding = 1;
  m->meta = true;
  m->is_binary = true;
  m->bin_opcode = opcode;
  m->bin_opaque = bin_parser_.opaque();
  m->bin_too_large = too_large;
  if (loud_op == op::kGetK || loud_op == op::kGatK) m->bin_key.assign(key);
  push(m);
  // get/getq/getk/getkq of a hot key: answered from the copy when it has the CAS
  // (session_hot.cc), else sent and its reply (mg f v c) fills the copy.
  bool mark = false;
  if (write) {
    hot_wrote(key, m);  // before it is sent, as set does
  } else if ((loud_op == op::kGet || loud_op == op::kGetK) && hot_caching()) {
    if (hot_binary_get(m, key)) return;
    mark = true;
  }
  if (replicated()) {
    if (ttl >= 0) add_number(line, 'T', static_cast<std::uint64_t>(ttl));
    line += tail;
    line += "\r\n";
    const ReplicaOp op = cmd == Command::kMetaGet    ? ReplicaOp::kRead
                         : bin_parser_.cas() != 0 ? ReplicaOp::kCas
                                                  : ReplicaOp::kWrite;
    if (mark) hot_mark(m, key);
    if (with_data) {
      replicate(m, key, {line, value, "\r\n"}, op);
    } else {
      replicate(m, key, {line}, op);
    }
    return;
  }
  NodeId node = kNoNode;
  if (!route(key, m, node)) return;
  // Safe failover and warm-up name the key in text commands: a base64 key goes straight to its
  // owner, as a meta request's `b` key does (session_meta.cc).
  const bool fallback =
      write && !mk.b64 && cmd != Command::kMetaGet && note_fallback_write(key, node);
  const std::size_t ttl_at = line.size();
  if (ttl >= 0) {
    // A store on a fallback lives failover_ttl at most, as a text set does there (session.cc).
    if (fallback && pool_->config.failover_ttl_ms != 0) ttl = capped_exptime(ttl);
    add_number(line, 'T', static_cast<std::uint64_t>(ttl));
  }
  const std::size_t ttl_end = line.size();
  line += tail;
  line += "\r\n";
  const std::string_view data = with_data ? value : std::string_view();
  const std::string_view crlf = with_data ? std::string_view("\r\n") : std::string_view();
  if (pool_->warming() && !mk.b64) {
    std::string request = line;
    request += data;
    request += crlf;
    if (warm(cmd, key, node, m, 0, std::move(request))) return;
  }
  if (mark) hot_mark(m, key);
  // Failover pools: on to the key's next owners on a failure (session_replicas.cc), but not a
  // compare-and-swap (the owner's cas value) nor a base64 key (as safe failover above).
  if (failing_over() && !mk.b64 && !(write && bin_parser_.cas() != 0)) {
    std::string retry;  // a store at the next owners lives failover_ttl at most
    if (write && ttl >= 0 && pool_->config.failover_ttl_ms != 0) {
      retry = line.substr(0, ttl_at);
      add_number(retry, 'T', static_cast<std::uint64_t>(capped_exptime(ttl)));
      retry.append(line, ttl_end);
      retry += data;
      retry += crlf;
    }
    fail_over(m, key, node, {line, data, crlf}, write, std::move(retry));
    return;
  }
  forward(node, m, 0, {line, data, crlf}, {&key, 1});
}

}  // namespace chash::proxy::memcache
