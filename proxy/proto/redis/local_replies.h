// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the replies to the connection-setup commands that modern Redis clients send
// (CLIENT SETINFO/SETNAME/ID/INFO, HELLO, INFO, COMMAND ...), made by the proxy in the shapes a
// RESP2 redis-server 7 gives them, so that a client's handshake succeeds without a backend.
//
// These are pure functions of what the client session knows; session.cc calls them and unit
// tests pin their bytes (tests/proxy/local_replies_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/redis/commands.h"

namespace chash::proxy::redis {

// The Redis version the proxy presents (INFO redis_version on pools of several backends): the
// command set and reply shapes it answers as are those of redis-server 7.0.15 (Debian 12's).
// Clients that gate features on the version (BullMQ, Sidekiq: INFO redis_version >= 5) accept it.
inline constexpr std::string_view kPresentedRedisVersion = "7.0.15";

// What CLIENT SETNAME and CLIENT SETINFO accept as Redis does (networking.c validateClientName):
// printable ASCII 33..126, no spaces or newlines. Empty is allowed (it clears the name).
bool valid_client_name(std::string_view name) noexcept;

// One client's facts for CLIENT INFO / HELLO.
struct ClientFacts {
  std::uint64_t id = 0;
  std::string addr;   // "127.0.0.1:53412" (the peer)
  std::string laddr;  // the proxy's end
  int fd = -1;
  std::string_view name, lib_name, lib_ver, user;
  std::int64_t age_s = 0;
  bool multi = false;
  std::size_t multi_commands = 0;  // queued since MULTI
  bool watching = false;
};

// CLIENT INFO's line (with the trailing "\n" Redis writes), fields in Redis 7's order; the
// per-connection memory figures Redis reports are 0 (they belong to the backends).
std::string client_info_line(const ClientFacts& c);

// HELLO's map: server, version, proto, id, mode standalone, role master, modules [] — a RESP3
// map for `proto` 3, flattened to an array as a RESP2 server sends it for 2.
std::string hello_reply(std::uint64_t client_id, int proto = 2);

// INFO [section ...]: the "server", "clients", "replication", "persistence" and "keyspace"
// sections clients read at connect (ioredis' ready check reads loading:0), as a bulk string.
// `sections` is the argument text ("" or "default", "all", "server", ...); an unknown section
// gives an empty bulk string, as Redis does.
// `blocked_clients`: the pool's clients blocked now (BLPOP ...), as Redis counts its own
// (test suites wait for it).
std::string info_reply(std::string_view section, std::size_t connected_clients,
                       std::size_t blocked_clients = 0);

// COMMAND's and COMMAND INFO's entry for one command of the table: Redis 7's ten fields (name,
// arity, flags, first key, last key, step, ACL categories, tips, key specs, subcommands), the
// lists empty where the proxy has nothing to say.
void append_command_entry(std::string& out, const Command& c);
// Whether COMMAND lists `c`: every command the proxy serves (not the kUnsupported ones).
bool command_listed(const Command& c) noexcept;
// COMMAND COUNT.
std::size_t listed_command_count() noexcept;

}  // namespace chash::proxy::redis
