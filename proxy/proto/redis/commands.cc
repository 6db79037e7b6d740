// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/commands.h"

#include <algorithm>
#include <array>

#include "proto/redis/acl.h"

namespace chash::proxy::redis {

namespace {

constexpr Command key(std::string_view n, std::int32_t arity) { return {n, Route::kKey, arity}; }
constexpr Command same(std::string_view n, std::int32_t arity, std::int32_t first,
                       std::int32_t last, std::int32_t step = 1) {
  return {n, Route::kKeysSameNode, arity, first, last, step};
}
constexpr Command no(std::string_view n, std::string_view why) {
  return {n, Route::kUnsupported, -1, 0, 0, 0, Merge::kNone, why};
}

constexpr std::string_view kAllKeys = "it needs every backend's keyspace";
constexpr std::string_view kPubSub = "pub/sub is not proxied";
constexpr std::string_view kBlocking = "blocking commands are not proxied";
constexpr std::string_view kServer = "it is a server command (ask the backends directly)";
constexpr std::string_view kDb = "the proxy has one database per pool";

// Sorted by name (checked by a test): lookup is a binary search.
constexpr auto kTable = std::to_array<Command>({
    key("append", 3),
    {"auth", Route::kLocal, -2, 0, 0, 0},
    no("bgrewriteaof", kServer),
    no("bgsave", kServer),
    key("bitcount", -2),
    key("bitfield", -2),
    key("bitfield_ro", -2),
    same("bitop", -4, 2, -1),
    key("bitpos", -3),
    no("blmove", kBlocking),
    no("blmpop", kBlocking),
    no("blpop", kBlocking),
    no("brpop", kBlocking),
    no("brpoplpush", kBlocking),
    no("bzmpop", kBlocking),
    no("bzpopmax", kBlocking),
    no("bzpopmin", kBlocking),
    {"client", Route::kLocal, -2, 0, 0, 0},
    no("cluster", "chash-proxy is not a Redis Cluster node"),
    {"command", Route::kLocal, -1, 0, 0, 0},
    no("config", kServer),
    no("dbsize", kAllKeys),
    key("decr", 2),
    key("decrby", 3),
    {"del", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    {"discard", Route::kTransaction, 1, 0, 0, 0},
    key("dump", 2),
    {"echo", Route::kLocal, 2, 0, 0, 0},
    {"eval", Route::kEval, -3, 0, 0, 0},
    {"evalsha", Route::kEval, -3, 0, 0, 0},
    {"exec", Route::kTransaction, 1, 0, 0, 0},
    {"exists", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    key("expire", -3),
    key("expireat", -3),
    key("expiretime", 2),
    no("flushall", kAllKeys),
    no("flushdb", kAllKeys),
    no("function", kServer),
    key("geoadd", -5),
    key("geodist", -4),
    key("geohash", -2),
    key("geopos", -2),
    key("georadius_ro", -6),
    key("georadiusbymember_ro", -5),
    key("geosearch", -7),
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
    no("keys", kAllKeys),
    no("lastsave", kServer),
    key("lindex", 3),
    key("linsert", 5),
    key("llen", 2),
    same("lmove", 5, 1, 2),
    key("lpop", -2),
    key("lpos", -3),
    key("lpush", -3),
    key("lpushx", -3),
    key("lrange", 4),
    key("lrem", 4),
    key("lset", 4),
    key("ltrim", 4),
    {"mget", Route::kSplitKeys, -2, 1, -1, 1, Merge::kArray},
    no("migrate", kServer),
    no("monitor", kServer),
    no("move", kDb),
    {"mset", Route::kSplitPairs, -3, 1, -1, 2, Merge::kAllOk},
    same("msetnx", -3, 1, -1, 2),
    {"multi", Route::kTransaction, 1, 0, 0, 0},
    no("object", kServer),
    key("persist", 2),
    key("pexpire", -3),
    key("pexpireat", -3),
    key("pexpiretime", 2),
    key("pfadd", -2),
    same("pfcount", -2, 1, -1),
    same("pfmerge", -2, 1, -1),
    {"ping", Route::kLocal, -1, 0, 0, 0},
    key("psetex", 4),
    no("psubscribe", kPubSub),
    key("pttl", 2),
    no("publish", kPubSub),
    no("punsubscribe", kPubSub),
    {"quit", Route::kLocal, -1, 0, 0, 0},
    no("randomkey", kAllKeys),
    {"readonly", Route::kLocal, 1, 0, 0, 0},
    {"readwrite", Route::kLocal, 1, 0, 0, 0},
    same("rename", 3, 1, 2),
    same("renamenx", 3, 1, 2),
    key("restore", -4),
    key("rpop", -2),
    same("rpoplpush", 3, 1, 2),
    key("rpush", -3),
    key("rpushx", -3),
    key("sadd", -3),
    no("save", kServer),
    no("scan", kAllKeys),
    key("scard", 2),
    no("script", kServer),
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
    same("sinterstore", -3, 1, -1),
    key("sismember", 3),
    no("slaveof", kServer),
    key("smembers", 2),
    key("smismember", -3),
    same("smove", 4, 1, 2),
    key("sort_ro", -2),
    key("spop", -2),
    key("srandmember", -2),
    key("srem", -3),
    key("sscan", -3),
    key("strlen", 2),
    no("subscribe", kPubSub),
    key("substr", 4),
    same("sunion", -2, 1, -1),
    same("sunionstore", -3, 1, -1),
    no("swapdb", kDb),
    {"touch", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    key("ttl", 2),
    key("type", 2),
    {"unlink", Route::kSplitKeys, -2, 1, -1, 1, Merge::kSum},
    no("unsubscribe", kPubSub),
    {"unwatch", Route::kTransaction, 1, 0, 0, 0},
    no("wait", kServer),
    {"watch", Route::kTransaction, -2, 1, -1, 1},
    key("xack", -4),
    key("xadd", -5),
    key("xautoclaim", -6),
    key("xclaim", -6),
    key("xdel", -3),
    key("xlen", 2),
    key("xpending", -3),
    key("xrange", -4),
    no("xread", kBlocking),
    no("xreadgroup", kBlocking),
    key("xrevrange", -4),
    key("xtrim", -4),
    key("zadd", -4),
    key("zcard", 2),
    key("zcount", 4),
    key("zincrby", 4),
    key("zlexcount", 4),
    key("zmscore", -3),
    key("zpopmax", -2),
    key("zpopmin", -2),
    key("zrandmember", -2),
    key("zrange", -4),
    key("zrangebylex", -4),
    key("zrangebyscore", -4),
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
});

}  // namespace

namespace {
// Command names are ASCII; the table spells them in lower case.
constexpr char ascii_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
}  // namespace

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

bool read_only(const Command& c) noexcept {
  // Redis's own flags, through its ACL categories (acl_table.inc is generated from a real
  // redis-server): @read without @write is what a replica serves (the readonly flag).
  static const auto flags = [] {
    std::array<bool, kTable.size()> out{};
    std::uint32_t read = 0, write = 0;
    const auto cats = acl_categories();
    for (std::size_t i = 0; i < cats.size(); ++i) {
      if (cats[i] == "read") read = 1u << i;
      if (cats[i] == "write") write = 1u << i;
    }
    for (std::size_t i = 0; i < kTable.size(); ++i) {
      const int index = acl_command_index(kTable[i].name);
      const std::uint32_t m = index < 0 ? 0 : acl_command_categories(index);
      out[i] = (m & read) != 0 && (m & write) == 0;
    }
    return out;
  }();
  const auto i = static_cast<std::size_t>(&c - kTable.data());
  return i < kTable.size() && flags[i];
}

}  // namespace chash::proxy::redis
