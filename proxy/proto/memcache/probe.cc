// SPDX-License-Identifier: Apache-2.0
#include "proto/memcache/probe.h"

namespace chash::proxy::memcache {

namespace {
constexpr std::size_t kMaxVersionLine = 1024;  // a version line is a few dozen bytes
}  // namespace

ProbeVerdict Probe::check(std::string_view in, std::string& why) {
  if (in.find("\r\n") == std::string_view::npos) {
    if (in.size() <= kMaxVersionLine) return ProbeVerdict::kNeedMore;
    why = "unexpected version reply";
    return ProbeVerdict::kDown;
  }
  if (in.starts_with("VERSION ")) return ProbeVerdict::kUp;
  why = "unexpected version reply";
  return ProbeVerdict::kDown;
}

}  // namespace chash::proxy::memcache
