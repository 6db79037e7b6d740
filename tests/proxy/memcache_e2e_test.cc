// SPDX-License-Identifier: Apache-2.0
// chash-proxy end to end with memcached pools: real memcached processes on unix sockets in a
// temporary directory, the proxy in-process on a free 127.0.0.1 port, and a small text-protocol
// client. memcached must be installed (scripts/bootstrap.sh): these tests fail without it.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "chash/router.h"
#include "config/config.h"
#include "control/proxy.h"
#include "control/status.h"
#include "e2e_util.h"
#include "memcache_util.h"
#include "net/socket.h"
#include "proto/memcache/protocol.h"

namespace chash::proxy {
namespace {

using testing::McClient;
using testing::MemcachedServer;
using testing::set;
using testing::value;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool have_memcached() { return testing::have_program("memcached"); }

class MemcacheE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    // scripts/bootstrap.sh installs memcached; without it these tests must fail, not pass.
    ASSERT_TRUE(have_memcached()) << "memcached not installed (run scripts/bootstrap.sh)";
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("chash-proxy-mc");
    start_servers(3);
  }
  void TearDown() override {
    proxy_.stop();
    servers_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void start_servers(int n) {
    for (int i = static_cast<int>(servers_.size()) + 1; i <= n; ++i) {
      servers_.push_back(std::make_unique<MemcachedServer>(dir_, "m" + std::to_string(i)));
      ASSERT_TRUE(servers_.back()->start()) << "memcached m" << i << " did not start";
    }
  }
  // A memcache pool (nutcracker's default protocol: no `redis:` key).
  std::string yaml(const std::string& extra, int nservers = 3) {
    std::string y = "alpha:\n  listen: 127.0.0.1:0\n" + extra + "  servers:\n";
    for (int i = 1; i <= nservers; ++i) {
      y += "    - " + servers_[static_cast<std::size_t>(i - 1)]->socket() + ":1 m" +
           std::to_string(i) + "\n";
    }
    return y;
  }
  void start_proxy(const std::string& y, unsigned workers = 2) { proxy_.start(dir_, y, workers); }
  McClient client() { return McClient(testing::dial_tcp(proxy_->port(0))); }
  std::shared_ptr<const Pool> pool() { return proxy_->topology()->pools[0]; }
  // Which server holds `key`, by asking each directly ("" if none, "many" if several).
  std::string holder(const std::string& key) {
    std::string found;
    for (std::size_t i = 0; i < servers_.size(); ++i) {
      auto c = servers_[i]->client();
      if (c.call("get " + key + "\r\n").starts_with("VALUE ")) {
        found = found.empty() ? "m" + std::to_string(i + 1) : "many";
      }
    }
    return found;
  }
  // A key (k0..k999) the router sends to `node`.
  std::string key_on(NodeId node, const std::string& prefix = "k") {
    return testing::key_on_node(*pool(), node, prefix);
  }

  fs::path dir_;
  std::vector<std::unique_ptr<MemcachedServer>> servers_;
  testing::ProxyRunner proxy_;
};

TEST_F(MemcacheE2E, RoutingEqualsTheLibraryRouterAndChashRoute) {
  start_proxy(yaml(""));
  ASSERT_EQ(pool()->config.protocol, PoolProtocol::kMemcache);
  auto c = client();
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back("user:" + std::to_string(i * 7919));
  for (const auto& k : keys) ASSERT_EQ(c.call(set(k, "v")), "STORED\r\n") << k;
  const auto router = chash::Router::build(pool()->config.routing, pool()->config.nodes());
  std::map<std::string, int> per_server;
  for (const auto& k : keys) {
    const std::string want = "m" + std::to_string(router.route(k) + 1);
    EXPECT_EQ(holder(k), want) << k;
    ++per_server[want];
  }
  EXPECT_EQ(per_server.size(), 3u);
#ifdef CHASH_CLI_PATH
  // The same keys through `chash route` (nutcracker's defaults: ketama, fnv1a_64).
  std::string in;
  for (const auto& k : keys) in += k + "\n";
  std::ofstream(dir_ / "keys.txt") << in;
  const std::string cmd = std::string(CHASH_CLI_PATH) +
                          " route --preset twemproxy --hash fnv1a_64 --nodes m1,m2,m3 < " +
                          (dir_ / "keys.txt").string() + " > " + (dir_ / "route.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream out(dir_ / "route.txt");
  std::string line;
  std::size_t i = 0;
  while (std::getline(out, line) && i < keys.size()) {
    EXPECT_NE(line.find(holder(keys[i])), std::string::npos) << keys[i] << ": " << line;
    ++i;
  }
  EXPECT_EQ(i, keys.size());
#endif
}

// preset: ketama is libmemcached's mapping: the keys of a vector file made by the real
// libmemcached end to end (tests/compat/libmemcached/generate.sh) land on the same servers.
TEST_F(MemcacheE2E, KetamaPresetEqualsLibmemcached) {
  start_servers(5);
  std::string source = CHASH_PROXY_DOCS;  // <source>/docs/PROXY.md
  source.erase(source.size() - std::string_view("/docs/PROXY.md").size());
  std::ifstream vf(source + "/tests/compat/vectors/ketama__e2e.tsv");
  ASSERT_TRUE(vf.good());
  std::vector<std::pair<std::string, std::uint32_t>> nodes;
  std::vector<std::pair<std::string, std::string>> expect;  // key, node name
  std::string line;
  while (std::getline(vf, line)) {
    if (line.empty() || line[0] == '#' || line.starts_with("@preset")) continue;
    std::istringstream ss(line);
    if (line.starts_with("@node")) {
      std::string tag, name;
      std::uint32_t w = 0;
      ss >> tag >> name >> w;
      nodes.emplace_back(name, w);
      continue;
    }
    std::string hex, node;
    ss >> hex >> node;
    std::string key;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      key += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    bool ok = !key.empty() && key.size() <= 250;
    for (const char ch : key) ok = ok && static_cast<unsigned char>(ch) > 0x20 && ch != 0x7f;
    if (ok) expect.emplace_back(key, node);
  }
  ASSERT_EQ(nodes.size(), 5u);
  ASSERT_GT(expect.size(), 1500u);
  std::string y =
      "alpha:\n  listen: 127.0.0.1:0\n  protocol: memcache\n  preset: ketama\n  servers:\n";
  std::map<std::string, std::size_t> server_of;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    y += "    - " + servers_[i]->socket() + ":" + std::to_string(nodes[i].second) + " " +
         nodes[i].first + "\n";
    server_of[nodes[i].first] = i;
  }
  start_proxy(y);
  auto c = client();
  std::string batch;
  for (const auto& [k, n] : expect) batch += set(k, "1", "set");
  ASSERT_TRUE(c.send(batch));
  for (std::size_t i = 0; i < expect.size(); ++i) ASSERT_EQ(c.read(false), "STORED\r\n") << i;
  std::vector<McClient> direct;
  for (auto& s : servers_) direct.push_back(s->client());
  std::size_t agree = 0;
  for (const auto& [k, n] : expect) {
    const bool there = direct[server_of[n]].call("get " + k + "\r\n").starts_with("VALUE ");
    EXPECT_TRUE(there) << "key " << k << " not on " << n;
    agree += there ? 1 : 0;
  }
  EXPECT_EQ(agree, expect.size());
}

TEST_F(MemcacheE2E, EveryCommandWithRealReplies) {
  start_proxy(yaml(""));
  auto c = client();
  EXPECT_EQ(c.call(set("a", "hello")), "STORED\r\n");
  EXPECT_EQ(c.call("get a\r\n"), value("a", "hello") + "END\r\n");
  EXPECT_EQ(c.call("get nope\r\n"), "END\r\n");
  EXPECT_EQ(c.call(set("a", "x", "add")), "NOT_STORED\r\n");
  EXPECT_EQ(c.call(set("b", "x", "replace")), "NOT_STORED\r\n");
  EXPECT_EQ(c.call(set("b", "1", "add")), "STORED\r\n");
  EXPECT_EQ(c.call(set("a", "!", "append")), "STORED\r\n");
  EXPECT_EQ(c.call(set("a", "<", "prepend")), "STORED\r\n");
  EXPECT_EQ(c.call("get a\r\n"), value("a", "<hello!") + "END\r\n");
  EXPECT_EQ(c.call(set("nokey", "!", "append")), "NOT_STORED\r\n");
  EXPECT_EQ(c.call("set f 42 0 2\r\nhi\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("get f\r\n"), value("f", "hi", 42) + "END\r\n");
  // gets / cas: a stale unique is EXISTS, a missing key NOT_FOUND.
  const std::string gets = c.call("gets a\r\n");
  ASSERT_TRUE(gets.starts_with("VALUE a 0 7 ")) << gets;
  const std::string unique = gets.substr(12, gets.find("\r\n") - 12);
  EXPECT_EQ(c.call("cas a 0 0 1 " + unique + "\r\nz\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("cas a 0 0 1 " + unique + "\r\nw\r\n"), "EXISTS\r\n");
  EXPECT_EQ(c.call("cas missing 0 0 1 1\r\nw\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.call("get a\r\n"), value("a", "z") + "END\r\n");
  // incr / decr.
  EXPECT_EQ(c.call("incr b 41\r\n"), "42\r\n");
  EXPECT_EQ(c.call("decr b 50\r\n"), "0\r\n");
  EXPECT_EQ(c.call("incr nope 1\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.call("incr a 1\r\n"),
            "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  EXPECT_EQ(c.call("incr b abc\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  // touch / gat / gats / delete.
  EXPECT_EQ(c.call("touch a 100\r\n"), "TOUCHED\r\n");
  EXPECT_EQ(c.call("touch nope 100\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.call("touch a abc\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(c.call("gat 100 a nope\r\n"), value("a", "z") + "END\r\n");
  EXPECT_TRUE(c.call("gats 100 a\r\n").starts_with("VALUE a 0 1 "));
  EXPECT_EQ(c.call("gat abc a\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(c.call("gat 0\r\n"), "END\r\n");
  EXPECT_EQ(c.call("delete a\r\n"), "DELETED\r\n");
  EXPECT_EQ(c.call("delete a\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.call("delete b 0\r\n"), "DELETED\r\n");
  EXPECT_EQ(c.call("delete b 5\r\n"),
            "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
  // Local answers and refusals; the connection stays.
  EXPECT_EQ(c.call("version\r\n"), "VERSION 1.6.18-chash-proxy\r\n");
  for (const std::string cmd : {"stats", "flush_all", "verbosity 1", "shutdown"}) {
    const std::string r = c.call(cmd + "\r\n");
    EXPECT_TRUE(
        r.starts_with("SERVER_ERROR unsupported command '" + cmd.substr(0, cmd.find(' ')) + "'"))
        << r;
  }
  // Meta commands are proxied (MemcacheMetaE2E has them all): a miss, then a store.
  EXPECT_EQ(c.call("mg a v\r\n"), "EN\r\n");
  ASSERT_TRUE(c.send("ms a 2 q\r\nxy\r\nmd a q\r\n"));  // quiet: no HD for either
  EXPECT_EQ(c.call("mn\r\n"), "MN\r\n");
  EXPECT_EQ(c.call("bogus\r\n"), "ERROR\r\n");
  EXPECT_EQ(c.call("\r\n"), "ERROR\r\n");
  EXPECT_EQ(c.call("get " + std::string(251, 'k') + "\r\n"),
            "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(c.call("set k 0 0 abc\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(c.call("set k 0 0 3\r\nabcde\r\n"), "CLIENT_ERROR bad data chunk\r\n");
  EXPECT_EQ(c.read(false),
            "ERROR\r\n");  // "de" ended the block; the "\r\n" after it is an empty command
  EXPECT_EQ(c.call("get a\r\n"), "END\r\n");
  EXPECT_EQ(c.call("quit\r\n"), "<eof>");
}

TEST_F(MemcacheE2E, NoreplyThenALaterCommandStaysInSync) {
  start_proxy(yaml(""));
  auto c = client();
  ASSERT_TRUE(c.send(
      "set n 0 0 1 noreply\r\n5\r\nincr n 3 noreply\r\nadd n 0 0 1 noreply\r\nx\r\n"
      "delete gone noreply\r\nincr n noreply\r\ntouch n 100 noreply\r\nincr zzz 1 noreply\r\n"
      "set big 0 0 2000000 noreply\r\n" +
      std::string(2000000, 'b') +
      "\r\n"
      "flush_all noreply\r\ndelete n 5 noreply\r\nincr n abc noreply\r\n"));
  EXPECT_EQ(c.call("get n\r\n"), value("n", "8") + "END\r\n");
  ASSERT_TRUE(c.send("delete n noreply\r\nget n\r\n"));
  EXPECT_EQ(c.read(true), "END\r\n");
  EXPECT_EQ(c.call("version\r\n"), "VERSION 1.6.18-chash-proxy\r\n");
  // The backends' streams are in sync too: a direct check on every server.
  for (auto& s : servers_) EXPECT_EQ(s->client().call("version\r\n").substr(0, 8), "VERSION ");
}

TEST_F(MemcacheE2E, PipelinedMixedCommandsInOneWriteAnswerInOrder) {
  start_proxy(yaml(""));
  auto c = client();
  std::string batch, want;
  for (int i = 0; i < 500; ++i) {
    const std::string k = "p" + std::to_string(i), v = std::to_string(i);
    batch += set(k, v) + "get " + k + " nope" + std::to_string(i) + "\r\n" + "incr " + k +
             " 1\r\n" + "set q 0 0 1 noreply\r\nq\r\n" + "version\r\n" + "delete " + k + "\r\n" +
             "bogus\r\n";
    want += "STORED\r\n" + value(k, v) + "END\r\n" + std::to_string(i + 1) + "\r\n" +
            "VERSION 1.6.18-chash-proxy\r\nDELETED\r\nERROR\r\n";
  }
  ASSERT_TRUE(c.send(batch));
  const std::string got =
      testing::recv_until(c.fd(), [&](const std::string& s) { return s.size() >= want.size(); });
  EXPECT_EQ(got, want);
}

TEST_F(MemcacheE2E, MultiGetAcrossBackendsInKeyOrderWithMisses) {
  start_proxy(yaml(""));
  auto c = client();
  std::string get = "get", gets_line = "gets", want;
  std::set<NodeId> nodes;
  for (int i = 0; i < 60; ++i) {
    const std::string k = "m" + std::to_string(i);
    if (i % 3 != 0) {
      ASSERT_EQ(c.call(set(k, "v" + std::to_string(i))), "STORED\r\n");
    }
    get += " " + k;
    if (i % 3 != 0) want += value(k, "v" + std::to_string(i));
    nodes.insert(pool()->router.route(k));
  }
  ASSERT_GE(nodes.size(), 2u);  // the keys really are spread over the backends
  EXPECT_EQ(c.call(get + "\r\n"), want + "END\r\n");
  // Duplicates are answered each time, in place.
  EXPECT_EQ(
      c.call("get m1 m2 m1 m0 m1\r\n"),
      value("m1", "v1") + value("m2", "v2") + value("m1", "v1") + value("m1", "v1") + "END\r\n");
  // gat across backends.
  EXPECT_EQ(c.call("gat 100 m1 m2 m4 m3\r\n"),
            value("m1", "v1") + value("m2", "v2") + value("m4", "v4") + "END\r\n");
  // A long multiget (memcached itself closes a gat line over 2048 bytes): cut into several
  // requests per backend, merged in order.
  std::string lots, lots_want;
  for (int i = 0; i < 1500; ++i) {
    const std::string k = "long:key:" + std::to_string(i);
    if (i % 2 == 0) {
      ASSERT_TRUE(c.send(set(k, std::to_string(i))));
    }
    lots += " " + k;
    if (i % 2 == 0) lots_want += value(k, std::to_string(i));
  }
  for (int i = 0; i < 750; ++i) ASSERT_EQ(c.read(false), "STORED\r\n");
  ASSERT_GT(lots.size(), 15000u);  // far over 2048
  EXPECT_EQ(c.call("gat 100" + lots + "\r\n"), lots_want + "END\r\n");
  EXPECT_EQ(c.call("get" + lots + "\r\n"), lots_want + "END\r\n");
  for (auto& s : servers_) EXPECT_EQ(s->client().call("version\r\n").substr(0, 8), "VERSION ");
}

using testing::binary_value;
using testing::rss_kb;

// memcached 1.6.18's t/getset.t: a set refused as too large leaves no old value behind (the
// server unlinks it, proto_text.c "Avoid stale data persisting in cache"); through the proxy
// the old value was still there (`not ok 536 - foo_1049600 == <undef>`). An ms likewise; an
// add does not unlink, as memcached's does not.
TEST_F(MemcacheE2E, ASetRefusedAsTooLargeLeavesNoStaleValue) {
  start_proxy(yaml("  max_value_bytes: 1048576\n"));
  auto c = client();
  const std::string big((1 << 20) + 1, 'B');
  ASSERT_EQ(c.call(set("foo", "MOO")), "STORED\r\n");
  EXPECT_EQ(c.call(set("foo", big)), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(c.call("get foo\r\n"), "END\r\n");
  EXPECT_EQ(holder("foo"), "");
  ASSERT_EQ(c.call("ms bar 3 T0\r\nMOO\r\n"), "HD\r\n");
  EXPECT_EQ(c.call("ms bar " + std::to_string(big.size()) + " T0\r\n" + big + "\r\n"),
            "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(c.call("mg bar v\r\n"), "EN\r\n");
  // A binary (b) key is deleted with md.
  ASSERT_EQ(c.call("ms Zm9v 3 b\r\nMOO\r\n"), "HD\r\n");  // "foo"
  EXPECT_EQ(c.call("ms Zm9v " + std::to_string(big.size()) + " b\r\n" + big + "\r\n"),
            "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(c.call("get foo\r\n"), "END\r\n");
  ASSERT_EQ(c.call(set("kept", "MOO")), "STORED\r\n");
  EXPECT_EQ(c.call(set("kept", big, "add")), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(c.call("get kept\r\n"), value("kept", "MOO") + "END\r\n");
  // noreply: the old value goes, nothing is answered, and the next request is in step.
  ASSERT_EQ(c.call(set("quiet", "MOO")), "STORED\r\n");
  ASSERT_TRUE(c.send("set quiet 0 0 " + std::to_string(big.size()) + " noreply\r\n" + big + "\r\n"));
  EXPECT_EQ(c.call("get quiet\r\n"), "END\r\n");
}

// memcached (t/malicious-commands.t) closes a connection that sends an HTTP request line.
TEST_F(MemcacheE2E, AnHttpRequestLineIsClosedWithoutAReply) {
  start_proxy(yaml(""));
  for (const char* line : {"GET / HTTP/1.0\r\n", "PUT /asdf HTTP/1.1\r\n", "DELETE HTTP/1.1\r\n"}) {
    auto c = client();
    ASSERT_TRUE(c.send(line));
    EXPECT_EQ(c.read(false), "<eof>") << line;
  }
  auto c = client();
  EXPECT_EQ(c.call("GET /\r\n"), "ERROR\r\n");
  EXPECT_EQ(c.call(set("k", "v")), "STORED\r\n");
}

TEST_F(MemcacheE2E, TooLargeValueIsRefusedAndTheConnectionStaysUsable) {
  start_proxy(yaml("  max_value_bytes: 1048576\n"));
  auto c = client();
  const long before = rss_kb();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(c.call(set("big", std::string((1 << 20) + 1, 'x'))),
              "SERVER_ERROR object too large for cache\r\n");
  }
  // A huge announced size is swallowed as it streams, never buffered.
  ASSERT_TRUE(c.send("set huge 0 0 50000000\r\n"));
  EXPECT_EQ(c.read(false), "SERVER_ERROR object too large for cache\r\n");
  const std::string chunk(1 << 20, 'y');
  for (int i = 0; i < 47; ++i) ASSERT_TRUE(c.send(chunk));
  ASSERT_TRUE(c.send(std::string(50000000 - 47 * (1 << 20), 'y') + "\r\n"));
  EXPECT_EQ(c.call(set("small", std::string(1000, 's'))), "STORED\r\n");
  EXPECT_EQ(c.call("get small\r\n"), value("small", std::string(1000, 's')) + "END\r\n");
  // Just under the proxy's limit: memcached's own limit (item overhead included) answers.
  const std::string r = c.call(set("edge", std::string(1 << 20, 'e')));
  EXPECT_TRUE(r == "STORED\r\n" || r == "SERVER_ERROR object too large for cache\r\n") << r;
  EXPECT_EQ(c.call(set("ok", std::string(500000, 'o'))), "STORED\r\n");
  EXPECT_EQ(c.call("get ok\r\n"), value("ok", std::string(500000, 'o')) + "END\r\n");
  EXPECT_LT(rss_kb() - before, 64 * 1024);
}

// Binary-protocol clients are served (memcache_binary_e2e_test.cc); one that breaks the
// framing is closed like a garbage text client, and neither disturbs the others.
TEST_F(MemcacheE2E, BinaryAndGarbageClientsAreClosedOthersServed) {
  start_proxy(yaml(""));
  auto good = client();
  ASSERT_EQ(good.call(set("g", "1")), "STORED\r\n");
  {
    auto bin = client();  // a binary-protocol GET of "k": Not found (status 1), then bad magic
    ASSERT_TRUE(
        bin.send(std::string("\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00"
                             "\x00\x00\x00\x00\x00\x00\x00\x00k",
                             25)));
    const std::string r =
        testing::recv_until(bin.fd(), [](const std::string& in) { return in.size() >= 24; });
    ASSERT_GE(r.size(), 24u);
    EXPECT_EQ(static_cast<unsigned char>(r[0]), 0x81);
    EXPECT_EQ(r[7], 1);  // status 0x0001: Not found
    bin.send("junk\r\n");
    EXPECT_TRUE(bin.closed_by_peer());
  }
  {
    auto junk = client();  // no newline, ever
    junk.send(std::string(4096, 'j'));
    EXPECT_EQ(junk.read(false), "CLIENT_ERROR line too long\r\n");
    EXPECT_TRUE(junk.closed_by_peer());
  }
  {
    auto noisy = client();  // garbage lines are answered ERROR, the connection kept
    EXPECT_EQ(noisy.call("\x01\x02\x03\r\n"), "ERROR\r\n");
    EXPECT_EQ(noisy.call("get g\r\n"), value("g", "1") + "END\r\n");
  }
  EXPECT_EQ(good.call("get g\r\n"), value("g", "1") + "END\r\n");
  EXPECT_GE(proxy_->metrics().protocol_errors.load(), 2u);
}

// get_hits summed over the backends, asked of each memcached directly.
long backend_get_hits(const std::vector<std::unique_ptr<MemcachedServer>>& servers) {
  long total = 0;
  for (const auto& s : servers) {
    auto c = s->client();
    if (!c.send("stats\r\n")) return -1;
    const std::string stats =
        testing::recv_until(c.fd(), [](const std::string& in) { return in.ends_with("END\r\n"); });
    const auto at = stats.find("STAT get_hits ");
    if (at == std::string::npos) return -1;
    total += std::stol(stats.substr(at + 14));
  }
  return total;
}

// Issue 15: a get of 10,000 keys over 3 backends (several get lines each), a third missing,
// binary values from 0 bytes to 40 KiB, comes back byte for byte in the client's key order,
// twice (the second time on reused read chunks), and behind it a single-key get.
TEST_F(MemcacheE2E, TenThousandKeyGetComesBackExactly) {
  start_proxy(yaml(""), 1);
  auto c = client();
  constexpr int kKeys = 10000;
  std::string sets, get = "get", want;
  int stored = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "zk:" + std::to_string(i);
    get += " " + key;
    if (i % 3 == 1) continue;
    sets += set(key, binary_value(i));
    want += value(key, binary_value(i));
    ++stored;
  }
  get += "\r\n";
  want += "END\r\n";
  ASSERT_TRUE(c.send(sets));
  for (int i = 0; i < stored; ++i) ASSERT_EQ(c.read(false), "STORED\r\n") << i;
  std::set<std::string> holders;
  for (int i = 0; i < 300; i += 3) holders.insert(holder("zk:" + std::to_string(i)));
  EXPECT_GE(holders.size(), 2u) << "the keys should be spread over the backends";
  for (int round = 0; round < 2; ++round) {
    const std::string got = c.call(get);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want) << "first difference at byte "
                             << std::mismatch(got.begin(), got.end(), want.begin()).first -
                                    got.begin();
  }
  ASSERT_TRUE(c.send(get + "get zk:1007\r\n"));
  EXPECT_TRUE(c.read(true) == want);
  EXPECT_TRUE(c.read(true) == value("zk:1007", binary_value(1007)) + "END\r\n");
}

TEST_F(MemcacheE2E, PipeliningWithoutReadingIsBounded) {
  start_proxy(yaml("  max_pipeline: 64\n"), 1);
  auto c = client();
  ASSERT_EQ(c.call(set("v", std::string(100000, 'v'))), "STORED\r\n");
  const long before = rss_kb();
  const long hits_before = backend_get_hits(servers_);
  ASSERT_GE(hits_before, 0);
  constexpr int kN = 3000;  // 300 MB of replies if nothing pushed back
  std::string batch;
  for (int i = 0; i < kN; ++i) batch += "get v\r\n";
  std::thread writer([&] { c.send(batch); });
  // While we read nothing, the proxy must stop asking the backend: at most max_pipeline
  // requests in flight, 8 MiB of unsent replies (80 of these) and what the loopback socket
  // buffers hold (a few MiB). Wait until the backend's count stops moving, then check it — a
  // count rather than a time or RSS alone, so a slow (sanitized, loaded) run cannot pass an
  // unbounded proxy or fail a bounded one.
  long hits = hits_before, last = -1;
  for (int i = 0; i < 60 && hits != last; ++i) {
    last = hits;
    std::this_thread::sleep_for(250ms);
    hits = backend_get_hits(servers_);
  }
  const long during = rss_kb();
  EXPECT_GE(hits, 0) << "stats from a backend failed";  // not ASSERT: the writer thread is running
  EXPECT_LT(hits - hits_before, 1000) << "the proxy kept reading while its client did not";
  const std::string one = value("v", std::string(100000, 'v')) + "END\r\n";
  std::size_t got = 0;
  char buf[1 << 16];
  while (got < one.size() * kN) {
    const ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got += static_cast<std::size_t>(n);
  }
  writer.join();
  EXPECT_EQ(got, one.size() * kN);
  EXPECT_EQ(backend_get_hits(servers_) - hits_before, kN);
  // Under ThreadSanitizer RSS is mostly shadow memory; the backend count above bounds it there.
  if (!testing::kThreadSanitizer) {
    EXPECT_LT(during - before, 100 * 1024)
        << "RSS grew from " << before << " kB to " << during << " kB";
  }
}

TEST_F(MemcacheE2E, KilledBackendIsEjectedOthersUnaffectedAndItComesBack) {
  start_proxy(
      yaml("  timeout: 500\n  auto_eject_hosts: true\n  server_failure_limit: 1\n"
           "  server_retry_timeout: 300\n"));
  const std::string k1 = key_on(0), k2 = key_on(1);
  auto c = client();
  ASSERT_EQ(c.call(set(k1, "a")), "STORED\r\n");
  ASSERT_EQ(c.call(set(k2, "b")), "STORED\r\n");
  servers_[0]->stop();
  std::string r = c.call("get " + k1 + "\r\n");
  if (!r.starts_with("SERVER_ERROR backend m1")) {
    EXPECT_EQ(r, "END\r\n") << r;  // already rerouted
  }
  // Ejected: m1's keys go to their next choice; the others stay.
  EXPECT_EQ(c.call(set(k1, "moved")), "STORED\r\n");
  EXPECT_EQ(c.call("get " + k1 + " " + k2 + "\r\n"),
            value(k1, "moved") + value(k2, "b") + "END\r\n");
  EXPECT_EQ(holder(k2), "m2");
  ASSERT_TRUE(servers_[0]->start());
  bool back = false;
  for (int i = 0; i < 100 && !back; ++i) {  // the `version` probe brings it back
    std::this_thread::sleep_for(50ms);
    back = !pool()->states[0]->down.load();
  }
  ASSERT_TRUE(back);
  // A fresh m1, but the value written while it was out is read through its stand-in (and
  // moved home): a write made during the absence is not lost on the return.
  EXPECT_EQ(c.call("get " + k1 + "\r\n"), value(k1, "moved") + "END\r\n");
  EXPECT_EQ(c.call(set(k1, "home")), "STORED\r\n");
  EXPECT_EQ(holder(k1), "m1");  // and the stand-in's copy is gone
  EXPECT_GE(pool()->states[0]->ejections.load(), 1u);
}

TEST_F(MemcacheE2E, WithoutAutoEjectADownBackendFailsFastAndMultiGetFailsWhole) {
  start_proxy(yaml("  timeout: 500\n  server_failure_limit: 1\n  server_retry_timeout: 60000\n"));
  const std::string k1 = key_on(0), k2 = key_on(1);
  auto c = client();
  ASSERT_EQ(c.call(set(k2, "ok")), "STORED\r\n");
  servers_[0]->stop();
  EXPECT_TRUE(c.call("get " + k1 + "\r\n").starts_with("SERVER_ERROR backend m1")) << k1;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.call(set(k1, "x")).starts_with("SERVER_ERROR backend m1 is down"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_TRUE(
      c.call("get " + k2 + " " + k1 + "\r\n").starts_with("SERVER_ERROR backend m1 is down"));
  EXPECT_EQ(c.call("get " + k2 + "\r\n"), value(k2, "ok") + "END\r\n");
}

// A server back from an absence (kFlipped) may hold values older than writes made elsewhere
// meanwhile: each noted key is deleted there before a get reads it, alone or in a multi-get
// (regression: a get's keys were not checked, and the stale value was read).
TEST_F(MemcacheE2E, AReturnedServersNotedKeysAreDeletedBeforeAGetReadsThem) {
  start_proxy(yaml("  auto_eject_hosts: true\n"));
  const std::string k = key_on(0), j = key_on(0, "j"), other = key_on(1, "o");
  for (const std::string& key : {k, j}) {
    ASSERT_EQ(servers_[0]->client().call(set(key, "stale")), "STORED\r\n");
  }
  auto c = client();
  ASSERT_EQ(c.call(set(other, "fresh")), "STORED\r\n");
  AbsenceLog& absence = pool()->states[0]->absence;
  absence.note(k, 1000);
  absence.note(j, 1000);
  absence.set_phase(AbsenceLog::Phase::kFlipped);
  EXPECT_EQ(c.call("get " + k + "\r\n"), "END\r\n");
  EXPECT_EQ(c.call("gets " + other + " " + j + "\r\n").find("stale"), std::string::npos);
  EXPECT_EQ(servers_[0]->client().call("mg " + j + " v\r\n"), "EN\r\n");
  EXPECT_FALSE(absence.contains(k));
  EXPECT_FALSE(absence.contains(j));
}

// A returned server's noted key (kFlipped) is deleted there before the next request for it; when
// that delete fails — the server hangs again — the key stays noted (regression: dropped, so the
// server's old value was served once it answered again).
TEST_F(MemcacheE2E, ADeleteOfANotedKeyThatFailsLeavesItNoted) {
  start_proxy(yaml("  timeout: 300\n  auto_eject_hosts: true\n  server_failure_limit: 1000\n"));
  const std::string k = key_on(0);
  AbsenceLog& absence = pool()->states[0]->absence;
  absence.note(k, 1000);
  absence.set_phase(AbsenceLog::Phase::kFlipped);
  ASSERT_TRUE(testing::stop_process(servers_[0]->pid()));
  auto c = client();
  EXPECT_EQ(c.call("get " + k + "\r\n"), "SERVER_ERROR backend m1: timed out after 300 ms\r\n");
  ::kill(servers_[0]->pid(), SIGCONT);
  EXPECT_TRUE(absence.contains(k)) << "its delete failed: the key must stay noted";
}

TEST_F(MemcacheE2E, SilentBackendTimesOutWithinTheTimeout) {
  // A "backend" that accepts connections and never answers.
  const std::string hole = (dir_ / "hole.sock").string();
  std::string error;
  const int lfd = net::listen_on(parse_address(hole, "test"), 16, error);
  ASSERT_GE(lfd, 0);
  std::string y =
      "alpha:\n  listen: 127.0.0.1:0\n  timeout: 300\n  server_failure_limit: 5\n  servers:\n    "
      "- " +
      hole + ":1 hole\n";
  start_proxy(y);
  auto c = client();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c.call("get k\r\n"), "SERVER_ERROR backend hole: timed out after 300 ms\r\n");
  EXPECT_EQ(c.call("set k 0 0 1 noreply\r\nx\r\nversion\r\n"), "VERSION 1.6.18-chash-proxy\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  EXPECT_GE(pool()->states[0]->timeouts.load(), 2u);
  ::close(lfd);
}

// A "backend" on a unix socket that answers each `get` line with END, `delay` after the previous
// answer (one request at a time, as a server does), and only the first `answers` of them; the
// rest it reads and never answers.
class SlowBackend {
 public:
  SlowBackend(const fs::path& path, std::chrono::milliseconds delay, int answers)
      : path_(path.string()), delay_(delay), answers_(answers) {
    std::string error;
    lfd_ = net::listen_on(parse_address(path_, "test"), 16, error);
    EXPECT_GE(lfd_, 0) << error;
    thread_ = std::thread([this] { serve(); });
  }
  ~SlowBackend() {
    stop_ = true;
    thread_.join();
    ::close(lfd_);
  }
  const std::string& path() const { return path_; }
  // When the last answer was sent.
  std::chrono::steady_clock::time_point last_answer() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_));
  }

 private:
  void serve() {
    int fd = -1;
    while (!stop_ && fd < 0) {
      pollfd p{lfd_, POLLIN, 0};
      if (::poll(&p, 1, 20) == 1) fd = ::accept(lfd_, nullptr, nullptr);
    }
    std::string in;
    int answered = 0;
    while (!stop_ && fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) != 1) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
      for (auto eol = in.find("\r\n"); eol != std::string::npos; eol = in.find("\r\n")) {
        const bool get = in.starts_with("get ");
        in.erase(0, eol + 2);
        if (!get || answered == answers_) continue;
        std::this_thread::sleep_for(delay_);
        ++answered;
        last_ = std::chrono::steady_clock::now().time_since_epoch().count();
        if (::send(fd, "END\r\n", 5, MSG_NOSIGNAL) != 5) break;
      }
    }
    if (fd >= 0) ::close(fd);
  }

  std::string path_;
  std::chrono::milliseconds delay_;
  int answers_;
  int lfd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<std::chrono::steady_clock::rep> last_{0};
  std::thread thread_;
};

// `timeout` bounds the server's time on each request, from when it was sent or the reply before
// it was complete: a pipeline of 8 requests the server answers 150 ms apart lasts 1.2 s, twice
// the 600 ms timeout, and is answered in full, with no timeout counted (regression: each request
// was timed from when it was queued, so the 5th timed out and the backend was ejected; a slow
// reader's pipeline of large replies did the same to the requests behind it on a loaded machine).
TEST_F(MemcacheE2E, APipelineLongerThanTheTimeoutIsNotATimeout) {
  SlowBackend slow(dir_ / "slow.sock", 150ms, 1000);
  start_proxy("alpha:\n  listen: 127.0.0.1:0\n  timeout: 600\n  auto_eject_hosts: true\n"
              "  server_failure_limit: 1\n  servers:\n    - " + slow.path() + ":1 slow\n", 1);
  auto c = client();
  std::string gets;
  for (int i = 0; i < 8; ++i) gets += "get k" + std::to_string(i) + "\r\n";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.send(gets));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c.read(true), "END\r\n") << i;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1100ms);
  EXPECT_EQ(pool()->states[0]->timeouts.load(), 0u);
  EXPECT_FALSE(pool()->states[0]->down.load());
}

// ...and a server that stops answering mid-pipeline is timed out `timeout` after its last
// reply, not sooner: every request still queued gets the timeout's error. (The client gets its
// read's four replies together: hold_output.)
TEST_F(MemcacheE2E, AServerThatStopsMidPipelineTimesOutAfterItsLastReply) {
  SlowBackend slow(dir_ / "slow.sock", 100ms, 2);
  start_proxy("alpha:\n  listen: 127.0.0.1:0\n  timeout: 300\n  server_failure_limit: 5\n"
              "  servers:\n    - " + slow.path() + ":1 slow\n", 1);
  auto c = client();
  ASSERT_TRUE(c.send("get a\r\nget b\r\nget c\r\nget d\r\n"));
  EXPECT_EQ(c.read(true), "END\r\n");
  EXPECT_EQ(c.read(true), "END\r\n");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(c.read(true), "SERVER_ERROR backend slow: timed out after 300 ms\r\n") << i;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - slow.last_answer(), 300ms);
  EXPECT_EQ(pool()->states[0]->timeouts.load(), 1u);
}

TEST_F(MemcacheE2E, ReloadAddsAServer) {
  start_proxy(yaml("", 2));
  auto c = client();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(c.call(set("r" + std::to_string(i), "v")), "STORED\r\n");
  proxy_.rewrite(yaml("", 3));
  std::string message;
  ASSERT_TRUE(proxy_->reload_from_file(message)) << message;
  EXPECT_NE(message.find("+m3"), std::string::npos) << message;
  ASSERT_TRUE(testing::reload_applied(*proxy_));
  const auto router = chash::Router::build(pool()->config.routing, pool()->config.nodes());
  int on_m3 = 0;
  for (int i = 100; i < 300; ++i) {
    const std::string k = "r" + std::to_string(i);
    ASSERT_EQ(c.call(set(k, "v")), "STORED\r\n");
    EXPECT_EQ(holder(k), "m" + std::to_string(router.route(k) + 1)) << k;
    on_m3 += router.route(k) == 2 ? 1 : 0;
  }
  EXPECT_GT(on_m3, 0);
}

TEST_F(MemcacheE2E, BoundedLoadFromManyClients) {
  start_proxy(yaml(""), 2);
  constexpr int kThreads = 8, kOps = 1500;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto c = client();
      for (int i = 0; i < kOps; ++i) {
        const std::string k = "t" + std::to_string(t) + ":" + std::to_string(i % 200);
        const std::string v = std::to_string(i);
        if (c.call(set(k, v)) != "STORED\r\n") ++failures;
        if (c.call("get " + k + " t0:1 t1:2 t2:3\r\n").find(value(k, v)) == std::string::npos)
          ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(failures.load(), 0);
  std::printf("[ load ] %d round trips in %.2f s (%.0f/s)\n", kThreads * kOps * 2, secs,
              kThreads * kOps * 2 / secs);
  // libmemcached's memslap against the proxy (text protocol), bounded in count and time.
  ASSERT_TRUE(testing::have_program("memcslap")) << "memcslap not installed (libmemcached-tools)";
  const std::string cmd =
      "timeout 60 memcslap --servers=127.0.0.1:" + std::to_string(proxy_->port(0)) +
      " --concurrency=4 --execute-number=2000 --test=set > " + (dir_ / "slap.txt").string() +
      " 2>&1 && timeout 60 memcslap --servers=127.0.0.1:" + std::to_string(proxy_->port(0)) +
      " --concurrency=4 --execute-number=2000 --test=get >> " + (dir_ / "slap.txt").string() +
      " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::stringstream ss;
  ss << std::ifstream(dir_ / "slap.txt").rdbuf();
  std::printf("%s", ss.str().c_str());
  auto c = client();
  EXPECT_EQ(c.call("version\r\n"), "VERSION 1.6.18-chash-proxy\r\n");
}

// A memcache pool's backend connections count in chash_proxy_backend_connections (one meaning
// for every pool type), across workers, and leave it when they close; a multi-get split over
// backends counts its fragments.
TEST_F(MemcacheE2E, MetricsCountMemcacheBackendConnections) {
  start_proxy(yaml("  server_connections: 2\n"), 2);
  std::vector<McClient> clients;
  for (int i = 0; i < 8; ++i) clients.push_back(client());
  const std::string keys[] = {key_on(0), key_on(1), key_on(2)};
  for (int round = 0; round < 4; ++round) {
    for (auto& c : clients) {
      for (const auto& k : keys) ASSERT_EQ(c.call("set " + k + " 0 0 1\r\nv\r\n"), "STORED\r\n");
    }
  }
  const auto held = pool();  // alive while used
  const Pool& p = *held;
  std::int64_t open = 0;
  for (const auto& s : p.states) {
    EXPECT_GE(s->active.load(), 1);
    EXPECT_LE(s->active.load(), 4);  // 2 workers x server_connections 2
    open += s->active.load();
  }
  const std::string m = render_prometheus(proxy_->metrics(), *proxy_->topology());
  EXPECT_NE(m.find("chash_proxy_backend_connections{pool=\"alpha\",backend=\"m1\"} " +
                   std::to_string(p.states[0]->active.load()) + "\n"),
            std::string::npos)
      << m;
  const std::uint64_t fragments = p.shared->fragments.load();
  EXPECT_TRUE(clients[0].call("get " + key_on(0) + " " + key_on(1) + "\r\n").ends_with("END\r\n"));
  EXPECT_EQ(p.shared->fragments.load(), fragments + 2);
  // Every memcached goes away: every connection closes and the gauge returns to 0.
  for (auto& s : servers_) s->stop();
  EXPECT_TRUE(testing::eventually([&] {
    std::int64_t n = 0;
    for (const auto& s : p.states) n += s->active.load();
    return n == 0;
  }));
  std::uint64_t eofs = 0;
  for (const auto& s : p.states) eofs += s->eofs.load();
  EXPECT_EQ(eofs, static_cast<std::uint64_t>(open));
}

// ---- Meta commands -------------------------------------------------------------------------
// The reference is one memcached (1.6.18) spoken to directly: a stream through the proxy over
// three backends must get the bytes that one server gives for the same stream, in the same
// order. Flags whose answers are the server's own counters (c: cas, t/h/l: times) are left out.

// A memcached outside the pool, and `stream` sent to it and through `proxy`: both answers.
// The stream ends with a miss whose opaque marks the end of the answers.
constexpr std::string_view kEndMark = "mg chash:end:mark v O999999\r\n";
std::string until_end(int fd, const std::string& stream) {
  if (!testing::send_all(fd, stream + std::string(kEndMark))) return "<send failed>";
  return testing::recv_until(fd,
                             [](const std::string& s) { return s.ends_with("EN O999999\r\n"); });
}

class MemcacheMetaE2E : public MemcacheE2E {
 protected:
  void SetUp() override {
    MemcacheE2E::SetUp();
    reference_ = std::make_unique<MemcachedServer>(dir_, "reference");
    ASSERT_TRUE(reference_->start()) << "the reference memcached did not start";
    start_proxy(yaml(""));
  }
  // The proxy's answer to `stream`, checked against the reference server's.
  std::string same_as_memcached(const std::string& stream) {
    auto direct = reference_->client();
    auto c = client();
    const std::string want = until_end(direct.fd(), stream);
    const std::string got = until_end(c.fd(), stream);
    EXPECT_EQ(got, want);
    return got;
  }
  std::unique_ptr<MemcachedServer> reference_;
};

TEST_F(MemcacheMetaE2E, PipelinedOverThreeBackendsAnswersAsOneMemcachedInOrder) {
  const std::string k0 = key_on(0), k1 = key_on(1), k2 = key_on(2), n0 = key_on(0, "n"),
                    n2 = key_on(2, "n");
  ASSERT_FALSE(k0.empty() || k1.empty() || k2.empty() || n0.empty() || n2.empty());
  const std::string stream =
      "ms " + k0 + " 2 T0 F7 O10 k\r\nv0\r\n" + "ms " + k1 + " 3 O11\r\nv11\r\n" + "ms " + k2 +
      " 1 MA\r\nz\r\n" +  // append to nothing: NS
      "mg " + k0 + " v f k O12\r\n" + "mg " + k1 + " s v\r\n" + "mg " + k2 + " v O13 k\r\n" +
      "ma " + n0 + " N0 J40 v O14\r\n" + "ma " + n0 + " v MD D3\r\n" + "ma " + n2 + "\r\n" + "md " +
      k1 + " O15\r\n" + "md " + k1 + " O16 k\r\n" + "mg " + k0 + " k v q O20\r\n" + "mg " + k1 +
      " v q O21\r\n" +                // a miss: EN suppressed
      "ms " + k2 + " 1 q\r\nq\r\n" +  // HD suppressed
      "md " + n2 + " q\r\n" +         // NF suppressed
      "mn\r\n" + "ms " + k2 + " 1 MR I O30\r\nr\r\n" + "mg " + k2 + " v\r\n" + "mn\r\n";
  const std::string got = same_as_memcached(stream);
  EXPECT_EQ(got.substr(0, 10 + k0.size()), "HD O10 k" + k0 + "\r\n");  // and not empty
  // Every key is where `get` finds it: on the server the router names.
  for (const std::string& k : {k0, k2, n0}) {
    EXPECT_EQ(holder(k), "m" + std::to_string(pool()->router.route(k) + 1)) << k;
  }
  auto c = client();
  EXPECT_EQ(c.call("get " + k0 + " " + k2 + " " + n0 + "\r\n"),
            value(k0, "v0", 7) + value(k2, "r") + value(n0, "37") + "END\r\n");
}

TEST_F(MemcacheMetaE2E, QuietRequestsOverEveryBackendKeepOrderUntilMn) {
  // Hits and misses interleaved over the three backends; only hits answer, each where its
  // request was; every `mn` answers once all earlier requests have.
  std::string setup, stream;
  for (int i = 0; i < 300; ++i) {
    const std::string k = "q:" + std::to_string(i);
    if (i % 3 != 1) setup += "ms " + k + " " + std::to_string(k.size()) + " q\r\n" + k + "\r\n";
    stream += "mg " + k + " v k q O" + std::to_string(i) + "\r\n";
    if (i % 7 == 0) stream += "md q:missing:" + std::to_string(i) + " q\r\n";
    if (i % 50 == 49) stream += "mn\r\n";
  }
  const std::string got = same_as_memcached(setup + "mn\r\n" + stream);
  EXPECT_EQ(std::count(got.begin(), got.end(), 'V'), 200);  // "VA": the hits
  std::set<NodeId> nodes;
  for (int i = 0; i < 300; ++i) nodes.insert(pool()->router.route("q:" + std::to_string(i)));
  EXPECT_EQ(nodes.size(), 3u);
}

TEST_F(MemcacheMetaE2E, MalformedRequestsAnswerAsMemcached) {
  std::string eighteen;
  for (const char f : std::string_view("vkstfOPLhluqNTRIF")) eighteen += std::string(" ") + f;
  const std::string stream =
      std::string("mg\r\n") + "me\r\n" + "mz k\r\n" + "mg " + std::string(251, 'k') + " v\r\n" +
      "mg k z\r\n" + "mg k v v\r\n" + "mg k Tabc\r\n" + "mg k Fx\r\n" + "mg k MAB\r\n" +
      "ma k Jx\r\n" + "md k Tx\r\n" + "mg k q z\r\n" + "mg k D-1\r\n" + "mg k" + eighteen +
      " x\r\n" + "md k" + eighteen + "\r\n" + "ms k\r\n" + "ms k abc\r\n" + "ms k -1\r\n" +
      "ms k 2 T\r\nmn\r\n" + "ms k 2 zz\r\nab\r\n" + "ms k 2 q\r\nabcd\r\n" + "mg Zm9v= b\r\n" +
      "md Zm9 b\r\n" + "me Zm9 b\r\n" + "ms Zm9 2 b\r\nab\r\n" + "ms k 2 MZ\r\nab\r\n" + "mg k O" +
      std::string(40, 'o') + "\r\n" + "ma k MX\r\n" + "ms k 4294967298 O1\r\nab\r\n" +
      "mg k v T99999999999\r\n" + "ms big 2000000 T1\r\n" + std::string(2000000, 'b') + "\r\n" +
      "mn\r\n";
  const std::string got = same_as_memcached(stream);
  EXPECT_NE(got.find("CLIENT_ERROR invalid or duplicate flag\r\n"), std::string::npos);
  EXPECT_NE(got.find("SERVER_ERROR object too large for cache\r\n"), std::string::npos);
  // The proxy refuses what memcached would store under a key with control bytes (see key_ok).
  auto c = client();
  EXPECT_EQ(c.call("mg k\x01y v\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(c.call("mn\r\n"), "MN\r\n");
}

TEST_F(MemcacheMetaE2E, Base64KeysArePlacedAsTheirDecodedKey) {
  auto c = client();
  std::set<NodeId> nodes;
  for (int i = 0; i < 60; ++i) {
    const std::string plain = "b64:" + std::to_string(i * 7919);
    std::string encoded;
    memcache::base64_encode(plain, encoded);
    ASSERT_EQ(c.call("ms " + encoded + " 1 b\r\n" + std::to_string(i % 10) + "\r\n"), "HD\r\n");
    // The server stores the decoded key: a text get finds it, on the router's server for it.
    EXPECT_EQ(c.call("get " + plain + "\r\n"), value(plain, std::to_string(i % 10)) + "END\r\n");
    EXPECT_EQ(holder(plain), "m" + std::to_string(pool()->router.route(plain) + 1)) << plain;
    nodes.insert(pool()->router.route(plain));
    // And the other way round: a text set, read back by its base64 name (k names it as stored:
    // in text, since a text command stored it).
    ASSERT_EQ(c.call(set(plain, "t")), "STORED\r\n");
    EXPECT_EQ(c.call("mg " + encoded + " b v k\r\n"), "VA 1 k" + plain + "\r\nt\r\n");
    EXPECT_EQ(c.call("md " + encoded + " b\r\n"), "HD\r\n");
    EXPECT_EQ(c.call("mg " + plain + " v\r\n"), "EN\r\n");
  }
  EXPECT_EQ(nodes.size(), 3u);
  // A binary key (bytes no text command can name) is routed and stored the same way.
  const std::string binary("\x00\x01 \r\n\xff", 6);
  std::string encoded;
  memcache::base64_encode(binary, encoded);
  ASSERT_EQ(c.call("ms " + encoded + " 2 b\r\nhi\r\n"), "HD\r\n");
  EXPECT_EQ(c.call("mg " + encoded + " b v\r\n"), "VA 2\r\nhi\r\n");
  const NodeId owner = pool()->router.route(binary);
  auto direct = servers_[owner]->client();
  EXPECT_EQ(direct.call("mg " + encoded + " b v\r\n"), "VA 2\r\nhi\r\n");
}

TEST_F(MemcacheMetaE2E, MeAndMnAreAnswered) {
  auto c = client();
  const std::string k = key_on(1);
  ASSERT_EQ(c.call(set(k, "abc")), "STORED\r\n");
  EXPECT_TRUE(c.call("me " + k + "\r\n").starts_with("ME " + k + " exp=-1 la=")) << k;
  std::string encoded;
  memcache::base64_encode(k, encoded);
  EXPECT_TRUE(c.call("me " + encoded + " b\r\n").starts_with("ME " + k + " exp=-1 la="));
  EXPECT_EQ(c.call("me nothere\r\n"), "EN\r\n");
  EXPECT_EQ(c.call("mn\r\n"), "MN\r\n");
  EXPECT_EQ(c.call("mn with words\r\n"), "MN\r\n");
}

// hot_cache: a get of a hot key is answered from the worker's copy; ms, md and ma must make that
// copy stale exactly as set/delete/incr do (a stale copy would be served for its 10 s TTL).
TEST_F(MemcacheE2E, MetaWritesInvalidateHotKeyCopies) {
  start_proxy(
      yaml("  hot_keys: {window: 300ms, sample: 1, min_rate: 10, log_rate: 100}\n"
           "  hot_cache: {ttl: 10s}\n"));
  auto c = client();
  auto other = client();
  ASSERT_EQ(c.call(set("hot", "0")), "STORED\r\n");
  ASSERT_TRUE(testing::within(8s, [&] {
    for (int i = 0; i < 200; ++i) c.call("get hot\r\n");
    return proxy_->status_json().find("\"top\":[{\"key\":\"hot\"") != std::string::npos;
  }));
  std::string encoded;
  memcache::base64_encode("hot", encoded);
  for (int i = 1; i <= 10; ++i) {
    // Through the other connection, with and without b.
    const std::string v = std::to_string(i * 10);
    const std::string line = i % 2 == 0 ? encoded + " " + std::to_string(v.size()) + " b"
                                        : "hot " + std::to_string(v.size());
    ASSERT_EQ(c.call("get hot\r\n").substr(0, 10), "VALUE hot ");  // a copy is there
    ASSERT_EQ(other.call("ms " + line + "\r\n" + v + "\r\n"), "HD\r\n");
    ASSERT_EQ(c.call("get hot\r\n"), value("hot", v) + "END\r\n") << i;
    ASSERT_EQ(other.call("ma hot D3\r\n"), "HD\r\n");
    ASSERT_EQ(c.call("get hot\r\n"), value("hot", std::to_string(i * 10 + 3)) + "END\r\n") << i;
  }
  ASSERT_EQ(other.call("md hot\r\n"), "HD\r\n");
  EXPECT_EQ(c.call("get hot\r\n"), "END\r\n");
}

// A quiet request to a backend that is gone is answered with the error (memcached never
// silences errors) and the client's mn still comes: nothing waits for an MN that cannot come.
TEST_F(MemcacheE2E, QuietMetaRequestsToADeadBackendAnswerTheErrorThenMn) {
  start_proxy(yaml("  timeout: 500\n  server_failure_limit: 1\n  server_retry_timeout: 60000\n"));
  const std::string k1 = key_on(0), k2 = key_on(1), k3 = key_on(2);
  auto c = client();
  ASSERT_EQ(c.call("ms " + k2 + " 2 T0\r\nok\r\n"), "HD\r\n");
  servers_[0]->stop();
  ASSERT_TRUE(c.send("mg " + k2 + " v q O1\r\nmg " + k1 + " v q O2\r\nms " + k1 +
                     " 1 q\r\nx\r\nmg " + k3 + " v q O3\r\nmn\r\n"));
  const std::string got =
      testing::recv_until(c.fd(), [](const std::string& s) { return s.ends_with("MN\r\n"); });
  // k2's hit; k1's two requests fail (the connection, then the down backend); k3's miss is
  // silent; then MN.
  const std::string hit = "VA 2 O1\r\nok\r\n";
  ASSERT_TRUE(got.starts_with(hit)) << got;
  const std::string rest = got.substr(hit.size());
  EXPECT_TRUE(rest.starts_with("SERVER_ERROR backend m1")) << rest;
  EXPECT_EQ(std::count(rest.begin(), rest.end(), '\n'), 3) << rest;  // 2 errors + MN
  EXPECT_TRUE(rest.ends_with("\r\nMN\r\n")) << rest;
  EXPECT_EQ(c.call("mg " + k2 + " v\r\n"), "VA 2\r\nok\r\n");  // the connection goes on
}

// Safe failover with meta writes: while a key's server is out, ms/md/ma to its fallback are
// noted (and an ms there lives failover_ttl at most); when it returns it serves none of the
// old values it still holds.
TEST_F(MemcacheE2E, MetaWritesOnAFallbackAreCappedAndNotReadStaleOnReturn) {
  start_proxy(
      yaml("  timeout: 300\n  auto_eject_hosts: true\n  server_failure_limit: 1\n"
           "  server_retry_timeout: 200\n  failover_ttl: 30000\n"));
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 24; ++i) {
    const std::string k = "fo:" + std::to_string(i);
    if (pool()->router.route(k) == 1) keys.push_back(k);
  }
  auto c = client();
  for (const auto& k : keys) ASSERT_EQ(c.call("ms " + k + " 3\r\nold\r\n"), "HD\r\n") << k;
  ASSERT_EQ(c.call("ms " + keys[23] + " 1 T0\r\n5\r\n"), "HD\r\n");
  ::kill(servers_[1]->pid(), SIGSTOP);
  const bool ejected = testing::within(8s, [&] {
    c.call("mg " + keys[0] + " v\r\n");
    return pool()->states[1]->down.load();
  });
  if (!ejected) ::kill(servers_[1]->pid(), SIGCONT);
  ASSERT_TRUE(ejected);
  for (std::size_t i = 0; i < 16; ++i) {
    std::string b64;
    memcache::base64_encode(keys[i], b64);
    // Text and base64 names, with no T, a long T and a quiet store.
    const std::string name = i % 2 == 0 ? keys[i] + " 3" : b64 + " 3 b";
    const std::string flags = i % 3 == 0 ? "" : i % 3 == 1 ? " T86400" : " q";
    ASSERT_TRUE(c.send("ms " + name + flags + "\r\nnew\r\n"));
    if (flags != " q") {
      ASSERT_EQ(c.read(false, true), "HD\r\n") << keys[i];
    }
  }
  EXPECT_EQ(c.call("mn\r\n"), "MN\r\n");
  EXPECT_EQ(c.call("md " + keys[16] + "\r\n"), "NF\r\n");  // the fallback has none
  EXPECT_EQ(c.call("ma " + keys[17] + "\r\n"), "NF\r\n");
  // On its fallback, each copy expires within failover_ttl (30 s).
  int seen = 0;
  for (const std::size_t s : {std::size_t{0}, std::size_t{2}}) {
    auto direct = servers_[s]->client();
    for (std::size_t i = 0; i < 16; ++i) {
      const std::string r = direct.call("mg " + keys[i] + " t v\r\n");
      if (r == "EN\r\n") continue;
      ++seen;
      ASSERT_TRUE(r.starts_with("VA 3 t")) << r;
      const int ttl = std::stoi(r.substr(6));
      EXPECT_GT(ttl, 0) << keys[i];
      EXPECT_LE(ttl, 30) << keys[i];
    }
  }
  EXPECT_EQ(seen, 16);
  ::kill(servers_[1]->pid(), SIGCONT);
  ASSERT_TRUE(testing::within(8s, [&] { return !pool()->states[1]->down.load(); }));
  int stale = 0;
  for (std::size_t i = 0; i < 18; ++i) {
    const std::string r = c.call("mg " + keys[i] + " v\r\n");
    if (r == "VA 3\r\nold\r\n") ++stale;
  }
  EXPECT_EQ(stale, 0);
  EXPECT_EQ(c.call("mg " + keys[20] + " v\r\n"), "VA 3\r\nold\r\n");  // never written: kept
}

// Warm-up on resize: a meta request for a key the reload moved finds the value the previous
// owner holds (migrated to the new owner first), quiet or not, text or base64 named.
TEST_F(MemcacheE2E, MetaRequestsReadThroughAfterAResize) {
  start_proxy(yaml("", 2));
  auto c = client();
  std::map<std::string, NodeId> before;
  for (int i = 0; i < 120; ++i) {
    const std::string k = "warm:" + std::to_string(i * 7919);
    ASSERT_EQ(c.call("ms " + k + " " + std::to_string(k.size()) + " F" + std::to_string(i) +
                     "\r\n" + k + "\r\n"),
              "HD\r\n");
    before[k] = pool()->router.route(k);
  }
  proxy_.rewrite(yaml("", 3));
  std::string message;
  ASSERT_TRUE(proxy_->reload_from_file(message)) << message;
  ASSERT_TRUE(testing::reload_applied(*proxy_));
  ASSERT_TRUE(pool()->warming());
  int moved = 0;
  std::string quiet, want;
  for (int i = 0; i < 120; ++i) {
    const std::string k = "warm:" + std::to_string(i * 7919);
    const bool has_moved = pool()->router.route(k) != before[k];
    moved += has_moved ? 1 : 0;
    const std::string va = "VA " + std::to_string(k.size()) + " f" + std::to_string(i);
    if (i % 3 == 0) {
      EXPECT_EQ(c.call("mg " + k + " v f\r\n"), va + "\r\n" + k + "\r\n") << k;
    } else if (i % 3 == 1) {
      std::string b64;
      memcache::base64_encode(k, b64);
      EXPECT_EQ(c.call("mg " + b64 + " b v f\r\n"), va + "\r\n" + k + "\r\n") << k;
    } else {
      quiet += "mg " + k + " v f q O" + std::to_string(i) + "\r\nmg missing:" + k + " v q\r\n";
      want += va + " O" + std::to_string(i) + "\r\n" + k + "\r\n";
    }
    if (has_moved && i % 3 != 2) {
      EXPECT_EQ(holder(k), "m" + std::to_string(pool()->router.route(k) + 1)) << k;
    }
  }
  EXPECT_GT(moved, 10);
  ASSERT_TRUE(c.send(quiet + "mn\r\n"));
  EXPECT_EQ(testing::recv_until(c.fd(), [](const std::string& s) { return s.ends_with("MN\r\n"); }),
            want + "MN\r\n");
  // Writes of moved keys act at the new owner with the old value carried over.
  for (int i = 0; i < 120; ++i) {
    const std::string k = "warm:" + std::to_string(i * 7919);
    if (pool()->router.route(k) == before[k]) continue;
    EXPECT_EQ(c.call("ms " + k + " 1 MA\r\n!\r\n"), "HD\r\n") << k;
    EXPECT_EQ(c.call("mg " + k + " v\r\n"),
              "VA " + std::to_string(k.size() + 1) + "\r\n" + k + "!\r\n");
    EXPECT_EQ(holder(k), "m" + std::to_string(pool()->router.route(k) + 1)) << k;
  }
}

}  // namespace
}  // namespace chash::proxy
