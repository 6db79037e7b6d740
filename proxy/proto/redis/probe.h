// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the Redis health probes: [AUTH [user] password] then PING, answered +PONG; for
// a replica that reads may go to, INFO replication and INFO persistence instead.
//
// Request with password "pw": "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*1\r\n$4\r\nPING\r\n".
// Every reply is read in order; an error reply ("-NOAUTH ...", "-WRONGPASS ...") or bytes that
// are not RESP mean down ("probe refused"); the last reply must be exactly "+PONG\r\n".
// A replica is up when its INFO says role:slave, master_link_status:up, no sync in progress,
// loading:0 and master_last_io_seconds_ago within the pool's replica_max_lag (a replica that
// is loading, resyncing or has not heard from its master serves stale or no data).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "membership/probe_check.h"
#include "proto/redis/resp.h"

namespace chash::proxy::redis {

class ReplicaProbe final : public ProbeCheck {
 public:
  ReplicaProbe(const std::optional<std::string>& password, const std::optional<std::string>& user,
               std::uint32_t max_lag_ms);
  const std::string& request() const noexcept override { return request_; }
  ProbeVerdict check(std::string_view in, std::string& why) override;

 private:
  std::string request_;
  int auth_ = 0;      // AUTH replies before the two INFO replies
  int expected_ = 0;  // replies still to read
  std::string info_;  // the INFO replies' text
  std::uint32_t max_lag_s_;
  ReplyParser parser_;
};

class Probe final : public ProbeCheck {
 public:
  explicit Probe(const std::optional<std::string>& password,
                 const std::optional<std::string>& user = std::nullopt);
  const std::string& request() const noexcept override { return request_; }
  ProbeVerdict check(std::string_view in, std::string& why) override;

 private:
  std::string request_;
  int expected_ = 0;  // replies still to read
  std::string last_;
  ReplyParser parser_;
};

}  // namespace chash::proxy::redis
