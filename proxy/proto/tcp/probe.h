// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the tcp health probe: nothing is sent; the connect completing means up (as
// HAProxy's plain `check` and nginx's passive checks). A backend that talks first is not read.
#pragma once

#include <string>
#include <string_view>

#include "membership/probe_check.h"

namespace chash::proxy::tcp {

class Probe final : public ProbeCheck {
 public:
  const std::string& request() const noexcept override { return request_; }
  // Not called by the prober (the request is empty); a connected socket is up.
  ProbeVerdict check(std::string_view, std::string&) override { return ProbeVerdict::kUp; }

 private:
  std::string request_;
};

}  // namespace chash::proxy::tcp
