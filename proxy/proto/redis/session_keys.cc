// SPDX-License-Identifier: Apache-2.0
// chash-proxy — commands routed by their keys as Redis 7.0 finds them: COPY, LCS, SINTERCARD,
// ZUNION/ZINTER/ZDIFF (and their STORE and CARD forms), ZMPOP, LMPOP, SORT, GEORADIUS ... STORE,
// TIME (no key: any backend), and the containers whose subcommand names a key (OBJECT, MEMORY
// USAGE, XGROUP, XINFO).
//
// The key positions come from Redis's own key specs (acl_table.inc, generated from a real
// redis-server: db.c getKeysFromCommandWithSpecs, and the getkeys procs of SORT and the numkeys
// commands), the same walk the ACL checks make. Every key must map to one backend, as Redis
// Cluster requires one slot (cluster.c getNodeByQuery); the refusal names the backends.
#include <algorithm>

#include "core/worker.h"
#include "base/text.h"
#include "proto/redis/session.h"

namespace chash::proxy::redis {

namespace {

// The request's arguments read in place (no copy), for the key-spec walk.
class RequestArgs final : public AclArgs {
 public:
  RequestArgs(const RequestParser& p, std::string_view in, std::size_t n)
      : parser_(p), buf_(in), argc_(n) {}
  std::size_t size() const noexcept override { return argc_; }
  std::string_view operator[](std::size_t i) const noexcept override {
    return parser_.arg(buf_, i);
  }

 private:
  const RequestParser& parser_;
  std::string_view buf_;
  std::size_t argc_;
};

std::string upper(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

std::string error_reply(std::string_view text) {
  std::string out;
  append_error(out, text);
  return out;
}

// Subcommands of the containers that name a key at argv[2] (their key specs, per subcommand,
// are not in the generated table: it has the containers only).
constexpr std::string_view kObjectKeyed[] = {"encoding", "freq", "idletime", "refcount"};
constexpr std::string_view kXinfoKeyed[] = {"consumers", "groups", "stream"};
constexpr std::string_view kXgroupKeyed[] = {"create", "createconsumer", "delconsumer", "destroy",
                                             "setid"};

bool any_of_words(std::span<const std::string_view> words, std::string_view arg) noexcept {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return iequal(w, arg); });
}

// SORT / SORT_RO read other keys with BY (a pattern with '*') and GET (anything but '#'): the
// patterns name keys the command's own key specs do not show (sort.c sortCommandGeneric).
bool sort_reads_patterns(const AclArgs& argv) noexcept {
  for (std::size_t i = 2; i + 1 < argv.size(); ++i) {
    if (iequal(argv[i], "limit")) {
      i += 2;
    } else if (iequal(argv[i], "by")) {
      if (argv[i + 1].find('*') != std::string_view::npos) return true;
      ++i;
    } else if (iequal(argv[i], "get")) {
      if (argv[i + 1] != "#") return true;
      ++i;
    } else if (iequal(argv[i], "store")) {
      ++i;
    }
  }
  return false;
}

}  // namespace

bool Client::find_keys(const Command& cmd, std::size_t argc, std::string& /*error*/) {
  key_pos_.clear();
  eval_bad_numkeys_ = false;
  const RequestArgs args(parser_, in_, argc);
  switch (cmd.route) {
    case Route::kSubKey: {
      if (argc < 3) return true;  // HELP and the like: no key
      const std::string_view sub = args[1];
      const bool keyed = cmd.name == "object"   ? any_of_words(kObjectKeyed, sub)
                         : cmd.name == "memory" ? iequal(sub, "usage")
                         : cmd.name == "xinfo"  ? any_of_words(kXinfoKeyed, sub)
                                                : any_of_words(kXgroupKeyed, sub);
      if (keyed) key_pos_.push_back(2);
      return true;
    }
    case Route::kEval: {
      std::int64_t numkeys = 0;
      if (!parse_int(args[2], numkeys) || numkeys < 0 ||
          static_cast<std::uint64_t>(numkeys) > argc - 3) {
        numkeys = 0;  // no keys: any backend gives Redis's own error (the script never runs)
        eval_bad_numkeys_ = true;
        return true;
      }
      for (std::int64_t i = 0; i < numkeys; ++i)
        key_pos_.push_back(static_cast<std::uint32_t>(3 + i));
      return true;
    }
    default:
      break;
  }
  acl_visit_keys(
      spec_index(cmd), args,
      [](void* ctx, std::size_t pos) {
        static_cast<std::vector<std::uint32_t>*>(ctx)->push_back(static_cast<std::uint32_t>(pos));
        return true;
      },
      &key_pos_);
  return true;
}

std::string Client::cross_backend(std::string_view name, NodeId a, NodeId b) const {
  if (pool_->config.is_cluster()) return std::string(kCrossSlot);
  const auto who = [&](NodeId n) {
    return n == kNoNode || n >= pool_->states.size() ? std::string("none") : pool_->states[n]->name;
  };
  return "ERR CROSSSLOT keys of '" + upper(name) + "' live on different backends (" + who(a) +
         ", " + who(b) + "): give them a common hash tag, as Redis Cluster needs one slot";
}

std::string Client::backend_error(NodeId node, const std::string& error) const {
  std::string why;
  if (!backend_usable(*pool_, node, "this request", why) ||
      pool_->states[node]->down.load(std::memory_order_relaxed)) {
    // Down (or now gone down by this very failure): nutcracker's scripts match the OS error.
    if (why.empty()) why = down_text(*pool_, node);
    return "ERR " + why;
  }
  return "ERR backend " + pool_->states[node]->name + ": " + error;
}

NodeId Client::keys_backend(const Command& cmd, std::size_t argc, std::string& error) {
  const RequestArgs args(parser_, in_, argc);
  const std::string_view name = args[0];
  if (key_pos_.empty()) {
    if (cmd.route == Route::kEval && !one_server() && !eval_bad_numkeys_) {
      error = "ERR " + upper(name) +
              " with no keys cannot be routed by chash-proxy (name the keys, or use a pool of "
              "one server)";
      return kNoNode;
    }
    if (cmd.name == "memory" && argc >= 2 && !iequal(args[1], "help") && !one_server()) {
      error = "ERR unsupported subcommand '" + upper(args[1]) +
              "' of MEMORY on a pool of several backends: it is about one server (ask the "
              "backends directly; MEMORY USAGE key is forwarded)";
      return kNoNode;
    }
    // No key (TIME, LOLWUT, a numkeys Redis will refuse): any backend answers the same.
    return pool_->route(std::string_view{});
  }
  if ((cmd.name == "sort" || cmd.name == "sort_ro") && !one_server() && sort_reads_patterns(args)) {
    error = "ERR " + upper(name) +
            " with BY or GET patterns reads keys of every backend: refused on a pool of several "
            "backends (chash-proxy; BY nosort and GET # are fine)";
    return kNoNode;
  }
  const std::string_view first = args[key_pos_[0]];
  const NodeId node = pool_->route(first);
  const std::uint32_t where = place(first);
  for (std::size_t i = 1; i < key_pos_.size(); ++i) {
    const std::string_view k = args[key_pos_[i]];
    if (place(k) != where) {
      error = cross_backend(name, node, pool_->route(k));
      return kNoNode;
    }
  }
  if (node == kNoNode && pool_->config.is_cluster()) {
    error = "CLUSTERDOWN Hash slot not served";
    return kNoNode;
  }
  return node;
}

void Client::spec_keys(const Command& cmd, std::size_t argc) {
  std::string error;
  if (!find_keys(cmd, argc, error)) {
    reply_local(error_reply(error), true);
    return;
  }
  const NodeId node = keys_backend(cmd, argc, error);
  if (node == kNoNode && !error.empty()) {
    reply_local(error_reply(error), true);
    return;
  }
  auto m = new_msg();
  const std::uint16_t slot =
      key_pos_.empty() ? 0 : chash::redis_key_slot(parser_.arg(in_, key_pos_[0]));
  const NodeId target = node == kNoNode ? node : read_target(node, cmd, m);
  if (node != kNoNode && target == kNoNode) return;  // read_policy replica: m failed
  if (!usable_or_fail(target, key_pos_.empty() ? "this command" : "these keys", m, false)) return;
  // Noted before anything is sent, the warm-up's steps included.
  if (!read_only(cmd)) {
    for (const std::uint32_t p : key_pos_) note_fallback_write(parser_.arg(in_, p), node);
  }
  if (target == node && !key_pos_.empty() && pool_->warming()) {
    m->parts.resize(1);
    m->outstanding = 1;
    if (warm_positions_then_forward(node, m)) return;
  }
  invalidate_args_first(target, key_pos_);  // safe return: keys the server missed, deleted first
  forward_one(target, m, slot);
}

}  // namespace chash::proxy::redis
