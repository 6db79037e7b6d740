// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the Redis command table: how each command is routed.
//
// Every command a client may send is looked up here by name (case-insensitive). The table is
// the single source of truth for docs/REDIS.md's command table (tests check that every entry is
// documented there).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace chash::proxy::redis {

enum class Route : std::uint8_t {
  kKey,           // one key at argv[1]: forwarded unchanged to its backend
  kKeysSameNode,  // several keys (key_first..key_last step key_step): they must all live on one
                  // backend (use hash tags), else -ERR; forwarded unchanged
  kSplitKeys,     // MGET, DEL, EXISTS, UNLINK, TOUCH: split per backend, merged in order
  kSplitPairs,    // MSET: key/value pairs split per backend, +OK when every part is OK
  kEval,          // EVAL/EVALSHA/FCALL x numkeys key...: by the first key; all keys on one
                  // backend; numkeys 0 only on a one-server pool
  kSpecKeys,      // the keys where Redis 7.0's key specs find them (acl_table.inc: COPY, LCS,
                  // ZUNIONSTORE ...): all on one backend; none (TIME, a bad numkeys): any one
  kSubKey,        // OBJECT, MEMORY, XGROUP, XINFO: the subcommand's key at argv[2]
  kBlocking,      // BLPOP, BZMPOP, XREAD BLOCK ...: kSpecKeys, on a connection of the client's
                  // own while it blocks (proto/redis/session_own.cc)
  kKeyspace,      // DBSIZE, KEYS, SCAN, FLUSHALL ...: exact on a one-server pool; on several
                  // by `merge` (summed, concatenated, broadcast) or refused
                  // (proto/redis/session_keyspace.cc)
  kBroadcast,     // SCRIPT, FUNCTION: sent to every backend, the replies must agree
  kLocal,         // answered by the proxy: PING, ECHO, QUIT, AUTH, COMMAND, CLIENT, HELLO ...
  kTransaction,   // MULTI, EXEC, DISCARD, WATCH (keys key_first..), UNWATCH:
                  // proto/redis/transaction.h
  kPubSub,        // SUBSCRIBE, PUBLISH, PUBSUB ...: channels routed like keys on connections of
                  // the client's own, patterns on every backend (proto/redis/session_pubsub.cc)
  kUnsupported,   // cannot be sharded: -ERR naming the command, the connection stays open
};

// How a request's parts' replies make the client's reply. kLast: a transaction (MULTI, the
// queued commands, EXEC): the last part's reply, EXEC's, whatever the others said. kSame: a
// broadcast's, one reply when every backend gave the same bytes. kConcat: arrays joined (KEYS).
// kMinInts: arrays of 0/1 ANDed element by element (SCRIPT EXISTS). kScan: a SCAN of one
// backend whose cursor is rewritten to name the backend (session_keyspace.cc).
enum class Merge : std::uint8_t {
  kNone,
  kArray,
  kSum,
  kAllOk,
  kLast,
  kSame,
  kConcat,
  kMinInts,
  kScan,
  kAnyOk  // SCRIPT KILL, FUNCTION KILL: +OK where any backend had one to kill, else the first reply
};

struct Command {
  std::string_view name;  // lower case
  Route route;
  std::int32_t arity;  // as Redis: N = exactly N args (with the name), -N = at least N
  std::int32_t key_first = 1;
  std::int32_t key_last = 1;  // -1: the last argument
  std::int32_t key_step = 1;
  Merge merge = Merge::kNone;
  std::string_view why = {};  // kUnsupported: the reason given to the client
};

// The entry for `name` (any case), or nullptr for a command the proxy does not know.
const Command* find_command(std::string_view name) noexcept;
// Whether `name` (as a client spells it) is the command `c`: a pipelining client sends the same
// command again and again, and this one compare saves find_command's binary search over the
// table (1-2% of a cluster pool's CPU).
bool names_command(std::string_view name, const Command& c) noexcept;

// The command's index in Redis's table (acl_table.inc: key specs, categories), -1 if none;
// computed once per entry, not per request.
int spec_index(const Command& c) noexcept;

// Every entry, sorted by name.
std::span<const Command> command_table() noexcept;

// Redis Cluster's answer to keys of several slots in one command (cluster.c getNodeByQuery).
inline constexpr std::string_view kCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";

// Whether `c` (an entry of the table) only reads: Redis's @read without @write, the commands a
// replica serves (read_policy sends them there).
bool read_only(const Command& c) noexcept;
// Whether `c` writes (Redis's @write): FLUSHALL, SET ... (the hot cache's invalidation).
bool writes(const Command& c) noexcept;
// Whether Redis refuses `c` inside MULTI (its CMD_NO_MULTI flag: SAVE, SHUTDOWN, SYNC, PSYNC),
// with kNotInTransaction, which also aborts the transaction.
bool no_multi(const Command& c) noexcept;
inline constexpr std::string_view kNotInTransaction =
    "ERR Command not allowed inside a transaction";

}  // namespace chash::proxy::redis
