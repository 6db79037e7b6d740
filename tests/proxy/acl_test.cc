// SPDX-License-Identifier: Apache-2.0
// Redis ACL users (proto/redis/acl.h): aclfile lines split and applied as Redis applies them,
// the decisions the evaluator makes, the glob, the generated category table, and the config
// keys (`acl:`, `server_user:`, `admin_auth:`) with their errors. What a real redis-server 7
// decides for the same rules is compared in acl_e2e_test.cc.
#include "proto/redis/acl.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "chash/error.h"
#include "config/config.h"
#include "e2e_util.h"
#include "proto/redis/commands.h"

namespace chash::proxy::redis {
namespace {

std::shared_ptr<const Acl> acl_of(std::vector<std::string> lines,
                                  std::optional<std::string> password = std::nullopt) {
  return Acl::build(lines, password);
}

bool may_run(const AclUser& u, std::string_view cmd) {
  return acl_command_allowed(u, acl_command_index(cmd));
}

bool may_touch(const AclSelector& s, std::string_view key) {
  return acl_key_allowed(s, key, kAclKeyAll);
}

// acl_check of a command line ("SET k v GET").
AclVerdict check(const AclUser& u, const std::string& line) {
  std::vector<std::string> words = Acl::split_line(line);
  std::vector<std::string_view> argv(words.begin(), words.end());
  for (auto& c : words[0]) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return acl_check(u, acl_command_index(words[0]), AclArgSpan(argv));
}

// The keys acl_keys finds in a command line, as "pos:R", "pos:W", "pos:RW" or "pos:-".
std::string keys_of(const std::string& line) {
  std::vector<std::string> words = Acl::split_line(line);
  std::vector<std::string_view> argv(words.begin(), words.end());
  std::string out;
  for (const auto& [pos, perms] : acl_keys(acl_command_index(words[0]), AclArgSpan(argv))) {
    if (!out.empty()) out += ' ';
    out += std::to_string(pos) + ':';
    if (perms & kAclKeyRead) out += 'R';
    if (perms & kAclKeyWrite) out += 'W';
    if (perms == 0) out += '-';
  }
  return out;
}

std::string error_of(const std::string& yaml) {
  try {
    (void)parse_config(yaml, "p.yml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kPool =
    "a:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n   - 127.0.0.1:1:1\n";

// ---- The generated table ---------------------------------------------------------------------

TEST(AclTableTest, EveryProxiedCommandHasRedisCategories) {
  // The proxy's command table and the one generated from redis-server must agree on names, or a
  // `+@read` would silently miss a command.
  for (const Command& c : command_table()) {
    const int i = acl_command_index(c.name);
    EXPECT_GE(i, 0) << c.name << " is not in acl_table.inc (regenerate it)";
    if (i >= 0) {
      EXPECT_NE(acl_command_categories(i), 0u) << c.name;
    }
  }
}

TEST(AclTableTest, CategoriesAreRedisOwn) {
  const auto cats = acl_categories();
  ASSERT_EQ(cats.size(), 21u);
  EXPECT_EQ(cats[0], "keyspace");
  EXPECT_EQ(cats[1], "read");
  EXPECT_EQ(cats[17], "dangerous");
  // Spot checks against `ACL CAT read` / `ACL CAT dangerous` of redis-server 7.0.
  const auto has = [&](std::string_view cmd, std::string_view cat) {
    for (std::size_t i = 0; i < cats.size(); ++i) {
      if (cats[i] == cat) return ((acl_command_categories(acl_command_index(cmd)) >> i) & 1u) != 0;
    }
    return false;
  };
  EXPECT_TRUE(has("get", "read"));
  EXPECT_TRUE(has("get", "string"));
  EXPECT_TRUE(has("get", "fast"));
  EXPECT_FALSE(has("get", "write"));
  EXPECT_TRUE(has("set", "write"));
  EXPECT_TRUE(has("flushall", "dangerous"));
  EXPECT_TRUE(has("keys", "dangerous"));
  EXPECT_TRUE(has("sort_ro", "dangerous") || has("sort_ro", "read"));
  EXPECT_TRUE(acl_command_no_auth(acl_command_index("auth")));
  EXPECT_TRUE(acl_command_no_auth(acl_command_index("hello")));
  EXPECT_FALSE(acl_command_no_auth(acl_command_index("ping")));
  EXPECT_EQ(acl_command_index("nosuchcommand"), -1);
}

// ---- Splitting and rules ---------------------------------------------------------------------

TEST(AclRuleTest, SplitsAsSdssplitargs) {
  EXPECT_EQ(Acl::split_line("  user  alice on  >pw "),
            (std::vector<std::string>{"user", "alice", "on", ">pw"}));
  EXPECT_EQ(Acl::split_line(R"(user bob ">a b\x41\n" '>it\'s')"),
            (std::vector<std::string>{"user", "bob", ">a bA\n", ">it's"}));
  EXPECT_THROW(Acl::split_line("user x \">unterminated"), AclError);
  EXPECT_THROW(Acl::split_line("user x \"a\"b"), AclError);
  EXPECT_TRUE(Acl::split_line("   ").empty());
}

TEST(AclRuleTest, NewUserIsOffWithNothing) {
  const auto acl = acl_of({"user alice"});
  const AclUser* u = acl->find("alice");
  ASSERT_NE(u, nullptr);
  EXPECT_FALSE(u->enabled);
  EXPECT_FALSE(u->nopass);
  EXPECT_TRUE(u->passwords.empty());
  EXPECT_FALSE(u->all_keys);
  EXPECT_FALSE(may_run(*u, "get"));
  EXPECT_TRUE(may_run(*u, "auth"));  // no_auth commands are always allowed
  EXPECT_EQ(acl->authenticate("alice", ""), nullptr);
}

TEST(AclRuleTest, DefaultUserIsRedisOwnUnlessDeclared) {
  const auto open = acl_of({"user alice on >pw"});
  EXPECT_FALSE(open->auth_required());
  EXPECT_TRUE(open->default_user().all_keys);
  EXPECT_TRUE(open->default_user().all_commands);
  const auto required = acl_of({}, "s3cret");
  EXPECT_TRUE(required->auth_required());
  EXPECT_NE(required->authenticate("default", "s3cret"), nullptr);
  EXPECT_EQ(required->authenticate("default", "s3cre"), nullptr);
  // A `user default` line starts from a new user, as in an aclfile: no commands.
  const auto declared = acl_of({"user default on >pw ~*"});
  EXPECT_TRUE(declared->auth_required());
  EXPECT_FALSE(may_run(declared->default_user(), "get"));
}

TEST(AclRuleTest, PasswordsHashedAddedRemoved) {
  // sha256("secret") = 2bb80d53...; as Redis prints it in ACL LIST.
  const std::string hash = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";
  const auto acl = acl_of({"user a on #" + hash, "user b on >one >two <one", "user c on >x nopass",
                           "user d on nopass >y", "user e off >z", "user f on >p resetpass"});
  EXPECT_NE(acl->authenticate("a", "secret"), nullptr);
  EXPECT_EQ(acl->authenticate("a", "Secret"), nullptr);
  EXPECT_EQ(acl->authenticate("b", "one"), nullptr);
  EXPECT_NE(acl->authenticate("b", "two"), nullptr);
  EXPECT_NE(acl->authenticate("c", "anything"), nullptr);  // nopass after >x
  EXPECT_EQ(acl->authenticate("d", "anything"), nullptr);  // >y after nopass clears nopass
  EXPECT_NE(acl->authenticate("d", "y"), nullptr);
  EXPECT_EQ(acl->authenticate("e", "z"), nullptr);  // off
  EXPECT_EQ(acl->authenticate("f", "p"), nullptr);  // resetpass
  EXPECT_EQ(acl->authenticate("nobody", ""), nullptr);
  EXPECT_EQ(sha256("secret"), acl->find("a")->passwords[0]);
}

TEST(AclRuleTest, CommandsAndCategoriesInOrder) {
  const auto acl = acl_of({
      "user r on nopass +@read",
      "user rw on nopass +@read +@write -@dangerous",
      "user all on nopass allcommands -set",
      "user none on nopass +@all nocommands +ping",
      "user mixed on nopass -@all +@string -get +GET -append",
      "user rs on nopass +@all reset on nopass",
  });
  const AclUser& r = *acl->find("r");
  EXPECT_TRUE(may_run(r, "get"));
  EXPECT_TRUE(may_run(r, "mget"));
  EXPECT_FALSE(may_run(r, "set"));
  const AclUser& rw = *acl->find("rw");
  EXPECT_TRUE(may_run(rw, "set"));
  EXPECT_FALSE(may_run(rw, "keys"));      // @dangerous
  EXPECT_FALSE(may_run(rw, "flushall"));  // @dangerous
  const AclUser& all = *acl->find("all");
  EXPECT_FALSE(may_run(all, "set"));
  EXPECT_TRUE(may_run(all, "get"));
  EXPECT_FALSE(all.all_commands);
  const AclUser& none = *acl->find("none");
  EXPECT_TRUE(may_run(none, "ping"));
  EXPECT_FALSE(may_run(none, "get"));
  const AclUser& mixed = *acl->find("mixed");
  EXPECT_TRUE(may_run(mixed, "get"));  // command names are case-insensitive
  EXPECT_TRUE(may_run(mixed, "set"));
  EXPECT_FALSE(may_run(mixed, "append"));
  EXPECT_FALSE(may_run(mixed, "hget"));
  const AclUser& rs = *acl->find("rs");
  EXPECT_FALSE(may_run(rs, "get"));  // reset is -@all
}

TEST(AclRuleTest, KeyPatterns) {
  const auto acl = acl_of({"user k on nopass +@all ~app:* ~user:[0-9]* ~h?llo",
                           "user all on nopass +@all allkeys", "user tilde on nopass +@all ~*",
                           "user rk on nopass +@all ~* resetkeys ~only"});
  const AclUser& k = *acl->find("k");
  EXPECT_TRUE(may_touch(k, "app:1"));
  EXPECT_TRUE(may_touch(k, "user:7x"));
  EXPECT_FALSE(may_touch(k, "user:x7"));
  EXPECT_TRUE(may_touch(k, "hallo"));
  EXPECT_FALSE(may_touch(k, "hllo"));
  EXPECT_FALSE(may_touch(k, "other"));
  EXPECT_TRUE(may_touch(*acl->find("all"), "anything"));
  EXPECT_TRUE(acl->find("tilde")->all_keys);
  EXPECT_TRUE(may_touch(*acl->find("rk"), "only"));
  EXPECT_FALSE(may_touch(*acl->find("rk"), "other"));
}

// %R~ / %W~ / %RW~ as Redis 7.0 parses them (ACL GETUSER of redis-server 7.0.15 shows the same).
TEST(AclRuleTest, ReadWriteKeyPermissions) {
  const auto acl = acl_of({"user p on nopass +@all %R~r:* %W~w:* %RW~rw:* %r~x %W~x %WR~y %R",
                           "user star on nopass +@all %RW~* ~more"});
  const AclUser& p = *acl->find("p");
  const std::vector<AclKeyPattern> want = {{"r:*", kAclKeyRead},   {"w:*", kAclKeyWrite},
                                           {"rw:*", kAclKeyAll},   {"x", kAclKeyAll},
                                           {"y", kAclKeyAll},      {"", kAclKeyRead}};
  EXPECT_EQ(p.key_patterns, want);  // %r~x then %W~x widen one pattern
  EXPECT_TRUE(acl_key_allowed(p, "r:1", kAclKeyRead));
  EXPECT_FALSE(acl_key_allowed(p, "r:1", kAclKeyWrite));
  EXPECT_FALSE(acl_key_allowed(p, "r:1", kAclKeyAll));
  EXPECT_TRUE(acl_key_allowed(p, "r:1", 0));  // EXISTS, TYPE: neither read nor written
  EXPECT_TRUE(acl_key_allowed(p, "w:1", kAclKeyWrite));
  EXPECT_FALSE(acl_key_allowed(p, "w:1", kAclKeyRead));
  EXPECT_TRUE(acl_key_allowed(p, "rw:1", kAclKeyAll));
  EXPECT_TRUE(acl_key_allowed(p, "", kAclKeyRead));
  EXPECT_FALSE(acl_key_allowed(p, "z", 0));
  // %RW~* is a pattern, not allkeys: more patterns may follow.
  const AclUser& star = *acl->find("star");
  EXPECT_FALSE(star.all_keys);
  EXPECT_EQ(star.key_patterns.size(), 2u);
}

// Channel rules (acl.c ACLCheckChannelAgainstList): channels match &patterns as globs,
// PSUBSCRIBE's patterns must equal one; a new user has none (acl-pubsub-default resetchannels);
// the default user and allchannels / &* have all; a channel denial outranks a key denial.
TEST(AclRuleTest, Channels) {
  const auto acl = acl_of({
      "user none on nopass ~* +@all",
      "user news on nopass ~app:* +@all &news.* &alerts",
      "user all on nopass ~* +@all allchannels",
      "user star on nopass ~* +@all &*",
      "user reset on nopass ~* +@all &x resetchannels",
      "user sel on nopass ~* +get (~* +publish &team.*)",
  });
  const AclUser& none = *acl->find("none");
  EXPECT_EQ(check(none, "PUBLISH c m"), AclVerdict::kDeniedChannel);
  EXPECT_EQ(check(none, "SUBSCRIBE c"), AclVerdict::kDeniedChannel);
  EXPECT_EQ(check(none, "UNSUBSCRIBE c"), AclVerdict::kAllowed);  // never checked
  EXPECT_EQ(check(none, "PUBSUB CHANNELS"), AclVerdict::kAllowed);
  EXPECT_EQ(check(none, "GET k"), AclVerdict::kAllowed);
  const AclUser& news = *acl->find("news");
  EXPECT_EQ(check(news, "PUBLISH news.eu m"), AclVerdict::kAllowed);
  EXPECT_EQ(check(news, "SPUBLISH alerts m"), AclVerdict::kAllowed);
  EXPECT_EQ(check(news, "PUBLISH sport m"), AclVerdict::kDeniedChannel);
  EXPECT_EQ(check(news, "SUBSCRIBE news.a alerts"), AclVerdict::kAllowed);
  EXPECT_EQ(check(news, "SSUBSCRIBE news.a sport"), AclVerdict::kDeniedChannel);
  EXPECT_EQ(check(news, "PSUBSCRIBE news.*"), AclVerdict::kAllowed);
  EXPECT_EQ(check(news, "PSUBSCRIBE news.eu"), AclVerdict::kDeniedChannel);  // literal only
  EXPECT_EQ(check(news, "PSUBSCRIBE *"), AclVerdict::kDeniedChannel);
  EXPECT_EQ(check(acl->default_user(), "PSUBSCRIBE *"), AclVerdict::kAllowed);
  EXPECT_EQ(check(*acl->find("all"), "PSUBSCRIBE *"), AclVerdict::kAllowed);
  EXPECT_EQ(check(*acl->find("star"), "PUBLISH any m"), AclVerdict::kAllowed);
  EXPECT_EQ(check(*acl->find("reset"), "PUBLISH x m"), AclVerdict::kDeniedChannel);
  const AclUser& sel = *acl->find("sel");
  EXPECT_EQ(check(sel, "PUBLISH team.a m"), AclVerdict::kAllowed);  // the selector's channels
  EXPECT_EQ(check(sel, "PUBLISH other m"), AclVerdict::kDeniedChannel);
  EXPECT_THROW(acl_of({"user bad on nopass allchannels &x"}), AclError);
}

// Selectors: a command runs when the root or one selector allows it and all its keys.
TEST(AclRuleTest, Selectors) {
  const auto acl = acl_of({
      "user s on nopass ~app:* +get (~w:* +set) (%R~r:* +@read) ( ~both:*  +@all )",
      "user split on nopass +get \"(~a:*\" \"+set)\"",
      "user cleared on nopass ~* +get (~w:* +set) clearselectors",
      "user r on nopass (~w:* +set) reset on nopass",
  });
  const AclUser& s = *acl->find("s");
  ASSERT_EQ(s.selectors.size(), 3u);
  EXPECT_EQ(check(s, "GET app:1"), AclVerdict::kAllowed);      // root
  EXPECT_EQ(check(s, "SET w:1 v"), AclVerdict::kAllowed);      // selector 1
  EXPECT_EQ(check(s, "GET r:1"), AclVerdict::kAllowed);        // selector 2
  EXPECT_EQ(check(s, "SET r:1 v"), AclVerdict::kDeniedKey);    // set allowed, not the key
  EXPECT_EQ(check(s, "SET app:1 v"), AclVerdict::kDeniedKey);  // key denial is more relevant
  EXPECT_EQ(check(s, "HSET w:1 f v"), AclVerdict::kDeniedKey);  // only selector 3 runs hset
  EXPECT_EQ(check(s, "HSET both:1 f v"), AclVerdict::kAllowed);
  EXPECT_EQ(check(s, "SET w:1 v GET"), AclVerdict::kAllowed);  // ~w:* reads and writes
  EXPECT_EQ(check(s, "MGET app:1 r:1"), AclVerdict::kDeniedKey);  // no single selector has both
  const AclUser& split = *acl->find("split");
  ASSERT_EQ(split.selectors.size(), 1u);  // "(~a:*" "+set)" merged, as Redis merges them
  EXPECT_EQ(check(split, "SET a:1 v"), AclVerdict::kAllowed);
  EXPECT_EQ(check(split, "SET b:1 v"), AclVerdict::kDeniedKey);
  EXPECT_EQ(check(split, "DEL a:1"), AclVerdict::kDeniedCommand);
  EXPECT_TRUE(acl->find("cleared")->selectors.empty());
  EXPECT_TRUE(acl->find("r")->selectors.empty());
}

// The keys Redis 7.0 finds in a command, with what it does to each (COMMAND GETKEYSANDFLAGS of
// redis-server 7.0.15 gives the same positions and access).
TEST(AclKeysTest, AsRedisFindsThem) {
  EXPECT_EQ(keys_of("get k"), "1:R");
  EXPECT_EQ(keys_of("set k v"), "1:W");
  EXPECT_EQ(keys_of("set k v ex 10 get"), "1:RW");
  EXPECT_EQ(keys_of("exists a b"), "1:- 2:-");
  EXPECT_EQ(keys_of("mset a 1 b 2"), "1:W 3:W");
  EXPECT_EQ(keys_of("mset a 1 b"), "1:W 3:W");
  EXPECT_EQ(keys_of("lmove s d left right"), "1:RW 2:W");
  EXPECT_EQ(keys_of("getdel k"), "1:RW");
  EXPECT_EQ(keys_of("sinterstore d a b"), "1:W 2:R 3:R");
  EXPECT_EQ(keys_of("eval s 2 a b c"), "3:RW 4:RW");
  EXPECT_EQ(keys_of("eval s 0"), "");
  EXPECT_EQ(keys_of("eval s 3 a b"), "");   // more keys than arguments: none
  // numkeys not a clean count: the getkeys proc's atoi finds keys, with no access flags.
  EXPECT_EQ(keys_of("eval s 01 a"), "3:-");
  EXPECT_EQ(keys_of("eval s 2x a b"), "3:- 4:-");
  EXPECT_EQ(keys_of("eval s x a"), "");
  EXPECT_EQ(keys_of("eval s 4294967297 a"), "3:RW");  // Redis's (int) numkeys
  EXPECT_EQ(keys_of("zunionstore d 01 a"), "3:- 1:-");
  EXPECT_EQ(keys_of("zunionstore d 2 a b weights 1 2"), "1:W 3:R 4:R");
  EXPECT_EQ(keys_of("bitfield k get u8 0"), "1:R");
  EXPECT_EQ(keys_of("bitfield k get u8 0 overflow wrap"), "1:R");
  EXPECT_EQ(keys_of("bitfield k get u8"), "1:RW");  // a syntax error counts as a write
  EXPECT_EQ(keys_of("bitfield k set u8 0 1"), "1:RW");
  EXPECT_EQ(keys_of("sort_ro k by w:*"), "1:R");
  EXPECT_EQ(keys_of("sort k limit 0 1 store d"), "1:R 6:W");
  EXPECT_EQ(keys_of("sort k get store"), "1:R");  // STORE here is GET's argument
  EXPECT_EQ(keys_of("xread count 1 streams a b 0 0"), "4:R 5:R");
  EXPECT_EQ(keys_of("ping"), "");
}

TEST(AclRuleTest, AcceptedWithoutEffect) {
  // Lines as `ACL LIST` / `ACL SAVE` of Redis 7 write them, channel rules included.
  const auto acl = acl_of({
      "user default on nopass sanitize-payload ~* &* +@all",
      "user x on nopass resetchannels &news:* allchannels skip-sanitize-payload clearselectors "
      "+@all",
  });
  EXPECT_TRUE(may_run(*acl->find("x"), "get"));
}

// ---- Subcommands (issue 40 item 2) -------------------------------------------------------------

int idx(std::string_view name) { return acl_command_index(name); }

TEST(AclTableTest, SubcommandsAreCommandsOfTheirOwn) {
  // Generated from COMMAND's subcommands: categories, arity and key specs of their own.
  const auto cats = acl_categories();
  const auto has = [&](std::string_view cmd, std::string_view cat) {
    for (std::size_t i = 0; i < cats.size(); ++i) {
      if (cats[i] == cat) return ((acl_command_categories(idx(cmd)) >> i) & 1u) != 0;
    }
    return false;
  };
  for (const char* sub : {"config|get", "config|set", "client|unblock", "client|kill"}) {
    EXPECT_TRUE(has(sub, "admin")) << sub;
    EXPECT_TRUE(has(sub, "dangerous")) << sub;
  }
  EXPECT_FALSE(has("client|id", "admin"));
  EXPECT_TRUE(has("client|id", "connection"));
  EXPECT_TRUE(has("xinfo|stream", "read"));
  EXPECT_TRUE(has("xgroup|destroy", "write"));
  EXPECT_TRUE(has("object|encoding", "keyspace"));
  EXPECT_EQ(acl_command_arity(idx("config|get")), -3);
  EXPECT_EQ(acl_command_name(idx("config|get")), "config|get");
  // A container finds its subcommands in any case; an unknown one is -1; others are themselves.
  EXPECT_EQ(acl_subcommand_index(idx("config"), "GeT"), idx("config|get"));
  EXPECT_EQ(acl_subcommand_index(idx("xgroup"), "createconsumer"), idx("xgroup|createconsumer"));
  EXPECT_EQ(acl_subcommand_index(idx("config"), "ge"), -1);
  EXPECT_EQ(acl_subcommand_index(idx("config"), "gett"), -1);
  EXPECT_EQ(acl_subcommand_index(idx("get"), "x"), idx("get"));
  EXPECT_TRUE(acl_has_subcommands(idx("client")));
  EXPECT_FALSE(acl_has_subcommands(idx("config|get")));
  // Every container: each subcommand is found by its own name.
  for (const Command& c : command_table()) {
    const int i = idx(c.name);
    if (!acl_has_subcommands(i)) continue;
    for (const char* probe : {"help"}) {
      EXPECT_EQ(acl_command_name(acl_subcommand_index(i, probe)), std::string(c.name) + "|help");
    }
  }
  // Their keys (key specs of the subcommand, argv[2] on).
  const auto sub_keys = [](const std::string& line) {
    std::vector<std::string> words = Acl::split_line(line);
    std::vector<std::string_view> argv(words.begin(), words.end());
    const AclArgSpan args(argv);
    std::string out;
    for (const auto& [pos, perms] : acl_keys(acl_resolve_index(idx(words[0]), args), args)) {
      out += std::to_string(pos) + (perms & kAclKeyWrite ? "W" : perms & kAclKeyRead ? "R" : "-");
    }
    return out;
  };
  EXPECT_EQ(sub_keys("xinfo stream s full"), "2R");
  EXPECT_EQ(sub_keys("object encoding k"), "2-");  // RO, no access: any pattern will do
  EXPECT_EQ(sub_keys("memory usage k"), "2-");
  EXPECT_EQ(sub_keys("xgroup destroy s g"), "2W");
  EXPECT_EQ(sub_keys("config get requirepass"), "");
}

TEST(AclRuleTest, SubcommandRulesAsRedis) {
  const auto acl = acl_of({
      "user nocfg on nopass ~* +@all -config|get",
      "user onlyget on nopass ~* -@all +config|get +client|id",
      "user nocontainer on nopass ~* +@all -config",
      "user admin on nopass ~* -@all +@admin",
      "user safe on nopass ~* +@all -@dangerous",
      "user back on nopass ~* -@all +config +@all -@all +config|set",
      "user first on nopass ~* -@all +select|0 +get|App:1",
      "user firstreset on nopass ~* -@all +get|a +get -get",
  });
  const auto run = [&](const char* user, const std::string& line) {
    return check(*acl->find(user), line);
  };
  constexpr auto ok = AclVerdict::kAllowed;
  constexpr auto no = AclVerdict::kDeniedCommand;
  EXPECT_EQ(run("nocfg", "config get requirepass"), no);
  EXPECT_EQ(run("nocfg", "CONFIG GET requirepass"), no);
  EXPECT_EQ(run("nocfg", "config set x y"), ok);
  EXPECT_EQ(run("onlyget", "config get maxclients"), ok);
  EXPECT_EQ(run("onlyget", "config set maxclients 1"), no);
  EXPECT_EQ(run("onlyget", "client id"), ok);
  EXPECT_EQ(run("onlyget", "client unblock 1"), no);
  EXPECT_EQ(run("nocontainer", "config get x"), no);
  EXPECT_EQ(run("nocontainer", "config resetstat"), no);
  EXPECT_EQ(run("admin", "config get requirepass"), ok);
  EXPECT_EQ(run("admin", "client unblock 1"), ok);
  EXPECT_EQ(run("admin", "client id"), no);  // @connection, not @admin
  EXPECT_EQ(run("safe", "config get requirepass"), no);
  EXPECT_EQ(run("safe", "client unblock 1"), no);
  EXPECT_EQ(run("safe", "client setname x"), ok);
  EXPECT_EQ(run("back", "config set a b"), ok);
  EXPECT_EQ(run("back", "config get a"), no);
  // First-arg rules (deprecated in Redis 7.0, still honoured): the first argument, any case.
  EXPECT_EQ(run("first", "select 0"), ok);
  EXPECT_EQ(run("first", "select 1"), no);
  EXPECT_EQ(run("first", "get app:1"), ok);
  EXPECT_EQ(run("first", "get app:2"), no);
  EXPECT_EQ(run("first", "get"), no);
  EXPECT_EQ(run("firstreset", "get a"), no);  // -get drops get's first args
  // Rules Redis refuses.
  EXPECT_THROW(acl_of({"user a on -select|0"}), AclError);  // first args can only be added
  EXPECT_THROW(acl_of({"user a on +config|nope"}), AclError);
  EXPECT_THROW(acl_of({"user a on +config|get|x"}), AclError);
  EXPECT_THROW(acl_of({"user a on +config|"}), AclError);
  EXPECT_THROW(acl_of({"user a on -config|"}), AclError);
}

TEST(AclRuleTest, SubcommandKeysAreChecked) {
  const auto acl = acl_of({
      "user app on nopass ~app:* +@all",
      "user readcat on nopass ~app:* -@all +@read",
  });
  const AclUser& app = *acl->find("app");
  EXPECT_EQ(check(app, "xinfo stream secret:s full"), AclVerdict::kDeniedKey);
  EXPECT_EQ(check(app, "xinfo stream app:s full"), AclVerdict::kAllowed);
  EXPECT_EQ(check(app, "xgroup destroy secret:s g"), AclVerdict::kDeniedKey);
  EXPECT_EQ(check(app, "object encoding secret:k"), AclVerdict::kDeniedKey);
  EXPECT_EQ(check(app, "memory usage secret:k"), AclVerdict::kDeniedKey);
  EXPECT_EQ(check(app, "memory usage app:k"), AclVerdict::kAllowed);
  // Granted by category: the subcommand's own (@read), not the container's (@slow).
  const AclUser& readcat = *acl->find("readcat");
  EXPECT_EQ(check(readcat, "xinfo stream app:s"), AclVerdict::kAllowed);
  EXPECT_EQ(check(readcat, "object encoding app:k"), AclVerdict::kAllowed);
  EXPECT_EQ(check(readcat, "xgroup destroy app:s g"), AclVerdict::kDeniedCommand);
}

TEST(AclRuleTest, SortPatternsNeedEveryKey) {
  const auto acl = acl_of({
      "user app on nopass ~app:* +@all",
      "user reader on nopass %R~* +@all",
      "user sel on nopass ~app:* +@all (~* +sort)",
      "user rstar on nopass %R~x* %W~* +@all",
  });
  const auto denial = [&](const char* user, const std::string& line) {
    std::vector<std::string> words = Acl::split_line(line);
    std::vector<std::string_view> argv(words.begin(), words.end());
    return std::string(acl_sort_denial(*acl->find(user), idx(words[0]), AclArgSpan(argv)));
  };
  const std::string by(kSortByDenied), get(kSortGetDenied);
  EXPECT_EQ(denial("app", "sort app:l by w_*"), by);
  EXPECT_EQ(denial("app", "sort_ro app:l by nosort get secret:*"), get);
  EXPECT_EQ(denial("app", "sort app:l by nosort"), "");
  EXPECT_EQ(denial("app", "sort app:l get #"), get);
  EXPECT_EQ(denial("app", "sort app:l limit 0 1 alpha desc"), "");
  EXPECT_EQ(denial("app", "sort app:l limit x 1 get #"), "");  // LIMIT's error comes first
  EXPECT_EQ(denial("app", "sort app:l bogus get #"), "");      // a syntax error first
  EXPECT_EQ(denial("app", "sort_ro app:l store d get #"), "");  // SORT_RO has no STORE
  EXPECT_EQ(denial("app", "sort app:l store app:d get #"), get);
  EXPECT_EQ(denial("reader", "sort app:l by w_* get #"), "");
  EXPECT_EQ(denial("sel", "sort app:l by w_*"), "");         // the selector has ~* and SORT
  EXPECT_EQ(denial("sel", "sort_ro app:l by w_*"), by);      // ... but not SORT_RO
  EXPECT_EQ(denial("rstar", "sort app:l get #"), get);       // %W~* is no read access
  EXPECT_EQ(denial("app", "get app:l"), "");
}

TEST(AclRuleTest, ScriptsOnlyForUsersAllowedEverything) {
  const auto acl = acl_of({
      "user full on nopass ~* +@all",
      "user keys on nopass ~app:* +@all",
      "user cmds on nopass ~* +@all -@dangerous",
      "user viasel on nopass ~app:* +eval (~* +@all)",
      "user allkeys on nopass allkeys allcommands",
  });
  EXPECT_TRUE(acl_script_allowed(*acl->find("full")));
  EXPECT_FALSE(acl_script_allowed(*acl->find("keys")));
  EXPECT_FALSE(acl_script_allowed(*acl->find("cmds")));
  EXPECT_TRUE(acl_script_allowed(*acl->find("viasel")));
  EXPECT_TRUE(acl_script_allowed(*acl->find("allkeys")));
  EXPECT_TRUE(acl_script_allowed(acl->default_user()));
}

// Each bad rule, with Redis's message where Redis has one.
TEST(AclRuleTest, BadRulesAreRefusedWithTheirReason) {
  struct Case {
    std::string line, rule, message;
  };
  const std::vector<Case> cases = {
      {"user a on +@reed", "+@reed", "Unknown command or category name in ACL"},
      {"user a on +nosuchcmd", "+nosuchcmd", "Unknown command or category name in ACL"},
      {"user a on -nosuch|sub", "-nosuch|sub", "Unknown command or category name in ACL"},
      {"user a on bogus", "bogus", "Syntax error"},
      {"user a on +", "+", "Syntax error"},
      {"user a on #abc", "#abc", "The password hash must be exactly 64 characters"},
      {"user a on #" + std::string(64, 'A'), "#" + std::string(64, 'A'),
       "The password hash must be exactly 64 characters"},
      {"user a on <nope", "<nope", "The password you are trying to remove"},
      {"user a on ~* ~app:*", "~app:*", "Adding a pattern after the * pattern"},
      {"user a on allkeys ~x", "~x", "Adding a pattern after the * pattern"},
      {"user a on %~x", "%~x", "Syntax error"},
      {"user a on %RR~x", "%RR~x", "Syntax error"},
      {"user a on %X~x", "%X~x", "Syntax error"},
      {"user a on \"~a b\"", "~a b", "Syntax error"},
      {"user a on ~* %R~x", "%R~x", "Adding a pattern after the * pattern"},
      {"user a on (~x +get", "(~x", "Unmatched parenthesis in acl selector starting at '(~x'"},
      {"user a on (on)", "(on)", "Syntax error"},
      {"user a on (>pw)", "(>pw)", "Syntax error"},
      {"user a on (allkeys ~x)", "(allkeys ~x)", "Adding a pattern after the * pattern"},
      {"user a on (+nosuch)", "(+nosuch)", "Unknown command or category name in ACL"},
  };
  for (const Case& c : cases) {
    try {
      (void)acl_of({c.line});
      ADD_FAILURE() << "accepted: " << c.line;
    } catch (const AclError& e) {
      EXPECT_EQ(e.rule, c.rule) << c.line;
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(acl_of({"alice on >pw"}), AclError);             // not a user line
  EXPECT_THROW(acl_of({"user"}), AclError);                     // no name
  EXPECT_THROW(acl_of({"user a on", "user a off"}), AclError);  // duplicate
}

// ---- Glob (Redis's stringmatchlen; compared with a real server in acl_e2e_test.cc) -----------

TEST(GlobTest, RedisPatterns) {
  struct Case {
    const char* pattern;
    const char* text;
    bool match;
  };
  const Case cases[] = {
      {"*", "", true},
      {"*", "abc", true},
      {"a*", "abc", true},
      {"a*c", "abbbc", true},
      {"a*c", "abcd", false},
      {"a?c", "abc", true},
      {"a?c", "ac", false},
      {"[abc]x", "bx", true},
      {"[abc]x", "dx", false},
      {"[^abc]x", "dx", true},
      {"[^abc]x", "ax", false},
      {"[a-c]", "b", true},
      {"[c-a]", "b", true},
      {"[a-c]", "d", false},
      {"\\*", "*", true},
      {"\\*", "a", false},
      {"a\\", "a\\", true},
      {"[\\]]", "]", true},
      {"[abc", "b", true},
      {"*a*b*c*", "xaybzc", true},
      {"*a*b*c*", "xaybz", false},
      {"**", "x", true},
      {"a**b", "ab", true},
      {"", "", true},
      {"", "a", false},
      {"abc", "abc", true},
      {"abc", "abd", false},
      {"user:[0-9]*", "user:1", true},
      {"h?llo", "hello", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(glob_match(c.pattern, c.text), c.match) << c.pattern << " vs " << c.text;
  }
  // A hostile pattern costs O(|p| * |s|), not exponential time.
  EXPECT_FALSE(glob_match(std::string(50, '*') + "a*a*a*a*a*a*a*b", std::string(5000, 'a')));
}

// ---- Config ------------------------------------------------------------------------------------

TEST(AclConfigTest, ParsesUsersAndServerUser) {
  const auto cfg = parse_config(
      "a:\n  listen: 127.0.0.1:9\n  redis: true\n  server_user: proxy\n  server_auth: pw\n"
      "  acl:\n    - \"user alice on >secret ~app:* +@read +@write -@dangerous\"\n"
      "    - user bob on nopass ~* +get\n"
      "  servers:\n   - 127.0.0.1:1:1\n   - {server: \"127.0.0.1:2:1\", user: other, password: "
      "x}\n",
      "p.yml");
  const PoolConfig& p = cfg.pools[0];
  ASSERT_NE(p.acl, nullptr);
  EXPECT_NE(p.acl->authenticate("alice", "secret"), nullptr);
  EXPECT_NE(p.acl->authenticate("bob", "x"), nullptr);
  EXPECT_FALSE(p.acl->auth_required());
  EXPECT_EQ(p.server_user, "proxy");
  EXPECT_EQ(p.servers[1].user, "other");
  // client_auth without acl: one default user with that password.
  const auto pw = parse_config(kPool + "  client_auth: x\n", "p.yml");
  ASSERT_NE(pw.pools[0].acl, nullptr);
  EXPECT_TRUE(pw.pools[0].acl->auth_required());
  // Neither: no users, nothing checked.
  EXPECT_EQ(parse_config(kPool, "p.yml").pools[0].acl, nullptr);
}

TEST(AclConfigTest, BadRuleNamesFileLineRuleAndUser) {
  const std::string e = error_of(kPool +
                                 "  acl:\n    - user alice on >pw ~app:*\n"
                                 "    - user bob on >hunter2 +@reed\n");
  EXPECT_EQ(e,
            "p.yml:8: pool 'a': acl rule '+@reed' of user 'bob': Unknown command or category "
            "name in ACL");
  // A rule holding a password is never repeated.
  const std::string pw = error_of(kPool + "  acl:\n    - user bob on <hunter2\n");
  EXPECT_NE(pw.find("p.yml:7: pool 'a': acl rule '<***' of user 'bob'"), std::string::npos) << pw;
  EXPECT_EQ(pw.find("hunter2"), std::string::npos) << pw;
  EXPECT_NE(error_of(kPool + "  acl:\n    - alice on\n").find("p.yml:7: pool 'a': acl"),
            std::string::npos);
  EXPECT_NE(
      error_of(kPool + "  acl: user alice on\n").find("p.yml:6: pool 'a': 'acl' must be a list"),
      std::string::npos);
  EXPECT_NE(error_of(kPool + "  acl:\n    - user a on\n    - user a off\n")
                .find("p.yml:8: pool 'a': acl of user 'a': duplicate user 'a'"),
            std::string::npos);
  EXPECT_NE(error_of(kPool + "  acl:\n    - \"user a \\\">x\"\n").find("unbalanced quotes"),
            std::string::npos);
}

TEST(AclConfigTest, ConflictsAndWrongPools) {
  EXPECT_NE(error_of(kPool + "  client_auth: x\n  acl:\n    - user default on >y\n")
                .find("p.yml:8: pool 'a': acl declares 'user default'"),
            std::string::npos);
  EXPECT_NE(error_of(kPool + "  server_user: u\n").find("has a user but no password"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  acl:\n    - user a on\n  servers:\n   - "
                     "127.0.0.1:1:1\n")
                .find("no AUTH"),
            std::string::npos);
  EXPECT_NE(error_of("a:\n  listen: 127.0.0.1:9\n  protocol: tcp\n  server_user: u\n  servers:\n   "
                     "- 127.0.0.1:1:1\n")
                .find("take no passwords"),
            std::string::npos);
}

TEST(AdminAuthConfigTest, TokenBasicProtectAndLoopbackDefault) {
  const testing::ScopedTestDir scoped_dir("chash-acl");
  const auto& dir = scoped_dir.path();
  const std::string token_file = (dir / "token").string();
  std::ofstream(token_file) << "t0k3n\n";
  const auto cfg = parse_config(
      kPool + "chash_proxy:\n  admin: 22223\n  admin_auth:\n    token_file: " + token_file +
          "\n    basic: ops:pa55\n    protect: all\n",
      "p.yml");
  ASSERT_TRUE(cfg.admin.has_value());
  EXPECT_EQ(cfg.admin->text(), "127.0.0.1:22223");  // a bare port binds loopback
  EXPECT_EQ(cfg.admin_auth.token, sha256("t0k3n"));
  EXPECT_EQ(cfg.admin_auth.basic_user, "ops");
  EXPECT_EQ(cfg.admin_auth.basic_password, sha256("pa55"));
  EXPECT_TRUE(cfg.admin_auth.protect_all);
  // user:#<sha256 hex> keeps the password out of the file.
  const auto hashed = parse_config(
      kPool +
          "chash_proxy:\n  admin: 127.0.0.1:8\n  admin_auth:\n    basic: "
          "\"ops:#2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b\"\n",
      "p.yml");
  EXPECT_EQ(hashed.admin_auth.basic_password, sha256("secret"));
  EXPECT_FALSE(hashed.admin_auth.protect_all);
  EXPECT_FALSE(parse_config(kPool, "p.yml").admin_auth.enabled());

  const std::string g = kPool + "chash_proxy:\n  admin: 127.0.0.1:8\n  admin_auth:\n";
  EXPECT_NE(
      error_of(g + "    token: a\n    token_file: /x\n").find("p.yml:10: admin_auth: give one"),
      std::string::npos);
  EXPECT_NE(error_of(g + "    token_file: /nonexistent/t\n").find("cannot read token_file"),
            std::string::npos);
  EXPECT_NE(error_of(g + "    basic: nocolon\n").find("basic must be 'user:password'"),
            std::string::npos);
  EXPECT_NE(error_of(g + "    token: a\n    protect: some\n").find("protect must be"),
            std::string::npos);
  EXPECT_NE(error_of(g + "    tokn: a\n").find("(did you mean 'token'?)"), std::string::npos);
  EXPECT_NE(error_of(g + "    protect: all\n").find("give a token"), std::string::npos);
  EXPECT_NE(error_of(kPool + "chash_proxy:\n  admin_auth:\n    token: a\n").find("needs admin"),
            std::string::npos);
  EXPECT_EQ(error_of(g + "    token: supersecret\n    protect: nope\n").find("supersecret"),
            std::string::npos);
}

}  // namespace
}  // namespace chash::proxy::redis
