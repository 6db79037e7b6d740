// SPDX-License-Identifier: Apache-2.0
// TLS end to end (net/tls.h): certificates made with the openssl command at test time; real
// redis-servers (TLS-only, with an aclfile) and memcached (-Z) on 127.0.0.1; redis-cli --tls
// and a small blocking OpenSSL client as the clients. Asserts: TLS on both sides with the
// proxy's ACL enforced; memcached set/get over TLS; backends with an expired certificate, a
// certificate for another name, or one from another CA refused with an error naming the
// backend; require_client_cert; hostile handshakes (garbage, silence, truncated ClientHello,
// huge records) closed while other clients keep working; a reload with a new certificate; a
// tcp pool passing TLS through untouched, terminating it, originating it, failing over from a
// refused backend certificate and spending no backend on hostile handshakes; a server's own
// server_tls over its pool's; config errors naming the file.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "certs_util.h"
#include "e2e_util.h"
#include "redis_util.h"

namespace chash::proxy {
namespace {

using namespace testing;

// ---- A blocking TLS client ----------------------------------------------------------------------

class TlsClient {
 public:
  // Connects to 127.0.0.1:port and shakes hands, verifying the server against `ca` (empty: no
  // verification); cert/key: a client certificate.
  TlsClient(std::uint16_t port, const std::string& ca, const std::string& cert = "",
            const std::string& key = "") {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ca.empty()) {
      SSL_CTX_load_verify_locations(ctx_, ca.c_str(), nullptr);
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    }
    if (!cert.empty()) {
      SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str());
      SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM);
    }
    fd_ = dial_tcp(port);
    if (fd_ < 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    handshake_ok_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool handshake_ok() const { return handshake_ok_; }
  // The server certificate's subject CN.
  std::string peer_cn() const {
    X509* c = SSL_get1_peer_certificate(ssl_);
    if (c == nullptr) return "";
    char buf[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(c), NID_commonName, buf, sizeof buf);
    X509_free(c);
    return buf;
  }
  // Writes `req` and reads until `end` is seen at the end of what arrived ("" on EOF/error).
  std::string call(const std::string& req, const std::string& end = "\r\n") {
    if (!handshake_ok_ || SSL_write(ssl_, req.data(), static_cast<int>(req.size())) <= 0) {
      ERR_clear_error();
      return "";
    }
    std::string in;
    while (in.size() < end.size() || in.compare(in.size() - end.size(), end.size(), end) != 0) {
      char buf[4096];
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) {
        ERR_clear_error();
        return "";
      }
      in.append(buf, static_cast<std::size_t>(n));
    }
    return in;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool handshake_ok_ = false;
};

// ---- Servers ------------------------------------------------------------------------------------

bool tcp_accepts(std::uint16_t port) {
  const int fd = dial_tcp(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// A TLS-only redis-server (no plaintext port unless `plain`) with an aclfile: the proxy logs in
// as `proxy`.
class TlsRedis {
 public:
  TlsRedis(const fs::path& dir, const Certs& c, const std::string& name, const std::string& cert,
           std::uint16_t port = 0, bool plain = false)
      : port_(port != 0 ? port : free_port()), plain_port_(plain ? free_port() : 0) {
    std::ofstream(dir / (name + ".acl")) << "user default off\nuser proxy on >ppw ~* +@all\n";
    ok_ = process_.start({"redis-server",
                          "--port",
                          std::to_string(plain_port_),
                          "--tls-port",
                          std::to_string(port_),
                          "--bind",
                          "127.0.0.1",
                          "--tls-cert-file",
                          c.path(cert + ".crt"),
                          "--tls-key-file",
                          c.path(cert + ".key"),
                          "--tls-ca-cert-file",
                          c.path("ca.crt"),
                          "--tls-auth-clients",
                          "no",
                          "--save",
                          "",
                          "--appendonly",
                          "no",
                          "--dir",
                          dir.string(),
                          "--aclfile",
                          (dir / (name + ".acl")).string(),
                          "--logfile",
                          (dir / (name + ".log")).string()},
                         [this] { return tcp_accepts(port_); });
  }
  bool ok() const { return ok_; }
  std::uint16_t port() const { return port_; }
  std::uint16_t plain_port() const { return plain_port_; }

 private:
  std::uint16_t port_, plain_port_;
  bool ok_ = false;
  ChildProcess process_;
};

class TlsE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("chash-tls-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    certs_ = new Certs(*dir_);
    ASSERT_TRUE(certs_->ca("ca"));
    ASSERT_TRUE(certs_->ca("otherca"));
    ASSERT_TRUE(certs_->leaf("server", "ca", "IP:127.0.0.1,DNS:localhost"));
    ASSERT_TRUE(certs_->leaf("server2", "ca", "IP:127.0.0.1,DNS:localhost"));
    ASSERT_TRUE(certs_->leaf("client", "ca", ""));
    ASSERT_TRUE(certs_->leaf("expired", "ca", "IP:127.0.0.1,DNS:localhost", -1));
    ASSERT_TRUE(certs_->leaf("foreign", "otherca", "IP:127.0.0.1,DNS:localhost"));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete certs_;
    delete dir_;
  }
  void SetUp() override { dir = make_test_dir("chash-tls"); }
  void TearDown() override {
    proxy.stop();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string cert(const std::string& n) const { return certs_->path(n + ".crt"); }
  std::string key(const std::string& n) const { return certs_->path(n + ".key"); }
  // A pool's `tls:` map with the server certificate `name`.
  std::string tls_map(const std::string& name, const std::string& extra = "") const {
    return "  tls: {cert: " + cert(name) + ", key: " + key(name) + extra + "}\n";
  }

  static inline fs::path* dir_ = nullptr;
  static inline Certs* certs_ = nullptr;
  fs::path dir;
  ProxyRunner proxy;
};

std::string redis_cli(std::uint16_t port, const std::string& ca, const std::string& args) {
  return run("redis-cli --tls --cacert " + ca + " -h 127.0.0.1 -p " + std::to_string(port) +
             " --user alice --pass secret --no-auth-warning " + args)
      .first;
}

// TLS from redis-cli to the proxy and from the proxy to TLS-only redis-servers, as an ACL user
// the proxy checks.
TEST_F(TlsE2E, RedisBothSidesWithAcl) {
  TlsRedis r1(dir, *certs_, "r1", "server"), r2(dir, *certs_, "r2", "server");
  ASSERT_TRUE(r1.ok() && r2.ok());
  const auto port = free_port();
  proxy.start(dir, "alpha:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  redis: true\n  timeout: 2000\n"
                       "  acl:\n    - \"user alice on >secret ~app:* +@read +@write -del\"\n"
                       "  server_user: proxy\n  server_auth: ppw\n" +
                       tls_map("server") + "  server_tls: {ca: " + cert("ca") +
                       "}\n  servers:\n    - 127.0.0.1:" + std::to_string(r1.port()) +
                       ":1 r1\n    - 127.0.0.1:" + std::to_string(r2.port()) + ":1 r2\n");
  const std::string ca = cert("ca");
  for (int i = 0; i < 8; ++i) {  // keys on both backends
    const std::string k = "app:" + std::to_string(i);
    EXPECT_EQ(redis_cli(port, ca, "SET " + k + " v" + std::to_string(i)), "OK\n");
    EXPECT_EQ(redis_cli(port, ca, "GET " + k), "v" + std::to_string(i) + "\n");
  }
  EXPECT_NE(redis_cli(port, ca, "GET other").find("NOPERM"), std::string::npos);
  EXPECT_NE(redis_cli(port, ca, "DEL app:0").find("NOPERM"), std::string::npos);
  EXPECT_EQ(redis_cli(port, ca, "EXISTS app:0"), "1\n");
  // Plaintext to a TLS listener: no reply, closed.
  RespClient plain(RespClient::dial_tcp(port));
  plain.send({"PING"});
  EXPECT_EQ(plain.read_reply(), "");
  // The client side verifies the proxy: a client trusting another CA fails.
  EXPECT_FALSE(TlsClient(port, cert("otherca")).handshake_ok());
}

// memcached -Z behind a TLS memcache pool, with a TLS client doing set/get.
TEST_F(TlsE2E, MemcacheBothSides) {
  const auto mport = free_port();
  ChildProcess mc;
  std::vector<std::string> argv = {
      "memcached",
      "-l",
      "127.0.0.1",
      "-p",
      std::to_string(mport),
      "-U",
      "0",
      "-Z",
      "-o",
      "ssl_chain_cert=" + cert("server") + ",ssl_key=" + key("server")};
  if (::getuid() == 0) argv.insert(argv.end(), {"-u", "root"});  // memcached refuses root otherwise
  ASSERT_TRUE(mc.start(argv, [&] { return tcp_accepts(mport); }));
  const auto port = free_port();
  proxy.start(dir, "m:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  protocol: memcache\n  timeout: 2000\n" + tls_map("server") +
                       "  server_tls: {ca: " + cert("ca") + ", sni: localhost}\n  servers:\n" +
                       "    - 127.0.0.1:" + std::to_string(mport) + ":1 m1\n");
  TlsClient c(port, cert("ca"));
  ASSERT_TRUE(c.handshake_ok());
  EXPECT_EQ(c.peer_cn(), "server");
  EXPECT_EQ(c.call("set k 5 0 3\r\nabc\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("get k\r\n", "END\r\n"), "VALUE k 5 3\r\nabc\r\nEND\r\n");
  const std::string big(100000, 'x');  // many TLS records each way
  EXPECT_EQ(c.call("set big 0 0 100000\r\n" + big + "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.call("get big\r\n", "END\r\n"), "VALUE big 0 100000\r\n" + big + "\r\nEND\r\n");
}

// Backends whose certificate must be refused, each with an error naming the backend.
TEST_F(TlsE2E, BackendVerificationFailuresNameTheBackend) {
  TlsRedis good(dir, *certs_, "good", "server"), expired(dir, *certs_, "exp", "expired");
  ASSERT_TRUE(good.ok() && expired.ok());
  struct Case {
    std::string server_tls;
    std::uint16_t backend;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"{ca: " + cert("ca") + "}", expired.port(), "certificate has expired"},
      {"{ca: " + cert("otherca") + "}", good.port(),
       "self-signed certificate in certificate chain"},
      {"{ca: " + cert("ca") + ", sni: wrong.example}", good.port(), "hostname mismatch"},
  };
  for (const auto& c : cases) {
    const auto port = free_port();
    const std::string addr = "127.0.0.1:" + std::to_string(c.backend);
    proxy.start(dir, "p:\n  listen: 127.0.0.1:" + std::to_string(port) +
                         "\n  redis: true\n  timeout: 2000\n  server_user: proxy\n"
                         "  server_auth: ppw\n  server_tls: " +
                         c.server_tls + "\n  servers:\n    - " + addr + ":1 r1\n");
    RespClient cl(RespClient::dial_tcp(port));
    EXPECT_EQ(cl.call({"GET", "k"}),
              "-ERR backend r1: TLS certificate verify failed: " + c.error + " (" + addr + ")\r\n")
        << c.server_tls;
    proxy.stop();
  }
  // verify: false accepts the expired certificate.
  const auto port = free_port();
  proxy.start(dir, "p:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  redis: true\n  timeout: 2000\n  server_user: proxy\n  server_auth: "
                       "ppw\n  server_tls: {verify: false}\n  servers:\n    - 127.0.0.1:" +
                       std::to_string(expired.port()) + ":1 r1\n");
  RespClient cl(RespClient::dial_tcp(port));
  EXPECT_EQ(cl.call({"SET", "k", "v"}), "+OK\r\n");
}

// A TLS-only backend that was down comes back: the health probe (AUTH + PING) speaks TLS too.
TEST_F(TlsE2E, HealthProbesSpeakTls) {
  const auto rport = free_port(), port = free_port();
  proxy.start(dir, "p:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  redis: true\n  timeout: 1000\n  auto_eject_hosts: true\n"
                       "  server_failure_limit: 1\n  server_retry_timeout: 100\n"
                       "  server_user: proxy\n  server_auth: ppw\n  server_tls: {ca: " +
                       cert("ca") + "}\n  servers:\n    - 127.0.0.1:" + std::to_string(rport) +
                       ":1 r1\n");
  RespClient cl(RespClient::dial_tcp(port));
  EXPECT_EQ(cl.call({"SET", "k", "v"}).substr(0, 4), "-ERR");  // not started yet: ejected
  TlsRedis r(dir, *certs_, "r", "server", rport);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(eventually([&] { return cl.call({"SET", "k", "v"}) == "+OK\r\n"; }));
}

TEST_F(TlsE2E, RequireClientCert) {
  const auto port = free_port();
  proxy.start(dir, "p:\n  listen: 127.0.0.1:" + std::to_string(port) + "\n  redis: true\n" +
                       tls_map("server", ", ca: " + cert("ca") + ", require_client_cert: true") +
                       "  servers:\n    - 127.0.0.1:1:1 r1\n");
  TlsClient without(port, cert("ca"));
  EXPECT_EQ(without.call("PING\r\n"), "");  // TLS 1.3: refused after the client's Finished
  TlsClient with(port, cert("ca"), cert("client"), key("client"));
  ASSERT_TRUE(with.handshake_ok());
  EXPECT_EQ(with.call("PING\r\n"), "+PONG\r\n");
}

// Garbage, silence, a truncated ClientHello and a huge record: each closed (silence by the
// handshake timeout), while a TLS client connected before keeps working.
TEST_F(TlsE2E, HostileHandshakesAreClosed) {
  const auto port = free_port();
  proxy.start(dir, "p:\n  listen: 127.0.0.1:" + std::to_string(port) + "\n  redis: true\n" +
                       tls_map("server", ", handshake_timeout: 300") +
                       "  servers:\n    - 127.0.0.1:1:1 r1\n");
  TlsClient good(port, cert("ca"));
  ASSERT_TRUE(good.handshake_ok());
  std::string random(4096, '\0');
  for (std::size_t i = 0; i < random.size(); ++i) random[i] = static_cast<char>(i * 7919 + 13);
  const std::vector<std::string> hostile = {
      "PING\r\n",                                                        // plaintext
      random,                                                            // noise
      std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),   // truncated ClientHello
      std::string("\x16\x03\x01\xff\xff", 5) + std::string(70000, 'A'),  // oversized record
      "",                                                                // silence
  };
  for (const auto& h : hostile) {
    const int fd = dial_tcp(port);
    ASSERT_GE(fd, 0);
    if (!h.empty()) send_all(fd, h);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(closed_by_peer(fd)) << h.size();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    ::close(fd);
    EXPECT_EQ(good.call("PING\r\n"), "+PONG\r\n");
  }
}

// A reload with a new certificate: the open connection keeps going, new ones get the new
// certificate; a reload naming a missing key is refused (and says which file).
TEST_F(TlsE2E, ReloadSwapsCertificateForNewConnections) {
  const auto port = free_port();
  const std::string head = "p:\n  listen: 127.0.0.1:" + std::to_string(port) + "\n  redis: true\n";
  const std::string tail = "  servers:\n    - 127.0.0.1:1:1 r1\n";
  proxy.start(dir, head + tls_map("server") + tail);
  TlsClient old(port, cert("ca"));
  ASSERT_TRUE(old.handshake_ok());
  EXPECT_EQ(old.peer_cn(), "server");
  proxy.rewrite(head + tls_map("server2") + tail);
  std::string message;
  ASSERT_TRUE(proxy->reload_from_file(message)) << message;
  ASSERT_TRUE(eventually([&] { return reload_applied(*proxy); }));
  EXPECT_EQ(old.call("PING\r\n"), "+PONG\r\n");
  TlsClient fresh(port, cert("ca"));
  ASSERT_TRUE(fresh.handshake_ok());
  EXPECT_EQ(fresh.peer_cn(), "server2");

  const std::string missing = (dir / "missing.key").string();
  proxy.rewrite(head + "  tls: {cert: " + cert("server") + ", key: " + missing + "}\n" + tail);
  EXPECT_FALSE(proxy->reload_from_file(message));
  EXPECT_NE(message.find("key '" + missing + "': No such file or directory"), std::string::npos)
      << message;
  TlsClient after(port, cert("ca"));
  EXPECT_EQ(after.peer_cn(), "server2");
  EXPECT_EQ(old.call("PING\r\n"), "+PONG\r\n");
}

// Without `tls:` a tcp pool relays the TLS session untouched: the client verifies the redis
// backend's certificate through it and talks to it.
TEST_F(TlsE2E, TcpPoolPassesTlsThrough) {
  TlsRedis r(dir, *certs_, "r", "server");
  ASSERT_TRUE(r.ok());
  const auto port = free_port();
  proxy.start(dir, "t:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  protocol: tcp\n  servers:\n    - 127.0.0.1:" +
                       std::to_string(r.port()) + ":1 r\n");
  TlsClient c(port, cert("ca"));
  ASSERT_TRUE(c.handshake_ok());
  EXPECT_EQ(c.peer_cn(), "server");
  EXPECT_EQ(c.call("AUTH proxy ppw\r\nPING\r\n", "PONG\r\n"), "+OK\r\n+PONG\r\n");
}

// tcp pools terminate TLS (tls:), originate it (server_tls:), or both: redis-server behind each,
// with values large enough for many records and backpressure both ways.
TEST_F(TlsE2E, TcpPoolTerminatesAndOriginatesTls) {
  TlsRedis r(dir, *certs_, "r", "server", 0, /*plain=*/true);
  ASSERT_TRUE(r.ok());
  const auto pa = free_port(), pb = free_port(), pc = free_port();
  const std::string tls_port = std::to_string(r.port()), plain = std::to_string(r.plain_port());
  proxy.start(dir, "a:\n  listen: 127.0.0.1:" + std::to_string(pa) + "\n  protocol: tcp\n" +
                       tls_map("server") + "  servers:\n    - 127.0.0.1:" + plain + ":1 r\n" +
                       "b:\n  listen: 127.0.0.1:" + std::to_string(pb) + "\n  protocol: tcp\n" +
                       tls_map("server2") + "  server_tls: {ca: " + cert("ca") +
                       "}\n  servers:\n    - 127.0.0.1:" + tls_port + ":1 r\n" +
                       "c:\n  listen: 127.0.0.1:" + std::to_string(pc) + "\n  protocol: tcp\n" +
                       "  server_tls: {ca: " + cert("ca") +
                       "}\n  servers:\n    - 127.0.0.1:" + tls_port + ":1 r\n");
  const std::string big(300000, 'v');
  const std::string set_big = "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$300000\r\n" + big + "\r\n";
  const std::string got_big = "$300000\r\n" + big + "\r\n";
  for (const auto& [port, cn] : {std::pair{pa, "server"}, std::pair{pb, "server2"}}) {
    TlsClient c(port, cert("ca"));
    ASSERT_TRUE(c.handshake_ok()) << port;
    EXPECT_EQ(c.peer_cn(), cn);  // the proxy's certificate, not the backend's
    EXPECT_EQ(c.call("AUTH proxy ppw\r\nPING\r\n", "PONG\r\n"), "+OK\r\n+PONG\r\n");
    EXPECT_EQ(c.call(set_big), "+OK\r\n");
    EXPECT_EQ(c.call("GET big\r\n", big + "\r\n"), got_big);
  }
  RespClient plain_client(RespClient::dial_tcp(pc));  // plaintext in, TLS out
  EXPECT_EQ(plain_client.call({"AUTH", "proxy", "ppw"}), "+OK\r\n");
  EXPECT_EQ(plain_client.call({"GET", "big"}), got_big);
  EXPECT_EQ(plain_client.call({"SET", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(plain_client.call({"GET", "k"}), "$1\r\nv\r\n");
}

// A backend whose certificate is refused counts as that backend's failure and the relay tries
// the next one; with no good backend left the client is closed. Health probes of a tcp pool with
// server_tls shake hands, so they keep the bad backend down.
TEST_F(TlsE2E, TcpPoolRefusedBackendCertificateFailsOver) {
  TlsRedis good(dir, *certs_, "good", "server"), bad(dir, *certs_, "bad", "expired");
  ASSERT_TRUE(good.ok() && bad.ok());
  const auto port = free_port(), only_bad = free_port();
  proxy.start(dir, "t:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  protocol: tcp\n  balance: round-robin\n  timeout: 2000\n"
                       "  server_failure_limit: 100\n  server_tls: {ca: " +
                       cert("ca") + "}\n  servers:\n    - 127.0.0.1:" + std::to_string(bad.port()) +
                       ":1 bad\n    - 127.0.0.1:" + std::to_string(good.port()) + ":1 good\n" +
                       "u:\n  listen: 127.0.0.1:" + std::to_string(only_bad) +
                       "\n  protocol: tcp\n  timeout: 2000\n  health_check_interval: 50\n"
                       "  server_failure_limit: 2\n  server_tls: {ca: " +
                       cert("ca") + "}\n  servers:\n    - 127.0.0.1:" + std::to_string(bad.port()) +
                       ":1 bad\n");
  for (int i = 0; i < 4; ++i) {
    RespClient c(RespClient::dial_tcp(port));
    EXPECT_EQ(c.call({"AUTH", "proxy", "ppw"}), "+OK\r\n") << i;
    EXPECT_EQ(c.call({"PING"}), "+PONG\r\n") << i;
  }
  const auto t = proxy->topology();
  EXPECT_GE(t->pools[0]->states[0]->errors.load(), 2u);  // round robin tried `bad` twice
  EXPECT_EQ(t->pools[0]->states[1]->errors.load(), 0u);
  RespClient refused(RespClient::dial_tcp(only_bad));
  refused.send({"PING"});
  EXPECT_TRUE(refused.closed_by_peer());
  // The probes' handshakes fail too: the backend goes down without client traffic.
  EXPECT_TRUE(eventually([&] { return proxy->topology()->pools[1]->states[0]->down.load(); }));
}

// tls: on a tcp pool: a hostile or silent client is closed (silence at handshake_timeout) and
// no backend connection is made for it; a good client connected before keeps working.
TEST_F(TlsE2E, TcpPoolHostileHandshakesCostNoBackend) {
  TlsRedis r(dir, *certs_, "r", "server", 0, /*plain=*/true);
  ASSERT_TRUE(r.ok());
  const auto port = free_port();
  proxy.start(dir, "t:\n  listen: 127.0.0.1:" + std::to_string(port) + "\n  protocol: tcp\n" +
                       tls_map("server", ", handshake_timeout: 300") +
                       "  servers:\n    - 127.0.0.1:" + std::to_string(r.plain_port()) + ":1 r\n");
  TlsClient good(port, cert("ca"));
  ASSERT_TRUE(good.handshake_ok());
  EXPECT_EQ(good.call("AUTH proxy ppw\r\n"), "+OK\r\n");
  const auto& state = *proxy->topology()->pools[0]->states[0];
  const auto connects = state.requests.load();
  EXPECT_EQ(connects, 1u);
  const std::vector<std::string> hostile = {"PING\r\n", std::string(5000, '\x16'), ""};
  for (const auto& h : hostile) {
    const int fd = dial_tcp(port);
    ASSERT_GE(fd, 0);
    if (!h.empty()) send_all(fd, h);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(closed_by_peer(fd)) << h.size();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    ::close(fd);
    EXPECT_EQ(good.call("PING\r\n"), "+PONG\r\n");
  }
  EXPECT_EQ(state.requests.load(), connects);
  EXPECT_GE(proxy->metrics().tls_handshake_failures.load(), 3u);
  EXPECT_NE(proxy->prometheus().find("chash_proxy_tls_handshake_failures_total"),
            std::string::npos);
}

// A server's own server_tls overrides its pool's key by key (here the name checked), and
// `server_tls: false` reaches one server in plaintext.
TEST_F(TlsE2E, PerServerServerTls) {
  TlsRedis r1(dir, *certs_, "r1", "server"), r2(dir, *certs_, "r2", "server", 0, true);
  ASSERT_TRUE(r1.ok() && r2.ok());
  const auto port = free_port();
  proxy.start(dir, "p:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  redis: true\n  timeout: 2000\n  server_user: proxy\n"
                       "  server_auth: ppw\n  server_tls: {ca: " +
                       cert("ca") + ", sni: wrong.example}\n  servers:\n" +
                       "    - {server: \"127.0.0.1:" + std::to_string(r1.port()) +
                       ":1 r1\", server_tls: {sni: localhost}}\n" + "    - {server: \"127.0.0.1:" +
                       std::to_string(r2.plain_port()) + ":1 r2\", server_tls: false}\n");
  const auto t = proxy->topology();
  std::set<NodeId> seen;
  for (int i = 0; i < 20; ++i) {
    const std::string k = "k" + std::to_string(i);
    seen.insert(t->pools[0]->route(k));
    RespClient c(RespClient::dial_tcp(port));
    EXPECT_EQ(c.call({"SET", k, "v"}), "+OK\r\n") << k;
    EXPECT_EQ(c.call({"GET", k}), "$1\r\nv\r\n") << k;
  }
  EXPECT_EQ(seen.size(), 2u);  // both servers answered
  const auto load = [](const std::string& yaml) {
    try {
      parse_config(yaml, "t.yml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(load("p:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n"
                 "    - {server: \"127.0.0.1:2:1 a\", server_tls: true}\n"),
            "t.yml:5: pool 'p': server 'a': server_tls is a map {ca, verify, sni, cert, key} or "
            "false");
  EXPECT_NE(load("p:\n  listen: 127.0.0.1:9\n  redis: true\n  servers:\n"
                 "    - {server: \"127.0.0.1:2:1 a\", server_tls: {sni: x, bogus: 1}}\n")
                .find("unknown server_tls key 'bogus'"),
            std::string::npos);
}

// admin_tls: the admin port speaks HTTPS only, with admin_auth over it.
TEST_F(TlsE2E, AdminPortOverTls) {
  const auto port = free_port(), admin = free_port();
  proxy.start(dir, "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) +
                       "\n  admin_tls: {cert: " + cert("server") + ", key: " + key("server") +
                       "}\n  admin_auth: {token: s3cret, protect: all}\n"
                       "p:\n  listen: 127.0.0.1:" +
                       std::to_string(port) +
                       "\n  redis: true\n  servers:\n    - 127.0.0.1:1:1 r1\n");
  {
    TlsClient c(admin, cert("ca"));
    ASSERT_TRUE(c.handshake_ok());
    const std::string r =
        c.call("GET /status HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n", "}\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 200 OK\r\n")) << r;
    EXPECT_NE(r.find("\"version\""), std::string::npos) << r;
  }
  {
    TlsClient c(admin, cert("ca"));
    EXPECT_TRUE(c.call("GET /metrics HTTP/1.1\r\n\r\n", "(admin_auth)\n")
                    .starts_with("HTTP/1.1 401 Unauthorized\r\n"));
  }
  // Plain HTTP to the HTTPS port: no answer, closed.
  const int fd = dial_tcp(admin);
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /status HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n");
  EXPECT_EQ(recv_until(fd, [](const std::string&) { return false; }).find("HTTP/1.1"),
            std::string::npos);
  ::close(fd);
}

TEST_F(TlsE2E, ConfigErrorsNameTheFile) {
  const auto load = [](const std::string& yaml) {
    try {
      parse_config(yaml, "t.yml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string pool = "p:\n  listen: 127.0.0.1:9\n  redis: true\n  servers: [127.0.0.1:2:1]\n";
  EXPECT_EQ(load(pool + "  tls: {cert: /nonexistent.crt, key: " + key("server") + "}\n"),
            "t.yml:5: pool 'p': tls: certificate '/nonexistent.crt': No such file or directory");
  EXPECT_NE(load(pool + "  tls: {cert: " + cert("server") + ", key: " + key("client") + "}\n")
                .find("tls: key '" + key("client") + "'"),
            std::string::npos)
      << load(pool + "  tls: {cert: " + cert("server") + ", key: " + key("client") + "}\n");
  EXPECT_NE(load(pool + "  tls: {cert: " + key("server") + ", key: " + key("server") + "}\n")
                .find("tls: certificate '" + key("server") + "'"),
            std::string::npos);
  EXPECT_EQ(load(pool + "  tls: {cert: " + cert("server") + ", key: " + key("server") +
                 ", protocols: [TLSv1.1]}\n"),
            "t.yml:5: pool 'p': tls: unknown TLS protocol 'TLSv1.1' (TLSv1.2, TLSv1.3; older ones "
            "are not offered)");
  EXPECT_NE(load(pool + "  server_tls: {ca: " + cert("ca") + ", verfy: false}\n")
                .find("unknown server_tls key 'verfy' (did you mean 'verify'?)"),
            std::string::npos);
}

}  // namespace
}  // namespace chash::proxy
