// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the config file as a membership source: SIGHUP and POST /reload read it again
// and hand the new config to the proxy, which refuses it whole or applies it whole
// (Proxy::reload: listeners, then a new topology). A staggered reload of several proxies is
// not coordinated: docs/FLEET.md says what that does not guarantee, and etcd (fleet/source.h)
// what does.
#pragma once

#include <functional>
#include <string>

#include "config/config.h"
#include "membership/source.h"

namespace chash::proxy {

class FileSource : public MembershipSource {
 public:
  // Applies a parsed config; false (with `message`) when refused.
  using ApplyFn = std::function<bool(const ProxyConfig& config, std::string& message)>;
  // Called when the file cannot be read or parsed (the proxy counts and logs the refusal).
  using RefuseFn = std::function<void(const std::string& why)>;
  FileSource(std::string path, ApplyFn apply, RefuseFn refuse)
      : path_(std::move(path)), apply_(std::move(apply)), refuse_(std::move(refuse)) {}

  const char* kind() const noexcept override { return "file"; }
  void discover_now() override {}  // the proxy starts from the file it was given
  void start() override {}         // SIGHUP and POST /reload call reload()
  std::string status_json() const override { return {}; }
  std::string prometheus() const override { return {}; }  // the reload counters are the proxy's

  // Reads the file again and applies it; false (with `message`) when it cannot be read, does
  // not parse, or is refused.
  bool reload(std::string& message);
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  ApplyFn apply_;
  RefuseFn refuse_;
};

}  // namespace chash::proxy
