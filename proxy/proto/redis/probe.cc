// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/probe.h"

#include <algorithm>
#include <charconv>

namespace chash::proxy::redis {

namespace {

// [AUTH [user] password] into `out`; how many replies it adds.
int append_auth(std::string& out, const std::optional<std::string>& password,
                const std::optional<std::string>& user) {
  if (password && user) {
    append_command(out, {"AUTH", *user, *password});  // Redis 6+ ACL user
    return 1;
  }
  if (password) {
    append_command(out, {"AUTH", *password});
    return 1;
  }
  return 0;
}

// The value of `field:` in INFO text ("" when absent).
std::string_view info_field(std::string_view info, std::string_view field) {
  std::size_t pos = 0;
  while (pos < info.size()) {
    const std::size_t end = std::min(info.find("\r\n", pos), info.size());
    const std::string_view line = info.substr(pos, end - pos);
    if (line.size() > field.size() && line.starts_with(field) && line[field.size()] == ':')
      return line.substr(field.size() + 1);
    pos = end + 2;
  }
  return {};
}

}  // namespace

Probe::Probe(const std::optional<std::string>& password, const std::optional<std::string>& user) {
  expected_ = append_auth(request_, password, user);
  append_command(request_, {"PING"});
  ++expected_;
}

ReplicaProbe::ReplicaProbe(const std::optional<std::string>& password,
                           const std::optional<std::string>& user, std::uint32_t max_lag_ms)
    : max_lag_s_(max_lag_ms / 1000) {
  auth_ = append_auth(request_, password, user);
  append_command(request_, {"INFO", "replication"});
  append_command(request_, {"INFO", "persistence"});
  expected_ = auth_ + 2;
}

ProbeVerdict ReplicaProbe::check(std::string_view in, std::string& why) {
  while (expected_ > 0) {
    const ParseResult r = parser_.parse(in);
    if (r == ParseResult::kNeedMore) return ProbeVerdict::kNeedMore;
    if (r == ParseResult::kError || parser_.type() == '-') {
      why = "probe refused";
      return ProbeVerdict::kDown;
    }
    if (auth_ > 0) {
      --auth_;
    } else {
      info_ += parser_.span().in(in);  // "$<n>\r\n<text>\r\n": the fields are found in it
    }
    parser_.next();
    --expected_;
  }
  const std::string_view role = info_field(info_, "role");
  if (role != "slave") {
    why = "replica: role is " + std::string(role.empty() ? "unknown" : role.substr(0, 20));
    return ProbeVerdict::kDown;
  }
  if (info_field(info_, "master_link_status") != "up") {
    why = "replica: its link to the master is down";
    return ProbeVerdict::kDown;
  }
  if (info_field(info_, "master_sync_in_progress") == "1") {
    why = "replica: resyncing with its master";
    return ProbeVerdict::kDown;
  }
  if (info_field(info_, "loading") == "1") {
    why = "replica: loading its dataset";
    return ProbeVerdict::kDown;
  }
  const std::string_view io = info_field(info_, "master_last_io_seconds_ago");
  std::uint32_t seconds = 0;
  const auto [p, ec] = std::from_chars(io.data(), io.data() + io.size(), seconds);
  if (ec != std::errc() || p != io.data() + io.size() || seconds > max_lag_s_) {
    why = "replica: lagging (master_last_io_seconds_ago " + std::string(io.substr(0, 20)) +
          ", replica_max_lag " + std::to_string(max_lag_s_) + " s)";
    return ProbeVerdict::kDown;
  }
  return ProbeVerdict::kUp;
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
