// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/acl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>

#include "base/text.h"
#include "proto/redis/resp.h"

namespace chash::proxy::redis {

namespace {

// One key spec of a command (Redis's keySpec, server.h), as COMMAND gives it.
enum class Begin : std::uint8_t { kIndex, kKeyword, kUnknown };
enum class Find : std::uint8_t { kRange, kKeynum, kUnknown };
constexpr std::uint8_t kSpecNotKey = 1;      // NOT_KEY: an argument that looks like a key
constexpr std::uint8_t kSpecIncomplete = 2;  // INCOMPLETE: some keys are elsewhere
constexpr std::uint8_t kSpecVariable = 4;    // VARIABLE_FLAGS: access depends on the arguments

struct KeySpecAcl {
  std::uint8_t perms;  // kAclKeyRead / kAclKeyWrite a pattern needs for these keys
  std::uint8_t flags;  // kSpec*
  Begin begin;
  std::int16_t begin_arg;  // kIndex: position; kKeyword: startfrom
  std::string_view keyword;
  Find find;
  std::int16_t a, b, c;  // kRange: lastkey, keystep, limit; kKeynum: keynumidx, firstkey, keystep
};

struct CommandAcl {
  std::string_view name;  // "get", "config|get"
  std::uint32_t categories;
  bool no_auth;
  std::uint16_t first_spec;  // in kKeySpecs
  std::uint8_t spec_count;
  std::int16_t arity;
  bool noscript;
  std::uint16_t first_sub;  // a container's subcommands: rows first_sub .. + sub_count
  std::uint8_t sub_count;
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

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

int category_index(std::string_view name) noexcept {
  for (std::size_t i = 0; i < std::size(kCategoryNames); ++i) {
    if (iequal(kCategoryNames[i], name)) return static_cast<int>(i);
  }
  return -1;
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

// acl.c ACLChangeSelectorPerm: a command's bit, and a container's every subcommand's with it;
// the command's first-arg rules are dropped (ACLResetFirstArgsForCommand).
void change_perm(AclSelector& u, std::size_t i, bool allow) {
  u.commands.set(i, allow);
  const CommandAcl& c = kCommandAcl[i];
  for (std::size_t s = c.first_sub; s < c.first_sub + c.sub_count; ++s) u.commands.set(s, allow);
  std::erase_if(u.first_args, [&](const auto& f) { return f.first == i; });
}

// +cmd, -cmd, +@cat, -@cat, +cmd|sub, -cmd|sub, +cmd|firstarg (acl.c ACLSetSelector).
void command_rule(AclSelector& u, std::string_view rule) {
  const bool allow = rule[0] == '+';
  const std::string_view what = rule.substr(1);
  if (!what.empty() && what[0] == '@') {
    const std::string_view cat = what.substr(1);
    if (iequal(cat, "all")) {
      if (allow) u.commands.set();
      else u.commands.reset();
      u.first_args.clear();  // ACLResetFirstArgs
      return;
    }
    const int c = category_index(cat);
    if (c < 0) throw AclError(std::string(rule), kUnknownName);
    // ACLSetSelectorCommandBitsForCategory: every command and subcommand of the category; a
    // container in it (they are all @slow; COMMAND is @connection too) brings its subcommands.
    for (std::size_t i = 0; i < std::size(kCommandAcl); ++i) {
      if ((kCommandAcl[i].categories >> c) & 1u) change_perm(u, i, allow);
    }
    return;
  }
  const std::string name = lowered(what);
  const std::size_t bar = name.find('|');
  if (bar == std::string::npos) {
    const int i = acl_command_index(name);
    if (i < 0) throw AclError(std::string(rule), kUnknownName);
    change_perm(u, static_cast<std::size_t>(i), allow);
    return;
  }
  // `-x|y` names a subcommand or nothing (ACLLookupCommand is strict: `-select|0` is unknown).
  const int full = acl_command_index(name);
  if (!allow) {
    if (full < 0) throw AclError(std::string(rule), kUnknownName);
    change_perm(u, static_cast<std::size_t>(full), false);
    return;
  }
  // `+x|y`: the command must exist, y not be empty; a container's subcommand y, or else (a
  // command without subcommands) the deprecated first argument y.
  const int parent = acl_command_index(std::string_view(name).substr(0, bar));
  if (parent < 0) throw AclError(std::string(rule), kUnknownName);
  if (bar + 1 == name.size()) throw AclError(std::string(rule), kSyntax);
  if (acl_has_subcommands(parent)) {
    if (full < 0) throw AclError(std::string(rule), kUnknownName);
    change_perm(u, static_cast<std::size_t>(full), true);
    return;
  }
  // ACLAddAllowedFirstArg: "select|0|x" is the first argument "0|x", as Redis splits it.
  std::string arg = name.substr(bar + 1);
  const auto p = static_cast<std::uint16_t>(parent);
  for (const auto& f : u.first_args) {
    if (f.first == p && f.second == arg) return;
  }
  u.first_args.emplace_back(p, std::move(arg));
}

// ACLStringHasSpaces: a pattern may not hold a space or a NUL.
bool has_spaces(std::string_view s) noexcept {
  return std::any_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\0';
  });
}

// ~pattern, %R~pattern, %W~pattern, %RW~pattern (ACLSetSelector).
void key_rule(AclSelector& s, std::string_view rule) {
  if (s.all_keys) throw AclError(std::string(rule), kPatternAfterAll);
  std::uint8_t perms = kAclKeyAll;
  std::size_t offset = 1;
  if (rule[0] == '%') {
    // Redis 7.0: R and W each at most once, then '~' (only after at least one of them); a rule
    // that ends before the '~' ("%R") is an empty pattern.
    perms = 0;
    for (; offset < rule.size(); ++offset) {
      const char c = rule[offset];
      if ((c == 'R' || c == 'r') && (perms & kAclKeyRead) == 0) {
        perms |= kAclKeyRead;
      } else if ((c == 'W' || c == 'w') && (perms & kAclKeyWrite) == 0) {
        perms |= kAclKeyWrite;
      } else if (c == '~' && perms != 0) {
        ++offset;
        break;
      } else {
        throw AclError(std::string(rule), kSyntax);
      }
    }
  }
  const std::string_view glob = rule.substr(std::min(offset, rule.size()));
  if (has_spaces(glob)) throw AclError(std::string(rule), kSyntax);
  // The same pattern again widens its permissions (%R~k %W~k is ~k).
  for (AclKeyPattern& p : s.key_patterns) {
    if (p.glob == glob) {
      p.perms |= perms;
      return;
    }
  }
  s.key_patterns.push_back({std::string(glob), perms});
}

// The rules of a selector (ACLSetSelector): keys, channels and commands.
void selector_rule(AclSelector& s, std::string_view rule) {
  const std::string r = lowered(rule);
  if (r == "allkeys" || r == "~*") {
    s.all_keys = true;
    s.key_patterns.clear();
  } else if (r == "resetkeys") {
    s.all_keys = false;
    s.key_patterns.clear();
  } else if (rule[0] == '~' || rule[0] == '%') {
    key_rule(s, rule);
  } else if (r == "allchannels" || r == "&*") {
    s.all_channels = true;
    s.channel_patterns.clear();
  } else if (r == "resetchannels") {
    s.all_channels = false;
    s.channel_patterns.clear();
  } else if (rule[0] == '&') {
    // Redis answers the keys' words for a channel after allchannels too (both EISDIR).
    if (s.all_channels) throw AclError(std::string(rule), kPatternAfterAll);
    const std::string_view glob = rule.substr(1);
    if (std::find(s.channel_patterns.begin(), s.channel_patterns.end(), glob) ==
        s.channel_patterns.end()) {
      s.channel_patterns.emplace_back(glob);
    }
  } else if (r == "allcommands") {
    s.commands.set();
    s.first_args.clear();
  } else if (r == "nocommands") {
    s.commands.reset();
    s.first_args.clear();
  } else if ((rule[0] == '+' || rule[0] == '-') && rule.size() > 1) {
    command_rule(s, rule);
  } else {
    throw AclError(std::string(rule), kSyntax);
  }
}

// "(rules)": a new selector (no keys, no commands) with the rules inside, split as Redis
// splits them (sdssplitargs).
AclSelector make_selector(std::string_view rule) {
  AclSelector s;
  std::vector<std::string> inner;
  try {
    inner = Acl::split_line(rule.substr(1, rule.size() - 2));
    for (const std::string& r : inner) {
      if (!r.empty()) selector_rule(s, r);
    }
  } catch (const AclError& e) {
    throw AclError(std::string(rule), e.what());  // Redis names the whole selector
  }
  return s;
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
  } else if (r == "skip-sanitize-payload" || r == "sanitize-payload") {
    // RESTORE payload checks: nothing the proxy enforces.
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
  } else if (rule[0] == '(' && rule.back() == ')') {
    u.selectors.push_back(make_selector(rule));
  } else if (r == "clearselectors") {
    u.selectors.clear();
  } else if (r == "reset") {
    // Redis 7.0: resetpass resetkeys resetchannels off clearselectors -@all (resetchannels:
    // acl-pubsub-default's default).
    u.nopass = false;
    u.passwords.clear();
    u.all_keys = false;
    u.key_patterns.clear();
    u.all_channels = false;
    u.channel_patterns.clear();
    u.enabled = false;
    u.selectors.clear();
    u.commands.reset();
    u.first_args.clear();
  } else {
    selector_rule(u, rule);  // the root selector's
  }
}

std::vector<std::string> Acl::merge_selectors(std::vector<std::string> args) {
  std::vector<std::string> out;
  std::string open;  // a selector begun but not closed
  bool in_selector = false;
  for (std::string& a : args) {
    if (!in_selector && !a.empty() && a.front() == '(' && a.back() != ')') {
      open = std::move(a);
      in_selector = true;
    } else if (in_selector) {
      open += ' ';
      open += a;
      if (!a.empty() && a.back() == ')') {
        out.push_back(std::move(open));
        in_selector = false;
      }
    } else {
      out.push_back(std::move(a));
    }
  }
  if (in_selector) {
    const std::string start = open.substr(0, open.find(' '));
    throw AclError(start, "Unmatched parenthesis in acl selector starting at '" + start + "'");
  }
  return out;
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
    std::vector<std::string> argv = split_line(lines[n]);
    if (argv.empty() || !iequal(argv[0], "user")) {
      throw AclError("", "an acl line starts with 'user <name>', as in an aclfile");
    }
    if (argv.size() < 2 || argv[1].empty()) throw AclError("", "'user' needs a name");
    if (acl->find(argv[1]) != nullptr) throw AclError("", "duplicate user '" + argv[1] + "'");
    AclUser u;  // a new user: off, no password, no keys, no commands (ACLCreateUser)
    u.name = argv[1];
    argv.erase(argv.begin(), argv.begin() + 2);
    for (const std::string& rule : merge_selectors(std::move(argv))) apply_rule(u, rule);
    acl->users_.push_back(std::move(u));
  }
  if (line_index != nullptr) *line_index = lines.size();
  const auto finish = [](AclUser& u) {
    const auto all = [](AclSelector& s) {
      s.all_commands = true;
      for (std::size_t i = 0; i < std::size(kCommandAcl); ++i) s.all_commands &= s.commands.test(i);
    };
    all(u);
    for (AclSelector& s : u.selectors) all(s);
    // Channels are not asked of a script's user: Redis 7.0's users have none unless given
    // (acl-pubsub-default resetchannels), and requiring &* would refuse scripts to every ~* +@all
    // user of an existing aclfile. A script's own PUBLISH is therefore not checked against the
    // user's channel rules (docs/SECURITY.md "ACL").
    u.unrestricted = u.all_commands && u.all_keys;
    for (const AclSelector& s : u.selectors) u.unrestricted |= s.all_commands && s.all_keys;
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
    apply_rule(d, "allchannels");
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

namespace {
bool valid_index(int index) noexcept {
  return index >= 0 && static_cast<std::size_t>(index) < std::size(kCommandAcl);
}
}  // namespace

bool acl_has_subcommands(int index) noexcept {
  return valid_index(index) && kCommandAcl[index].sub_count != 0;
}

int acl_subcommand_index(int index, std::string_view arg1) noexcept {
  if (!acl_has_subcommands(index)) return index;
  // The container's rows "name|sub" are sorted by sub: a binary search on the part after the
  // '|', comparing arg1 in lower case (Redis looks subcommands up case-insensitively), with no
  // copy of it.
  const CommandAcl& c = kCommandAcl[index];
  const std::size_t skip = c.name.size() + 1;
  const auto less = [](std::string_view sub, std::string_view arg) {  // sub < lower(arg)
    const std::size_t n = std::min(sub.size(), arg.size());
    for (std::size_t i = 0; i < n; ++i) {
      const char a = ascii_lower(arg[i]);
      if (sub[i] != a) return static_cast<unsigned char>(sub[i]) < static_cast<unsigned char>(a);
    }
    return sub.size() < arg.size();
  };
  std::size_t lo = c.first_sub, hi = c.first_sub + c.sub_count;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (less(kCommandAcl[mid].name.substr(skip), arg1)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < c.first_sub + c.sub_count && iequal(kCommandAcl[lo].name.substr(skip), arg1)) {
    return static_cast<int>(lo);
  }
  return -1;
}

int acl_resolve_index(int index, const AclArgs& args) noexcept {
  if (args.size() < 2) return index;  // lookupCommandLogic: argc == 1 is the container itself
  return acl_subcommand_index(index, args[1]);
}

std::string_view acl_command_name(int index) noexcept {
  return valid_index(index) ? kCommandAcl[index].name : std::string_view();
}

int acl_command_arity(int index) noexcept {
  return valid_index(index) ? kCommandAcl[index].arity : 0;
}

std::uint32_t acl_command_categories(int index) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= std::size(kCommandAcl)) return 0;
  return kCommandAcl[index].categories;
}

std::span<const std::string_view> acl_categories() noexcept { return kCategoryNames; }

bool acl_key_allowed(const AclSelector& s, std::string_view key, std::uint8_t perms) noexcept {
  // ACLSelectorCheckKey: a pattern that grants every permission the key needs, and matches.
  if (s.all_keys) return true;
  for (const AclKeyPattern& p : s.key_patterns) {
    if ((p.perms & perms) == perms && glob_match(p.glob, key)) return true;
  }
  return false;
}

// ---- Keys of a command -------------------------------------------------------------------------

namespace {

bool is_word(std::string_view arg, std::string_view word) noexcept { return iequal(arg, word); }

// numkeys as Redis's string2ll reads it: a RESP integer without leading zeros ("01", "-0").
bool parse_numkeys(std::string_view s, std::int64_t& out) noexcept {
  const std::string_view digits = !s.empty() && s[0] == '-' ? s.substr(1) : s;
  if (digits.size() > 1 && digits[0] == '0') return false;
  if (digits == "0" && digits.size() != s.size()) return false;
  return parse_int(s, out);
}

// The keys of one spec (db.c getKeysUsingKeySpecs, one iteration of its loop): calls
// visit(position, perms); returns false when the spec cannot find them (an unknown or
// incomplete spec, numkeys not a count, positions out of range), as Redis's goto invalid_spec.
template <class Visit>
bool spec_keys(const KeySpecAcl& spec, const AclArgs& argv, Visit&& visit) {
  const long argc = static_cast<long>(argv.size());
  long first = 0;
  if (spec.begin == Begin::kIndex) {
    first = spec.begin_arg;
  } else if (spec.begin == Begin::kKeyword) {
    // From startfrom towards the end (or, negative, from the end backwards), as Redis scans.
    const long start = spec.begin_arg > 0 ? spec.begin_arg : argc + spec.begin_arg;
    const long end = spec.begin_arg > 0 ? argc - 1 : 1;
    for (long i = start; i != end; i = start <= end ? i + 1 : i - 1) {
      if (i >= argc || i < 1) break;
      if (is_word(argv[static_cast<std::size_t>(i)], spec.keyword)) {
        first = i + 1;
        break;
      }
    }
    if (first == 0) return true;  // keyword absent: no keys from this spec
  } else {
    return false;
  }
  long last = 0, step = 1;
  if (spec.find == Find::kRange) {
    step = spec.b;
    if (spec.a >= 0) {
      last = first + spec.a;
    } else if (spec.c == 0) {
      last = argc + spec.a;
    } else {
      last = first + ((argc - first) / spec.c + spec.a);
    }
  } else if (spec.find == Find::kKeynum) {
    step = spec.c;
    const long at = first + spec.a;
    std::int64_t numkeys = 0;
    if (at >= argc || at < 0 || !parse_numkeys(argv[static_cast<std::size_t>(at)], numkeys) ||
        numkeys < 0) {
      return false;
    }
    first += spec.b;
    last = first + static_cast<int>(numkeys) - 1;  // Redis's (int) cast, wrap and all
  } else {
    return false;
  }
  if (last >= argc || last < first || first >= argc || step <= 0) return false;
  for (long i = first; i <= last; i += step) {
    if (!visit(static_cast<std::size_t>(i), spec.perms)) return true;
  }
  return (spec.flags & kSpecIncomplete) == 0;
}

// SET's key: written, and read too with GET (t_string.c setGetKeys).
template <class Visit>
void set_keys(const AclArgs& argv, Visit&& visit) {
  std::uint8_t perms = kAclKeyWrite;
  for (std::size_t i = 3; i < argv.size(); ++i) {
    if (is_word(argv[i], "get")) perms = kAclKeyAll;
  }
  visit(1, perms);
}

// BITFIELD's key: read only while every operation is a well-formed GET or OVERFLOW
// (bitops.c bitfieldGetKeys; a syntax error counts as a write, to be safe).
template <class Visit>
void bitfield_keys(const AclArgs& argv, Visit&& visit) {
  bool readonly = true;
  for (std::size_t i = 2; i < argv.size(); ++i) {
    const std::size_t rest = argv.size() - i - 1;
    if (is_word(argv[i], "get") && rest >= 2) {
      i += 2;
    } else if ((is_word(argv[i], "set") || is_word(argv[i], "incrby")) && rest >= 3) {
      readonly = false;
      break;
    } else if (is_word(argv[i], "overflow") && rest >= 1) {
      i += 1;
    } else {
      readonly = false;
      break;
    }
  }
  visit(1, readonly ? kAclKeyRead : kAclKeyAll);
}

// SORT's key is read; the last STORE's key is written (sort.c sortGetKeys: LIMIT takes two
// arguments, GET and BY one). SORT_RO has only the key.
template <class Visit>
void sort_keys(const AclArgs& argv, bool ro, Visit&& visit) {
  std::size_t store = 0;
  for (std::size_t i = 2; !ro && i < argv.size(); ++i) {
    if (is_word(argv[i], "limit")) {
      i += 2;
    } else if (is_word(argv[i], "get") || is_word(argv[i], "by")) {
      i += 1;
    } else if (is_word(argv[i], "store") && i + 1 < argv.size()) {
      store = i + 1;
    }
  }
  if (!visit(1, kAclKeyRead)) return;
  if (store != 0) visit(store, kAclKeyWrite);
}

// C's atoi as glibc has it ((int)strtol): leading spaces, a sign, the digits up to the first
// other byte, saturated at the long range, then cut to int.
int c_atoi(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  std::int64_t v = 0;
  bool saturated = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const int d = s[i] - '0';
    if (!saturated && v > (INT64_MAX - d) / 10) saturated = true;
    if (!saturated) v = v * 10 + d;
  }
  if (saturated) v = negative ? INT64_MIN : INT64_MAX;
  else if (negative) v = -v;
  return static_cast<int>(v);
}

// The commands whose getkeys proc is db.c genericGetKeys: {name, store key position, numkeys
// position, first key, step}. Their keys come back with no access flags (any pattern matching
// the key allows it), which is what Redis does when numkeys is not a clean count ("01", "2x").
struct GenericKeys {
  std::string_view name;
  int store, count, first, step;
};
constexpr GenericKeys kGenericKeys[] = {
    {"blmpop", 0, 2, 3, 1},     {"bzmpop", 0, 2, 3, 1},     {"eval", 0, 2, 3, 1},
    {"eval_ro", 0, 2, 3, 1},    {"evalsha", 0, 2, 3, 1},    {"evalsha_ro", 0, 2, 3, 1},
    {"fcall", 0, 2, 3, 1},      {"fcall_ro", 0, 2, 3, 1},   {"lmpop", 0, 1, 2, 1},
    {"sintercard", 0, 1, 2, 1}, {"zdiff", 0, 1, 2, 1},      {"zdiffstore", 1, 2, 3, 1},
    {"zinter", 0, 1, 2, 1},     {"zintercard", 0, 1, 2, 1}, {"zinterstore", 1, 2, 3, 1},
    {"zmpop", 0, 1, 2, 1},      {"zunion", 0, 1, 2, 1},     {"zunionstore", 1, 2, 3, 1},
};

template <class Visit>
void generic_keys(const GenericKeys& g, const AclArgs& argv, Visit&& visit) {
  const long argc = static_cast<long>(argv.size());
  if (g.count >= argc) return;
  const int num = c_atoi(argv[static_cast<std::size_t>(g.count)]);
  if (num < 1 || num > (argc - g.first) / g.step) return;  // the command will refuse it
  for (int i = 0; i < num; ++i) {
    if (!visit(static_cast<std::size_t>(g.first + i * g.step), std::uint8_t{0})) return;
  }
  if (g.store != 0) visit(static_cast<std::size_t>(g.store), std::uint8_t{0});
}

// db.c getKeysFromCommandWithSpecs: the key specs when they are all valid and their flags fixed;
// else the command's getkeys proc: SET, BITFIELD (flags from the arguments), SORT, SORT_RO
// (unknown specs) and the numkeys commands (genericGetKeys) are here. The procs of commands the
// proxy refuses anyway (MIGRATE, GEORADIUS ... STORE, XREAD with a bad STREAMS) are not: their
// keys are what the specs give, or none.
template <class Visit>
void command_keys(int index, const AclArgs& argv, Visit&& visit) {
  const CommandAcl& c = kCommandAcl[index];
  const std::span<const KeySpecAcl> specs(kKeySpecs + c.first_spec, c.spec_count);
  bool has_key = false, variable = false;
  for (const KeySpecAcl& s : specs) {
    has_key |= (s.flags & kSpecNotKey) == 0;
    variable |= (s.flags & kSpecVariable) != 0;
  }
  if (has_key && !variable) {
    // Redis drops every key when one spec fails: check them all before visiting any.
    bool valid = true;
    for (const KeySpecAcl& s : specs) {
      if ((s.flags & kSpecNotKey) == 0) {
        valid = valid && spec_keys(s, argv, [](std::size_t, std::uint8_t) { return true; });
      }
    }
    if (valid) {
      bool more = true;
      const auto until = [&](std::size_t pos, std::uint8_t perms) {
        more = visit(pos, perms);
        return more;
      };
      for (const KeySpecAcl& s : specs) {
        if ((s.flags & kSpecNotKey) == 0 && more) spec_keys(s, argv, until);
      }
      return;
    }
  }
  if (argv.size() < 2) return;
  if (c.name == "set") {
    set_keys(argv, visit);
  } else if (c.name == "bitfield") {
    bitfield_keys(argv, visit);
  } else if (c.name == "sort" || c.name == "sort_ro") {
    sort_keys(argv, c.name == "sort_ro", visit);
  } else {
    const auto* g =
        std::lower_bound(std::begin(kGenericKeys), std::end(kGenericKeys), c.name,
                         [](const GenericKeys& k, std::string_view n) { return k.name < n; });
    if (g != std::end(kGenericKeys) && g->name == c.name) generic_keys(*g, argv, visit);
  }
}

// acl.c ACLSelectorCheckCmd's allowed_firstargs: a command whose bit is clear runs when its
// first argument is one a `+cmd|arg` rule named (case-insensitive; never for subcommands).
bool first_arg_allowed(const AclSelector& s, int index, const AclArgs& argv) noexcept {
  if (argv.size() < 2 || s.first_args.empty()) return false;
  for (const auto& [i, arg] : s.first_args) {
    if (i == index && iequal(arg, argv[1])) return true;
  }
  return false;
}

// The commands whose arguments are channels (Redis 7.0's CMD_PUBSUB with channel getkeys:
// pubsub.c). UNSUBSCRIBE and friends name channels too but are never refused.
enum class ChannelArgs : std::uint8_t { kNone, kFirst, kAll, kAllPatterns };
ChannelArgs channel_args(int index) noexcept {
  // Looked up once: these run for every command of a user without allchannels.
  static const int publish = acl_command_index("publish"), spublish = acl_command_index("spublish"),
                   subscribe = acl_command_index("subscribe"),
                   ssubscribe = acl_command_index("ssubscribe"),
                   psubscribe = acl_command_index("psubscribe");
  if (index == publish || index == spublish) return ChannelArgs::kFirst;
  if (index == subscribe || index == ssubscribe) return ChannelArgs::kAll;
  if (index == psubscribe) return ChannelArgs::kAllPatterns;
  return ChannelArgs::kNone;
}

// acl.c ACLCheckChannelAgainstList: a channel matches a pattern as a glob; a PSUBSCRIBE pattern
// must be one of the user's patterns literally (a user allowed "news.*" may not subscribe "*").
bool channels_allowed(const AclSelector& s, int index, const AclArgs& argv) noexcept {
  const ChannelArgs kind = channel_args(index);
  if (kind == ChannelArgs::kNone) return true;
  const std::size_t last =
      kind == ChannelArgs::kFirst ? std::min<std::size_t>(argv.size(), 2) : argv.size();
  for (std::size_t i = 1; i < last; ++i) {
    const std::string_view channel = argv[i];
    bool ok = false;
    for (const std::string& p : s.channel_patterns) {
      ok = kind == ChannelArgs::kAllPatterns ? p == channel : glob_match(p, channel);
      if (ok) break;
    }
    if (!ok) return false;
  }
  return true;
}

AclVerdict selector_check(const AclSelector& s, int index, const AclArgs& argv) noexcept {
  if (!acl_command_allowed(s, index) && !first_arg_allowed(s, index, argv)) {
    return AclVerdict::kDeniedCommand;
  }
  if (!s.all_keys) {
    bool ok = true;
    command_keys(index, argv, [&](std::size_t pos, std::uint8_t perms) {
      ok = acl_key_allowed(s, argv[pos], perms);
      return ok;
    });
    if (!ok) return AclVerdict::kDeniedKey;
  }
  if (!s.all_channels && !channels_allowed(s, index, argv)) return AclVerdict::kDeniedChannel;
  return AclVerdict::kAllowed;
}

}  // namespace

std::vector<std::pair<std::size_t, std::uint8_t>> acl_keys(int index, const AclArgs& args) {
  std::vector<std::pair<std::size_t, std::uint8_t>> out;
  if (index < 0 || static_cast<std::size_t>(index) >= std::size(kCommandAcl)) return out;
  command_keys(index, args, [&](std::size_t pos, std::uint8_t perms) {
    out.emplace_back(pos, perms);
    return true;
  });
  return out;
}

void acl_visit_keys(int index, const AclArgs& args, AclKeyVisit visit, void* ctx) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= std::size(kCommandAcl)) return;
  command_keys(index, args, [&](std::size_t pos, std::uint8_t) { return visit(ctx, pos); });
}

AclVerdict acl_check(const AclUser& user, int index, const AclArgs& args) noexcept {
  // acl.c ACLCheckAllUserCommandPerm: the first selector that allows it wins; otherwise a key
  // denial is more relevant than a command denial (both reply NOPERM, with different words).
  // A container's subcommand is the command Redis checks (server.c processCommand looks it up
  // before ACLCheckAllPerm); an unknown one is refused before the ACL (the session does that),
  // here it is checked as the container.
  const int sub = acl_resolve_index(index, args);
  if (sub >= 0) index = sub;
  if (index < 0 || static_cast<std::size_t>(index) >= std::size(kCommandAcl)) {
    return AclVerdict::kDeniedCommand;
  }
  AclVerdict worst = selector_check(user, index, args);
  if (worst == AclVerdict::kAllowed) return worst;
  for (const AclSelector& s : user.selectors) {
    const AclVerdict v = selector_check(s, index, args);
    if (v == AclVerdict::kAllowed) return v;
    if (v > worst) worst = v;
  }
  return worst;
}

namespace {

// acl.c ACLSelectorHasUnrestrictedKeyAccess: allkeys, or the pattern "*" itself with (at
// least) the access asked.
bool unrestricted_keys(const AclSelector& s, std::uint8_t perms) noexcept {
  if (s.all_keys) return true;
  for (const AclKeyPattern& p : s.key_patterns) {
    if (p.glob == "*" && (p.perms & perms) == perms) return true;
  }
  return false;
}

// acl.c ACLUserCheckCmdWithUnrestrictedKeyAccess: a selector that allows the command (and its
// keys) and has unrestricted access of `perms` to the key space.
bool full_key_access(const AclUser& u, int index, const AclArgs& args,
                     std::uint8_t perms) noexcept {
  if (selector_check(u, index, args) == AclVerdict::kAllowed && unrestricted_keys(u, perms)) {
    return true;
  }
  for (const AclSelector& s : u.selectors) {
    if (selector_check(s, index, args) == AclVerdict::kAllowed && unrestricted_keys(s, perms)) {
      return true;
    }
  }
  return false;
}

// Redis's string2ll (util.c), as getLongFromObjectOrReply reads LIMIT's numbers.
bool strict_long(std::string_view s) noexcept {
  std::int64_t v = 0;
  return parse_numkeys(s, v);
}

}  // namespace

std::string_view acl_sort_denial(const AclUser& user, int index, const AclArgs& args) noexcept {
  const std::string_view name = acl_command_name(index);
  if (name != "sort" && name != "sort_ro") return {};
  const bool readonly = name == "sort_ro";
  // sort.c sortCommandGeneric's argument loop, up to the first BY with a pattern or GET; any
  // other error first (syntax, LIMIT not a number) is the backend's to answer.
  bool checked = false, full = false;
  const auto denied = [&] {
    if (!checked) {
      full = full_key_access(user, index, args, kAclKeyRead);
      checked = true;
    }
    return !full;
  };
  const std::size_t argc = args.size();
  for (std::size_t j = 2; j < argc; ++j) {
    const std::size_t left = argc - j - 1;
    const std::string_view a = args[j];
    if (is_word(a, "asc") || is_word(a, "desc") || is_word(a, "alpha")) continue;
    if (is_word(a, "limit") && left >= 2) {
      if (!strict_long(args[j + 1]) || !strict_long(args[j + 2])) return {};
      j += 2;
    } else if (!readonly && is_word(a, "store") && left >= 1) {
      ++j;
    } else if (is_word(a, "by") && left >= 1) {
      // A pattern without '*' (BY nosort) only turns sorting off.
      if (args[j + 1].find('*') != std::string_view::npos && denied()) return kSortByDenied;
      ++j;
    } else if (is_word(a, "get") && left >= 1) {
      if (denied()) return kSortGetDenied;
      ++j;
    } else {
      return {};  // syntax error
    }
  }
  return {};
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
