// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the protocol seam of a health probe: what it sends, how its reply is read.
//
// The prober (membership/health.h) owns the connection, the timeout and the up/down bookkeeping; a
// ProbeCheck owns only the conversation, one per protocol in proto/<name>/probe.h, made by
// make_probe_check() (core/protocols.h):
//   redis:    [AUTH password] PING          -> every reply not an error, the last "+PONG\r\n"
//   memcache: "version\r\n"                 -> one line starting "VERSION "
//   tcp:      nothing                       -> the connect completing is the check
#pragma once

#include <string>
#include <string_view>

namespace chash::proxy {

enum class ProbeVerdict : unsigned char { kNeedMore, kUp, kDown };

class ProbeCheck {
 public:
  virtual ~ProbeCheck() = default;
  // The bytes to write once connected; empty: a completed connect alone means up.
  virtual const std::string& request() const noexcept = 0;
  // `in` is every byte received so far (it only grows between calls). kNeedMore until the
  // reply is complete; kDown sets `why` ("probe refused", "unexpected PING reply", ...).
  virtual ProbeVerdict check(std::string_view in, std::string& why) = 0;
};

}  // namespace chash::proxy
