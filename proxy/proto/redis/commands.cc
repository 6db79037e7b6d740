// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/commands.h"

#include <algorithm>
#include <array>

#include "base/text.h"
#include "proto/redis/acl.h"

namespace chash::proxy::redis {

namespace {

constexpr Command key(std::string_view n, std::int32_t arity) { return {n, Route::kKey, arity}; }
constexpr Command same(std::string_view n, std::int32_t arity, std::int32_t first,
                       std::int32_t last, std::int32_t step = 1) {
  return {n, Route::kKeysSameNode, arity, first, last, step};
}
constexpr Command spec(std::string_view n, std::int32_t arity) {
  return {n, Route::kSpecKeys, arity, 0, 0, 0};
}
constexpr Command sub(std::string_view n, std::int32_t arity) {
  return {n, Route::kSubKey, arity, 2, 2, 1};
}
constexpr Command blocking(std::string_view n, std::int32_t arity) {
  return {n, Route::kBlocking, arity, 0, 0, 0};
}
constexpr Command keyspace(std::string_view n, std::int32_t arity, Merge merge) {
  return {n, Route::kKeyspace, arity, 0, 0, 0, merge};
}
constexpr Command broadcast(std::string_view n, std::int32_t arity) {
  return {n, Route::kBroadcast, arity, 0, 0, 0, Merge::kSame};
}
constexpr Command eval(std::string_view n) { return {n, Route::kEval, -3, 0, 0, 0}; }
// Pub/Sub (proto/redis/session_pubsub.cc): channels routed like keys, patterns everywhere.
constexpr Command pubsub(std::string_view n, std::int32_t arity) {
  return {n, Route::kPubSub, arity, 0, 0, 0};
}
constexpr Command no(std::string_view n, std::string_view why) {
  return {n, Route::kUnsupported, -1, 0, 0, 0, Merge::kNone, why};
}

constexpr std::string_view kServer = "it is a server command (ask the backends directly)";
constexpr std::string_view kReplication = "it is part of replication (ask the backends directly)";
constexpr std::string_view kCluster = "chash-proxy is not a Redis Cluster node";

// Sorted by name (checked by a test): lookup is a binary search.
constexpr auto kTable = std::to_array<Command>({
    no("acl", "the proxy has its own users (the pool's acl:)"),
    key("append", 3),
    no("asking", kCluster),
    {"auth", Route::kLocal, -2, 0, 0, 0},
    no("bgrewriteaof", kServer),
    no("bgsave", kServer),
    key("bitcount", -2),
    key("bitfield", -2),
    key("bitfield_ro", -2),
    same("bitop", -4, 2, -1),
    key("bitpos", -3),
    blocking("blmove", 6),
    blocking("blmpop", -5),
    blocking("blpop", -3),
    blocking("brpop", -3),
    blocking("brpoplpush", 4),
    blocking("bzmpop", -5),
    blocking("bzpopmax", -3),
    blocking("bzpopmin", -3),
    {"client", Route::kLocal, -2, 0, 0, 0},
    no("cluster", kCluster),
    {"command", Route::kLocal, -1, 0, 0, 0},
    keyspace("config", -2, Merge::kSame),
    spec("copy", -3),
    keyspace("dbsize", 1, Merge::kSum),
    no("debug", kServer),
    key("decr", 2),
    key("decrby", 3),
    {"del", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    {"discard", Route::kTransaction, 1, 0, 0, 0},
    key("dump", 2),
    {"echo", Route::kLocal, 2, 0, 0, 0},
    eval("eval"),
    eval("eval_ro"),
    eval("evalsha"),
    eval("evalsha_ro"),
    {"exec", Route::kTransaction, 1, 0, 0, 0},
    {"exists", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    key("expire", -3),
    key("expireat", -3),
    key("expiretime", 2),
    no("failover", kReplication),
    eval("fcall"),
    eval("fcall_ro"),
    keyspace("flushall", -1, Merge::kAllOk),
    keyspace("flushdb", -1, Merge::kAllOk),
    broadcast("function", -2),
    key("geoadd", -5),
    key("geodist", -4),
    key("geohash", -2),
    key("geopos", -2),
    spec("georadius", -6),
    key("georadius_ro", -6),
    spec("georadiusbymember", -5),
    key("georadiusbymember_ro", -5),
    key("geosearch", -7),
    spec("geosearchstore", -8),
    key("get", 2),
    key("getbit", 3),
    key("getdel", 2),
    key("getex", -2),
    key("getrange", 4),
    key("getset", 3),
    key("hdel", -3),
    {"hello", Route::kLocal, -1, 0, 0, 0},
    key("hexists", 3),
    key("hget", 3),
    key("hgetall", 2),
    key("hincrby", 4),
    key("hincrbyfloat", 4),
    key("hkeys", 2),
    key("hlen", 2),
    key("hmget", -3),
    key("hmset", -4),
    key("hrandfield", -2),
    key("hscan", -3),
    key("hset", -4),
    key("hsetnx", 4),
    key("hstrlen", 3),
    key("hvals", 2),
    key("incr", 2),
    key("incrby", 3),
    key("incrbyfloat", 3),
    {"info", Route::kLocal, -1, 0, 0, 0},
    keyspace("keys", 2, Merge::kConcat),
    no("lastsave", kServer),
    no("latency", kServer),
    spec("lcs", -3),
    key("lindex", 3),
    key("linsert", 5),
    key("llen", 2),
    same("lmove", 5, 1, 2),
    spec("lmpop", -4),
    spec("lolwut", -1),
    key("lpop", -2),
    key("lpos", -3),
    key("lpush", -3),
    key("lpushx", -3),
    key("lrange", 4),
    key("lrem", 4),
    key("lset", 4),
    key("ltrim", 4),
    sub("memory", -2),
    {"mget", Route::kSplitKeys, -2, 1, -1, 1, Merge::kArray},
    no("migrate", kServer),
    no("module", kServer),
    no("monitor", kServer),
    key("move", 3),
    {"mset", Route::kSplitPairs, -3, 1, -1, 2, Merge::kAllOk},
    same("msetnx", -3, 1, -1, 2),
    {"multi", Route::kTransaction, 1, 0, 0, 0},
    sub("object", -2),
    key("persist", 2),
    key("pexpire", -3),
    key("pexpireat", -3),
    key("pexpiretime", 2),
    key("pfadd", -2),
    same("pfcount", -2, 1, -1),
    spec("pfdebug", 3),
    same("pfmerge", -2, 1, -1),
    spec("pfselftest", 1),
    {"ping", Route::kLocal, -1, 0, 0, 0},
    key("psetex", 4),
    pubsub("psubscribe", -2),
    no("psync", kReplication),
    key("pttl", 2),
    pubsub("publish", 3),
    pubsub("pubsub", -2),
    pubsub("punsubscribe", -1),
    {"quit", Route::kLocal, -1, 0, 0, 0},
    keyspace("randomkey", 1, Merge::kNone),
    {"readonly", Route::kLocal, 1, 0, 0, 0},
    {"readwrite", Route::kLocal, 1, 0, 0, 0},
    same("rename", 3, 1, 2),
    same("renamenx", 3, 1, 2),
    no("replconf", kReplication),
    no("replicaof", kReplication),
    {"reset", Route::kLocal, 1, 0, 0, 0},
    key("restore", -4),
    no("restore-asking", kCluster),
    no("role", kReplication),
    key("rpop", -2),
    same("rpoplpush", 3, 1, 2),
    key("rpush", -3),
    key("rpushx", -3),
    key("sadd", -3),
    no("save", kServer),
    keyspace("scan", -2, Merge::kScan),
    key("scard", 2),
    broadcast("script", -2),
    same("sdiff", -2, 1, -1),
    same("sdiffstore", -3, 1, -1),
    {"select", Route::kLocal, 2, 0, 0, 0},
    key("set", -3),
    key("setbit", 4),
    key("setex", 4),
    key("setnx", 3),
    key("setrange", 4),
    no("shutdown", kServer),
    same("sinter", -2, 1, -1),
    spec("sintercard", -3),
    same("sinterstore", -3, 1, -1),
    key("sismember", 3),
    no("slaveof", kReplication),
    no("slowlog", kServer),
    key("smembers", 2),
    key("smismember", -3),
    same("smove", 4, 1, 2),
    spec("sort", -2),
    spec("sort_ro", -2),
    key("spop", -2),
    pubsub("spublish", 3),
    key("srandmember", -2),
    key("srem", -3),
    key("sscan", -3),
    pubsub("ssubscribe", -2),
    key("strlen", 2),
    pubsub("subscribe", -2),
    key("substr", 4),
    same("sunion", -2, 1, -1),
    same("sunionstore", -3, 1, -1),
    pubsub("sunsubscribe", -1),
    keyspace("swapdb", 3, Merge::kNone),
    no("sync", kReplication),
    spec("time", 1),
    {"touch", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    key("ttl", 2),
    key("type", 2),
    {"unlink", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    pubsub("unsubscribe", -1),
    {"unwatch", Route::kTransaction, 1, 0, 0, 0},
    no("wait", kReplication),
    {"watch", Route::kTransaction, -2, 1, -1, 1},
    key("xack", -4),
    key("xadd", -5),
    key("xautoclaim", -6),
    key("xclaim", -6),
    key("xdel", -3),
    sub("xgroup", -2),
    sub("xinfo", -2),
    key("xlen", 2),
    key("xpending", -3),
    key("xrange", -4),
    blocking("xread", -4),
    blocking("xreadgroup", -7),
    key("xrevrange", -4),
    key("xsetid", -3),
    key("xtrim", -4),
    key("zadd", -4),
    key("zcard", 2),
    key("zcount", 4),
    spec("zdiff", -3),
    spec("zdiffstore", -4),
    key("zincrby", 4),
    spec("zinter", -3),
    spec("zintercard", -3),
    spec("zinterstore", -4),
    key("zlexcount", 4),
    spec("zmpop", -4),
    key("zmscore", -3),
    key("zpopmax", -2),
    key("zpopmin", -2),
    key("zrandmember", -2),
    key("zrange", -4),
    key("zrangebylex", -4),
    key("zrangebyscore", -4),
    spec("zrangestore", -5),
    key("zrank", -3),
    key("zrem", -3),
    key("zremrangebylex", 4),
    key("zremrangebyrank", 4),
    key("zremrangebyscore", 4),
    key("zrevrange", -4),
    key("zrevrangebylex", -4),
    key("zrevrangebyscore", -4),
    key("zrevrank", -3),
    key("zscan", -3),
    key("zscore", 3),
    spec("zunion", -3),
    spec("zunionstore", -4),
});

}  // namespace

// Command names are ASCII; the table spells them in lower case (ascii_lower: base/text.h).
const Command* find_command(std::string_view name) noexcept {
  // Lower-case into a small buffer: no allocation; names longer than any command are unknown.
  char lower[32];
  if (name.size() > sizeof lower) return nullptr;
  for (std::size_t i = 0; i < name.size(); ++i) {
    lower[i] = ascii_lower(name[i]);
  }
  const std::string_view n(lower, name.size());
  const auto it = std::lower_bound(kTable.begin(), kTable.end(), n,
                                   [](const Command& c, std::string_view s) { return c.name < s; });
  if (it == kTable.end() || it->name != n) return nullptr;
  return &*it;
}

bool names_command(std::string_view name, const Command& c) noexcept {
  if (name.size() != c.name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (ascii_lower(name[i]) != c.name[i]) return false;
  }
  return true;
}

std::span<const Command> command_table() noexcept { return kTable; }

int spec_index(const Command& c) noexcept {
  static const auto indexes = [] {
    std::array<std::int16_t, kTable.size()> out{};
    for (std::size_t i = 0; i < kTable.size(); ++i) {
      out[i] = static_cast<std::int16_t>(acl_command_index(kTable[i].name));
    }
    return out;
  }();
  const auto i = static_cast<std::size_t>(&c - kTable.data());
  return i < kTable.size() ? indexes[i] : -1;
}

namespace {

// Redis's own flags, through its ACL categories (acl_table.inc is generated from a real
// redis-server), per entry of the table: @read without @write (what a replica serves, the
// readonly flag) and @write.
struct Flags {
  std::array<bool, kTable.size()> read_only{}, writes{};
};
const Flags& flags() {
  static const Flags f = [] {
    Flags out;
    std::uint32_t read = 0, write = 0;
    const auto cats = acl_categories();
    for (std::size_t i = 0; i < cats.size(); ++i) {
      if (cats[i] == "read") read = 1u << i;
      if (cats[i] == "write") write = 1u << i;
    }
    for (std::size_t i = 0; i < kTable.size(); ++i) {
      const int index = acl_command_index(kTable[i].name);
      const std::uint32_t m = index < 0 ? 0 : acl_command_categories(index);
      out.read_only[i] = (m & read) != 0 && (m & write) == 0;
      out.writes[i] = (m & write) != 0;
    }
    return out;
  }();
  return f;
}

}  // namespace

bool read_only(const Command& c) noexcept {
  const auto i = static_cast<std::size_t>(&c - kTable.data());
  return i < kTable.size() && flags().read_only[i];
}

bool writes(const Command& c) noexcept {
  const auto i = static_cast<std::size_t>(&c - kTable.data());
  return i < kTable.size() && flags().writes[i];
}

bool no_multi(const Command& c) noexcept {
  // redis 7.0.15's src/commands/*.json with "NO_MULTI" (MULTI, WATCH nest-check themselves).
  return c.name == "save" || c.name == "shutdown" || c.name == "sync" || c.name == "psync";
}

}  // namespace chash::proxy::redis
