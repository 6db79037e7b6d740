// SPDX-License-Identifier: Apache-2.0
// chash-proxy — Redis ACL users of a pool, declared in Redis's own aclfile syntax and enforced
// by the proxy as redis-server 7.0 enforces them (src/acl.c: ACLSetUser, ACLCheckAllPerm).
//
//   acl:
//     - "user alice on >secret ~app:* +@read +@write -@dangerous"
//     - "user metrics on #<sha256 hex of the password> ~stats:* +get +mget"
//
// Each line is an aclfile line: `user <name>` then rules applied in order to a new user (off,
// no password, no keys, no commands). Rules: on, off, nopass, resetpass, >pass, <pass, #hash,
// !hash, ~pattern, %R~pattern, %W~pattern, %RW~pattern, allkeys, resetkeys, +cmd, -cmd,
// +@category, -@category, +cmd|sub, -cmd|sub, +cmd|firstarg, allcommands, nocommands, reset,
// (...) selectors and clearselectors, channel rules (&pattern, allchannels or &*, resetchannels:
// PUBLISH, SPUBLISH, SUBSCRIBE and SSUBSCRIBE channels match them as globs, PSUBSCRIBE patterns
// must equal one, as acl.c ACLCheckChannelAgainstList); (skip-)sanitize-payload are accepted
// and have no effect.
// Subcommands are commands of their own, as in Redis 7.0 (server.c lookupCommand, acl.c
// ACLSetSelector): `CONFIG GET` is checked as `config|get` (@admin @slow @dangerous), with its
// own key specs (`OBJECT ENCODING k`: k at argument 2); `+config` / `-config` and a category
// that includes the container set or clear every subcommand; `+select|0` allows SELECT with
// that first argument only (Redis's deprecated first-arg rules).
// Without a `user default` line the default user is Redis's: on nopass ~* &* +@all, with the
// pool's client password (requirepass) when one is set.
//
// Categories and key specs are Redis's own, per command: proxy/proto/redis/acl_table.inc is
// generated from a real redis-server by scripts/gen_redis_acl_table.py, so a command's keys, and
// whether each is read or written, are found as Redis finds them (db.c
// getKeysFromCommandWithSpecs). Passwords are kept only as SHA-256 (as Redis keeps them) and
// compared in constant time.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace chash::proxy::redis {

// Number of commands in the generated table (acl_table.inc), checked by a static_assert.
// Subcommands (`config|get`) are rows of their own.
inline constexpr std::size_t kAclMaxCommands = 512;

using PasswordHash = std::array<unsigned char, 32>;  // SHA-256

// What a key pattern allows (Redis 7): `~p` reading and writing, `%R~p` reading, `%W~p` writing.
inline constexpr std::uint8_t kAclKeyRead = 1;
inline constexpr std::uint8_t kAclKeyWrite = 2;
inline constexpr std::uint8_t kAclKeyAll = kAclKeyRead | kAclKeyWrite;

struct AclKeyPattern {
  std::string glob;  // Redis glob
  std::uint8_t perms = kAclKeyAll;
  friend bool operator==(const AclKeyPattern&, const AclKeyPattern&) = default;
};

// Commands and keys a selector allows. A user's own rules are its root selector; Redis 7 adds
// `(...)` selectors, each with commands and keys of its own: a command runs when one selector
// allows it and every key it touches (ACLCheckAllUserCommandPerm).
struct AclSelector {
  bool all_keys = false;                     // ~* / allkeys
  std::vector<AclKeyPattern> key_patterns;   // unused when all_keys
  // &pattern / allchannels (&*) / resetchannels: the Pub/Sub channels a user may publish to
  // and subscribe to. A new user has none (Redis 7.0's acl-pubsub-default resetchannels).
  bool all_channels = false;
  std::vector<std::string> channel_patterns;  // unused when all_channels
  std::bitset<kAclMaxCommands> commands;     // allowed, by index in the generated table
  // Every command of the table is allowed (set by Acl::build): the per-command lookup is skipped.
  bool all_commands = false;
  // `+select|0`: a command (by index) allowed with this first argument (lower case) only, while
  // its bit is clear (acl.c allowed_firstargs; checked only on the way to a denial).
  std::vector<std::pair<std::uint16_t, std::string>> first_args;
};

struct AclUser : AclSelector {  // the root selector
  std::string name;
  bool enabled = false;
  bool nopass = false;
  std::vector<PasswordHash> passwords;
  std::vector<AclSelector> selectors;  // (...) rules, tried after the root, in order
  // Some selector allows every command and every key (~* +@all): scripts and functions may run
  // (set by Acl::build; see acl_script_allowed).
  bool unrestricted = false;
};

// A rule line that cannot be applied: `rule` is the offending token ("" for the line as a
// whole), `message` says why in Redis's words where Redis has some.
struct AclError : std::runtime_error {
  AclError(std::string offending, const std::string& message)
      : std::runtime_error(message), rule(std::move(offending)) {}
  std::string rule;
};

class Acl {
 public:
  // Builds the users of `lines` (aclfile lines) on top of Redis's default user; a
  // `default_password` (requirepass) is the default user's password unless a line declares
  // `user default`. Throws AclError for the first bad line (`line_index` says which).
  static std::shared_ptr<const Acl> build(std::span<const std::string> lines,
                                          const std::optional<std::string>& default_password,
                                          std::size_t* line_index = nullptr);

  // Applies one rule to `user` as ACL SETUSER does (a selector is one rule: "(~k:* +get)");
  // throws AclError.
  static void apply_rule(AclUser& user, std::string_view rule);
  // Joins the arguments of a selector split over several ("(~k:*", "+get)") as Redis does
  // (ACLMergeSelectorArguments); throws AclError on an unclosed one.
  static std::vector<std::string> merge_selectors(std::vector<std::string> args);
  // Splits an aclfile line into arguments as Redis does (sdssplitargs: spaces, "double" quotes
  // with \x41-style escapes, 'single' quotes); throws AclError on unbalanced quotes.
  static std::vector<std::string> split_line(std::string_view line);

  // The user `name` if `password` is one of its passwords (or it has nopass) and it is on;
  // else nullptr (WRONGPASS). Constant time in the password.
  const AclUser* authenticate(std::string_view name, std::string_view password) const noexcept;
  const AclUser* find(std::string_view name) const noexcept;
  const AclUser& default_user() const noexcept { return users_[default_index_]; }
  // A new connection is authenticated as `default` when it is on and has nopass (Redis's
  // authRequired()).
  bool auth_required() const noexcept { return !default_user().enabled || !default_user().nopass; }
  std::span<const AclUser> users() const noexcept { return users_; }

 private:
  std::vector<AclUser> users_;
  std::size_t default_index_ = 0;
};

// ---- Per-command checks (hot path: no allocation) --------------------------------------------

// The command's index in the generated table, or -1 when Redis has no such command.
int acl_command_index(std::string_view lower_name) noexcept;
// Whether every user may run it (Redis's no_auth flag: AUTH, HELLO, QUIT).
bool acl_command_no_auth(int index) noexcept;
// The command Redis runs for command `index` with first argument `arg1` (server.c
// lookupCommandLogic): a container's subcommand (`config` + "GET" -> `config|get`, any case),
// -1 when the container has no such subcommand (Redis: "unknown subcommand"), else `index`.
int acl_subcommand_index(int index, std::string_view arg1) noexcept;
// The same for a whole request: argv[1] only when there is one (`COMMAND` alone is `command`).
class AclArgs;
int acl_resolve_index(int index, const AclArgs& args) noexcept;
// Whether command `index` is a container (CONFIG, CLIENT, OBJECT, XINFO ...).
bool acl_has_subcommands(int index) noexcept;
// The command's full name as Redis spells it in errors ("get", "config|get").
std::string_view acl_command_name(int index) noexcept;
// Redis's arity of command `index` (N exactly, -N at least N, the name included).
int acl_command_arity(int index) noexcept;
// May `selector` run command `index` (its command rules only)?
inline bool acl_command_allowed(const AclSelector& s, int index) noexcept {
  return index >= 0 && (acl_command_no_auth(index) || s.all_commands ||
                        s.commands.test(static_cast<std::size_t>(index)));
}
// May `selector` touch `key` with `perms` (kAclKeyRead / kAclKeyWrite / both / 0 for neither,
// as EXISTS or TYPE touch a key)?
bool acl_key_allowed(const AclSelector& s, std::string_view key, std::uint8_t perms) noexcept;

// A command's arguments, argv[0] its name, as the checks read them (the session's request
// buffer, or a span in tests).
class AclArgs {
 public:
  virtual std::size_t size() const noexcept = 0;
  virtual std::string_view operator[](std::size_t i) const noexcept = 0;

 protected:
  ~AclArgs() = default;
};
class AclArgSpan final : public AclArgs {
 public:
  explicit AclArgSpan(std::span<const std::string_view> args) noexcept : args_(args) {}
  std::size_t size() const noexcept override { return args_.size(); }
  std::string_view operator[](std::size_t i) const noexcept override { return args_[i]; }

 private:
  std::span<const std::string_view> args_;
};

// The keys of command `index` in `args` and what the command does to each: {argument position,
// kAclKeyRead | kAclKeyWrite}, as Redis 7.0 finds them (key specs; SET, BITFIELD, SORT and
// SORT_RO by their arguments, as their getkeys procs do). For tests; acl_check does not allocate.
std::vector<std::pair<std::size_t, std::uint8_t>> acl_keys(int index, const AclArgs& args);
// The same walk without allocating, for routing (proto/redis/session_keys.cc): calls
// visit(ctx, position) for each key in Redis's order; stops when it returns false.
using AclKeyVisit = bool (*)(void* ctx, std::size_t position);
void acl_visit_keys(int index, const AclArgs& args, AclKeyVisit visit, void* ctx) noexcept;

enum class AclVerdict : std::uint8_t { kAllowed, kDeniedCommand, kDeniedKey, kDeniedChannel };
// May `user` run command `index` with `args`? A container's subcommand is checked (argv[1],
// acl_resolve_index). Each selector in turn, the root first; when none allows it, the most
// relevant denial (a channel over a key over the command, as Redis picks it: acl.c's
// ACL_DENIED_* order).
AclVerdict acl_check(const AclUser& user, int index, const AclArgs& args) noexcept;

// SORT / SORT_RO that acl_check allowed: Redis 7.0 refuses a BY pattern with a '*' and any GET
// to a user without read access to every key (sort.c sortCommandGeneric,
// user_has_full_key_access), with these errors; "" when allowed, or when the arguments have
// an error of another kind first (the backend answers that one).
std::string_view acl_sort_denial(const AclUser& user, int index, const AclArgs& args) noexcept;
inline constexpr std::string_view kSortByDenied =
    "ERR BY option of SORT denied due to insufficient ACL permissions.";
inline constexpr std::string_view kSortGetDenied =
    "ERR GET option of SORT denied due to insufficient ACL permissions.";

// A script or function (EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO) that acl_check
// allowed: the proxy runs it on the backend as its own backend user, so the calls inside are not
// checked against the client's user. It is allowed only to users that may run every command on
// every key (a selector with ~* and +@all): for them Redis's checks inside the script pass
// anyway. Others get kNopermScriptReply (docs/SECURITY.md "ACL").
inline bool acl_script_allowed(const AclUser& user) noexcept { return user.unrestricted; }
inline constexpr std::string_view kNopermScriptReply =
    "NOPERM this user has no permissions to run scripts or functions through chash-proxy (only "
    "users with ~* and +@all may: a script's own calls are not checked against the user)";

// Redis's glob (util.c stringmatchlen, case-sensitive): * ? [abc] [^a-z] and \x escapes.
bool glob_match(std::string_view pattern, std::string_view text) noexcept;

// SHA-256 of `password` (OpenSSL).
PasswordHash sha256(std::string_view password);
// Constant-time equality of two secrets of the same length (CRYPTO_memcmp).
bool equal_hash(const PasswordHash& a, const PasswordHash& b) noexcept;

// The replies Redis 7.0 gives (server.c processCommand), without "-" and CRLF.
std::string noperm_command_reply(std::string_view lower_name);
inline constexpr std::string_view kNopermKeyReply =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
inline constexpr std::string_view kNopermChannelReply =
    "NOPERM this user has no permissions to access one of the channels used as arguments";
inline constexpr std::string_view kWrongPassReply =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr std::string_view kNoAuthReply = "NOAUTH Authentication required.";

// The categories Redis knows (ACL CAT), in its order.
std::span<const std::string_view> acl_categories() noexcept;
// Category mask of command `index` (bit i: acl_categories()[i]).
std::uint32_t acl_command_categories(int index) noexcept;

}  // namespace chash::proxy::redis
