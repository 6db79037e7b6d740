// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the admin HTTP port: GET /metrics, GET /status (or /), POST /reload.
//
// HTTP/1.1 with one request per connection (Connection: close), served on the control loop
// with blocking 1 s socket timeouts: the exchanges are tiny and rare, and a slow admin client
// delays only health probes and reloads, never traffic (workers run on their own threads).
// What is shown is rendered by the handlers (core/status.h); this file only speaks HTTP.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "net/event_loop.h"

namespace chash::proxy {

class AdminServer : public net::Pollable {
 public:
  struct Handlers {
    std::function<std::string()> metrics;              // GET /metrics (Prometheus text)
    std::function<std::string()> status;               // GET /status (JSON)
    std::function<bool(std::string& message)> reload;  // POST /reload: 200 when true, else 409
  };
  // Serves `listen_fd` (non-blocking, listening) on `loop`; the caller keeps the fd.
  AdminServer(net::EventLoop& loop, int listen_fd, Handlers handlers);

  void on_event(std::uint32_t events) override;

  // The whole HTTP response to the request bytes `request` (the head is enough).
  std::string respond(std::string_view request) const;

 private:
  void serve(int c) const;

  int fd_;
  Handlers handlers_;
};

}  // namespace chash::proxy
