// SPDX-License-Identifier: Apache-2.0
// chash-proxy — memcached (text protocol) client and backend connections.
//
// A Client parses requests (pipelined: many per read) and answers them strictly in order. A
// storage, delete, incr/decr or touch request goes to its key's backend; a get/gets/gat/gats is
// split into one request per backend holding its keys, and the VALUE blocks are merged back in
// the client's key order under one END. `noreply` is stripped before forwarding and the
// backend's answer dropped, so the backend stream never desyncs whatever the backend says.
// version and quit are answered by the proxy; server-wide commands (stats, flush_all, ...) are
// refused with a SERVER_ERROR naming them, the connection kept. Meta commands (mg ms md ma me)
// go whole to their key's backend (proto/memcache/session_meta.cc); `mn` is answered in order.
// A connection whose first byte is 0x80 speaks the binary protocol for its life, as memcached
// decides: each packet goes to its key's backend as a meta command and the meta reply comes back
// as a binary response (proto/memcache/session_binary.cc).
//
// A Backend is one connection to one memcached, owned by one worker; replies complete the
// queued requests in order. When it fails (connect error, timeout, closed mid-reply,
// unparsable reply) every queued request is answered "SERVER_ERROR backend <name>: <why>" and
// the connection is dropped; the next request reconnects.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/session.h"
#include "membership/topology.h"
#include "proto/memcache/binary.h"
#include "proto/memcache/protocol.h"

namespace chash::proxy::memcache {

// The longest get/gat line sent to a memcached: it closes the connection on a gat line over
// 2048 bytes, so a client's long multiget is cut into several requests per backend.
inline constexpr std::size_t kMaxBackendLine = 2000;

// "SERVER_ERROR <text>\r\n", the text made one line.
std::string server_error(std::string_view text);

// What the proxy answers to `version` (libmemcached parses the leading numbers).
inline constexpr std::string_view kVersionReply = "VERSION 1.6.18-chash-proxy\r\n";

// A replicated pool's read of one key (`replicas:`, proto/memcache/session_replicas.cc): its
// homes that were up, tried in order until one has the key.
struct ReplicaRead {
  std::string request;  // the request for this key alone, as sent to each home
  std::string key;
  std::array<NodeId, kMaxReplicas> homes{};
  std::uint8_t count = 0, at = 0;
  bool saw_miss = false;  // a home answered "not there": that, not a later home's error, answers
  // A failover pool's request (`failover:`, session_replicas.cc): it moves on on a SERVER_ERROR
  // only (a client error is the same on every server), on a miss only with on_miss; a miss
  // answers for an error at the end only with return_best_on_error (`best`). A write moves on
  // on an error only and leaves the key noted at the owner that failed it; `retry` is what the
  // later owners get (its TTL capped at failover_ttl), empty: `request`.
  bool failover = false, on_miss = true, best = true, write = false;
  std::string retry;
};

// A replicated pool's write: part i went to homes[i]; answered by the pool's write_policy.
struct ReplicaWrite {
  std::shared_ptr<const Pool> pool;  // whose homes' absence logs note a missed write
  std::string key;
  std::array<NodeId, kMaxReplicas> homes{};
  std::uint8_t total = 0;  // the key's homes, up or not (what write_policy counts)
};

// A shadow copy's hold on its backend's count of copies outstanding (session_shadow.cc):
// released when the copy's Msg goes, answered, failed or dropped with its connection.
struct ShadowHold {
  std::shared_ptr<BackendState> state;  // null: not a shadow copy
  ShadowHold() = default;
  ShadowHold(const ShadowHold&) = delete;
  ShadowHold& operator=(const ShadowHold&) = delete;
  ~ShadowHold() {
    if (state != nullptr) state->shadow_outstanding.fetch_sub(1, std::memory_order_relaxed);
  }
};

class Client;

struct Msg final : Reply {
  bool silent = false;     // noreply: whatever the backend says is dropped
  bool retrieval = false;  // VALUE blocks + END
  bool meta = false;       // meta commands: one line (+ data) each
  // A meta request with `q`, sent followed by an `mn` of the proxy's: the server answers it with
  // one reply or none, then MN (dropped), which completes the part.
  bool quiet = false;
  // A binary-protocol request sent as a meta command (session_binary.cc): parts[0]'s meta reply
  // is answered as a binary response to `bin_opcode` with the client's opaque (and for
  // getk/gatk its key); a quiet opcode's nominal answer is left out.
  bool is_binary = false;
  std::uint8_t bin_opcode = 0;
  std::uint32_t bin_opaque = 0;
  std::string bin_key;
  bool bin_too_large = false;  // a set refused as too large: answered 0x0003 (its md unlinked)
  // The reply whatever the backends say (a text set or ms refused as too large, whose key was
  // deleted at its backend first: Client::unlink_refused).
  std::string fixed_reply;
  // A Msg of the proxy's own (a warm-up step, proto/memcache/session_warmup.cc): when every
  // part is in, `then` gets it instead of a client.
  std::function<void(Msg&)> then;
  // A read of one hot key (hot_cache, proto/memcache/session_hot.cc: a text `get`, an mg
  // asking `v` and `f`, a binary get): its reply fills the worker's copy if the key's write
  // generation is still `hot_stamp`. Empty: not such a read.
  std::string hot_key;
  std::uint64_t hot_stamp = 0;
  // A write with hot_cache on: its key's generation is bumped again when it is answered (see
  // proto/redis/session.h, Msg::hot_written).
  std::shared_ptr<PoolShared> hot_pool;
  std::string hot_written;
  std::vector<std::string> hot_written_more;  // a gat/gats's other keys
  // Replicated pools (session_replicas.cc): a read's keys, one per part (empty: not such a
  // read); a write sent to several homes (null: not one).
  std::vector<ReplicaRead> reads;
  std::unique_ptr<ReplicaWrite> write;
  ShadowHold shadow;  // a shadow copy (`then` discards its reply): its backend's count
  // The pool (its slot) the request went to: the listener's, or a prefix route's
  // (`prefix_routes:`): a replicated read goes on, and a hot key's copy is filled, there.
  std::size_t slot = 0;
  // One pool's share of a get whose keys went to several pools (Client::retrieve_routed): the
  // whole request, whose client `then` answers; this Msg has none of its own.
  Ref<Msg> parent;
  Client* owner() const noexcept;
  struct Value {
    net::ChunkRef chunk;         // the backend's read chunk holding the block; null: in Part::own
    const char* data = nullptr;  // the whole VALUE block (chunk), or null (own: at `off`)
    std::size_t off = 0;
    std::size_t len = 0;
    std::uint32_t key_off = 0, key_len = 0;  // the key, in the block
    std::string_view block(const std::string& own) const noexcept {
      return data != nullptr ? std::string_view(data, len) : std::string_view(own).substr(off, len);
    }
  };
  struct Part {
    std::vector<Value> values;  // retrieval: its VALUE blocks, in the backend's read chunks
    std::string own;            // blocks copied out of the chunks (settle()), in order
    net::HeldBytes line;        // not a retrieval, or an error: the reply line
    bool error = false;         // line is an error line that answers the whole request
    std::size_t held = 0;       // bytes of values still in chunks
    void settle();
  };
  std::vector<Part> parts;
  // A retrieval split over several backends: the client's keys in order, and each one's part.
  std::string keys;
  std::vector<std::pair<std::uint32_t, memcache::Span>> key_map;

  // From the Backend, in order: VALUE blocks (retrievals), then END or one line. Both keep the
  // bytes in the backend's read chunk (slices); nothing is copied.
  void add_value(std::uint32_t part, net::Slice block, memcache::Span key);
  void end_part(std::uint32_t part);
  void line_part(std::uint32_t part, net::Slice line, bool error);
  void fail_part(std::uint32_t part, std::string_view error) override;
  // quiet: the request's reply (the part stays open until quiet_end(), at the MN).
  void quiet_reply(std::uint32_t part, net::Slice line, bool error);
  void quiet_end(std::uint32_t part);
  // Completes part `part` with bytes the proxy has (copied): a retrieval part's VALUE block for
  // its one key ("" for a miss), else the reply line.
  void answer_part(std::uint32_t part, std::string_view bytes);
  // Completes retrieval part `part` with the blocks of `from`, a finished retrieval of that
  // part's keys (copied, in its client's key order), or with its first error.
  void answer_part_from(std::uint32_t part, const Msg& from);
  // The reply gathered from the parts: blocks in the client's key order, then END.
  void emit(net::OutQueue& out) override;
  void settle() override;

 private:
  void finish();
  void emit_binary(net::OutQueue& out);
  // A replicated read's part `part` is in: true when it was a miss or an error and went on to
  // the key's next home (the part stays outstanding).
  bool read_on(std::uint32_t part);
  // A replicated write is all in: parts[0] becomes the answer write_policy gives; the homes
  // that failed it, or answered otherwise than the one that answers, have the key noted.
  void answer_write();
  const Part* failed_ = nullptr;  // the part whose error line answers the request
};

class Backend final : public BackendSession {
 public:
  Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node);

 private:
  void on_input() override;
  std::string failure_reply(const std::string& why) const override;

  memcache::ReplyParser parser_;
  bool parser_started_ = false;
};

struct WarmOp;

class Client final : public ClientSession {
 public:
  Client(Worker& worker, std::size_t pool_index, int fd);
  // hot_cache: `m` (a read of one hot key, Msg::hot_key) is answered: its reply fills the copy.
  void hot_fill(const Msg& m);

 private:
  friend struct Msg;  // a replicated read goes on to its next home (read_next)
  // Hot keys (proto/memcache/session_hot.cc, docs/HOTKEYS.md): a key for the sketch (sampled);
  // whether copies may answer gets now; a write of `key` (its copies are stale from now on); a
  // copy of `key` as a text get's VALUE block ("" a miss), counted as a hit; `m` marked to
  // fill the copy of hot `key`.
  void hot_note(std::string_view key);
  bool hot_caching() const noexcept;
  void hot_wrote(std::string_view key, const Ref<Msg>& m);
  std::optional<std::string> hot_copy(std::string_view key);
  void hot_mark(const Ref<Msg>& m, std::string_view key);
  // A get/gets/gat/gats `m` is starting: a gat/gats's keys are invalidated (a new exptime);
  // whether copies may answer it (a `get` while some key is hot).
  bool hot_retrieval(const Ref<Msg>& m, std::span<const std::string_view> keys);
  // The current mg (of hot `key`, sent as part 0 of `m`) answered from the copy when its flags
  // need nothing else (true); the current binary get likewise (a copy that has the CAS).
  bool hot_meta_get(const Ref<Msg>& m, std::string_view key);
  bool hot_binary_get(const Ref<Msg>& m, std::string_view key);
  void process() override;
  // Prefix routes (`prefix_routes:`, session.cc): the request's key picks the pool, which is the
  // session's (pool_, pool_index_) while it is dispatched (PoolSwitch); a get whose keys go to
  // several pools is split by pool (retrieve_routed).
  class PoolSwitch {
   public:
    // To `slot`'s pool unless it is the session's already, or gone (switched() false).
    PoolSwitch(Client& c, std::size_t slot);
    ~PoolSwitch();
    PoolSwitch(const PoolSwitch&) = delete;
    PoolSwitch& operator=(const PoolSwitch&) = delete;
    bool ok() const noexcept { return ok_; }

   private:
    Client& c_;
    std::shared_ptr<const Pool> saved_;
    std::size_t saved_index_;
    bool switched_ = false, ok_ = true;
  };
  void dispatch_routed();
  void dispatch_binary_routed();
  // The current request's key, to the pool `slot` (answers an error when that pool is gone).
  void dispatch_in(std::size_t slot, void (Client::*handler)());
  void retrieve_routed(std::span<const std::string_view> keys,
                       std::span<const std::size_t> slots);
  void dispatch();
  // The binary protocol (proto/memcache/session_binary.cc): one packet of bin_parser_.
  void dispatch_binary();
  // Queues a response of the proxy's own to the current binary packet.
  void binary_local(std::uint16_t status, std::string_view body, bool close_after = false);
  void retrieve();
  // The current get/gets/gat/gats for `keys` (all of it, or one pool's share of a routed one),
  // answered by `into` (a Msg of retrieve_routed's) or by a new request of the client's.
  void retrieve(std::span<const std::string_view> keys, Ref<Msg> into);
  // A set or ms the parser refused as too large: `key` is deleted at its backend (its homes),
  // as memcached unlinks it, and the refusal answered once that is done.
  void unlink_refused(std::string_view key);
  // A retrieval's words before its keys: "get", or "gat <exptime>".
  std::string retrieval_prefix() const;
  // mg ms md ma me (proto/memcache/session_meta.cc).
  void meta();
  // The current ms's line with its T capped by failover_ttl (capped_exptime) or added; false
  // (and `line` untouched) for append/prepend modes and T forms it does not read.
  bool capped_line(std::string& line) const;
  // Warm-up on resize (proto/memcache/session_warmup.cc): when `key` (routed to `node`) moved,
  // the warm-up answers part `part` of `m` (true); `request` is the command for that key alone.
  bool warm(memcache::Command cmd, std::string_view key, NodeId node, const Ref<Msg>& m,
            std::uint32_t part, std::string request);
  std::size_t moved(std::string_view key, NodeId node, std::span<NodeId> olds) const;
  // Replicated pools (`replicas:` > 1, proto/memcache/session_replicas.cc).
  bool replicated() const noexcept { return pool_->config.replicas > 1; }
  enum class ReplicaOp : std::uint8_t {
    kRead,   // to the first home that is up; on a miss or an error, the next
    kWrite,  // to every home that is up; those down have the key noted
    kCas,    // a compare-and-swap (cas, C flag): to the first home that is up, whose cas values
             // gets and mg return; the other homes have the key noted (deleted before next use)
  };
  // Sends `m` (one part: a request for `key` alone) to the key's homes as `op` says.
  void replicate(const Ref<Msg>& m, std::string_view key,
                 std::initializer_list<std::string_view> bytes, ReplicaOp op);
  // A get/gets/gat/gats on a replicated pool: one part per key (each with its own homes).
  void retrieve_replicated(std::span<const std::string_view> keys, const Ref<Msg>& m);
  // Part `part` of `m` (a ReplicaRead) to its next home that is up; false when none is left.
  bool read_next(Msg& m, std::uint32_t part);
  // The key's homes (at most `replicas`), in the router's order; how many.
  std::size_t homes(std::string_view key, std::array<NodeId, kMaxReplicas>& out) const;
  // Failover pools (`failover:` tries > 1, session_replicas.cc): `m` (one part, a request for
  // `key` alone) goes to `node`, the key's owner, and on a failure to its next distinct owners
  // that are up. `retry`: a write's request for those (TTL capped), empty: the same bytes.
  bool failing_over() const noexcept { return pool_->config.failover.tries > 1; }
  void fail_over(const Ref<Msg>& m, std::string_view key, NodeId node,
                 std::initializer_list<std::string_view> bytes, bool write, std::string retry = {});
  // `r`'s owners for a failover pool: `node` first, then the key's next ones that are up.
  void failover_homes(ReplicaRead& r, std::string_view key, NodeId node) const;
  // Fails `m` (whole): no home of `key` is up.
  void fail_no_home(const Ref<Msg>& m, std::string_view key);
  Ref<Msg> new_msg(std::uint32_t parts);
  // Sends part `part` of `m` to `node`, or fails that part when it cannot. `keys`: the part's
  // keys, which a returned backend (membership/failback.h) deletes first when it missed them.
  void forward(NodeId node, const Ref<Msg>& m, std::uint32_t part,
               std::initializer_list<std::string_view> bytes,
               std::span<const std::string_view> keys = {});
  // Safe failover: a write of `key` going to `node` while its owner is another backend is noted
  // in that one's absence log; true when it is such a fallback write.
  bool note_fallback_write(std::string_view key, NodeId node);
  // An exptime capped at failover_ttl (seconds; an absolute time kept when it is sooner).
  std::int64_t capped_exptime(std::int64_t exptime) const;
  bool route(std::string_view key, const Ref<Msg>& m, NodeId& node);
  // Shadow route (`shadow:`, proto/memcache/session_shadow.cc): when the pool's shadow takes
  // `key` and the kind of request `like` is, the same `bytes` go to the key's owner in the
  // shadow pool as a request of the proxy's own, its reply discarded; dropped (and counted) when
  // that backend is down, cannot be reached or has kShadowMaxOutstanding copies unanswered.
  void shadow(std::string_view key, std::initializer_list<std::string_view> bytes,
              const Msg& like);
  // The current get/gets/gat/gats's keys, each shadowed as a request of its own.
  void shadow_retrieval(const Msg& like, const std::string& prefix,
                        std::span<const std::string_view> keys);

  memcache::RequestLimits limits_;
  memcache::RequestParser parser_;
  // Which protocol the connection speaks, from its first byte (0x80: binary), as memcached's
  // try_read_command_negotiate decides it once per connection.
  enum class Wire : std::uint8_t { kUnknown, kText, kBinary };
  Wire wire_ = Wire::kUnknown;
  binary::RequestParser bin_parser_;
  std::vector<std::uint32_t> key_parts_;  // scratch for retrievals: each key's part
  std::vector<std::string_view> keys_;    // scratch: the current retrieval's keys
  std::vector<std::size_t> key_slots_;    // scratch: and the pool each goes to (prefix routes)
};

}  // namespace chash::proxy::memcache
