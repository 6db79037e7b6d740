// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/local_replies.h"

#include "chash/version.h"
#include "proto/redis/resp.h"

namespace chash::proxy::redis {

bool valid_client_name(std::string_view name) noexcept {
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < '!' || c > '~') return false;  // a space, a newline or not ASCII?  Refused.
  }
  return true;
}

std::string client_info_line(const ClientFacts& c) {
  std::string s;
  s.reserve(256);
  s += "id=" + std::to_string(c.id);
  s += " addr=" + c.addr;
  s += " laddr=" + c.laddr;
  s += " fd=" + std::to_string(c.fd);
  s += " name=";
  s += c.name;
  s += " age=" + std::to_string(c.age_s);
  s += " idle=0";
  s += c.multi ? " flags=x" : " flags=N";
  s += " db=0 sub=0 psub=0 ssub=0";
  s += " multi=" + (c.multi ? std::to_string(c.multi_commands) : std::string("-1"));
  s += " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0";
  s += " events=r cmd=client|info user=";
  s += c.user.empty() ? std::string_view("default") : c.user;
  s += " redir=-1 resp=2 lib-name=";
  s += c.lib_name;
  s += " lib-ver=";
  s += c.lib_ver;
  s += "\n";
  return s;
}

std::string hello_reply(std::uint64_t client_id, int proto) {
  // The server is named for what it is; clients read proto (and some version), not the name.
  std::string out;
  if (proto == 3) out = "%7\r\n";  // RESP3: a map of 7 pairs
  else append_array_header(out, 14);
  append_bulk(out, "server");
  append_bulk(out, "chash-proxy");
  append_bulk(out, "version");
  append_bulk(out, CHASH_VERSION_STRING);
  append_bulk(out, "proto");
  append_int(out, proto);
  append_bulk(out, "id");
  append_int(out, static_cast<std::int64_t>(client_id));
  append_bulk(out, "mode");
  append_bulk(out, "standalone");
  append_bulk(out, "role");
  append_bulk(out, "master");
  append_bulk(out, "modules");
  append_array_header(out, 0);
  return out;
}

namespace {

bool equals_lower(std::string_view a, std::string_view lower) noexcept {
  if (a.size() != lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

std::string info_reply(std::string_view section, std::size_t connected_clients,
                       std::size_t blocked_clients) {
  const bool all = section.empty() || equals_lower(section, "default") ||
                   equals_lower(section, "all") || equals_lower(section, "everything");
  std::string body;
  if (all || equals_lower(section, "server")) {
    body += "# Server\r\nredis_version:";
    body += kPresentedRedisVersion;
    body += "\r\nredis_mode:standalone\r\nchash_proxy_version:" CHASH_VERSION_STRING "\r\n";
  }
  if (all || equals_lower(section, "clients")) {
    if (!body.empty()) body += "\r\n";
    body += "# Clients\r\nconnected_clients:" + std::to_string(connected_clients) +
            "\r\nblocked_clients:" + std::to_string(blocked_clients) + "\r\n";
  }
  if (all || equals_lower(section, "persistence")) {
    if (!body.empty()) body += "\r\n";
    body += "# Persistence\r\nloading:0\r\n";  // ioredis waits while loading is not 0
  }
  if (all || equals_lower(section, "replication")) {
    if (!body.empty()) body += "\r\n";
    body += "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n";
  }
  if (all || equals_lower(section, "keyspace")) {
    if (!body.empty()) body += "\r\n";
    body += "# Keyspace\r\n";  // the keys live on the backends
  }
  std::string out;
  append_bulk(out, body);
  return out;
}

void append_command_entry(std::string& out, const Command& c) {
  append_array_header(out, 10);
  append_bulk(out, c.name);
  append_int(out, c.arity);
  append_array_header(out, 0);  // flags
  const bool keyed = c.route == Route::kKey || c.route == Route::kKeysSameNode ||
                     c.route == Route::kSplitKeys || c.route == Route::kSplitPairs ||
                     (c.route == Route::kTransaction && c.key_first > 0);
  append_int(out, keyed ? c.key_first : 0);
  append_int(out, keyed ? c.key_last : 0);
  append_int(out, keyed ? c.key_step : 0);
  for (int i = 0; i < 4; ++i) append_array_header(out, 0);  // categories, tips, specs, subs
}

bool command_listed(const Command& c) noexcept { return c.route != Route::kUnsupported; }

std::size_t listed_command_count() noexcept {
  std::size_t n = 0;
  for (const Command& c : command_table()) n += command_listed(c) ? 1 : 0;
  return n;
}

}  // namespace chash::proxy::redis
