// SPDX-License-Identifier: Apache-2.0
// chash-proxy — client-side caching: CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR, CLIENT
// TRACKINGINFO (Redis 6+, used by redis-py, Lettuce, node-redis).
//
// Tracking is state of a connection on the server: the server remembers the keys a connection
// read and tells it when one changes. A tracking client therefore gets connections of its own
// (as a RESP3 one does, session_own.cc), and each of them says CLIENT TRACKING to its server —
// every routed backend's at once, and the ones opened later as they open — so whichever backend
// a read goes to tracks it:
//   - a RESP3 client receives the invalidation pushes its connections get, as they come
//     (Backend::on_input passes a '>' frame of a client's own connection to it);
//   - a RESP2 client names with REDIRECT the CLIENT ID (the proxy's) of another client
//     subscribed to __redis__:invalidate. That channel is subscribed on every backend
//     (session_pubsub.cc), and each backend's CLIENT TRACKING ... REDIRECT names that backend's
//     id for the subscriber's connection there: the server sends it the invalidation message,
//     which the proxy passes on like any other.
// CLIENT CACHING yes|no (OPTIN / OPTOUT) applies to the client's next command: the proxy sends
// it on each connection that command uses, just before it.
#include <mutex>
#include <unordered_map>

#include "core/worker.h"
#include "proto/redis/local_replies.h"
#include "base/text.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

// The server-side ids of the subscriber connections of each client (by the proxy's CLIENT
// ID), per server name: what a REDIRECT to that client becomes on each backend. Touched when a
// subscriber connection opens or closes, never per request.
struct SubscriberIds {
  const PoolShared* pool = nullptr;
  std::unordered_map<std::string, std::int64_t> by_server;
};
std::mutex ids_mu;
std::unordered_map<std::uint64_t, SubscriberIds>& subscriber_ids() {
  static std::unordered_map<std::uint64_t, SubscriberIds> m;
  return m;
}

}  // namespace

void note_subscriber_id(std::uint64_t client, const PoolShared* pool, const std::string& server,
                        std::int64_t backend_id) {
  std::lock_guard lock(ids_mu);
  SubscriberIds& s = subscriber_ids()[client];
  s.pool = pool;
  s.by_server[server] = backend_id;
}

void forget_subscriber_ids(std::uint64_t client, const std::string* server) {
  std::lock_guard lock(ids_mu);
  const auto it = subscriber_ids().find(client);
  if (it == subscriber_ids().end()) return;
  if (server == nullptr) subscriber_ids().erase(it);
  else it->second.by_server.erase(*server);
}

// The CLIENT TRACKING request for the own connection to `server`: the client's options, with
// REDIRECT naming that server's id for the target's subscriber connection. False when the
// target has none there (it is not subscribed to __redis__:invalidate on that backend yet).
bool Client::tracking_request(const std::string& server, std::string& out,
                              const std::vector<std::string>* prefixes) const {
  std::vector<std::string> argv = {"CLIENT", "TRACKING", "on"};
  if (tracking_.redirect != 0) {
    std::lock_guard lock(ids_mu);
    const auto it = subscriber_ids().find(tracking_.redirect);
    if (it == subscriber_ids().end()) return false;
    const auto at = it->second.by_server.find(server);
    if (at == it->second.by_server.end()) return false;
    argv.push_back("REDIRECT");
    argv.push_back(std::to_string(at->second));
  }
  if (tracking_.bcast) argv.push_back("BCAST");
  for (const std::string& p : prefixes != nullptr ? *prefixes : tracking_.prefixes) {
    argv.push_back("PREFIX");
    argv.push_back(p);
  }
  if (tracking_.optin) argv.push_back("OPTIN");
  if (tracking_.optout) argv.push_back("OPTOUT");
  if (tracking_.noloop) argv.push_back("NOLOOP");
  std::vector<std::string_view> views(argv.begin(), argv.end());
  out.clear();
  append_command(out, views);
  return true;
}

// Sends `bytes` on own connection `b` as a request of the proxy's (its answer is nobody's).
void Client::send_quietly(BackendConn* b, std::string_view bytes) {
  auto m = make_ref<Msg>();
  m->parts.resize(1);
  m->outstanding = 1;
  m->then = [](Msg&) {};
  b->send({bytes}, m, 0);
}

void Client::tracking_opened(Backend* b, NodeId node) {
  if (!tracking_.on) return;
  std::string request;
  if (tracking_request(pool_->servers[node].name, request)) send_quietly(b, request);
}

void Client::caching_before(BackendConn* b) {
  if (tracking_.caching_now < 0) return;
  send_quietly(b, tracking_.caching_now == 1
                      ? "*3\r\n$6\r\nCLIENT\r\n$7\r\nCACHING\r\n$3\r\nyes\r\n"
                      : "*3\r\n$6\r\nCLIENT\r\n$7\r\nCACHING\r\n$2\r\nno\r\n");
}

// CLIENT TRACKING on|off [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]: checked
// with Redis's words (networking.c clientCommand), then said on a connection of the client's
// own to every routed backend; +OK when they all said so, else the first error.
void Client::client_tracking(std::size_t argc) {
  Tracking next;
  std::int64_t redirect = 0;
  for (std::size_t j = 3; j < argc; ++j) {
    const std::string_view a = parser_.arg(in_, j);
    const bool more = j + 1 < argc;
    if (iequal(a, "redirect") && more) {
      ++j;
      if (redirect != 0) {
        reply_local(error_text("ERR A client can only redirect to a single other client"), true);
        return;
      }
      if (!parse_int(parser_.arg(in_, j), redirect)) {
        reply_local(error_text("ERR value is not an integer or out of range"), true);
        return;
      }
      bool found = false;
      {
        std::lock_guard lock(ids_mu);
        const auto it = subscriber_ids().find(static_cast<std::uint64_t>(redirect));
        found = it != subscriber_ids().end() && it->second.pool == pool_->shared.get();
      }
      if (!found) {
        // A client of this pool subscribed to __redis__:invalidate (Redis asks only that it
        // exists; through the proxy it must listen, or nothing could reach it).
        reply_local(error_text("ERR The client ID you want redirect to does not exist"), true);
        return;
      }
    } else if (iequal(a, "bcast")) {
      next.bcast = true;
    } else if (iequal(a, "optin")) {
      next.optin = true;
    } else if (iequal(a, "optout")) {
      next.optout = true;
    } else if (iequal(a, "noloop")) {
      next.noloop = true;
    } else if (iequal(a, "prefix") && more) {
      next.prefixes.emplace_back(parser_.arg(in_, ++j));
    } else {
      reply_local(error_text("ERR syntax error"), true);
      return;
    }
  }
  const std::string_view mode = parser_.arg(in_, 2);
  if (iequal(mode, "off")) {
    const bool was_on = tracking_.on;
    tracking_ = Tracking{};
    if (was_on) {
      // The connections go with it (their tracking state is the server's): the next requests
      // open plain ones, or shared ones for a RESP2 client of database 0.
      release_own(false);
      open_own_now();
    }
    reply_local("+OK\r\n");
    return;
  }
  if (!iequal(mode, "on")) {
    reply_local(error_text("ERR syntax error"), true);
    return;
  }
  const char* refusal = nullptr;
  if (!next.bcast && !next.prefixes.empty()) {
    refusal = "ERR PREFIX option requires BCAST mode to be enabled";
  } else if (tracking_.on && tracking_.bcast != next.bcast) {
    refusal =
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
        "then re-enabling it with a different mode.";
  } else if (next.bcast && (next.optin || next.optout)) {
    refusal = "ERR OPTIN and OPTOUT are not compatible with BCAST";
  } else if (next.optin && next.optout) {
    refusal = "ERR You can't specify both OPTIN mode and OPTOUT mode";
  } else if (tracking_.on &&
             ((next.optin && tracking_.optout) || (next.optout && tracking_.optin))) {
    refusal =
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
        "then re-enabling it with a different mode.";
  }
  if (refusal != nullptr) {
    reply_local(error_text(refusal), true);
    return;
  }
  if (tx_.active()) {
    reject(
        "ERR chash-proxy: CLIENT TRACKING cannot be queued in a transaction (send it before "
        "MULTI)");
    return;
  }
  next.on = true;
  next.redirect = static_cast<std::uint64_t>(redirect);
  // Each routed backend's connection of the client's own says it, as a part of this request
  // (its errors are the reply); connections opened later say it as they open (tracking_opened).
  auto m = new_msg();
  m->merge = Merge::kAllOk;
  std::vector<std::pair<NodeId, Backend*>> conns;
  const NodeId count = one_server() ? 1 : static_cast<NodeId>(pool_->nodes);
  for (NodeId node = 0; node < count; ++node) {
    if (!one_server() && !pool_->up(node)) continue;  // told when it opens again
    std::string error;
    Backend* b = own_connection(node, error);  // with the old options, if any
    if (b == nullptr) {
      count_forward_error();
      fail_msg(m, backend_error(node, error), false);
      return;
    }
    conns.emplace_back(node, b);
  }
  // The servers keep the prefixes of earlier calls themselves: each connection is told the
  // ones of this call (the server checks them against its own, in Redis's words).
  const std::vector<std::string> given = next.prefixes;
  if (tracking_.on) {
    for (const std::string& p : tracking_.prefixes) {
      if (std::find(next.prefixes.begin(), next.prefixes.end(), p) == next.prefixes.end())
        next.prefixes.push_back(p);
    }
  }
  tracking_ = std::move(next);
  std::vector<std::pair<Backend*, std::string>> sends;
  for (const auto& [node, b] : conns) {
    std::string request;
    if (tracking_request(pool_->servers[node].name, request, &given))
      sends.emplace_back(b, std::move(request));
  }
  m->parts.resize(std::max<std::size_t>(sends.size(), 1));
  if (sends.empty()) {
    m->outstanding = 1;
    m->answer_part(0, "+OK\r\n", '+', {});
    return;
  }
  m->outstanding = static_cast<std::uint32_t>(sends.size());
  for (std::uint32_t i = 0; i < sends.size(); ++i) sends[i].first->send({sends[i].second}, m, i);
}

// CLIENT CACHING yes|no: for the next command (OPTIN / OPTOUT), with Redis's checks.
void Client::client_caching(std::size_t) {
  const std::string_view opt = parser_.arg(in_, 2);
  if (!tracking_.on) {
    reply_local(error_text("ERR CLIENT CACHING can be called only when the client is in tracking "
                           "mode with OPTIN or OPTOUT mode enabled"),
                true);
    return;
  }
  if (iequal(opt, "yes")) {
    if (!tracking_.optin) {
      reply_local(
          error_text(
              "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."),
          true);
      return;
    }
    tracking_.caching_next = 1;
  } else if (iequal(opt, "no")) {
    if (!tracking_.optout) {
      reply_local(
          error_text(
              "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."),
          true);
      return;
    }
    tracking_.caching_next = 0;
  } else {
    reply_local(error_text("ERR syntax error"), true);
    return;
  }
  reply_local("+OK\r\n");
}

// CLIENT GETREDIR and CLIENT TRACKINGINFO, from what the proxy keeps (the REDIRECT the client
// gave, not a backend's id).
void Client::client_tracking_info(bool getredir) {
  std::string out;
  const std::int64_t redirect =
      tracking_.on ? static_cast<std::int64_t>(tracking_.redirect) : std::int64_t{-1};
  if (getredir) {
    append_int(out, redirect);
    reply_local(std::move(out));
    return;
  }
  std::vector<std::string_view> flags = {tracking_.on ? "on" : "off"};
  if (tracking_.bcast) flags.push_back("bcast");
  if (tracking_.optin) flags.push_back("optin");
  if (tracking_.optin && tracking_.caching_now == 1) flags.push_back("caching-yes");
  if (tracking_.optout) flags.push_back("optout");
  if (tracking_.optout && tracking_.caching_now == 0) flags.push_back("caching-no");
  if (tracking_.noloop) flags.push_back("noloop");
  if (tracking_.on && tracking_.broken_redirect) flags.push_back("broken_redirect");
  out += resp_ == 3 ? "%3\r\n" : "*6\r\n";
  append_bulk(out, "flags");
  out += (resp_ == 3 ? "~" : "*") + std::to_string(flags.size()) + "\r\n";
  for (const std::string_view f : flags) append_bulk(out, f);
  append_bulk(out, "redirect");
  append_int(out, redirect);
  append_bulk(out, "prefixes");
  if (tracking_.on && tracking_.bcast && tracking_.prefixes.empty()) {
    out += "*1\r\n$0\r\n\r\n";  // BCAST with no PREFIX: Redis registers the empty prefix
  } else {
    append_array_header(out, tracking_.prefixes.size());
    for (const std::string& p : tracking_.prefixes) append_bulk(out, p);
  }
  reply_local(std::move(out));
}

// A RESP3 push one of the client's own connections received (an invalidation): to the client.
// In the server's order: ahead of the replies this client still waits for (Redis sends an
// eviction's invalidation before the reply of the command that evicted).
void Client::backend_push(std::string_view raw) {
  constexpr std::string_view kBroken = ">2\r\n$21\r\ntracking-redir-broken\r\n";
  if (raw.starts_with(kBroken)) {
    // The id the server names is its own for the subscriber's connection: the client gave ours.
    tracking_.broken_redirect = true;
    std::string out(kBroken);
    append_int(out, static_cast<std::int64_t>(tracking_.redirect));
    push_ahead(std::move(out));
    return;
  }
  push_ahead(std::string(raw));
}

}  // namespace chash::proxy::redis
