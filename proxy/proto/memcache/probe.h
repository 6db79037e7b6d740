// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the memcached health probe: "version\r\n", answered "VERSION <text>\r\n".
//
// Any other first line (ERROR, SERVER_ERROR ...), or 1 KiB without a line end, means down
// ("unexpected version reply").
#pragma once

#include <string>
#include <string_view>

#include "membership/probe_check.h"

namespace chash::proxy::memcache {

class Probe final : public ProbeCheck {
 public:
  const std::string& request() const noexcept override { return request_; }
  ProbeVerdict check(std::string_view in, std::string& why) override;

 private:
  std::string request_ = "version\r\n";
};

}  // namespace chash::proxy::memcache
