// SPDX-License-Identifier: Apache-2.0
// chash-proxy — binary hand-over: a new chash-proxy takes the listening sockets of a running
// one, so an upgrade refuses no connection attempt and cuts no request.
//
// As HAProxy's `-x` and nginx's binary upgrade: the sockets themselves (not their addresses)
// move, so connections waiting in their accept queues are accepted by the new process instead
// of being reset, and no bind can fail half-way. The old process serves a unix socket
// (`--handover-socket PATH`, mode 0600); the new one (`--handover-socket PATH --takeover`):
//
//   new → old   "TAKE 1\n"
//   old → new   one message carrying every listening socket (SCM_RIGHTS) and their keys, one
//               per line ("pool 127.0.0.1:22121", "admin 127.0.0.1:22222", ...)
//   ...         the new process starts: it accepts on the sockets whose address its own config
//               still has (closing the rest), its workers run; both processes accept meanwhile
//   new → old   "RELEASE\n"
//   old → new   "OK <pid>\n"; the old process stops accepting, drains (drain_timeout) and exits
//
// Before its workers start, the new process also asks, on a second connection, for what the old
// one knows of its backends' health (as HAProxy's server-state-file carries servers' state across
// a reload): "STATE 1\n", answered by messages of whole lines and a last "END\n"
// (Proxy::handover_state says what the lines hold). Without it a backend the old process had
// ejected took the new one's first requests again — and failed them — until it was ejected anew
// (the soak's hand-over lost 2 requests to a backend that was down), and the keys written
// elsewhere while it was out were forgotten, so its return could serve them stale. A second
// connection, so an older chash-proxy that does not know STATE closes only that one (and is
// taken over without state, as before).
//
// Then the new process serves PATH itself, for the next upgrade. If the new process fails
// before RELEASE (bad config, crash), the old one just keeps running.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "net/event_loop.h"

namespace chash::proxy {

// The sockets a hand-over carries, by key.
using HandoverSockets = std::map<std::string, int>;

// The old process's side, on the control loop (non-blocking; a peer that stalls is closed at
// its deadline and delays nothing).
class HandoverServer : public net::Pollable {
 public:
  // sockets(): what to send now (fds stay the caller's). on_release(): the new process runs;
  // called once, then this server stops listening. state(): the answer to STATE, whole lines.
  HandoverServer(net::EventLoop& loop, int listen_fd, std::function<HandoverSockets()> sockets,
                 std::function<void()> on_release,
                 std::function<std::string()> state = nullptr);
  ~HandoverServer() override;
  HandoverServer(const HandoverServer&) = delete;
  HandoverServer& operator=(const HandoverServer&) = delete;
  void on_event(std::uint32_t events) override;

  // Binds PATH (replacing a stale socket file), mode 0600. -1 with `error` on failure.
  static int listen(const std::string& path, std::string& error);

 private:
  class Conn;
  void finish(Conn* c);
  void release();
  net::EventLoop& loop_;
  int fd_;
  std::function<HandoverSockets()> sockets_;
  std::function<void()> on_release_;
  std::function<std::string()> state_;
  std::map<Conn*, std::unique_ptr<Conn>> conns_;
  bool released_ = false;
};

// The new process's side (blocking, with deadlines: it runs before the new process serves).
class HandoverClient {
 public:
  // Connects to PATH and receives the sockets. Throws std::runtime_error saying what failed.
  explicit HandoverClient(const std::string& path,
                          std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~HandoverClient();  // closes sockets nobody took and the connection
  HandoverClient(const HandoverClient&) = delete;
  HandoverClient& operator=(const HandoverClient&) = delete;

  // The socket for `key` (ownership passes to the caller), or -1.
  int take(const std::string& key);
  // Tells the old process to stop accepting and drain; returns its pid. Throws on failure.
  long release();
  // The old process's STATE answer (the lines before END), or nullopt with `error` when it has
  // none to give (an older chash-proxy), or the answer was cut or over the limit.
  std::optional<std::string> state(std::string& error) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::chrono::milliseconds timeout_;
  HandoverSockets sockets_;
};

}  // namespace chash::proxy
