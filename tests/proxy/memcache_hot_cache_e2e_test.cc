// SPDX-License-Identifier: Apache-2.0
// hot_cache for memcache pools beyond the text `get` (proto/memcache/session_hot.cc,
// docs/HOTKEYS.md): an mg whose flags a copy can answer (v f s k O q b) and binary
// get/getq/getk/getkq are answered from the worker's copy of a hot key — byte for byte what the
// memcached behind would send — while flags only the server knows go to it, a binary get is
// never answered from a copy without the item's CAS, every meta and binary write invalidates,
// and a key that is not hot is never answered from a copy. Real memcached on a unix socket; the
// proof that an answer came from the copy is that the server is stopped (SIGSTOP) or holds
// another value, written behind the proxy's back.
#include <gtest/gtest.h>
#include <signal.h>

#include "control/proxy.h"
#include "e2e_util.h"
#include "memcache_util.h"
#include "proto/memcache/binary.h"

namespace chash::proxy {
namespace {

namespace fs = std::filesystem;
namespace op = memcache::binary::op;
namespace st = memcache::binary::status;
using testing::BinClient;
using testing::BinResp;
using testing::McClient;
using testing::MemcachedServer;
using testing::packet;
using testing::store;
using namespace std::chrono_literals;

class MemcacheHotCacheE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::have_program("memcached"))
        << "memcached not installed (run scripts/bootstrap.sh)";
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::make_test_dir("mch");
    server_ = std::make_unique<MemcachedServer>(dir_, "m1");
    ASSERT_TRUE(server_->start());
    // One server (it owns every key); a key read twice a second is hot; copies live 30 s, far
    // longer than any test step. A request the copy cannot answer fails within 1 s while the
    // server is stopped.
    proxy_.start(dir_,
                 "m:\n  listen: 127.0.0.1:0\n  timeout: 1000\n"
                 "  hot_keys: {window: 1s, sample: 1, min_rate: 2, log_rate: 0}\n"
                 "  hot_cache: {ttl: 30s}\n  servers:\n    - " +
                     server_->socket() + ":1 m1\n",
                 1);  // one worker: every connection reads the same copies
  }
  void TearDown() override {
    if (stopped_) ::kill(server_->pid(), SIGCONT);
    proxy_.stop();
    server_.reset();
    server2_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  McClient tclient() { return McClient(testing::dial_tcp(proxy_->port(0))); }
  BinClient bclient() { return BinClient(testing::dial_tcp(proxy_->port(0))); }
  McClient direct() { return server_->client(); }
  BinClient direct_binary() { return BinClient(testing::dial_unix(server_->socket())); }
  void stop_server() {
    ASSERT_TRUE(testing::stop_process(server_->pid()));
    stopped_ = true;
  }
  void resume_server() {
    ::kill(server_->pid(), SIGCONT);
    stopped_ = false;
  }
  // Whether the last window found `key` hot (GET /status's "hot_keys").
  bool is_hot(const std::string& key) {
    const std::string s = proxy_->status_json();
    const std::size_t at = s.find("{\"key\":\"" + key + "\"");
    if (at == std::string::npos) return false;
    const std::size_t end = s.find('}', at);
    return s.substr(at, end - at).find("\"hot\":true") != std::string::npos;
  }
  // Sends `reads` (each answered) until every key of `keys` is hot, then once more so that the
  // replies read while hot fill the copies.
  template <typename Read>
  void heat(const std::vector<std::string>& keys, Read read) {
    ASSERT_TRUE(testing::within(10s, [&] {
      for (int i = 0; i < 10; ++i) read();
      for (const std::string& k : keys) {
        if (!is_hot(k)) return false;
      }
      return true;
    }));
    read();
  }

  // The proxy again, with `extra` in its pool and `workers` workers; `two` adds a second
  // memcached to the pool.
  void restart(const std::string& extra, unsigned workers, bool two) {
    proxy_.stop();
    std::string y =
        "m:\n  listen: 127.0.0.1:0\n  timeout: 1000\n"
        "  hot_keys: {window: 1s, sample: 1, min_rate: 2, log_rate: 0}\n"
        "  hot_cache: {ttl: 30s}\n" +
        extra + "  servers:\n    - " + server_->socket() + ":1 m1\n";
    if (two) {
      server2_ = std::make_unique<MemcachedServer>(dir_, "m2");
      ASSERT_TRUE(server2_->start());
      y += "    - " + server2_->socket() + ":1 m2\n";
    }
    proxy_.start(dir_, y, workers);
  }

  fs::path dir_;
  std::unique_ptr<MemcachedServer> server_, server2_;
  testing::ProxyRunner proxy_;
  bool stopped_ = false;
};

// The mg requests a copy answers, for a text key with flags 17, a key stored with ms `b`
// (whose `k` memcached prints in base64, with ` b`), and a miss.
const std::vector<std::string> kServed = {
    "mg hot v\r\n",
    "mg hot v f\r\n",
    "mg hot f\r\n",
    "mg hot\r\n",
    "mg hot s\r\n",
    "mg hot v s f\r\n",
    "mg hot k v\r\n",
    "mg hot f k O123 s v\r\n",
    "mg hot Oabc v q f\r\n",
    "mg hot q\r\n",
    "mg aG90 b v f k\r\n",  // "hot" in base64: a text item's k is printed as text
    "mg aG90 b s O9\r\n",
    "mg aGI= b v f k\r\n",
    "mg aGI= b k s Ox\r\n",
    "mg aGI= b v\r\n",
    "mg hotmiss v\r\n",
    "mg hotmiss v f k O77\r\n",
    "mg aG90bWlzcw== b k v O1\r\n",
    "mg hotmiss\r\n",
};

TEST_F(MemcacheHotCacheE2E, MgIsAnsweredFromTheCopyAsMemcachedWould) {
  McClient c = tclient();
  ASSERT_EQ(c.call("set hot 17 0 5\r\nhello\r\n"), "STORED\r\n");
  ASSERT_EQ(c.call("ms aGI= 3 b F3\r\nxyz\r\n"), "HD\r\n");
  // Heated (and filled) with mg requests that ask `c` and `k`: the server answers them, and
  // their replies give the copies the item's CAS and whether its key is binary.
  heat({"hot", "hb", "hotmiss"}, [&] {
    c.call("mg hot v f k c\r\n");
    c.call("mg aGI= b v f k c\r\n");
    c.call("mg hotmiss v f k\r\n");
  });
  // What memcached itself answers to each, asked directly.
  McClient d = direct();
  std::vector<std::string> want;
  for (const std::string& r : kServed) {
    // A quiet miss answers nothing: mn shows where the reply would be.
    d.send(r + "mn\r\n");
    std::string got = d.read(false, true);
    if (got != "MN\r\n") {
      EXPECT_EQ(d.read(false, true), "MN\r\n") << r;
    }
    want.push_back(got);
  }
  EXPECT_EQ(want[0], "VA 5\r\nhello\r\n");
  EXPECT_EQ(want[10], "VA 5 f17 khot\r\nhello\r\n");
  EXPECT_EQ(want[12], "VA 3 f3 kaGI= b\r\nxyz\r\n");
  EXPECT_EQ(want[16], "EN khotmiss O77\r\n");
  EXPECT_EQ(want[17], "EN kaG90bWlzcw== b O1\r\n");

  // The server stopped: every answer is the copy's, byte for byte memcached's.
  stop_server();
  for (std::size_t i = 0; i < kServed.size(); ++i) {
    c.send(kServed[i] + "mn\r\n");
    std::string got = c.read(false, true);
    if (got != "MN\r\n") {
      EXPECT_EQ(c.read(false, true), "MN\r\n") << kServed[i];
    }
    EXPECT_EQ(got, want[i]) << kServed[i];
  }
  // A quiet miss is left out; a quiet hit is not.
  c.send("mg hotmiss v q\r\nmg hot v q\r\nmn\r\n");
  EXPECT_EQ(c.read(false, true), "VA 5\r\nhello\r\n");
  EXPECT_EQ(c.read(false, true), "MN\r\n");
  // A text get reads the same copy.
  EXPECT_EQ(c.call("get hot\r\n"), "VALUE hot 17 5\r\nhello\r\nEND\r\n");
  // A flag the copy cannot answer goes to the (stopped) server.
  EXPECT_TRUE(c.call("mg hot v c\r\n").starts_with("SERVER_ERROR")) << "c answered by a copy";
  resume_server();

  // Changed behind the proxy's back: the copy still answers what it can; c, t, h, l, u go to
  // the server, and their answers are the new value.
  ASSERT_EQ(d.call("set hot 5 0 5\r\nworld\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("mg hot v f\r\n"), "VA 5 f17\r\nhello\r\n");
  for (const std::string flag : {"c", "t", "h", "l", "u"}) {
    EXPECT_TRUE(c.call("mg hot v " + flag + "\r\n").ends_with("\r\nworld\r\n")) << flag;
  }
}

TEST_F(MemcacheHotCacheE2E, TextGetsCopyAnswersNoMgNorBinaryGet) {
  McClient c = tclient();
  ASSERT_EQ(c.call("set hot 1 0 2\r\nv1\r\n"), "STORED\r\n");
  heat({"hot"}, [&] { c.call("get hot\r\n"); });
  McClient d = direct();
  ASSERT_EQ(d.call("set hot 2 0 2\r\nv2\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("get hot\r\n"), "VALUE hot 1 2\r\nv1\r\nEND\r\n");  // the text copy
  // It shows no CAS, and not whether the item is stale (X) or has a recache token out (Z/W).
  EXPECT_EQ(c.call("mg hot v f\r\n"), "VA 2 f2\r\nv2\r\n");
  BinClient b = bclient();
  const BinResp g = b.call(packet(op::kGet, "hot", {}, {}, 5));
  EXPECT_EQ(g.value, "v2");
  EXPECT_EQ(g.flags(), 2u);
}

TEST_F(MemcacheHotCacheE2E, ColdKeyIsNeverAnsweredFromACopy) {
  McClient c = tclient();
  ASSERT_EQ(c.call("set hot 0 0 1\r\na\r\n"), "STORED\r\n");
  ASSERT_EQ(c.call("set cold 0 0 1\r\na\r\n"), "STORED\r\n");
  heat({"hot"}, [&] {
    c.call("mg hot v f\r\n");
    c.call("get hot\r\n");
  });
  McClient d = direct();
  BinClient b = bclient();
  for (int i = 0; i < 5; ++i) {
    const std::string v = "c" + std::to_string(i);
    ASSERT_EQ(d.call("set cold 0 0 2\r\n" + v + "\r\n"), "STORED\r\n");
    EXPECT_EQ(c.call("mg cold v f\r\n"), "VA 2 f0\r\n" + v + "\r\n");
    EXPECT_EQ(b.call(packet(op::kGet, "cold")).value, v);
    c.call("mg hot v f\r\n");  // keeps `hot` hot, so that the cache stays on
  }
  EXPECT_FALSE(is_hot("cold"));
}

TEST_F(MemcacheHotCacheE2E, BinaryGetsAnsweredWithTheServersCas) {
  BinClient b = bclient();
  ASSERT_EQ(b.call(store(op::kSet, "bhot", "value", 42)).status, st::kSuccess);
  heat({"bhot", "bmiss"}, [&] {
    b.call(packet(op::kGet, "bhot"));
    b.call(packet(op::kGet, "bmiss"));
  });
  // memcached's own responses, asked directly in binary.
  BinClient d = direct_binary();
  const std::vector<std::string> reqs = {
      packet(op::kGet, "bhot", {}, {}, 1),  packet(op::kGetK, "bhot", {}, {}, 2),
      packet(op::kGetQ, "bhot", {}, {}, 3), packet(op::kGetKQ, "bhot", {}, {}, 4),
      packet(op::kGet, "bmiss", {}, {}, 5), packet(op::kGetK, "bmiss", {}, {}, 6),
  };
  std::vector<BinResp> want;
  for (const std::string& r : reqs) want.push_back(d.call(r));
  ASSERT_EQ(want[0].status, st::kSuccess);
  ASSERT_NE(want[0].cas, 0u);
  ASSERT_EQ(want[4].status, st::kKeyNotFound);
  const auto same = [](const BinResp& a, const BinResp& w, const std::string& what) {
    EXPECT_EQ(a.opcode, w.opcode) << what;
    EXPECT_EQ(a.status, w.status) << what;
    EXPECT_EQ(a.opaque, w.opaque) << what;
    EXPECT_EQ(a.cas, w.cas) << what;
    EXPECT_EQ(a.extras, w.extras) << what;
    EXPECT_EQ(a.key, w.key) << what;
    EXPECT_EQ(a.value, w.value) << what;
  };
  stop_server();
  for (std::size_t i = 0; i < reqs.size(); ++i) same(b.call(reqs[i]), want[i], std::to_string(i));
  // Quiet misses are left out: only the noop answers.
  b.send(packet(op::kGetQ, "bmiss", {}, {}, 7) + packet(op::kGetKQ, "bmiss", {}, {}, 8) +
         packet(op::kNoop, {}, {}, {}, 9));
  const BinResp noop = b.read();
  EXPECT_EQ(noop.opcode, op::kNoop);
  EXPECT_EQ(noop.opaque, 9u);
  resume_server();
  // The CAS answered is the server's: a store with it succeeds.
  const BinResp s = b.call(store(op::kSet, "bhot", "next", 1, 0, 10, want[0].cas));
  EXPECT_EQ(s.status, st::kSuccess);
  EXPECT_EQ(b.call(packet(op::kGet, "bhot")).value, "next");
}

// A hot key whose copy is filled (read twice: a miss that fills, then a hit), and after `write`
// through the proxy, the next read sees what the server has.
TEST_F(MemcacheHotCacheE2E, EveryMetaAndBinaryWriteInvalidates) {
  McClient c = tclient();
  BinClient b = bclient();
  McClient d = direct();
  ASSERT_EQ(c.call("set w 0 0 1\r\n1\r\n"), "STORED\r\n");
  heat({"w"}, [&] {
    c.call("mg w v f\r\n");
    b.call(packet(op::kGet, "w"));
  });
  // The server's value, read directly (not through the copy).
  const auto server_value = [&] {
    const std::string r = d.call("mg w v\r\n");
    if (r == "EN\r\n") return std::string("<miss>");
    return r.substr(r.find("\r\n") + 2, r.size() - r.find("\r\n") - 4);
  };
  const auto proxy_mg = [&] {
    const std::string r = c.call("mg w v f\r\n");
    if (r == "EN\r\n") return std::string("<miss>");
    return r.substr(r.find("\r\n") + 2, r.size() - r.find("\r\n") - 4);
  };
  const auto proxy_bin = [&] {
    const BinResp r = b.call(packet(op::kGet, "w"));
    return r.status == st::kKeyNotFound ? std::string("<miss>") : r.value;
  };
  const auto reset = [&](const std::string& v) {
    ASSERT_EQ(d.call("set w 0 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n"), "STORED\r\n");
    ASSERT_EQ(c.call("set w 0 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n"), "STORED\r\n");
    proxy_mg(), proxy_mg(), proxy_bin(), proxy_bin();  // filled, then answered from the copy
  };
  struct Write {
    std::string name;
    std::function<void()> run;
  };
  // A meta write (quiet or not) followed by mn, read up to the MN; binary writes likewise
  // followed by a noop.
  const auto text = [&](std::string r) {
    return [&c, r] {
      c.send(r + "mn\r\n");
      for (int i = 0; i < 3 && c.read(false, true) != "MN\r\n"; ++i) {
      }
    };
  };
  const auto bin = [&](std::string p) {
    return [&b, p] {
      b.send(p + packet(op::kNoop, {}));
      for (int i = 0; i < 4 && b.read().opcode != op::kNoop; ++i) {
      }
    };
  };
  const std::string past = testing::be32s(1000000000);  // an absolute time long gone: expired
  const std::vector<Write> writes = {
      {"ms", text("ms w 2 T0\r\nms\r\n")},
      {"ms q", text("ms w 2 q\r\nmq\r\n")},
      {"ms MA", text("ms w 1 MA\r\n+\r\n")},
      {"md", text("md w\r\n")},
      {"md q", text("md w q\r\n")},
      {"md I", text("md w I T30\r\n")},
      {"ma", text("ma w\r\n")},
      {"ma q MD", text("ma w q MD\r\n")},
      {"mg T", text("mg w T-1\r\n")},
      {"set", bin(store(op::kSet, "w", "bs"))},
      {"setq", bin(store(op::kSetQ, "w", "bq"))},
      {"add", bin(packet(op::kDelete, "w") + store(op::kAdd, "w", "ba"))},
      {"addq", bin(packet(op::kDelete, "w") + store(op::kAddQ, "w", "bb"))},
      {"replace", bin(store(op::kReplace, "w", "br"))},
      {"replaceq", bin(store(op::kReplaceQ, "w", "bR"))},
      {"append", bin(packet(op::kAppend, "w", {}, "a"))},
      {"appendq", bin(packet(op::kAppendQ, "w", {}, "A"))},
      {"prepend", bin(packet(op::kPrepend, "w", {}, "p"))},
      {"prependq", bin(packet(op::kPrependQ, "w", {}, "P"))},
      {"delete", bin(packet(op::kDelete, "w"))},
      {"deleteq", bin(packet(op::kDeleteQ, "w"))},
      {"incr", bin(testing::arith(op::kIncrement, "w", 5, 0, 0))},
      {"incrq", bin(testing::arith(op::kIncrementQ, "w", 6, 0, 0))},
      {"decr", bin(testing::arith(op::kDecrement, "w", 1, 0, 0))},
      {"decrq", bin(testing::arith(op::kDecrementQ, "w", 1, 0, 0))},
      {"touch", bin(packet(op::kTouch, "w", past))},
      {"gat", bin(packet(op::kGat, "w", past))},
      {"gatq", bin(packet(op::kGatQ, "w", past))},
      {"text gat", [&c] { c.call("gat -1 w\r\n"); }},
      {"text touch", [&c] { c.call("touch w -1\r\n"); }},
  };
  for (const Write& w : writes) {
    reset("10");
    ASSERT_EQ(proxy_mg(), "10") << w.name;
    w.run();
    const std::string now = server_value();
    EXPECT_EQ(proxy_mg(), now) << w.name << ": mg after the write";
    EXPECT_EQ(proxy_bin(), now) << w.name << ": binary get after the write";
  }
  // mg N creates a missing item (an empty value): the copied miss must go.
  c.call("md w\r\n");
  ASSERT_EQ(proxy_mg(), "<miss>");
  ASSERT_EQ(proxy_mg(), "<miss>");
  ASSERT_TRUE(c.call("mg w N30 s\r\n").starts_with("HD")) << "mg N";
  EXPECT_EQ(proxy_mg(), "");
  EXPECT_EQ(proxy_bin(), "");
}

// Writes through one connection, reads through others on every worker: a read that follows an
// acknowledged meta or binary write never returns the old value (the write generations are the
// pool's, the copies each worker's).
TEST_F(MemcacheHotCacheE2E, NoWorkerAnswersAnOldValueAfterAWrite) {
  restart("", 2, false);
  McClient w = tclient();
  BinClient bw = bclient();
  std::vector<McClient> readers;
  std::vector<BinClient> breaders;
  for (int i = 0; i < 4; ++i) readers.push_back(tclient()), breaders.push_back(bclient());
  ASSERT_EQ(w.call("ms k 2 F7\r\nv0\r\n"), "HD\r\n");
  heat({"k"}, [&] {
    for (McClient& r : readers) r.call("mg k v f\r\n");
    for (BinClient& b : breaders) b.call(packet(op::kGet, "k"));
  });
  for (int i = 1; i <= 30; ++i) {
    const std::string v = "v" + std::to_string(i);
    if (i % 2 == 0) {
      ASSERT_EQ(w.call("ms k " + std::to_string(v.size()) + " F7\r\n" + v + "\r\n"), "HD\r\n");
    } else {
      ASSERT_EQ(bw.call(store(op::kSet, "k", v, 7)).status, st::kSuccess);
    }
    for (McClient& r : readers) {
      EXPECT_EQ(r.call("mg k v f\r\n"), "VA " + std::to_string(v.size()) + " f7\r\n" + v + "\r\n");
      EXPECT_EQ(r.call("get k\r\n"), testing::value("k", v, 7) + "END\r\n");
    }
    for (BinClient& b : breaders) {
      const BinResp g = b.call(packet(op::kGetK, "k"));
      EXPECT_EQ(g.value, v);
      EXPECT_EQ(g.flags(), 7u);
    }
  }
}

// A replicated pool (replicas: 2): mg and binary gets of a hot key are answered from the copy
// too, and a write (to every home) invalidates it.
TEST_F(MemcacheHotCacheE2E, ReplicatedPoolsAnswerFromTheCopyToo) {
  restart(
      "  auto_eject_hosts: true\n  server_failure_limit: 1\n  server_retry_timeout: 200\n"
      "  replicas: 2\n  write_policy: all\n",
      1, true);
  McClient c = tclient();
  BinClient b = bclient();
  ASSERT_EQ(c.call("set r 3 0 2\r\nr0\r\n"), "STORED\r\n");
  heat({"r"}, [&] {
    c.call("mg r v f\r\n");
    b.call(packet(op::kGet, "r"));
  });
  const BinResp before = b.call(packet(op::kGet, "r"));
  ASSERT_EQ(before.value, "r0");
  // Changed on both homes behind the proxy's back: the copy answers.
  for (MemcachedServer* s : {server_.get(), server2_.get()}) {
    ASSERT_EQ(s->client().call("set r 4 0 2\r\nzz\r\n"), "STORED\r\n");
  }
  EXPECT_EQ(c.call("mg r v f\r\n"), "VA 2 f3\r\nr0\r\n");
  const BinResp g = b.call(packet(op::kGet, "r"));
  EXPECT_EQ(g.value, "r0");
  EXPECT_EQ(g.cas, before.cas);
  // A write through the proxy: the next reads are the server's.
  ASSERT_EQ(c.call("ms r 2 F5\r\nr1\r\n"), "HD\r\n");
  EXPECT_EQ(c.call("mg r v f\r\n"), "VA 2 f5\r\nr1\r\n");
  EXPECT_EQ(b.call(packet(op::kGet, "r")).value, "r1");
}

}  // namespace
}  // namespace chash::proxy
