// SPDX-License-Identifier: Apache-2.0
// What a binary hand-over carries of backend health (proxy/control/handover_state.h): the old
// process's ejections and the keys it noted while a backend was out reach the new process's
// topology, for the backends both configs have alike, and nothing else.
#include "control/handover_state.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"

namespace chash::proxy {
namespace {

std::shared_ptr<const Topology> topology(const std::string& b_address) {
  const std::string y =
      "alpha:\n  listen: 127.0.0.1:0\n  redis: true\n  server_failure_limit: 3\n  servers:\n"
      "   - 127.0.0.1:7001:1 a\n   - " + b_address + ":1 b\n   - 127.0.0.1:7003:1 c\n"
      "beta:\n  listen: 127.0.0.1:0\n  servers:\n   - 127.0.0.1:7101:1 m1\n";
  return build_topology(parse_config(y, "t.yml"), nullptr, 1);
}

BackendState& state(const Topology& t, std::size_t pool, std::size_t node) {
  return *t.pools.at(pool)->states.at(node);
}

TEST(HandoverStateTest, NothingToSayWhenEveryBackendIsUpAndNothingIsNoted) {
  EXPECT_EQ(encode_backend_state(*topology("127.0.0.1:7002")), "");
}

TEST(HandoverStateTest, EjectionsAndNotedKeysReachTheSameBackendsOfTheNewProcess) {
  const auto old = topology("127.0.0.1:7002");
  state(*old, 0, 1).down = true;
  const std::string binary("k\n y\0z", 6);  // a key no line-based format could carry as is
  state(*old, 0, 1).absence.note("user:1", 100);
  state(*old, 0, 1).absence.note(binary, 100);
  state(*old, 1, 0).down = true;  // beta's m1: down, nothing noted

  const auto next = topology("127.0.0.1:7002");
  const AdoptedState a = adopt_backend_state(*next, encode_backend_state(*old));
  EXPECT_EQ(a.error, "");
  EXPECT_EQ(a.down, 2u);
  EXPECT_EQ(a.keys, 2u);
  EXPECT_EQ(a.skipped, 0u);
  const BackendState& b = state(*next, 0, 1);
  EXPECT_TRUE(b.down.load());
  EXPECT_GT(b.down_since_ms.load(), 0) << "probed after server_retry_timeout, as if just ejected";
  EXPECT_EQ(b.failures.load(), 3u);
  EXPECT_TRUE(b.absence.contains("user:1"));
  EXPECT_TRUE(b.absence.contains(binary));
  EXPECT_EQ(b.absence.phase(), AbsenceLog::Phase::kNormal) << "down: noting goes on";
  EXPECT_TRUE(state(*next, 1, 0).down.load());
  EXPECT_FALSE(state(*next, 0, 0).down.load());
  EXPECT_FALSE(state(*next, 0, 2).down.load());
}

TEST(HandoverStateTest, ABackendWhoseAddressChangedStartsAfresh) {
  const auto old = topology("127.0.0.1:7002");
  state(*old, 0, 1).down = true;
  state(*old, 0, 1).absence.note("user:1", 100);
  const auto next = topology("127.0.0.1:7999");
  const AdoptedState a = adopt_backend_state(*next, encode_backend_state(*old));
  EXPECT_EQ(a.skipped, 1u);
  EXPECT_EQ(a.down, 0u);
  EXPECT_FALSE(state(*next, 0, 1).down.load());
  EXPECT_FALSE(state(*next, 0, 1).absence.contains("user:1"));
}

TEST(HandoverStateTest, AReturnedBackendKeepsDeletingItsNotedKeysFirst) {
  const auto old = topology("127.0.0.1:7002");
  state(*old, 0, 1).absence.note("user:7", 100);
  state(*old, 0, 1).absence.set_phase(AbsenceLog::Phase::kFlipped);
  const auto next = topology("127.0.0.1:7002");
  adopt_backend_state(*next, encode_backend_state(*old));
  AbsenceLog& log = state(*next, 0, 1).absence;
  EXPECT_FALSE(state(*next, 0, 1).down.load());
  EXPECT_EQ(log.phase(), AbsenceLog::Phase::kFlipped);
  EXPECT_TRUE(log.take("user:7")) << "its first request deletes the stale copy first";
}

TEST(HandoverStateTest, MidSweepOrOverflowedTheLogCountsAsOverflowed) {
  const auto old = topology("127.0.0.1:7002");
  state(*old, 0, 0).down = true;
  state(*old, 0, 0).absence.set_phase(AbsenceLog::Phase::kSweeping);
  state(*old, 0, 2).down = true;
  for (int i = 0; i < 5; ++i) state(*old, 0, 2).absence.note("k" + std::to_string(i), 3);
  ASSERT_TRUE(state(*old, 0, 2).absence.overflowed());
  const auto next = topology("127.0.0.1:7002");
  adopt_backend_state(*next, encode_backend_state(*old));
  EXPECT_TRUE(state(*next, 0, 0).absence.overflowed())
      << "which keys the old sweep had deleted is unknown: its return flushes";
  EXPECT_TRUE(state(*next, 0, 2).absence.overflowed());
}

TEST(HandoverStateTest, AMalformedAnswerStopsAtTheBadLine) {
  const auto next = topology("127.0.0.1:7002");
  const auto old = topology("127.0.0.1:7002");
  state(*old, 1, 0).down = true;
  const std::string good = encode_backend_state(*old);
  for (const std::string bad : {"B zz\n", "K 6\n", "B 616c706861 62 3132372e302e302e313a37303032 2 0 0\n",
                                "X\n", "B 616c706861"}) {
    const AdoptedState a = adopt_backend_state(*next, bad + good);
    EXPECT_NE(a.error, "") << bad;
    EXPECT_EQ(a.down, 0u) << bad;
  }
  EXPECT_FALSE(state(*next, 1, 0).down.load());
}

}  // namespace
}  // namespace chash::proxy
