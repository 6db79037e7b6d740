// SPDX-License-Identifier: Apache-2.0
// CLUSTER NODES as Redis 7.0 prints it (proto/redis/cluster_nodes.h), and how a pool's members
// and reads follow from a map (membership/topology.h: Pool::read_member).
#include "proto/redis/cluster_nodes.h"

#include <gtest/gtest.h>

#include "membership/topology.h"

namespace chash::proxy {
namespace {

// The example of the Redis Cluster tutorial (CLUSTER NODES), with a migrating slot and a node
// that does not know its own address yet (":30001").
constexpr std::string_view kSix =
    "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave "
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n"
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 "
    "connected 5461-10922\n"
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 "
    "connected 10923-16383 [10923->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]\n"
    "6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005,node5.example slave "
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 connected\n"
    "824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 slave,fail "
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 1426238317741 6 connected\n"
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca :30001@31001 myself,master - 0 0 1 connected "
    "0-5460\n"
    "abcdefabcdefabcdefabcdefabcdefabcdefabcd 127.0.0.1:30009@31009 handshake - 0 0 0 "
    "disconnected\n";

TEST(ClusterNodesTest, ParsesTheTutorialsSixNodes) {
  redis::ClusterMap m;
  std::string error;
  ASSERT_TRUE(redis::parse_cluster_nodes(kSix, "127.0.0.1:30001", m, error)) << error;
  ASSERT_EQ(m.masters.size(), 3u);                     // by address; the handshake node is left out
  EXPECT_EQ(m.masters[0].address, "127.0.0.1:30001");  // ":30001" is the node asked
  EXPECT_EQ(m.masters[1].address, "127.0.0.1:30002");
  EXPECT_EQ(m.masters[2].id, "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f");
  EXPECT_EQ(m.covered, kRedisSlots);
  EXPECT_EQ(m.migrating, 1u);
  EXPECT_EQ((*m.owner)[0], 0u);
  EXPECT_EQ((*m.owner)[5461], 1u);
  EXPECT_EQ((*m.owner)[10923], 2u);  // migrating: still its owner's until the move ends
  EXPECT_EQ(m.masters[1].slots, 5462u);
  ASSERT_EQ(m.replicas.size(), 3u);
  EXPECT_EQ(m.replicas[0].address, "127.0.0.1:30004");
  EXPECT_EQ(m.replicas[0].master, 0u);
  EXPECT_EQ(m.replicas[1].address, "127.0.0.1:30005");  // ",hostname" dropped
  EXPECT_EQ(m.replicas[1].master, 1u);
  EXPECT_TRUE(m.replicas[2].failed);
  EXPECT_EQ(m.ranges(2), std::vector<std::string>{"10923-16383"});
  redis::ClusterMap again;
  ASSERT_TRUE(redis::parse_cluster_nodes(kSix, "127.0.0.1:30001", again, error));
  EXPECT_TRUE(m.same_topology(again));
}

TEST(ClusterNodesTest, ConflictingClaimsGoToTheHigherEpochAndGapsAreUnserved) {
  const std::string text =
      "a 10.0.0.1:7000@17000 master - 0 0 5 connected 0-99 200\n"
      "b 10.0.0.2:7000@17000 master - 0 0 9 connected 50-60 300-301\n";
  redis::ClusterMap m;
  std::string error;
  ASSERT_TRUE(redis::parse_cluster_nodes(text, "10.0.0.1:7000", m, error)) << error;
  EXPECT_EQ((*m.owner)[49], 0u);
  EXPECT_EQ((*m.owner)[55], 1u);  // epoch 9 beats 5
  EXPECT_EQ((*m.owner)[100], kNoNode);
  EXPECT_EQ(m.covered, 100u + 1u + 2u);
  EXPECT_EQ(m.ranges(0), (std::vector<std::string>{"0-49", "61-99", "200"}));
  EXPECT_EQ(m.ranges(1), (std::vector<std::string>{"50-60", "300-301"}));
}

TEST(ClusterNodesTest, MalformedRepliesAreRefusedWithAReason) {
  struct Case {
    std::string text, error;
  };
  const std::vector<Case> cases = {
      {"a 1.2.3.4:1@2 master -\n", "a CLUSTER NODES line has 4 fields, not 8 or more"},
      {"a 1.2.3.4:1@2 master - 0 0 x connected\n", "bad config epoch 'x'"},
      {"a 1.2.3.4:1@2 master - 0 0 1 connected 5-3\n", "slot range '5-3' outside 0-16383"},
      {"a 1.2.3.4:1@2 master - 0 0 1 connected 16384\n", "slot range '16384' outside 0-16383"},
      {"a 1.2.3.4:1@2 master - 0 0 1 connected 1-x\n", "bad slot '1-x'"},
      {"a 1.2.3.4:1@2 slave b 0 0 1 connected\n", "no master in the CLUSTER NODES reply"},
      {"", "no master in the CLUSTER NODES reply"},
  };
  for (const auto& c : cases) {
    redis::ClusterMap m;
    std::string error;
    EXPECT_FALSE(redis::parse_cluster_nodes(c.text, "1.2.3.4:1", m, error)) << c.text;
    EXPECT_EQ(error, c.error) << c.text;
  }
}

// A pool's reads under each read_policy: replicas that are up, spread by the client's turn.
TEST(ClusterNodesTest, ReadMemberFollowsThePolicy) {
  PoolConfig pc;
  pc.name = "p";
  pc.protocol = PoolProtocol::kRedis;
  pc.routing.algorithm = "modulo";
  std::vector<ServerConfig> servers(4);
  servers[0].name = "a";
  servers[1].name = "b";
  for (int i : {2, 3}) {
    servers[i].name = "a/r" + std::to_string(i);
    servers[i].role = ServerRole::kReplica;
    servers[i].replica_of = 0;
  }
  pc.servers.assign(servers.begin(), servers.begin() + 2);
  std::vector<std::shared_ptr<BackendState>> states;
  for (const auto& s : servers) states.push_back(std::make_shared<BackendState>(s.name));
  auto pool_with = [&](ReadPolicy p) {
    pc.read_policy = p;
    return Pool(pc, servers, 2, states, chash::Router::build(pc.routing, pc.nodes()));
  };
  const Pool master = pool_with(ReadPolicy::kMaster);
  EXPECT_EQ(master.read_member(0, 1), 0u);
  const Pool prefer = pool_with(ReadPolicy::kPreferReplica);
  EXPECT_EQ(prefer.replicas[0], (std::vector<NodeId>{2, 3}));
  EXPECT_EQ(prefer.read_member(0, 0), 2u);
  EXPECT_EQ(prefer.read_member(0, 1), 3u);
  EXPECT_EQ(prefer.read_member(1, 1), 1u);  // b has none
  states[2]->down = true;
  EXPECT_EQ(prefer.read_member(0, 0), 3u);
  states[3]->down = true;
  EXPECT_EQ(prefer.read_member(0, 0), 0u);  // none up: the master
  const Pool only = pool_with(ReadPolicy::kReplica);
  EXPECT_EQ(only.read_member(0, 0), kNoNode);
  states[3]->down = false;
  const Pool any = pool_with(ReadPolicy::kAny);
  EXPECT_EQ(any.read_member(0, 0), 3u);
  EXPECT_EQ(any.read_member(0, 1), 0u);  // the master takes its turn
}

}  // namespace
}  // namespace chash::proxy
