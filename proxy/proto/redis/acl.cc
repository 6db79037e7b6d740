// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/acl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>

namespace chash::proxy::redis {

namespace {

struct CommandAcl {
  std::string_view name;
  std::uint32_t categories;
  bool no_auth;
};

#include "proto/redis/acl_table.inc"

static_assert(std::size(kCommandAcl) <= kAclMaxCommands, "raise kAclMaxCommands");
static_assert(std::size(kCategoryNames) <= 32, "category masks are 32 bits");

// Redis's ACLSetUserStringError() wording, by the errno it sets.
constexpr const char* kUnknownName = "Unknown command or category name in ACL";
constexpr const char* kSyntax = "Syntax error";
constexpr const char* kPatternAfterAll =
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have "
    "any effect. Try 'resetkeys' to start with an empty list of patterns";
constexpr const char* kNoSuchPassword =
    "The password you are trying to remove from the user does not exist";
constexpr const char* kBadHash =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters";

char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

int category_index(std::string_view name) noexcept {
  for (std::size_t i = 0; i < std::size(kCategoryNames); ++i) {
    if (iequals(kCategoryNames[i], name)) return static_cast<int>(i);
  }
  return -1;
}

bool is_subcommand(std::string_view lower_full) noexcept {
  return std::binary_search(std::begin(kSubcommands), std::end(kSubcommands), lower_full);
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "#<64 lowercase hex>" (Redis accepts only lowercase) -> the hash.
PasswordHash parse_hash(std::string_view rule) {
  const std::string_view hex = rule.substr(1);
  if (hex.size() != 64) throw AclError(std::string(rule), kBadHash);
  PasswordHash h{};
  for (std::size_t i = 0; i < 64; ++i) {
    const char c = hex[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      throw AclError(std::string(rule), kBadHash);
    }
  }
  for (std::size_t i = 0; i < 32; ++i) {
    h[i] = static_cast<unsigned char>(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
  }
  return h;
}

void add_password(AclUser& u, const PasswordHash& h) {
  u.nopass = false;
  if (std::find(u.passwords.begin(), u.passwords.end(), h) == u.passwords.end()) {
    u.passwords.push_back(h);
  }
}

void remove_password(AclUser& u, const PasswordHash& h, std::string_view rule) {
  const auto it = std::find(u.passwords.begin(), u.passwords.end(), h);
  if (it == u.passwords.end()) throw AclError(std::string(rule), kNoSuchPassword);
  u.passwords.erase(it);
}

// +cmd, -cmd, +@cat, -@cat, +cmd|sub, -cmd|sub.
void command_rule(AclUser& u, std::string_view rule) {
  const bool allow = rule[0] == '+';
  const std::string_view what = rule.substr(1);
  if (!what.empty() && what[0] == '@') {
    const std::string_view cat = what.substr(1);
    if (iequals(cat, "all")) {
      if (allow) u.commands.set();
      else u.commands.reset();
      return;
    }
    const int c = category_index(cat);
    if (c < 0) throw AclError(std::string(rule), kUnknownName);
    for (std::size_t i = 0; i < std::size(kCommandAcl); ++i) {
      if ((kCommandAcl[i].categories >> c) & 1u) u.commands.set(i, allow);
    }
    return;
  }
  const std::string name = lowered(what);
  const std::size_t bar = name.find('|');
  if (bar != std::string::npos) {
    // A subcommand (`config|get`) or, in Redis 7.0, a first argument (`select|0`): both are of
    // commands the proxy answers with "unsupported", so the rule changes nothing here.
    if (bar == 0 || bar + 1 == name.size() || name.find('|', bar + 1) != std::string::npos ||
        acl_command_index(std::string_view(name).substr(0, bar)) < 0) {
      throw AclError(std::string(rule), kUnknownName);
    }
    if (!allow && !is_subcommand(name)) {
      throw AclError(std::string(rule), kSyntax);  // Redis: first-args can only be allowed
    }
    return;
  }
  const int i = acl_command_index(name);
  if (i < 0) throw AclError(std::string(rule), kUnknownName);
  u.commands.set(static_cast<std::size_t>(i), allow);
}

}  // namespace

// ---- Rules ---------------------------------------------------------------------------------

void Acl::apply_rule(AclUser& u, std::string_view rule) {
  const std::string r = lowered(rule);
  if (rule.empty()) throw AclError(std::string(rule), kSyntax);
  if (r == "on") {
    u.enabled = true;
  } else if (r == "off") {
    u.enabled = false;
  } else if (r == "skip-sanitize-payload" || r == "sanitize-payload" || r == "clearselectors") {
    // RESTORE payload checks / selectors: nothing the proxy enforces (selectors are refused).
  } else if (r == "nopass") {
    u.nopass = true;
    u.passwords.clear();
  } else if (r == "resetpass") {
    u.nopass = false;
    u.passwords.clear();
  } else if (rule[0] == '>') {
    add_password(u, sha256(rule.substr(1)));
  } else if (rule[0] == '#') {
    add_password(u, parse_hash(rule));
  } else if (rule[0] == '<') {
    remove_password(u, sha256(rule.substr(1)), rule);
  } else if (rule[0] == '!') {
    remove_password(u, parse_hash(rule), rule);
  } else if (rule[0] == '(') {
    throw AclError(std::string(rule),
                   "selectors '(...)' are not supported by chash-proxy; give the user's "
                   "permissions as root rules");
  } else if (r == "reset") {
    // Redis 7.0: resetpass resetkeys resetchannels off -@all clearselectors (and allchannels
    // when acl-pubsub-default says so; channels are not proxied).
    u.nopass = false;
    u.passwords.clear();
    u.all_keys = false;
    u.key_patterns.clear();
    u.enabled = false;
    u.commands.reset();
  } else if (r == "allkeys" || rule == "~*") {
    u.all_keys = true;
    u.key_patterns.assign(1, "*");
  } else if (r == "resetkeys") {
    u.all_keys = false;
    u.key_patterns.clear();
  } else if (rule[0] == '~') {
    if (u.all_keys) throw AclError(std::string(rule), kPatternAfterAll);
    const std::string pattern(rule.substr(1));
    if (std::find(u.key_patterns.begin(), u.key_patterns.end(), pattern) == u.key_patterns.end()) {
      u.key_patterns.push_back(pattern);
    }
  } else if (rule[0] == '%') {
    throw AclError(std::string(rule),
                   "read/write key permissions (%R~, %W~, %RW~) are not supported by "
                   "chash-proxy; use ~pattern");
  } else if (r == "allchannels" || r == "resetchannels" || rule[0] == '&') {
    // Pub/sub is not proxied: channel permissions have nothing to allow.
  } else if (r == "allcommands") {
    u.commands.set();
  } else if (r == "nocommands") {
    u.commands.reset();
  } else if ((rule[0] == '+' || rule[0] == '-') && rule.size() > 1) {
    command_rule(u, rule);
  } else {
    throw AclError(std::string(rule), kSyntax);
  }
}

std::vector<std::string> Acl::split_line(std::string_view line) {
  // sdssplitargs: arguments separated by spaces; "..." with \n \r \t \b \a \\ \" \xHH escapes;
  // '...' with \' only; a closing quote must be followed by a space or the end.
  std::vector<std::string> out;
  std::size_t i = 0;
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  for (;;) {
    while (i < line.size() && space(line[i])) ++i;
    if (i >= line.size()) return out;
    std::string cur;
    bool dq = false, sq = false, done = false;
    while (!done) {
      if (i >= line.size()) {
        if (dq || sq) throw AclError("", "unbalanced quotes");
        break;
      }
      const char c = line[i];
      if (dq) {
        if (c == '\\' && i + 3 < line.size() && line[i + 1] == 'x' && hex_value(line[i + 2]) >= 0 &&
            hex_value(line[i + 3]) >= 0) {
          cur += static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3]));
          i += 3;
        } else if (c == '\\' && i + 1 < line.size()) {
          ++i;
          const char e = line[i];
          cur += e == 'n'   ? '\n'
                 : e == 'r' ? '\r'
                 : e == 't' ? '\t'
                 : e == 'b' ? '\b'
                 : e == 'a' ? '\a'
                            : e;
        } else if (c == '"') {
          if (i + 1 < line.size() && !space(line[i + 1])) {
            throw AclError("", "unbalanced quotes");
          }
          done = true;
        } else {
          cur += c;
        }
      } else if (sq) {
        if (c == '\\' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;
          cur += '\'';
        } else if (c == '\'') {
          if (i + 1 < line.size() && !space(line[i + 1])) {
            throw AclError("", "unbalanced quotes");
          }
          done = true;
        } else {
          cur += c;
        }
      } else if (space(c)) {
        done = true;
      } else if (c == '"') {
        dq = true;
      } else if (c == '\'') {
        sq = true;
      } else {
        cur += c;
      }
      ++i;
    }
    out.push_back(std::move(cur));
  }
}

std::shared_ptr<const Acl> Acl::build(std::span<const std::string> lines,
                                      const std::optional<std::string>& default_password,
                                      std::size_t* line_index) {
  auto acl = std::make_shared<Acl>();
  for (std::size_t n = 0; n < lines.size(); ++n) {
    if (line_index != nullptr) *line_index = n;
    const std::vector<std::string> argv = split_line(lines[n]);
    if (argv.empty() || !iequals(argv[0], "user")) {
      throw AclError("", "an acl line starts with 'user <name>', as in an aclfile");
    }
    if (argv.size() < 2 || argv[1].empty()) throw AclError("", "'user' needs a name");
    if (acl->find(argv[1]) != nullptr) throw AclError("", "duplicate user '" + argv[1] + "'");
    AclUser u;  // a new user: off, no password, no keys, no commands (ACLCreateUser)
    u.name = argv[1];
    for (std::size_t j = 2; j < argv.size(); ++j) apply_rule(u, argv[j]);
    acl->users_.push_back(std::move(u));
  }
  if (line_index != nullptr) *line_index = lines.size();
  const auto finish = [](AclUser& u) {
    u.all_commands = true;
    for (std::size_t i = 0; i < std::size(kCommandAcl); ++i) u.all_commands &= u.commands.test(i);
  };
  for (AclUser& u : acl->users_) finish(u);
  const AclUser* given = acl->find("default");
  if (given == nullptr) {
    // ACLCreateDefaultUser: on nopass ~* &* +@all; requirepass sets its password.
    AclUser d;
    d.name = "default";
    apply_rule(d, "on");
    apply_rule(d, "nopass");
    apply_rule(d, "allkeys");
    apply_rule(d, "+@all");
    if (default_password) {
      apply_rule(d, "resetpass");
      add_password(d, sha256(*default_password));
    }
    finish(d);
    acl->users_.push_back(std::move(d));
    acl->default_index_ = acl->users_.size() - 1;
  } else {
    acl->default_index_ = static_cast<std::size_t>(given - acl->users_.data());
  }
  return acl;
}

// ---- Authentication --------------------------------------------------------------------------

const AclUser* Acl::find(std::string_view name) const noexcept {
  for (const AclUser& u : users_) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

const AclUser* Acl::authenticate(std::string_view name, std::string_view password) const noexcept {
  const AclUser* u = find(name);
  PasswordHash h{};
  try {
    h = sha256(password);
  } catch (...) {
    return nullptr;
  }
  if (u == nullptr || !u->enabled) return nullptr;
  if (u->nopass) return u;
  // Every stored hash is compared (no early exit on a match), each in constant time.
  bool ok = false;
  for (const PasswordHash& p : u->passwords) ok |= equal_hash(p, h);
  return ok ? u : nullptr;
}

PasswordHash sha256(std::string_view password) {
  PasswordHash h{};
  unsigned int len = 0;
  if (EVP_Digest(password.data(), password.size(), h.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != h.size()) {
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  }
  return h;
}

bool equal_hash(const PasswordHash& a, const PasswordHash& b) noexcept {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// ---- Checks ------------------------------------------------------------------------------------

int acl_command_index(std::string_view lower_name) noexcept {
  const auto* begin = std::begin(kCommandAcl);
  const auto* end = std::end(kCommandAcl);
  const auto* it = std::lower_bound(
      begin, end, lower_name, [](const CommandAcl& c, std::string_view n) { return c.name < n; });
  if (it == end || it->name != lower_name) return -1;
  return static_cast<int>(it - begin);
}

bool acl_command_no_auth(int index) noexcept {
  return index >= 0 && static_cast<std::size_t>(index) < std::size(kCommandAcl) &&
         kCommandAcl[index].no_auth;
}

std::uint32_t acl_command_categories(int index) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= std::size(kCommandAcl)) return 0;
  return kCommandAcl[index].categories;
}

std::span<const std::string_view> acl_categories() noexcept { return kCategoryNames; }

bool acl_key_allowed(const AclUser& user, std::string_view key) noexcept {
  if (user.all_keys) return true;
  for (const std::string& p : user.key_patterns) {
    if (glob_match(p, key)) return true;
  }
  return false;
}

std::string noperm_command_reply(std::string_view lower_name) {
  return "NOPERM this user has no permissions to run the '" + std::string(lower_name) + "' command";
}

// ---- Glob --------------------------------------------------------------------------------------

namespace {

// Matches one non-star token of `p` at `pi` against `c`; sets `next` past the token. Tokens are
// ?, [class], \x and plain bytes, each matching exactly one byte (as in stringmatchlen).
bool match_one(std::string_view p, std::size_t pi, char c, std::size_t& next) noexcept {
  const char t = p[pi];
  if (t == '?') {
    next = pi + 1;
    return true;
  }
  if (t == '\\' && pi + 1 < p.size()) {
    next = pi + 2;
    return p[pi + 1] == c;
  }
  if (t != '[') {
    next = pi + 1;
    return t == c;
  }
  // [abc], [^abc], [a-z] (bounds in either order), \] escapes; an unclosed class runs to the
  // end of the pattern. Bytes compare as Redis's `int` of a (signed) char.
  std::size_t i = pi + 1;
  const bool negate = i < p.size() && p[i] == '^';
  if (negate) ++i;
  bool match = false;
  while (i < p.size() && p[i] != ']') {
    if (p[i] == '\\' && i + 1 < p.size()) {
      ++i;
      if (p[i] == c) match = true;
    } else if (i + 2 < p.size() && p[i + 1] == '-') {
      int lo = static_cast<signed char>(p[i]);
      int hi = static_cast<signed char>(p[i + 2]);
      if (lo > hi) std::swap(lo, hi);
      const int x = static_cast<signed char>(c);
      if (x >= lo && x <= hi) match = true;
      i += 2;
    } else if (p[i] == c) {
      match = true;
    }
    ++i;
  }
  next = i < p.size() ? i + 1 : i;  // past ']' (or the end of an unclosed class)
  return match != negate;
}

}  // namespace

bool glob_match(std::string_view p, std::string_view s) noexcept {
  // Iterative matching with one backtrack point (the last '*'): every other token matches one
  // byte, so retrying from the last star with one more byte consumed is complete, and the cost
  // is O(|p| * |s|) at worst — no recursion a hostile pattern could deepen.
  std::size_t pi = 0, si = 0;
  std::size_t star = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      if (pi == p.size()) return true;
      star = pi;
      star_s = si;
      continue;
    }
    std::size_t next = 0;
    if (pi < p.size() && match_one(p, pi, s[si], next)) {
      pi = next;
      ++si;
      continue;
    }
    if (star == std::string_view::npos) return false;
    pi = star;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace chash::proxy::redis
