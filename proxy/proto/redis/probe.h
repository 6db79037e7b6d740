// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the Redis health probe: [AUTH [user] password] then PING, answered +PONG.
//
// Request with password "pw": "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*1\r\n$4\r\nPING\r\n".
// Every reply is read in order; an error reply ("-NOAUTH ...", "-WRONGPASS ...") or bytes that
// are not RESP mean down ("probe refused"); the last reply must be exactly "+PONG\r\n".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/probe_check.h"
#include "proto/redis/resp.h"

namespace chash::proxy::redis {

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
