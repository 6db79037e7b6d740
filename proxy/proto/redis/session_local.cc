// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the Redis client's connection-setup commands, answered by the proxy as a RESP2
// redis-server 7 answers them (proto/redis/local_replies.h has the reply shapes): CLIENT,
// COMMAND, INFO, SELECT, READONLY / READWRITE. AUTH, HELLO, PING, ECHO and QUIT are in
// session.cc.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "core/worker.h"
#include "proto/redis/local_replies.h"
#include "proto/redis/session.h"
#include "proto/tcp/proxy_header.h"

namespace chash::proxy::redis {

namespace {

std::string ok() { return "+OK\r\n"; }

std::string lower(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Printable for an error message (Redis quotes the client's text in its replies).
std::string printable(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

// "ip:port" of a socket's end (peer or own), "path:0" for a unix socket, as CLIENT INFO shows.
std::string address_of(int fd, bool peer) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc != 0) return "?:0";
  if (a.ss_family == AF_UNIX) {
    const auto* u = reinterpret_cast<const sockaddr_un*>(&a);
    return std::string(u->sun_path) + ":0";
  }
  const sockaddr_storage m = tcp::unmap_v4(a);
  const std::string ip = tcp::ip_text(m);
  const unsigned port = m.ss_family == AF_INET6
                            ? ntohs(reinterpret_cast<const sockaddr_in6*>(&m)->sin6_port)
                            : ntohs(reinterpret_cast<const sockaddr_in*>(&m)->sin_port);
  return (m.ss_family == AF_INET6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

}  // namespace

// CLIENT <subcommand>: what a client says of itself is kept here (the backend connections are
// shared, so nothing is passed on); what would change how the connection is served (REPLY
// OFF/SKIP, TRACKING, KILL, PAUSE ...) is refused by name.
void Client::local_client(std::size_t argc) {
  const std::string sub = lower(parser_.arg(in_, 1));
  const auto arg = [&](std::size_t i) { return parser_.arg(in_, i); };
  const auto wrong_args = [&] {
    reply_local(error_text("ERR wrong number of arguments for 'client|" + sub + "' command"), true);
  };
  if (sub == "setname") {
    if (argc != 3) return wrong_args();
    if (!valid_client_name(arg(2))) {
      reply_local(
          error_text("ERR Client names cannot contain spaces, newlines or special characters."),
          true);
      return;
    }
    name_ = std::string(arg(2));
    reply_local(ok());
  } else if (sub == "getname") {
    if (argc != 2) return wrong_args();
    std::string out;
    if (name_.empty()) out = resp_ == 3 ? "_\r\n" : "$-1\r\n";
    else append_bulk(out, name_);
    reply_local(std::move(out));
  } else if (sub == "setinfo") {  // Redis 7.2: lib-name / lib-ver
    if (argc != 4) return wrong_args();
    const std::string attr = lower(arg(2));
    if (attr != "lib-name" && attr != "lib-ver") {
      reply_local(error_text("ERR Unrecognized option '" + printable(arg(2)) + "'"), true);
      return;
    }
    if (!valid_client_name(arg(3))) {
      reply_local(error_text(attr + " cannot contain spaces, newlines or special characters."),
                  true);
      return;
    }
    (attr == "lib-name" ? lib_name_ : lib_ver_) = std::string(arg(3).substr(0, 128));
    reply_local(ok());
  } else if (sub == "id") {
    if (argc != 2) return wrong_args();
    std::string out;
    append_int(out, static_cast<std::int64_t>(id_));
    reply_local(std::move(out));
  } else if (sub == "info") {
    if (argc != 2) return wrong_args();
    ClientFacts f;
    f.id = id_;
    f.addr = address_of(fd_, true);
    f.laddr = address_of(fd_, false);
    f.fd = fd_;
    f.name = name_;
    f.lib_name = lib_name_;
    f.lib_ver = lib_ver_;
    f.user = user_name_;
    f.age_s =
        std::chrono::duration_cast<std::chrono::seconds>(worker_.loop().now() - created_).count();
    f.multi = tx_.active();
    f.multi_commands = tx_.size();
    f.watching = dedicated_ != nullptr;
    std::string out;
    append_bulk(out, client_info_line(f));
    reply_local(std::move(out));
  } else if (sub == "unblock") {
    if (argc != 3 && argc != 4) return wrong_args();
    client_unblock(argc);  // session_own.cc
  } else if (sub == "tracking") {
    if (argc < 3) return wrong_args();
    client_tracking(argc);  // session_tracking.cc
  } else if (sub == "caching") {
    if (argc != 3) return wrong_args();
    client_caching(argc);
  } else if (sub == "getredir" || sub == "trackinginfo") {
    if (argc != 2) return wrong_args();
    client_tracking_info(sub == "getredir");
  } else if (sub == "no-evict" || sub == "no-touch") {
    // Hints about the client's own connection's eviction / LRU touch: nothing to do here.
    if (argc != 3) return wrong_args();
    const std::string v = lower(arg(2));
    if (v != "on" && v != "off") {
      reply_local(error_text("ERR syntax error"), true);
      return;
    }
    reply_local(ok());
  } else if (sub == "reply") {
    if (argc != 3) return wrong_args();
    const std::string v = lower(arg(2));
    // Redis's CLIENT REPLY: OFF silences every reply from here, SKIP the next command's, ON
    // answers +OK and speaks again. Pub/Sub messages and confirmations are pushes, always sent.
    if (v == "on") {
      reply_off_ = false;
      silent_ = false;
      reply_local(ok());
    } else if (v == "off") {
      reply_off_ = true;
    } else if (v == "skip") {
      skip_next_reply_ = !reply_off_;
    } else {
      reply_local(error_text("ERR syntax error"), true);
    }
  } else {
    reply_local(error_text("ERR unsupported subcommand '" + printable(arg(1)) +
                           "' of CLIENT (chash-proxy answers SETNAME, GETNAME, SETINFO, ID, INFO, "
                           "UNBLOCK, NO-EVICT, NO-TOUCH, REPLY, TRACKING, CACHING, GETREDIR, "
                           "TRACKINGINFO)"),
                true);
  }
}

// COMMAND, COMMAND COUNT, COMMAND INFO name..., COMMAND DOCS [name...], COMMAND LIST: the
// commands the proxy serves, in Redis 7's shapes (clients probe them; redis-cli asks on
// connect for completion hints). DOCS has nothing to document: an empty map.
void Client::local_command(std::size_t argc) {
  std::string out;
  if (argc == 1) {
    append_array_header(out, listed_command_count());
    for (const Command& c : command_table()) {
      if (command_listed(c)) append_command_entry(out, c);
    }
    reply_local(std::move(out));
    return;
  }
  const std::string sub = lower(parser_.arg(in_, 1));
  if (sub == "count" && argc == 2) {
    append_int(out, static_cast<std::int64_t>(listed_command_count()));
  } else if (sub == "info") {
    append_array_header(out, argc - 2);
    for (std::size_t i = 2; i < argc; ++i) {
      const Command* c = find_command(parser_.arg(in_, i));
      if (c != nullptr && command_listed(*c)) append_command_entry(out, *c);
      else out += "*-1\r\n";  // Redis answers a null for a command it does not have
    }
  } else if (sub == "docs") {
    out = "*0\r\n";
  } else if (sub == "list" && argc == 2) {
    append_array_header(out, listed_command_count());
    for (const Command& c : command_table()) {
      if (command_listed(c)) append_bulk(out, c.name);
    }
  } else if ((sub == "getkeys" || sub == "getkeysandflags") && argc >= 3) {
    // Where a command's keys are is the server's command table's answer (key specs, getkeys
    // procs, flags): any backend gives it exactly, for every command it has.
    auto m = new_msg();
    NodeId node = 0;
    while (!one_server() && node + 1 < pool_->nodes && !pool_->up(node)) ++node;
    if (!usable_or_fail(node, "COMMAND GETKEYS", m, true)) return;
    forward_one(node, m);
    return;
  } else {
    reply_local(error_text("ERR unsupported subcommand '" + printable(parser_.arg(in_, 1)) +
                           "' of COMMAND (chash-proxy answers COUNT, INFO, DOCS, LIST, GETKEYS, "
                           "GETKEYSANDFLAGS)"),
                true);
    return;
  }
  reply_local(std::move(out));
}

void Client::local_info(std::size_t argc) {
  if (one_server()) {
    info_forward(argc);  // a plain Redis: its own INFO (session_keyspace.cc)
    return;
  }
  if (argc > 2) {
    // INFO a b (Redis 7 takes several sections): the proxy's sections are all small; all.
    reply_local(info_reply("", worker_.client_count(), blocked_now()));
    return;
  }
  reply_local(
      info_reply(argc == 2 ? parser_.arg(in_, 1) : "", worker_.client_count(), blocked_now()));
}

// READONLY / READWRITE: cluster-mode hints for replica reads; every read already goes to the
// key's backend, so they change nothing.
void Client::local_readonly(std::size_t) { reply_local(ok()); }

}  // namespace chash::proxy::redis
