// SPDX-License-Identifier: Apache-2.0
// chash-proxy tcp pools, units: the PROXY protocol header byte for byte (HAProxy's
// proxy-protocol.txt), the client key, nginx's smooth weighted round robin and least-conn.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "config/config.h"
#include "membership/topology.h"
#include "proto/tcp/balance.h"
#include "proto/tcp/proxy_header.h"

namespace chash::proxy::tcp {
namespace {

sockaddr_storage v4(const char* ip, std::uint16_t port) {
  sockaddr_storage ss{};
  auto* s = reinterpret_cast<sockaddr_in*>(&ss);
  s->sin_family = AF_INET;
  s->sin_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET, ip, &s->sin_addr), 1) << ip;
  return ss;
}

sockaddr_storage v6(const char* ip, std::uint16_t port) {
  sockaddr_storage ss{};
  auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
  s->sin6_family = AF_INET6;
  s->sin6_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET6, ip, &s->sin6_addr), 1) << ip;
  return ss;
}

sockaddr_storage unix_peer() {
  sockaddr_storage ss{};
  ss.ss_family = AF_UNIX;
  return ss;
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (const int c : b) s += static_cast<char>(c);
  return s;
}

std::string header(ProxyProtocol v, const sockaddr_storage& src, const sockaddr_storage& dst) {
  std::string out;
  append_proxy_header(out, v, src, dst);
  return out;
}

const std::string kSig =
    bytes({0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A});

TEST(TcpProxyHeaderTest, V1Tcp4) {
  EXPECT_EQ(header(ProxyProtocol::kV1, v4("127.0.5.6", 40000), v4("127.0.0.1", 8080)),
            "PROXY TCP4 127.0.5.6 127.0.0.1 40000 8080\r\n");
  EXPECT_EQ(header(ProxyProtocol::kV1, v4("255.255.255.255", 65535), v4("255.255.255.255", 65535)),
            "PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n");
}

TEST(TcpProxyHeaderTest, V1Tcp6AndMappedV4AndUnknown) {
  EXPECT_EQ(header(ProxyProtocol::kV1, v6("2001:db8::1", 1234), v6("::1", 443)),
            "PROXY TCP6 2001:db8::1 ::1 1234 443\r\n");
  // An IPv4-mapped client on a dual-stack socket is an IPv4 client.
  EXPECT_EQ(header(ProxyProtocol::kV1, v6("::ffff:10.1.2.3", 5), v6("::ffff:10.0.0.1", 6)),
            "PROXY TCP4 10.1.2.3 10.0.0.1 5 6\r\n");
  EXPECT_EQ(header(ProxyProtocol::kV1, unix_peer(), unix_peer()), "PROXY UNKNOWN\r\n");
  EXPECT_EQ(header(ProxyProtocol::kV1, v4("1.2.3.4", 1), v6("::1", 2)), "PROXY UNKNOWN\r\n");
  EXPECT_EQ(header(ProxyProtocol::kNone, v4("1.2.3.4", 1), v4("1.2.3.4", 1)), "");
}

TEST(TcpProxyHeaderTest, V2Inet) {
  const std::string want =
      kSig + bytes({0x21, 0x11, 0x00, 0x0C,    // v2 PROXY, TCP over IPv4, 12 bytes
                    0x7F, 0x00, 0x05, 0x06,    // 127.0.5.6
                    0x7F, 0x00, 0x00, 0x01,    // 127.0.0.1
                    0x9C, 0x40, 0x1F, 0x90});  // 40000, 8080
  EXPECT_EQ(header(ProxyProtocol::kV2, v4("127.0.5.6", 40000), v4("127.0.0.1", 8080)), want);
  EXPECT_EQ(want.size(), 28u);
}

TEST(TcpProxyHeaderTest, V2Inet6) {
  std::string want = kSig + bytes({0x21, 0x21, 0x00, 0x24});  // v2 PROXY, TCP over IPv6, 36 bytes
  want += bytes({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});  // 2001:db8::1
  want += bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});              // ::1
  want += bytes({0x04, 0xD2, 0x01, 0xBB});                                         // 1234, 443
  EXPECT_EQ(header(ProxyProtocol::kV2, v6("2001:db8::1", 1234), v6("::1", 443)), want);
  EXPECT_EQ(want.size(), 16u + 36u);
}

TEST(TcpProxyHeaderTest, V2LocalForUnixClients) {
  // LOCAL command, UNSPEC family, no address: receivers must accept it (spec section 2.2).
  EXPECT_EQ(header(ProxyProtocol::kV2, unix_peer(), unix_peer()),
            kSig + bytes({0x20, 0x00, 0x00, 0x00}));
}

TEST(TcpBalanceTest, ClientKeyIsRemoteAddrText) {
  EXPECT_EQ(client_key(v4("127.0.5.6", 9), Balance::kHash), "127.0.5.6");
  EXPECT_EQ(client_key(v6("::ffff:10.1.2.3", 9), Balance::kIpHash), "10.1.2.3");
  EXPECT_EQ(client_key(v6("2001:db8::1", 9), Balance::kHash), "2001:db8::1");
  EXPECT_EQ(client_key(unix_peer(), Balance::kHash), "unix:");
  EXPECT_EQ(client_key(unix_peer(), Balance::kIpHash), "0.0.0.0");
}

std::string sequence(SmoothWrr& w, int n, const std::vector<bool>& down = {}) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    const NodeId p = w.pick([&](NodeId x) { return down.empty() || !down[x]; });
    s += p == kNoNode ? '-' : static_cast<char>('a' + p);
  }
  return s;
}

TEST(TcpBalanceTest, SmoothWeightedRoundRobinIsNginxs) {
  const std::uint32_t w[] = {5, 1, 1};
  SmoothWrr wrr(w);
  // nginx's documented sequence for weights 5, 1, 1 (ngx_http_upstream_round_robin.c).
  EXPECT_EQ(sequence(wrr, 14), "aabacaaaabacaa");
  const std::uint32_t ones[] = {1, 1, 1};
  SmoothWrr rr(ones);
  EXPECT_EQ(sequence(rr, 7), "abcabca");
  const std::uint32_t w2[] = {3, 2};
  SmoothWrr two(w2);
  EXPECT_EQ(sequence(two, 10), "ababaababa");
}

TEST(TcpBalanceTest, SmoothWeightedRoundRobinSkipsIneligible) {
  const std::uint32_t ones[] = {1, 1, 1};
  SmoothWrr rr(ones);
  // b down: a and c alternate (not a c c as a cyclic counter would give).
  EXPECT_EQ(sequence(rr, 6, {false, true, false}), "acacac");
  EXPECT_EQ(sequence(rr, 2, {true, true, true}), "--");
}

TEST(TcpBalanceTest, FailureLowersEffectiveWeightThenRecovers) {
  const std::uint32_t w[] = {4, 4};
  SmoothWrr wrr(w);
  wrr.failed(0, 1);  // effective 4 -> 0: b is preferred until a earns its weight back
  EXPECT_EQ(sequence(wrr, 2), "bb");
  std::string s = sequence(wrr, 40);
  EXPECT_EQ(std::count(s.begin(), s.end(), 'a'), 20) << s;  // back to equal shares
}

PoolConfig tcp_pool(Balance b, std::vector<std::uint32_t> weights) {
  PoolConfig c;
  c.name = "t";
  c.protocol = PoolProtocol::kTcp;
  c.balance = b;
  c.routing.preset = b == Balance::kIpHash ? "nginx-ip-hash" : "nginx-hash-consistent";
  for (std::size_t i = 0; i < weights.size(); ++i) {
    ServerConfig s;
    s.address = parse_address("127.0.0.1:" + std::to_string(7001 + i), "server");
    s.weight = weights[i];
    s.name = std::string(1, static_cast<char>('a' + i));
    c.servers.push_back(s);
  }
  return c;
}

std::shared_ptr<Pool> make_pool(const PoolConfig& c) {
  std::vector<std::shared_ptr<BackendState>> states;
  for (const auto& s : c.servers) states.push_back(std::make_shared<BackendState>(s.name));
  return std::make_shared<Pool>(c, states);
}

TEST(TcpBalanceTest, LeastConnPicksFewestPerWeightAndAlternatesTies) {
  auto pool = make_pool(tcp_pool(Balance::kLeastConn, {1, 1, 2}));
  TcpPoolState st(pool->config);
  auto pick = [&] { return Chooser(*pool, "k").next(*pool, st); };
  // All idle: tied at 0 conns, picked by smooth WRR over weights 1,1,2.
  EXPECT_EQ(pick(), 2u);
  pool->states[0]->active = 3;
  pool->states[1]->active = 1;
  pool->states[2]->active = 3;  // 3/2 > 1/1
  EXPECT_EQ(pick(), 1u);
  pool->states[1]->active = 2;  // 2/1 > 3/2: c
  EXPECT_EQ(pick(), 2u);
  pool->states[2]->down = true;  // down backends are skipped: b (2) beats a (3)
  EXPECT_EQ(pick(), 1u);
}

TEST(TcpBalanceTest, ChooserTriesEveryBackendOnceInPolicyOrder) {
  auto pool = make_pool(tcp_pool(Balance::kIpHash, {1, 1, 1, 1}));
  TcpPoolState st(pool->config);
  Chooser c(*pool, "10.9.8.7");
  NodeId prefs[4];
  ASSERT_EQ(pool->router.route_n("10.9.8.7", prefs), 4u);
  EXPECT_EQ(prefs[0], pool->router.route("10.9.8.7"));
  pool->states[prefs[1]]->down = true;
  EXPECT_EQ(c.next(*pool, st), prefs[0]);
  EXPECT_EQ(c.next(*pool, st), prefs[2]);  // the down one is skipped
  EXPECT_EQ(c.next(*pool, st), prefs[3]);
  EXPECT_EQ(c.next(*pool, st), kNoNode);

  auto rr = make_pool(tcp_pool(Balance::kRoundRobin, {1, 1, 1}));
  TcpPoolState rst(rr->config);
  Chooser r(*rr, "");
  std::vector<int> seen(3, 0);
  for (int i = 0; i < 3; ++i) ++seen[r.next(*rr, rst)];
  EXPECT_EQ(seen, std::vector<int>({1, 1, 1}));
  EXPECT_EQ(r.next(*rr, rst), kNoNode);
}

}  // namespace
}  // namespace chash::proxy::tcp
