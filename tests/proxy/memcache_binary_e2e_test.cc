// SPDX-License-Identifier: Apache-2.0
// chash-proxy's memcache pools speaking memcached's binary protocol (proto/memcache/
// session_binary.cc): real memcached processes on unix sockets, the proxy in-process on a free
// 127.0.0.1 port, a small binary client below, and libmemcached's memccp/memccat --binary
// (libmemcached-tools, scripts/bootstrap.sh). memcached must be installed: these tests fail
// without it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"
#include "proto/memcache/binary.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
namespace bin = memcache::binary;
namespace op = memcache::binary::op;
namespace st = memcache::binary::status;
using testing::arith;
using testing::be32s;
using testing::run;
using testing::BinClient;
using testing::BinResp;
using testing::McClient;
using testing::MemcachedServer;
using testing::packet;
using testing::set;
using testing::store;
using testing::value;

class MemcacheBinaryE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::have_program("memcached"))
        << "memcached not installed (run scripts/bootstrap.sh)";
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("chash-proxy-mcbin");
    for (int i = 1; i <= 3; ++i) {
      servers_.push_back(std::make_unique<MemcachedServer>(dir_, "m" + std::to_string(i)));
      ASSERT_TRUE(servers_.back()->start()) << "memcached m" << i << " did not start";
    }
    proxy_.start(dir_, yaml(""), 2);
  }
  std::string yaml(const std::string& extra) {
    std::string y =
        "alpha:\n  listen: 127.0.0.1:0\n  max_value_bytes: 100000\n" + extra + "  servers:\n";
    for (int i = 1; i <= 3; ++i) {
      y += "    - " + servers_[static_cast<std::size_t>(i - 1)]->socket() + ":1 m" +
           std::to_string(i) + "\n";
    }
    return y;
  }
  void restart_proxy(const std::string& extra) {
    proxy_.stop();
    proxy_.start(dir_, yaml(extra), 2);
  }
  void TearDown() override {
    proxy_.stop();
    servers_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  BinClient bclient() { return BinClient(testing::dial_tcp(proxy_->port(0))); }
  McClient tclient() { return McClient(testing::dial_tcp(proxy_->port(0))); }
  std::shared_ptr<const Pool> pool() { return proxy_->topology()->pools[0]; }
  // A key (prefix0..prefix999) the router sends to `node`.
  std::string key_on(NodeId node, const std::string& prefix = "k") {
    return testing::key_on_node(*pool(), node, prefix);
  }

  fs::path dir_;
  std::vector<std::unique_ptr<MemcachedServer>> servers_;
  testing::ProxyRunner proxy_;
};

TEST_F(MemcacheBinaryE2E, GetFamilyReturnsValueFlagsCasAndKey) {
  auto c = bclient();
  const BinResp s = c.call(store(op::kSet, "g1", std::string("v\0\r\nx", 5), 42, 0, 11));
  ASSERT_EQ(s.status, st::kSuccess);
  EXPECT_EQ(s.opaque, 11u);
  EXPECT_NE(s.cas, 0u);
  const BinResp g = c.call(packet(op::kGet, "g1", {}, {}, 12));
  EXPECT_EQ(g.opcode, op::kGet);
  EXPECT_EQ(g.status, st::kSuccess);
  EXPECT_EQ(g.opaque, 12u);
  EXPECT_EQ(g.value, std::string("v\0\r\nx", 5));
  EXPECT_EQ(g.flags(), 42u);
  EXPECT_EQ(g.key, "");
  EXPECT_EQ(g.cas, s.cas);
  const BinResp k = c.call(packet(op::kGetK, "g1", {}, {}, 13));
  EXPECT_EQ(k.key, "g1");
  EXPECT_EQ(k.value, std::string("v\0\r\nx", 5));
  const BinResp miss = c.call(packet(op::kGet, "nope", {}, {}, 14));
  EXPECT_EQ(miss.status, st::kKeyNotFound);
  EXPECT_EQ(miss.value, "Not found");
  EXPECT_EQ(miss.opaque, 14u);
  const BinResp kmiss = c.call(packet(op::kGetK, "nope", {}, {}, 15));
  EXPECT_EQ(kmiss.status, st::kKeyNotFound);
  EXPECT_EQ(kmiss.key, "nope");
}

TEST_F(MemcacheBinaryE2E, StorageCommandsAnswerAsMemcached) {
  auto c = bclient();
  EXPECT_EQ(c.call(store(op::kAdd, "s1", "a")).status, st::kSuccess);
  EXPECT_EQ(c.call(store(op::kAdd, "s1", "b")).status, st::kKeyExists);
  EXPECT_EQ(c.call(store(op::kReplace, "s1", "c", 7)).status, st::kSuccess);
  EXPECT_EQ(c.call(store(op::kReplace, "nothere", "c")).status, st::kKeyNotFound);
  EXPECT_EQ(c.call(packet(op::kAppend, "s1", {}, ">")).status, st::kSuccess);
  EXPECT_EQ(c.call(packet(op::kPrepend, "s1", {}, "<")).status, st::kSuccess);
  EXPECT_EQ(c.call(packet(op::kAppend, "nothere", {}, "x")).status, st::kNotStored);
  const BinResp g = c.call(packet(op::kGet, "s1"));
  EXPECT_EQ(g.value, "<c>");
  EXPECT_EQ(g.flags(), 7u);  // append/prepend keep the flags
  // CAS: the current one stores, a stale one is refused.
  const BinResp ok = c.call(store(op::kSet, "s1", "d", 0, 0, 0, g.cas));
  EXPECT_EQ(ok.status, st::kSuccess);
  EXPECT_EQ(c.call(store(op::kSet, "s1", "e", 0, 0, 0, g.cas)).status, st::kKeyExists);
  EXPECT_EQ(c.call(store(op::kSet, "nothere", "e", 0, 0, 0, 1234)).status, st::kKeyNotFound);
  // Delete, with a stale CAS then none.
  EXPECT_EQ(c.call(packet(op::kDelete, "s1", {}, {}, 0, g.cas)).status, st::kKeyExists);
  EXPECT_EQ(c.call(packet(op::kDelete, "s1")).status, st::kSuccess);
  EXPECT_EQ(c.call(packet(op::kDelete, "s1")).status, st::kKeyNotFound);
  EXPECT_EQ(c.call(packet(op::kGet, "s1")).status, st::kKeyNotFound);
}

TEST_F(MemcacheBinaryE2E, IncrDecrTouchGatVersionNoop) {
  auto c = bclient();
  // A missing counter with exptime 0xffffffff is not created.
  EXPECT_EQ(c.call(arith(op::kIncrement, "n", 1, 5, 0xffffffff)).status, st::kKeyNotFound);
  BinResp r = c.call(arith(op::kIncrement, "n", 1, 5, 0));
  EXPECT_EQ(r.status, st::kSuccess);
  EXPECT_EQ(r.number(), 5u);  // created with the initial value
  r = c.call(arith(op::kIncrement, "n", 10, 5, 0));
  EXPECT_EQ(r.number(), 15u);
  EXPECT_NE(r.cas, 0u);
  r = c.call(arith(op::kDecrement, "n", 20, 0, 0));
  EXPECT_EQ(r.number(), 0u);  // decr stops at 0, as memcached
  ASSERT_EQ(c.call(store(op::kSet, "word", "abc")).status, st::kSuccess);
  EXPECT_EQ(c.call(arith(op::kIncrement, "word", 1, 0, 0)).status, st::kNonNumeric);
  // touch and gat: flags back, a new TTL (1 s: gone after 2.1 s).
  ASSERT_EQ(c.call(store(op::kSet, "t", "tv", 3)).status, st::kSuccess);
  r = c.call(packet(op::kTouch, "t", be32s(100)));
  EXPECT_EQ(r.status, st::kSuccess);
  EXPECT_EQ(r.flags(), 3u);
  EXPECT_EQ(r.value, "");
  EXPECT_EQ(c.call(packet(op::kTouch, "none", be32s(100))).status, st::kKeyNotFound);
  r = c.call(packet(op::kGat, "t", be32s(1)));
  EXPECT_EQ(r.status, st::kSuccess);
  EXPECT_EQ(r.value, "tv");
  EXPECT_EQ(r.flags(), 3u);
  r = c.call(packet(op::kGatK, "t", be32s(1)));
  EXPECT_EQ(r.key, "t");
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_EQ(c.call(packet(op::kGet, "t")).status, st::kKeyNotFound);
  r = c.call(packet(op::kVersion, "", {}, {}, 77));
  EXPECT_EQ(r.status, st::kSuccess);
  EXPECT_EQ(r.opaque, 77u);
  EXPECT_EQ(r.value, "1.6.18-chash-proxy");
  r = c.call(packet(op::kNoop, "", {}, {}, 78));
  EXPECT_EQ(r.opcode, op::kNoop);
  EXPECT_EQ(r.status, st::kSuccess);
  EXPECT_EQ(r.opaque, 78u);
}

// A pipeline of quiet commands over keys on all three backends: only the hits (getkq) and the
// errors come back, in request order with their opaques, then the noop.
TEST_F(MemcacheBinaryE2E, QuietCommandsKeepOpaqueOrderAcrossBackends) {
  auto c = bclient();
  std::vector<std::string> keys;
  std::set<NodeId> nodes;
  for (int i = 0; i < 30; ++i) {
    keys.push_back("quiet:user:" + std::to_string(i * 7919));
    nodes.insert(pool()->router.route(keys.back()));
  }
  ASSERT_EQ(nodes.size(), 3u);
  std::string batch;
  std::uint32_t opaque = 100;
  for (std::size_t i = 0; i < keys.size(); i += 2) {  // every other key stored, quietly
    batch += store(op::kSetQ, keys[i], "v" + keys[i], static_cast<std::uint32_t>(i), 0, opaque++);
  }
  batch += store(op::kAddQ, keys[0], "dup", 0, 0, 555);  // an error: always answered
  for (std::size_t i = 0; i < keys.size(); ++i) {
    batch += packet(op::kGetKQ, keys[i], {}, {}, static_cast<std::uint32_t>(1000 + i));
  }
  batch += packet(op::kDeleteQ, "never-stored", {}, {}, 556);  // Not found: answered
  batch += arith(op::kIncrementQ, "qc", 1, 9, 0, 557);         // success: silent
  batch += packet(op::kNoop, "", {}, {}, 9999);
  ASSERT_TRUE(c.send(batch));
  BinResp r = c.read();
  EXPECT_EQ(r.opaque, 555u);
  EXPECT_EQ(r.status, st::kKeyExists);
  for (std::size_t i = 0; i < keys.size(); i += 2) {
    r = c.read();
    EXPECT_EQ(r.opcode, op::kGetKQ);
    EXPECT_EQ(r.status, st::kSuccess);
    EXPECT_EQ(r.opaque, 1000 + i);
    EXPECT_EQ(r.key, keys[i]);
    EXPECT_EQ(r.value, "v" + keys[i]);
    EXPECT_EQ(r.flags(), i);
  }
  r = c.read();
  EXPECT_EQ(r.opaque, 556u);
  EXPECT_EQ(r.status, st::kKeyNotFound);
  r = c.read();
  EXPECT_EQ(r.opcode, op::kNoop);
  EXPECT_EQ(r.opaque, 9999u);
  const BinResp n = c.call(packet(op::kGet, "qc"));
  EXPECT_EQ(n.value, "9");
  // getq's miss is silent, its hit answered.
  ASSERT_TRUE(c.send(packet(op::kGetQ, "none", {}, {}, 1) + packet(op::kGetQ, keys[0], {}, {}, 2) +
                     packet(op::kNoop, "", {}, {}, 3)));
  r = c.read();
  EXPECT_EQ(r.opaque, 2u);
  EXPECT_EQ(r.value, "v" + keys[0]);
  EXPECT_EQ(c.read().opaque, 3u);
}

// One pool, one placement, one set of items for text and binary clients: flags and CAS too.
TEST_F(MemcacheBinaryE2E, TextAndBinaryClientsShareKeys) {
  auto b = bclient();
  auto t = tclient();
  for (NodeId node = 0; node < 3; ++node) {
    const std::string k = key_on(node, "shared");
    const BinResp s = b.call(store(op::kSet, k, "from-binary", 17));
    ASSERT_EQ(s.status, st::kSuccess);
    // The text client sees the value, the flags and the CAS the binary client was given.
    EXPECT_EQ(t.call("gets " + k + "\r\n"),
              "VALUE " + k + " 17 11 " + std::to_string(s.cas) + "\r\nfrom-binary\r\nEND\r\n");
    // On the server the router names, as a text set would be.
    auto direct = servers_[node]->client();
    EXPECT_EQ(direct.call("get " + k + "\r\n"), value(k, "from-binary", 17) + "END\r\n");
    ASSERT_EQ(t.call("set " + k + " 5 0 9\r\nfrom-text\r\n"), "STORED\r\n");
    const BinResp g = b.call(packet(op::kGet, k));
    EXPECT_EQ(g.value, "from-text");
    EXPECT_EQ(g.flags(), 5u);
  }
  // A key the text protocol cannot carry goes as base64 (meta `b`): stored under its raw
  // bytes, on the server the raw key routes to.
  const std::string raw("a key\r\n\x01", 8);
  ASSERT_EQ(b.call(store(op::kSet, raw, "rawv", 1)).status, st::kSuccess);
  std::string encoded;
  memcache::base64_encode(raw, encoded);
  EXPECT_EQ(t.call("mg " + encoded + " b v f\r\n"), "VA 4 f1\r\nrawv\r\n");
  auto owner = servers_[pool()->router.route(raw)]->client();
  EXPECT_EQ(owner.call("mg " + encoded + " b v\r\n"), "VA 4\r\nrawv\r\n");
  EXPECT_EQ(b.call(packet(op::kGetK, raw)).key, raw);
  // Keys no meta command can carry are Invalid arguments, the connection kept.
  EXPECT_EQ(b.call(packet(op::kGet, std::string(251, 'k'))).status, st::kInvalidArguments);
  EXPECT_EQ(b.call(packet(op::kGet, std::string(200, ' '))).status, st::kInvalidArguments);
  EXPECT_EQ(b.call(packet(op::kGet, "")).status, st::kInvalidArguments);
  EXPECT_EQ(b.call(packet(op::kGet, std::string(250, 'k'))).status, st::kKeyNotFound);
}

TEST_F(MemcacheBinaryE2E, SaslUnknownAndServerWideOpcodesAreRefusedClearly) {
  auto c = bclient();
  for (const std::uint8_t o : {op::kSaslListMechs, op::kSaslAuth, op::kSaslStep}) {
    const BinResp r = c.call(packet(o, o == op::kSaslListMechs ? "" : "PLAIN", {}, {}, o));
    EXPECT_EQ(r.status, st::kUnknownCommand) << int(o);
    EXPECT_EQ(r.opaque, o);
    EXPECT_NE(r.value.find("no SASL"), std::string::npos) << r.value;
  }
  BinResp r = c.call(packet(0x42, "", {}, {}, 5));
  EXPECT_EQ(r.status, st::kUnknownCommand);
  EXPECT_EQ(r.opaque, 5u);
  for (const std::uint8_t o : {op::kFlush, op::kFlushQ, op::kStat, op::kVerbosity}) {
    r = c.call(packet(o, "", o == op::kFlush || o == op::kFlushQ ? be32s(0) : std::string()));
    EXPECT_EQ(r.status, st::kNotSupported) << int(o);
    EXPECT_NE(r.value.find("every server"), std::string::npos) << r.value;
  }
  // A request of the wrong shape (get with extras) is Invalid arguments.
  EXPECT_EQ(c.call(packet(op::kGet, "k", "xxxx")).status, st::kInvalidArguments);
  EXPECT_EQ(c.call(packet(op::kNoop, "")).status, st::kSuccess);  // still served
}

TEST_F(MemcacheBinaryE2E, OversizeBodyIsRefusedAndClosedBadMagicClosed) {
  {
    auto c = bclient();
    std::string p = store(op::kSet, "big", std::string(200000, 'b'), 0, 0, 31);
    p.resize(bin::kHeaderSize + 8);  // the header alone is enough to refuse it
    ASSERT_TRUE(c.send(p));
    const BinResp r = c.read();
    EXPECT_EQ(r.status, st::kTooLarge);
    EXPECT_EQ(r.opaque, 31u);
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    // Over max_value_bytes (100000) but within the framing slack: Too large, connection kept.
    auto c = bclient();
    EXPECT_EQ(c.call(store(op::kSet, "big", std::string(100100, 'b'))).status, st::kTooLarge);
    // As memcached: a set it cannot store unlinks the old value (no stale read after it);
    // add/append leave it.
    ASSERT_EQ(c.call(store(op::kSet, "old", "v")).status, st::kSuccess);
    EXPECT_EQ(c.call(store(op::kAdd, "old", std::string(100100, 'b'))).status, st::kTooLarge);
    EXPECT_EQ(c.call(packet(op::kAppend, "old", {}, std::string(100100, 'b'))).status,
              st::kTooLarge);
    EXPECT_EQ(c.call(packet(op::kGet, "old")).value, "v");
    EXPECT_EQ(c.call(store(op::kSetQ, "old", std::string(100100, 'b'), 0, 0, 8)).opaque, 8u);
    EXPECT_EQ(c.call(packet(op::kGet, "old")).status, st::kKeyNotFound);
    EXPECT_EQ(c.call(store(op::kSet, "fits", std::string(100000, 'f'))).status, st::kSuccess);
    EXPECT_EQ(c.call(packet(op::kGet, "fits")).value, std::string(100000, 'f'));
  }
  {
    auto c = bclient();
    EXPECT_EQ(c.call(packet(op::kNoop, "")).status, st::kSuccess);
    ASSERT_TRUE(c.send("get k\r\n"));  // no 0x80: memcached closes, so do we
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    auto c = bclient();
    EXPECT_EQ(c.call(packet(op::kQuit, "", {}, {}, 4)).opaque, 4u);
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    auto c = bclient();
    ASSERT_TRUE(c.send(packet(op::kQuitQ, "")));
    EXPECT_TRUE(c.closed_by_peer());
  }
  auto t = tclient();  // text clients are unaffected
  EXPECT_EQ(t.call("get fits\r\n").size(), value("fits", std::string(100000, 'f')).size() + 5);
}

// libmemcached's own tools in binary mode (libmemcached-tools): memccp stores files, memccat
// reads them, through the proxy; a text client reads the same items.
TEST_F(MemcacheBinaryE2E, LibmemcachedToolsInBinaryMode) {
  ASSERT_TRUE(testing::have_program("memccp") && testing::have_program("memccat"))
      << "libmemcached-tools not installed (run scripts/bootstrap.sh)";
  const std::string servers = "--servers=127.0.0.1:" + std::to_string(proxy_->port(0));
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {
    names.push_back("file" + std::to_string(i) + ".txt");
    std::ofstream(dir_ / names.back()) << "contents of " << names.back() << "\n" << i;
  }
  std::string files;
  for (const auto& n : names) files += " " + (dir_ / n).string();
  auto [out, rc] = run("cd " + dir_.string() + " && memccp --binary --flag=9 " + servers + files);
  ASSERT_EQ(rc, 0) << out;
  std::string expected;
  for (const auto& n : names) {
    const std::string want = "contents of " + n + "\n" + n.substr(4, n.find('.') - 4);
    auto [cat, crc] = run("memccat --binary " + servers + " " + n);
    EXPECT_EQ(crc, 0) << cat;
    EXPECT_EQ(cat, want + "\n") << n;  // memccat ends each value with a newline
    auto t = tclient();
    EXPECT_EQ(t.call("get " + n + "\r\n"), value(n, want, 9) + "END\r\n");
  }
  auto [miss, mrc] = run("memccat --binary " + servers + " no-such-file");
  EXPECT_NE(mrc, 0) << miss;
}

// spymemcached 2.12 with BinaryConnectionFactory (tests/clients/java/SpyBinary.java, Java's
// single-file launcher; Debian's libspymemcached-java and openjdk-17-jdk-headless from
// scripts/bootstrap.sh): every step an application takes, getBulk's getkq+noop pipeline over
// three backends included; a text client then reads what it stored.
TEST_F(MemcacheBinaryE2E, SpymemcachedBinaryConnectionFactory) {
  const std::string jar = "/usr/share/java/spymemcached.jar";
  ASSERT_TRUE(testing::have_program("java") && fs::exists(jar))
      << "java or spymemcached missing (run scripts/bootstrap.sh)";
  const fs::path source =
      fs::path(CHASH_PROXY_DOCS).parent_path().parent_path() / "tests/clients/java/SpyBinary.java";
  auto [out, rc] = run("cd " + dir_.string() + " && timeout 120 java -cp " + jar + " " +
                       source.string() + " " + std::to_string(proxy_->port(0)) + " spy:");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok getBulk (133 of 133)"), std::string::npos) << out;
  EXPECT_NE(out.find("DONE"), std::string::npos) << out;
  auto t = tclient();
  const std::string r = t.call("get spy:shared\r\n");
  EXPECT_TRUE(r.starts_with("VALUE spy:shared ") &&
              r.find("\r\nfrom-spymemcached\r\nEND") != std::string::npos)
      << r;
}

// hot_cache: a text get of a hot key is answered from the worker's copy; a binary write of the
// key (set, incr, append, delete, touch) must make that copy stale as the text writes do.
TEST_F(MemcacheBinaryE2E, BinaryWritesInvalidateHotKeyCopies) {
  restart_proxy(
      "  hot_keys: {window: 300ms, sample: 1, min_rate: 10, log_rate: 100}\n"
      "  hot_cache: {ttl: 10s}\n");
  auto t = tclient();
  auto b = bclient();
  ASSERT_EQ(t.call(set("hot", "0")), "STORED\r\n");
  ASSERT_TRUE(testing::within(std::chrono::seconds(8), [&] {
    for (int i = 0; i < 200; ++i) t.call("get hot\r\n");
    return proxy_->status_json().find("\"top\":[{\"key\":\"hot\"") != std::string::npos;
  }));
  for (int i = 1; i <= 5; ++i) {
    const std::string v = std::to_string(i * 10);
    ASSERT_EQ(t.call("get hot\r\n").substr(0, 10), "VALUE hot ");  // a copy is there
    ASSERT_EQ(b.call(store(op::kSet, "hot", v)).status, st::kSuccess);
    ASSERT_EQ(t.call("get hot\r\n"), value("hot", v) + "END\r\n") << i;
    ASSERT_EQ(b.call(arith(op::kIncrement, "hot", 3, 0, 0)).number(),
              static_cast<std::uint64_t>(i * 10 + 3));
    ASSERT_EQ(t.call("get hot\r\n"), value("hot", std::to_string(i * 10 + 3)) + "END\r\n") << i;
    ASSERT_EQ(b.call(packet(op::kAppend, "hot", {}, "x")).status, st::kSuccess);
    ASSERT_EQ(t.call("get hot\r\n"), value("hot", std::to_string(i * 10 + 3) + "x") + "END\r\n");
  }
  ASSERT_EQ(b.call(packet(op::kDelete, "hot")).status, st::kSuccess);
  EXPECT_EQ(t.call("get hot\r\n"), "END\r\n");
}

// A quiet request to a backend that is gone is answered with the error (quiet never silences
// an error) and the noop still comes: nothing waits for a reply that cannot come.
TEST_F(MemcacheBinaryE2E, QuietRequestsToADeadBackendAnswerTheErrorThenNoop) {
  restart_proxy("  timeout: 500\n  server_failure_limit: 1\n  server_retry_timeout: 60000\n");
  const std::string k1 = key_on(0), k2 = key_on(1), k3 = key_on(2);
  auto c = bclient();
  ASSERT_EQ(c.call(store(op::kSet, k2, "ok")).status, st::kSuccess);
  servers_[0]->stop();
  ASSERT_TRUE(c.send(packet(op::kGetKQ, k2, {}, {}, 1) + packet(op::kGetKQ, k1, {}, {}, 2) +
                     store(op::kSetQ, k1, "x", 0, 0, 3) + packet(op::kGetKQ, k3, {}, {}, 4) +
                     packet(op::kNoop, "", {}, {}, 5)));
  BinResp r = c.read();
  EXPECT_EQ(r.opaque, 1u);
  EXPECT_EQ(r.value, "ok");
  r = c.read();  // k1's get: the connection failed
  EXPECT_EQ(r.opaque, 2u);
  EXPECT_EQ(r.status, st::kInternalError);
  EXPECT_NE(r.value.find("backend m1"), std::string::npos) << r.value;
  r = c.read();  // k1's set: the backend is down now
  EXPECT_EQ(r.opaque, 3u);
  EXPECT_EQ(r.status, st::kInternalError);
  r = c.read();  // k3's miss is silent: the noop
  EXPECT_EQ(r.opcode, op::kNoop);
  EXPECT_EQ(r.opaque, 5u);
}

}  // namespace
}  // namespace chash::proxy
