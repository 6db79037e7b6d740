// SPDX-License-Identifier: Apache-2.0
// The etcd client (membership/etcd/client.h) against real etcd with its own users (auth) and
// with TLS and client certificates, and a proxy whose pool is taken from such an etcd.
#include <gtest/gtest.h>

#include "certs_util.h"
#include "etcd_util.h"
#include "membership/fleet/state.h"
#include "redis_util.h"

namespace chash::proxy::testing {
namespace {

using namespace std::chrono_literals;

class EtcdClientE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_etcd()) GTEST_SKIP() << "etcd missing: scripts/bootstrap.sh installs etcd-server";
    dir = make_test_dir("chash-etcd");
  }
  void TearDown() override {
    proxy.stop();
    etcd.reset();
    tls_etcd.stop();
    if (!dir.empty()) fs::remove_all(dir);
  }
  fs::path dir;
  std::unique_ptr<EtcdCluster> etcd;
  ChildProcess tls_etcd;
  ProxyRunner proxy;
};

// etcd's own users: the client authenticates and sends its token; wrong credentials are refused
// with etcd's reason, and a proxy configured with `auth:` takes its pool from that etcd.
TEST_F(EtcdClientE2E, AuthenticatesAsAnEtcdUser) {
  if (!have_program("etcdctl")) GTEST_SKIP() << "etcdctl missing: scripts/bootstrap.sh";
  etcd = std::make_unique<EtcdCluster>(dir, 1);
  ASSERT_TRUE(etcd->start());
  const std::string ctl = "etcdctl --endpoints " + etcd->endpoints()[0] + " ";
  ASSERT_EQ(run(ctl + "user add root:rootpw").second, 0);
  ASSERT_EQ(run(ctl + "auth enable").second, 0);
  etcd::ClientOptions o;
  o.endpoints = {etcd::parse_endpoint(etcd->endpoints()[0])};
  o.user = "root";
  o.password = "rootpw";
  etcd::Client c(o);
  c.put("/a/b", "v");
  EXPECT_EQ(c.get("/a/b").kvs.at(0).value, "v");
  o.password = "wrong";
  etcd::Client bad(o);
  try {
    bad.get("/a/b");
    ADD_FAILURE() << "a wrong password was accepted";
  } catch (const etcd::EtcdError& e) {
    EXPECT_NE(std::string(e.what()).find("authenticate as 'root'"), std::string::npos) << e.what();
  }
  etcd::ClientOptions anonymous;
  anonymous.endpoints = o.endpoints;
  etcd::Client none(anonymous);
  EXPECT_THROW(none.get("/a/b"), etcd::EtcdError);
  // A proxy with `auth:`.
  if (!have_redis()) return;
  RedisServer r(dir, "r1");
  ASSERT_TRUE(r.start());
  const std::uint16_t admin = free_port();
  proxy.start(dir,
              "chash_proxy:\n  admin: 127.0.0.1:" + std::to_string(admin) +
                  "\n  membership:\n    etcd: [" + etcd->endpoints()[0] +
                  "]\n    id: a1\n    auth: {user: root, password: rootpw}\n"
                  "cache:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n    - " +
                  r.socket() + ":1 r1\n",
              1);
  ASSERT_TRUE(eventually([&] { return !c.get("/chash/pools/cache/state").kvs.empty(); }));
  EXPECT_EQ(proxy->topology()->pools[0]->fleet_epoch, 1u);
  RespClient rc(RespClient::dial_tcp(proxy->port(0)));
  EXPECT_EQ(rc.call({"SET", "k", "v"}), "+OK\r\n");
}

// https to etcd with a client certificate (etcd --client-cert-auth): the CA verifies etcd, the
// client's certificate is what etcd checks; a client without one, or trusting another CA, is
// refused with the reason.
TEST_F(EtcdClientE2E, SpeaksTlsWithAClientCertificate) {
  Certs certs(dir);
  ASSERT_TRUE(certs.ca("ca"));
  ASSERT_TRUE(certs.ca("other"));
  ASSERT_TRUE(certs.leaf("server", "ca", "IP:127.0.0.1"));
  ASSERT_TRUE(certs.leaf("client", "ca", ""));
  const std::uint16_t port = free_port(), peer = free_port();
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  const std::string purl = "http://127.0.0.1:" + std::to_string(peer);
  etcd::ClientOptions o;
  o.endpoints = {{"127.0.0.1", port}};
  o.tls = true;
  o.ca = certs.path("ca.crt");
  o.cert = certs.path("client.crt");
  o.key = certs.path("client.key");
  o.timeout = 1000ms;
  auto answers = [&] {
    try {
      etcd::Client c(o);
      c.get("/x");
      return true;
    } catch (const etcd::EtcdError&) {
      return false;
    }
  };
  ASSERT_TRUE(tls_etcd.start({"etcd",
                              "--name",
                              "t1",
                              "--data-dir",
                              (dir / "t1").string(),
                              "--listen-client-urls",
                              url,
                              "--advertise-client-urls",
                              url,
                              "--listen-peer-urls",
                              purl,
                              "--initial-advertise-peer-urls",
                              purl,
                              "--initial-cluster",
                              "t1=" + purl,
                              "--cert-file",
                              certs.path("server.crt"),
                              "--key-file",
                              certs.path("server.key"),
                              "--client-cert-auth",
                              "--trusted-ca-file",
                              certs.path("ca.crt"),
                              "--logger",
                              "zap",
                              "--log-outputs",
                              (dir / "t1.log").string()},
                             answers));
  etcd::Client c(o);
  c.put("/t/x", "tls");
  EXPECT_EQ(c.get("/t/x").kvs.at(0).value, "tls");
  etcd::ClientOptions no_cert = o;
  no_cert.cert.clear();
  no_cert.key.clear();
  EXPECT_THROW(etcd::Client(no_cert).get("/t/x"), etcd::EtcdError);
  etcd::ClientOptions wrong_ca = o;
  wrong_ca.ca = certs.path("other.crt");
  try {
    etcd::Client(wrong_ca).get("/t/x");
    ADD_FAILURE() << "a certificate from another CA was trusted";
  } catch (const etcd::EtcdError& e) {
    EXPECT_NE(std::string(e.what()).find("TLS"), std::string::npos) << e.what();
  }
  // A proxy with `tls:`.
  if (!have_redis()) return;
  RedisServer r(dir, "r1");
  ASSERT_TRUE(r.start());
  proxy.start(dir,
              "chash_proxy:\n  membership:\n    etcd: [127.0.0.1:" + std::to_string(port) +
                  "]\n    id: t1\n    tls: {ca: " + certs.path("ca.crt") +
                  ", cert: " + certs.path("client.crt") + ", key: " + certs.path("client.key") +
                  "}\ncache:\n  listen: 127.0.0.1:0\n  redis: true\n  servers:\n    - " +
                  r.socket() + ":1 r1\n",
              1);
  ASSERT_TRUE(eventually([&] { return !c.get("/chash/pools/cache/state").kvs.empty(); }));
  const auto servers = fleet::decode_servers(c.get("/chash/pools/cache/servers").kvs.at(0).value);
  EXPECT_EQ(servers, std::vector<std::string>{r.socket() + ":1 r1"});
}

}  // namespace
}  // namespace chash::proxy::testing
