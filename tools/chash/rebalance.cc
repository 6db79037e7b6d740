// SPDX-License-Identifier: Apache-2.0
// chash rebalance — carry out a membership change on live Redis or memcached nodes: walk every
// node of the membership before (Redis SCAN, memcached lru_crawler metadump), route each key with
// the same router `chash route`/`migrate` use for the membership after, and move only the keys
// whose owner changed (Redis MIGRATE in batches, memcached meta get + set + delete), rate-limited
// and resumable from a state file. A dry run prints the plan for the keys really stored.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "change.h"
#include "chash/error.h"
#include "report.h"
#include "scan.h"
#include "wire.h"

namespace chash::cli {

namespace {

// A memcached value is read whole before it is written to its new owner: bounded (memcached's
// own item limit is 1 MiB by default, at most 1 GiB).
constexpr std::size_t kMaxValueBytes = std::size_t{256} << 20;
// memcached reads an expiry above 30 days as a Unix time.
constexpr std::int64_t kMemcachedRelativeTtlMax = 60 * 60 * 24 * 30;
// The first few distinct error messages are kept for the report.
constexpr std::size_t kMaxErrors = 10;

struct RebalanceArgs {
  RoutingSpec spec;
  NodesArg nodes;
  ChangeArgs change;
  std::vector<std::string> redis, memcached;
  double rate = 0;
  std::size_t batch = 100;
  double timeout = 5;
  std::string state;
  bool progress = false;
  Format format = Format::kTable;
  bool dry_run = false;
  bool keep_source = false;
  std::string auth, user;
  std::uint64_t stop_after = 0;
};

std::atomic<bool> g_interrupted{false};
void on_signal(int) { g_interrupted.store(true); }

// 20000 -> "20,000".
std::string thousands(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (std::size_t i = s.size(); i > 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (const unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// ---- State file: per source node, how far it got ------------------------------------------------
// Text, one node a line: "node\t<cursor>\t<keys done>\t<0|1 done>\t<name>", after a header naming
// the plan (a hash of the routing and both memberships) so that a state file is never applied to
// a different change. Written to FILE.tmp and renamed after every batch: a kill leaves the last
// complete state.

struct NodeState {
  std::string cursor = "0";  // Redis: the SCAN cursor all keys before which were handled
  std::uint64_t keys_done = 0;
  bool done = false;
};

class StateFile {
 public:
  StateFile(std::string path, std::string plan) : path_(std::move(path)), plan_(std::move(plan)) {}

  void load() {
    if (path_.empty() || !std::filesystem::exists(path_)) return;
    std::ifstream f(path_, std::ios::binary);
    if (!f) throw Error(ErrorCode::kInvalidArgument, "--state " + path_ + ": cannot read");
    std::string line;
    auto bad = [&](const std::string& why) {
      throw Error(ErrorCode::kParse, "--state " + path_ + ": " + why);
    };
    if (!std::getline(f, line) || line != "chash-rebalance-state 1") bad("not a rebalance state");
    if (!std::getline(f, line) || line != "plan " + plan_) {
      bad("written for a different change (routing, nodes or addresses); remove it to start over");
    }
    while (std::getline(f, line)) {
      std::vector<std::string> col;
      std::size_t p = 0;
      for (int i = 0; i < 4; ++i) {
        const auto t = line.find('\t', p);
        if (t == std::string::npos) bad("malformed line \"" + line.substr(0, 80) + "\"");
        col.push_back(line.substr(p, t - p));
        p = t + 1;
      }
      NodeState s;
      s.cursor = col[1];
      const auto [e, ec] =
          std::from_chars(col[2].data(), col[2].data() + col[2].size(), s.keys_done);
      if (col[0] != "node" || ec != std::errc() || e != col[2].data() + col[2].size() ||
          s.cursor.empty() || s.cursor.find_first_not_of("0123456789") != std::string::npos ||
          (col[3] != "0" && col[3] != "1")) {
        bad("malformed line \"" + line.substr(0, 80) + "\"");
      }
      s.done = col[3] == "1";
      nodes_[line.substr(p)] = s;
    }
  }

  void save() const {
    if (path_.empty()) return;
    const std::string tmp = path_ + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f << "chash-rebalance-state 1\nplan " << plan_ << "\n";
      for (const auto& [name, s] : nodes_) {
        f << "node\t" << s.cursor << '\t' << s.keys_done << '\t' << (s.done ? 1 : 0) << '\t' << name
          << '\n';
      }
      f.flush();
      if (!f) throw Error(ErrorCode::kInvalidArgument, "--state " + tmp + ": cannot write");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path_, ec);
    if (ec) throw Error(ErrorCode::kInvalidArgument, "--state " + path_ + ": " + ec.message());
  }

  NodeState& node(const std::string& name) { return nodes_[name]; }

 private:
  std::string path_, plan_;
  std::map<std::string, NodeState> nodes_;
};

// ---- Counters, pacing, the progress line --------------------------------------------------------

struct Totals {
  std::uint64_t scanned = 0, moved = 0, skipped = 0, failed = 0;
  std::map<std::pair<std::string, std::string>, std::uint64_t> pairs;  // from -> to: moved
  std::vector<std::string> errors;

  void error(const std::string& e) {
    if (errors.size() < kMaxErrors && std::find(errors.begin(), errors.end(), e) == errors.end())
      errors.push_back(e);
  }
};

// At most `rate` keys moved per second, measured from the start (0: no limit). Waits in short
// slices so that an interrupt is seen.
class Pacer {
 public:
  explicit Pacer(double rate) : rate_(rate) {}
  void admit(std::uint64_t keys) {
    if (rate_ <= 0) return;
    admitted_ += keys;
    const auto due =
        start_ + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(static_cast<double>(admitted_ - keys) / rate_));
    while (!g_interrupted.load() && Clock::now() < due) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(due - Clock::now(), std::chrono::milliseconds(50)));
    }
  }

 private:
  double rate_;
  std::uint64_t admitted_ = 0;
  Clock::time_point start_ = Clock::now();
};

// Redrawn in place on a terminal (at most 10 times a second); with --progress and no terminal, a
// line a second.
class ProgressLine {
 public:
  explicit ProgressLine(bool forced) : tty_(isatty(STDERR_FILENO) == 1), on_(tty_ || forced) {}
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  // Erases the line on a terminal (the report follows).
  void finish() {
    if (on_ && tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }
  void update(const Totals& t, const std::string& node, std::size_t index, std::size_t count,
              bool dry_run) {
    if (!on_) return;
    const auto now = Clock::now();
    if (drawn_ && now - last_ < (tty_ ? std::chrono::milliseconds(100) : std::chrono::seconds(1)))
      return;
    last_ = now;
    drawn_ = true;
    const double s = std::chrono::duration<double>(now - start_).count();
    const std::string line =
        "rebalance: node " + node + " (" + std::to_string(index + 1) + "/" + std::to_string(count) +
        ")  scanned " + thousands(t.scanned) + (dry_run ? "  to move " : "  moved ") +
        thousands(t.moved) + "  skipped " + thousands(t.skipped) + "  failed " +
        thousands(t.failed) + "  " +
        thousands(static_cast<std::uint64_t>(s > 0 ? static_cast<double>(t.scanned) / s : 0)) +
        " keys/s";
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

 private:
  bool tty_, on_;
  bool drawn_ = false;
  Clock::time_point start_ = Clock::now(), last_;
};

// ---- Redis ----------------------------------------------------------------------------------------

struct Reply {
  char type = 0;  // '+', '-', ':' or '$'
  std::string text;
};

Reply read_reply(Connection& c, const char* command) {
  const std::string_view l = c.line();
  Reply r;
  if (l.empty()) c.fail(std::string("empty reply to ") + command);
  r.type = l.front();
  if (r.type == '+' || r.type == '-' || r.type == ':') {
    r.text = std::string(l.substr(1));
    return r;
  }
  if (r.type == '$') {
    std::int64_t n = 0;
    const auto [p, ec] = std::from_chars(l.data() + 1, l.data() + l.size(), n);
    if (ec == std::errc() && p == l.data() + l.size() && n == -1) return r;
    if (ec == std::errc() && p == l.data() + l.size() && n >= 0 &&
        n <= static_cast<std::int64_t>(kMaxItemBytes)) {
      r.text = std::string(c.block(static_cast<std::size_t>(n)));
      return r;
    }
  }
  c.fail(std::string("unexpected reply to ") + command + ": \"" + std::string(l.substr(0, 64)) +
         "\"");
}

void redis_hello(Connection& c, const RebalanceArgs& a) {
  if (!a.auth.empty()) {
    if (a.user.empty()) {
      c.send(resp_command({"AUTH", a.auth}));
    } else {
      c.send(resp_command({"AUTH", a.user, a.auth}));
    }
    const Reply r = read_reply(c, "AUTH");
    if (r.type != '+') c.fail("AUTH answered \"" + r.text.substr(0, 200) + "\"");
  }
  c.send(resp_command({"PING"}));
  const Reply r = read_reply(c, "PING");
  if (r.type != '+') {
    c.fail("PING answered \"" + r.text.substr(0, 200) + "\"" +
           (r.text.starts_with("NOAUTH") ? " (give --auth)" : ""));
  }
}

// Moves `keys` (all owned by `dst` after the change) from the source with one MIGRATE. Keys gone
// before the move (EXISTS counts them just before) are skipped.
void redis_move(Connection& src, const std::string& from, const ScanTarget& dst,
                const std::vector<std::string_view>& keys, const RebalanceArgs& a, Totals& t) {
  std::vector<std::string_view> argv = {"EXISTS"};
  argv.insert(argv.end(), keys.begin(), keys.end());
  src.send(resp_command(argv));
  const Reply e = read_reply(src, "EXISTS");
  std::uint64_t present = 0;
  if (e.type != ':' ||
      std::from_chars(e.text.data(), e.text.data() + e.text.size(), present).ec != std::errc()) {
    src.fail("unexpected reply to EXISTS: \"" + e.text.substr(0, 64) + "\"");
  }
  present = std::min<std::uint64_t>(present, keys.size());
  t.skipped += keys.size() - present;
  if (present == 0) return;
  const std::string port = std::to_string(dst.port);
  const std::string timeout_ms = std::to_string(static_cast<std::int64_t>(a.timeout * 1000));
  argv = {"MIGRATE", dst.host, port, "", "0", timeout_ms};
  if (a.keep_source) argv.push_back("COPY");
  argv.push_back("REPLACE");
  if (!a.auth.empty() && a.user.empty()) argv.insert(argv.end(), {"AUTH", a.auth});
  if (!a.auth.empty() && !a.user.empty()) argv.insert(argv.end(), {"AUTH2", a.user, a.auth});
  argv.push_back("KEYS");
  argv.insert(argv.end(), keys.begin(), keys.end());
  src.send(resp_command(argv));
  const Reply r = read_reply(src, "MIGRATE");
  if (r.type == '+' && r.text == "OK") {
    t.moved += present;
    t.pairs[{from, dst.name}] += present;
  } else if (r.type == '+' && r.text == "NOKEY") {
    t.skipped += present;
  } else {
    t.failed += present;
    t.error("redis " + src.what().substr(6) + " MIGRATE to " + dst.address() + ": " +
            r.text.substr(0, 200));
  }
}

// ---- memcached ------------------------------------------------------------------------------------

// Keys the text protocol can carry: 1..250 bytes, no space or control byte.
bool memcached_key_ok(std::string_view k) {
  if (k.empty() || k.size() > 250) return false;
  return std::none_of(k.begin(), k.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return u <= 0x20 || u == 0x7f;
  });
}

struct Item {
  std::string value;
  std::uint32_t flags = 0;
  std::int64_t ttl = -1;  // seconds left, -1: never expires
  std::uint64_t cas = 0;
};

// "mg KEY v f t c": false when the key is not there.
bool memcached_get(Connection& c, const std::string& key, Item& it) {
  c.send("mg " + key + " v f t c\r\n");
  const std::string head(c.line());
  if (head == "EN") return false;
  if (!head.starts_with("VA ")) c.fail("mg answered \"" + head.substr(0, 200) + "\"");
  std::vector<std::string_view> tok;
  std::string_view rest(head);
  rest.remove_prefix(3);
  while (!rest.empty()) {
    const auto sp = rest.find(' ');
    tok.push_back(rest.substr(0, sp));
    rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
  }
  auto num = [&](std::string_view s, auto& v) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
      c.fail("mg answered \"" + head.substr(0, 200) + "\"");
  };
  if (tok.empty()) c.fail("mg answered \"" + head.substr(0, 200) + "\"");
  std::size_t len = 0;
  num(tok[0], len);
  if (len > kMaxValueBytes) c.fail("a value larger than 256 MiB");
  for (std::size_t i = 1; i < tok.size(); ++i) {
    const std::string_view v = tok[i].substr(1);
    switch (tok[i].empty() ? 0 : tok[i].front()) {
      case 'f':
        num(v, it.flags);
        break;
      case 't':
        num(v, it.ttl);
        break;
      case 'c':
        num(v, it.cas);
        break;
      default:
        break;
    }
  }
  it.value = std::string(c.block(len));
  return true;
}

// Moves one key from `src` to `dst`. The delete on the source is conditional on the CAS read, so
// a value written there meanwhile is copied again instead of lost.
void memcached_move(Connection& src, Connection& dst, const std::string& from,
                    const std::string& to, const std::string& key, const RebalanceArgs& a,
                    Totals& t) {
  if (!memcached_key_ok(key)) {
    ++t.failed;
    t.error("memcached " + src.what().substr(10) +
            ": a key the text protocol cannot carry (space, control byte or over 250 bytes)");
    return;
  }
  Item it;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!memcached_get(src, key, it) || it.ttl == 0) {  // gone, or expiring this second
      ++t.skipped;
      return;
    }
    std::int64_t exptime = it.ttl < 0 ? 0 : it.ttl;
    if (exptime > kMemcachedRelativeTtlMax)
      exptime += static_cast<std::int64_t>(std::time(nullptr));
    // One send: a request in pieces would wait on Nagle and the peer's delayed ACK.
    std::string req = "ms " + key + " " + std::to_string(it.value.size()) + " F" +
                      std::to_string(it.flags) + " T" + std::to_string(exptime) + "\r\n";
    req.reserve(req.size() + it.value.size() + 2);
    req += it.value;
    req += "\r\n";
    dst.send(req);
    const std::string set(dst.line());
    if (set != "HD") {
      ++t.failed;
      t.error("memcached " + dst.what().substr(10) + ": ms answered \"" + set.substr(0, 200) +
              "\"");
      return;
    }
    if (a.keep_source) break;
    src.send("md " + key + " C" + std::to_string(it.cas) + "\r\n");
    const std::string del(src.line());
    if (del == "HD" || del == "NF") break;  // NF: deleted there meanwhile; the copy stands
    if (del != "EX") src.fail("md answered \"" + del.substr(0, 200) + "\"");
    if (attempt == 2) {
      ++t.failed;
      t.error("memcached " + src.what().substr(10) + ": a key kept changing during its move");
      return;
    }
  }
  ++t.moved;
  ++t.pairs[{from, to}];
}

void memcached_hello(Connection& c) {
  c.send("version\r\n");
  const std::string v(c.line());
  if (!v.starts_with("VERSION ")) c.fail("version answered \"" + v.substr(0, 200) + "\"");
}

// ---- The run ----------------------------------------------------------------------------------------

struct Run {
  const RebalanceArgs& a;
  const Change& c;
  std::map<std::string, ScanTarget> targets;
  StateFile state;
  Totals t;
  Pacer pacer;
  ProgressLine progress;
  bool stopped = false;
  std::size_t node_index = 0, node_count = 0;

  bool should_stop() const {
    return g_interrupted.load() || (a.stop_after > 0 && t.scanned >= a.stop_after);
  }

  // Each key's owner after the change, as a name; "" when none (every node removed).
  void owners(const std::vector<std::string>& keys, std::vector<std::string_view>& views,
              std::vector<NodeId>& ids) const {
    views.assign(keys.begin(), keys.end());
    ids.resize(keys.size());
    c.after_of(views, ids);
  }

  void redis_node(const ScanTarget& from) {
    Connection src(from, timeout());
    redis_hello(src, a);
    NodeState& ns = state.node(from.name);
    std::vector<std::string> keys;
    std::vector<std::string_view> views;
    std::vector<NodeId> ids;
    for (;;) {
      keys.clear();
      const std::string next = redis_scan_page(src, ns.cursor, a.batch, keys);
      t.scanned += keys.size();
      owners(keys, views, ids);
      std::map<NodeId, std::vector<std::string_view>> moving;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (ids[i] == kNoNode) {
          ++t.failed;
          t.error("no node owns some keys after the change");
        } else if (c.after_nodes[ids[i]].name != from.name) {
          moving[ids[i]].push_back(views[i]);
        }
      }
      for (auto& [id, ks] : moving) {
        const ScanTarget& dst = targets.at(c.after_nodes[id].name);
        if (a.dry_run) {
          t.moved += ks.size();
          t.pairs[{from.name, dst.name}] += ks.size();
          continue;
        }
        pacer.admit(ks.size());
        redis_move(src, from.name, dst, ks, a, t);
      }
      ns.keys_done += keys.size();
      ns.cursor = next;
      ns.done = next == "0";
      if (!a.dry_run) state.save();
      progress.update(t, from.name, node_index, node_count, a.dry_run);
      if (ns.done) return;
      if (should_stop()) {
        stopped = true;
        return;
      }
    }
  }

  // The dump is spooled to a temporary file first: memcached's crawler is not kept waiting while
  // keys move, and memory stays bounded whatever the node holds.
  void memcached_node(const ScanTarget& from) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> spool(std::tmpfile(), &std::fclose);
    if (!spool)
      throw Error(ErrorCode::kInvalidArgument, "cannot create a temporary file for the key list");
    {
      Connection dump(from, timeout());
      metadump(dump, timeout(), [&](std::string& key) {
        const auto n = static_cast<std::uint32_t>(key.size());
        if (std::fwrite(&n, sizeof n, 1, spool.get()) != 1 ||
            std::fwrite(key.data(), 1, key.size(), spool.get()) != key.size()) {
          throw Error(ErrorCode::kInvalidArgument, "cannot write the key list to a temporary file");
        }
        return true;
      });
    }
    std::rewind(spool.get());
    Connection src(from, timeout());
    std::map<std::string, std::unique_ptr<Connection>> dsts;
    NodeState& ns = state.node(from.name);
    ns.keys_done = 0;  // the dump is read afresh: keys moved before are no longer on the node
    std::vector<std::string> keys;
    std::vector<std::string_view> views;
    std::vector<NodeId> ids;
    bool end = false;
    while (!end) {
      keys.clear();
      std::uint32_t n = 0;
      while (keys.size() < a.batch) {
        if (std::fread(&n, sizeof n, 1, spool.get()) != 1) {
          end = true;
          break;
        }
        std::string k(n, '\0');
        if (std::fread(k.data(), 1, n, spool.get()) != n) {
          throw Error(ErrorCode::kInvalidArgument, "cannot read back the temporary key list");
        }
        keys.push_back(std::move(k));
      }
      t.scanned += keys.size();
      owners(keys, views, ids);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (ids[i] == kNoNode) {
          ++t.failed;
          t.error("no node owns some keys after the change");
          continue;
        }
        const std::string& to = c.after_nodes[ids[i]].name;
        if (to == from.name) continue;
        if (a.dry_run) {
          ++t.moved;
          ++t.pairs[{from.name, to}];
          continue;
        }
        auto& d = dsts[to];
        if (!d) {
          d = std::make_unique<Connection>(targets.at(to), timeout());
          memcached_hello(*d);
        }
        pacer.admit(1);
        memcached_move(src, *d, from.name, to, keys[i], a, t);
      }
      ns.keys_done += keys.size();
      ns.done = end;
      if (!a.dry_run) state.save();
      progress.update(t, from.name, node_index, node_count, a.dry_run);
      if (!end && should_stop()) {
        stopped = true;
        return;
      }
    }
  }

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<std::int64_t>(a.timeout * 1000));
  }
};

std::string plan_id(const RebalanceArgs& a, const Change& c,
                    const std::map<std::string, ScanTarget>& targets) {
  std::uint64_t h = fnv1a(c.kr_before->describe());
  for (const auto& n : c.names_before) h = fnv1a(n.name + "=" + std::to_string(n.weight) + ";", h);
  h = fnv1a("->", h);
  for (const auto& n : c.after_effective)
    h = fnv1a(n.name + "=" + std::to_string(n.weight) + ";", h);
  for (const auto& [name, tg] : targets) h = fnv1a(name + "@" + tg.address() + ";", h);
  h = fnv1a(a.redis.empty() ? "memcached" : "redis", h);
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void report(const RebalanceArgs& a, const Change& c, const Run& run, double seconds) {
  const Totals& t = run.t;
  const double rate = seconds > 0 ? static_cast<double>(t.scanned) / seconds : 0;
  const bool complete = !run.stopped;
  Out out;
  if (a.format == Format::kJson) {
    Json j;
    j["routing"] = c.kr_before->describe();
    j["dry_run"] = a.dry_run;
    j["complete"] = complete;
    j["scanned"] = t.scanned;
    j["moved"] = t.moved;
    j["skipped"] = t.skipped;
    j["failed"] = t.failed;
    j["seconds"] = seconds;
    j["keys_per_second"] = rate;
    Json m = Json::array();
    for (const auto& [k, v] : t.pairs) {
      m.push_back({{"from", json_name(k.first)}, {"to", json_name(k.second)}, {"keys", v}});
    }
    j["moves"] = m;
    Json e = Json::array();
    for (const auto& s : t.errors) e.push_back(json_name(s));
    j["errors"] = e;
    out.put(j.dump(2) + "\n");
    return;
  }
  TextTable mt;
  mt.header = {"from", "to", "keys", "of scanned"};
  mt.numeric = {false, false, true, true};
  for (const auto& [k, v] : t.pairs) {
    mt.add({k.first, k.second, std::to_string(v),
            percent(static_cast<double>(v) /
                    static_cast<double>(std::max<std::uint64_t>(t.scanned, 1)))});
  }
  if (a.format == Format::kCsv) {
    out.put(mt.csv());
    return;
  }
  out.put("rebalance: " + c.kr_before->describe() + ", " + std::to_string(c.names_before.size()) +
          " -> " + std::to_string(c.after_effective.size()) + " nodes" +
          (a.dry_run ? " (dry run: nothing moved)" : "") + "\n\n");
  out.put("scanned  " + thousands(t.scanned) + " keys\n");
  out.put((a.dry_run ? "to move  " : "moved    ") + thousands(t.moved) + " keys (" +
          percent(static_cast<double>(t.moved) /
                  static_cast<double>(std::max<std::uint64_t>(t.scanned, 1))) +
          ")\n");
  out.put("skipped  " + thousands(t.skipped) + " (gone before they could be moved)\n");
  out.put("failed   " + thousands(t.failed) + "\n");
  out.put("time     " + fixed(seconds, 2) + " s, " + thousands(static_cast<std::uint64_t>(rate)) +
          " keys/s scanned\n");
  if (!complete) {
    out.put("\ninterrupted before the end: run the same command again" +
            std::string(a.state.empty() ? " (with --state FILE to resume where it stopped)"
                                        : " to resume from " + a.state) +
            "\n");
  }
  if (!mt.rows.empty()) out.put("\n" + mt.render());
  if (!t.errors.empty()) {
    out.put("\nerrors:\n");
    for (const auto& e : t.errors) out.put("  " + e + "\n");
  }
}

void run_rebalance(const RebalanceArgs& a) {
  require_routing(a.spec, a.nodes);
  const bool changes =
      !a.change.add.empty() || !a.change.remove.empty() || !a.change.reweight.empty();
  if (changes == !a.change.after_nodes_file.empty()) {
    throw CLI::ValidationError("rebalance",
                               "give the change: --add/--remove/--reweight, or --after-nodes-file");
  }
  if (a.redis.empty() == a.memcached.empty()) {
    throw CLI::ValidationError(
        "rebalance", "give every node's address with --redis, or every one with --memcached");
  }
  const Change c = build_change(a.spec, a.nodes.load(), a.change);

  std::map<std::string, ScanTarget> targets;
  for (const auto& r : a.redis) {
    auto t = parse_scan_target(r, ScanTarget::Kind::kRedis, "--redis");
    if (!targets.emplace(t.name, t).second)
      throw Error(ErrorCode::kDuplicateNode, "--redis: node \"" + t.name + "\" given twice");
  }
  for (const auto& m : a.memcached) {
    auto t = parse_scan_target(m, ScanTarget::Kind::kMemcached, "--memcached");
    if (!targets.emplace(t.name, t).second)
      throw Error(ErrorCode::kDuplicateNode, "--memcached: node \"" + t.name + "\" given twice");
  }
  std::set<std::string> members;
  for (const auto& n : c.names_before) members.insert(n.name);
  for (const auto& n : c.after_effective) members.insert(n.name);
  for (const auto& name : members) {
    if (!targets.count(name)) {
      throw Error(ErrorCode::kUnknownNode, "node \"" + name + "\" has no address: give " +
                                               (a.redis.empty() ? "--memcached " : "--redis ") +
                                               name + "=HOST:PORT");
    }
  }
  for (const auto& [name, tg] : targets) {
    if (!members.count(name)) {
      throw Error(ErrorCode::kUnknownNode,
                  "--redis/--memcached " + name + ": no such node before or after the change");
    }
  }

  // Every node answers before anything moves: an unreachable one is an error naming it.
  Run run{a,
          c,
          targets,
          StateFile(a.dry_run ? std::string() : a.state, plan_id(a, c, targets)),
          {},
          Pacer(a.rate),
          ProgressLine(a.progress)};
  for (const auto& [name, tg] : targets) {
    Connection conn(tg, run.timeout());
    if (tg.kind == ScanTarget::Kind::kRedis) {
      redis_hello(conn, a);
    } else {
      memcached_hello(conn);
    }
  }
  run.state.load();

  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: a blocking wait sees EINTR, the batch then ends
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const auto t0 = Clock::now();
  run.node_count = c.names_before.size();
  for (const auto& n : c.names_before) {
    const ScanTarget& from = targets.at(n.name);
    if (!run.state.node(n.name).done) {
      if (from.kind == ScanTarget::Kind::kRedis) {
        run.redis_node(from);
      } else {
        run.memcached_node(from);
      }
    }
    ++run.node_index;
    if (run.stopped) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run.progress.finish();
  report(a, c, run, seconds);
  if (run.stopped || run.t.failed > 0) throw ExitWith{kExitFailure};
}

}  // namespace

void add_rebalance(CLI::App& app) {
  auto args = std::make_shared<RebalanceArgs>();
  auto* sub = app.add_subcommand(
      "rebalance",
      "Carry out a membership change on live Redis or memcached nodes: move exactly the keys "
      "whose owner changes (Redis MIGRATE, memcached meta get/set/delete), rate-limited and "
      "resumable. --remove NAME drains NAME: its keys move to their next owners before it "
      "leaves.");
  add_routing_flags(sub, args->spec, args->nodes);
  add_format_flag(sub, args->format);
  sub->add_option("--add", args->change.add, "Add node NAME or NAME=WEIGHT (repeatable)");
  sub->add_option("--remove", args->change.remove,
                  "Remove (drain) node NAME: its keys move to their next owners (repeatable)");
  sub->add_option("--reweight", args->change.reweight, "Set NAME=WEIGHT (repeatable)");
  sub->add_option("--after-nodes-file", args->change.after_nodes_file,
                  "The membership after the change, as a node list");
  sub->add_option("--redis", args->redis,
                  "A Redis node's address, NAME=HOST:PORT (repeatable; every node before and "
                  "after needs one; MIGRATE is sent to HOST:PORT as the source node reaches it)");
  sub->add_option("--memcached", args->memcached,
                  "A memcached node's address, NAME=HOST:PORT (repeatable; 1.6 or later)");
  sub->add_option("--rate", args->rate, "At most this many keys moved per second (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--batch", args->batch, "Keys per SCAN step and per MIGRATE (default 100)")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--timeout", args->timeout,
                  "Seconds to wait for a connect or a reply, and MIGRATE's own timeout (default 5)")
      ->check(CLI::Range(0.001, 3600.0));
  sub->add_option("--state", args->state,
                  "Record progress in FILE after every batch; run the same command again to "
                  "resume (Redis: from the SCAN cursor; memcached: the node is dumped again)");
  sub->add_flag("--dry-run", args->dry_run,
                "Scan and print the plan for the keys really stored; move nothing");
  sub->add_flag("--keep-source", args->keep_source,
                "Copy instead of move: leave the keys on their previous owner");
  sub->add_option("--auth", args->auth, "Redis password (AUTH; MIGRATE's AUTH/AUTH2)");
  sub->add_option("--user", args->user, "Redis ACL user for --auth");
  sub->add_flag("--progress", args->progress, "A progress line on stderr even when not a terminal");
  sub->add_option("--stop-after", args->stop_after,
                  "Stop (as on Ctrl-C) after the batch in which N keys were scanned: a run in "
                  "stages with --state");
  sub->callback([args] { run_rebalance(*args); });
}

}  // namespace chash::cli
