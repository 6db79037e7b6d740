// SPDX-License-Identifier: Apache-2.0
// chash-proxy — commands about the whole keyspace (DBSIZE, KEYS, SCAN, FLUSHALL, FLUSHDB,
// RANDOMKEY, SWAPDB, CONFIG GET, INFO) and broadcasts (SCRIPT, FUNCTION).
//
// A pool of one server holds the whole keyspace: they are forwarded as they are, and answer
// exactly as that redis-server does. On several backends: DBSIZE is summed, KEYS concatenated,
// FLUSHALL / FLUSHDB sent to every backend when the pool says `allow_flushall: true`, CONFIG GET
// and the broadcasts answered when every backend agrees, and SCAN walks the backends one after
// the other with a cursor that names the backend in its top 16 bits — as camellia-redis-proxy's
// and Envoy's redis proxy's cluster scans do — while the low 48 bits are that backend's own
// cursor (a redis dict of 2^48 buckets cannot exist). RANDOMKEY and SWAPDB need one server.
#include <charconv>

#include "core/worker.h"
#include "base/text.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

constexpr unsigned kScanNodeShift = 48;
constexpr std::uint64_t kScanCursorMask = (std::uint64_t{1} << kScanNodeShift) - 1;

std::string error_reply(std::string_view text) {
  std::string out;
  append_error(out, text);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

// A SCAN cursor: decimal digits of an unsigned 64-bit number (Redis's strtoul accepts more, but
// a cursor the proxy made is always this).
bool parse_cursor(std::string_view s, std::uint64_t& out) noexcept {
  if (s.empty() || s.size() > 20) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The bulk string's payload ("$3\r\nabc\r\n" -> "abc"); empty when it is not one.
std::string_view bulk_payload(std::string_view b) noexcept {
  const std::size_t nl = b.find("\r\n");
  if (b.empty() || b[0] != '$' || nl == std::string_view::npos || b.size() < nl + 4) return {};
  return b.substr(nl + 2, b.size() - nl - 4);
}

}  // namespace

std::string merge_replies(const Msg& m) {
  switch (m.merge) {
    case Merge::kSame: {
      const std::string_view first = m.parts[0].raw.view();
      for (const auto& p : m.parts) {
        if (p.raw.view() != first) {
          return error_reply(
              "ERR the backends answered differently (chash-proxy sends this command to every "
              "backend of the pool; ask them directly to see each one's answer)");
        }
      }
      return std::string(first);
    }
    case Merge::kConcat: {
      std::size_t n = 0;
      for (const auto& p : m.parts) {
        if (p.type != '*' && p.type != '~') {
          return error_reply("ERR unexpected reply from a backend to a broadcast command");
        }
        n += p.elements.size();
      }
      std::string out;
      out += m.parts[0].type;
      out += std::to_string(n);
      out += "\r\n";
      for (const auto& p : m.parts) {
        if (!p.elements.empty()) out += p.raw.view().substr(p.elements.front().off);
      }
      return out;
    }
    case Merge::kMinInts: {
      const std::size_t n = m.parts[0].elements.size();
      for (const auto& p : m.parts) {
        if (p.type != '*' || p.elements.size() != n) {
          return error_reply("ERR unexpected reply from a backend to a broadcast command");
        }
      }
      std::string out;
      append_array_header(out, n);
      for (std::size_t i = 0; i < n; ++i) {
        bool all = true;
        for (const auto& p : m.parts) all = all && p.elements[i].in(p.raw.view()) == ":1\r\n";
        out += all ? ":1\r\n" : ":0\r\n";
      }
      return out;
    }
    case Merge::kScan: {
      const auto& p = m.parts[0];
      std::uint64_t c = 0;
      if (p.type != '*' || p.elements.size() != 2 ||
          !parse_cursor(bulk_payload(p.elements[0].in(p.raw.view())), c)) {
        return error_reply("ERR unexpected reply from a backend to SCAN");
      }
      if (c > kScanCursorMask) {
        return error_reply("ERR a backend's SCAN cursor does not fit chash-proxy's 48 bits");
      }
      // The backend is done: the next one from its start; the last: the whole scan is done.
      const std::uint64_t node = m.scan_node;
      const std::uint64_t next = c != 0                    ? (node << kScanNodeShift) | c
                                 : node + 1 < m.scan_nodes ? (node + 1) << kScanNodeShift
                                                           : 0;
      std::string out = "*2\r\n";
      append_bulk(out, std::to_string(next));
      out += p.elements[1].in(p.raw.view());
      return out;
    }
    default:
      return std::string(m.parts[0].raw.view());
  }
}

void Client::keyspace(const Command& cmd, std::size_t argc) {
  const std::string_view name = cmd.name;
  if (name == "config") {
    const std::string_view sub = parser_.arg(in_, 1);
    if (!iequal(sub, "get") && !iequal(sub, "help") && !pool_->config.allow_config_set) {
      reject("ERR unsupported subcommand '" + upper(sub) +
             "' of CONFIG: it changes the backends' servers (chash-proxy forwards CONFIG GET, "
             "and the rest with 'allow_config_set: true' in the pool's config)");
      return;
    }
    broadcast(Merge::kSame);  // one server: its reply as it is; several: they must agree
    return;
  }
  if (one_server()) {
    auto m = new_msg();
    if (usable_or_fail(0, "the pool's server", m, true)) forward_one(0, m);
    return;
  }
  if (name == "dbsize" || name == "keys") {
    broadcast(cmd.merge, {}, true);
  } else if (name == "flushall" || name == "flushdb") {
    if (!pool_->config.allow_flushall) {
      reject("ERR " + upper(name) +
             " on a pool of several backends flushes every one of them: chash-proxy sends it "
             "only with 'allow_flushall: true' in the pool's config");
      return;
    }
    broadcast(cmd.merge, {}, true);
  } else if (name == "scan") {
    scan_backends(argc);
  } else {
    reject("ERR unsupported command '" + upper(parser_.arg(in_, 0)) +
           "' on a pool of several backends: it needs one server's whole keyspace (a pool of one "
           "server forwards it) (chash-proxy)");
  }
}

std::vector<NodeId> Client::keyspace_members() const {
  std::vector<NodeId> out;
  for (NodeId i = 0; i < pool_->servers.size(); ++i) {
    if (i < pool_->nodes || (pool_->warming() && pool_->servers[i].role == ServerRole::kRetired))
      out.push_back(i);
  }
  return out;
}

void Client::scan_backends(std::size_t argc) {
  std::uint64_t cursor = 0;
  if (!parse_cursor(parser_.arg(in_, 1), cursor)) {
    reject("ERR invalid cursor");
    return;
  }
  // The cursor's top bits index keyspace_members(): the routed nodes first, then (warm-up) the
  // retired ones, so a scan begun before a reload goes on over the same positions.
  const std::vector<NodeId> members = keyspace_members();
  const std::uint64_t index = cursor >> kScanNodeShift;
  if (index >= members.size()) {
    reject("ERR invalid cursor");
    return;
  }
  const std::uint64_t node = members[index];
  // The same request with that backend's own cursor.
  const std::string inner = std::to_string(cursor & kScanCursorMask);
  std::vector<std::string_view> argv;
  argv.reserve(argc);
  for (std::size_t i = 0; i < argc; ++i) argv.push_back(i == 1 ? inner : parser_.arg(in_, i));
  std::string bytes;
  append_command(bytes, argv);
  auto m = new_msg();
  NodeId n = static_cast<NodeId>(node);
  if (!usable_or_fail(n, "SCAN", m, true)) return;
  std::string error;
  BackendConn* b = connection(n, error);
  if (b == nullptr) {
    count_forward_error();
    fail_msg(m, backend_error(n, error), false);
    return;
  }
  m->merge = Merge::kScan;
  m->scan_node = static_cast<std::uint32_t>(index);
  m->scan_nodes = static_cast<std::uint32_t>(members.size());
  m->parts.resize(1);
  m->outstanding = 1;
  b->send({bytes}, m, 0);
}

void Client::broadcast(Merge merge, std::string_view bytes, bool keyspace, bool own) {
  auto m = new_msg();
  std::vector<NodeId> members;
  if (keyspace) {
    members = keyspace_members();
  } else {
    for (NodeId i = 0; i < pool_->nodes; ++i) members.push_back(i);
  }
  for (const NodeId node : members) {
    if (!usable_or_fail(node, "every backend", m, true)) return;
  }
  const auto n = static_cast<std::uint32_t>(members.size());
  std::string scratch;
  if (bytes.empty()) bytes = request_bytes(scratch);
  m->merge = n == 1 ? Merge::kNone : merge;  // one server: its reply as it is
  m->parts.resize(n);
  m->outstanding = n;
  count_fragments(n);
  bool counted_error = false;
  for (std::uint32_t part = 0; part < n; ++part) {
    std::string error;
    NodeId target = members[part];
    BackendConn* b =
        own ? worker_.dedicated_backend(pool_index_, target, error) : connection(target, error);
    if (b == nullptr) {
      if (!counted_error) count_forward_error();
      counted_error = true;
      m->fail_part(part, error_reply(backend_error(members[part], error)));
      continue;
    }
    b->send({bytes}, m, part);
    if (own) b->drain();  // closes once it has answered
  }
}

// INFO on a pool of one server is that server's (a plain Redis: clients and test suites read
// its counters); elsewhere the proxy's own sections (session_local.cc).
void Client::info_forward(std::size_t) {
  auto m = new_msg();
  if (usable_or_fail(0, "the pool's server", m, true)) forward_one(0, m);
}

}  // namespace chash::proxy::redis
