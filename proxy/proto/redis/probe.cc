// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/probe.h"

namespace chash::proxy::redis {

Probe::Probe(const std::optional<std::string>& password, const std::optional<std::string>& user) {
  if (password && user) {
    append_command(request_, {"AUTH", *user, *password});  // Redis 6+ ACL user
    ++expected_;
  } else if (password) {
    append_command(request_, {"AUTH", *password});
    ++expected_;
  }
  append_command(request_, {"PING"});
  ++expected_;
}

ProbeVerdict Probe::check(std::string_view in, std::string& why) {
  while (expected_ > 0) {
    const ParseResult r = parser_.parse(in);
    if (r == ParseResult::kNeedMore) return ProbeVerdict::kNeedMore;
    if (r == ParseResult::kError || parser_.type() == '-') {
      why = "probe refused";
      return ProbeVerdict::kDown;
    }
    last_ = std::string(parser_.span().in(in));
    parser_.next();
    --expected_;
  }
  if (last_ == "+PONG\r\n") return ProbeVerdict::kUp;
  why = "unexpected PING reply";
  return ProbeVerdict::kDown;
}

}  // namespace chash::proxy::redis
