// SPDX-License-Identifier: Apache-2.0
// chash-proxy — one client's MULTI ... EXEC, held by the proxy until EXEC.
//
// Backend connections are shared by many clients, so the proxy cannot forward MULTI and let
// other clients' requests fall between it and EXEC. It queues the transaction instead: after
// MULTI each command is checked (known, arity, authenticated, ACL) and routed; its keys must all
// map to the transaction's one backend (the first key's, or the WATCHed keys'), else it is
// refused with an error and EXEC answers -EXECABORT, as Redis does after a queueing error. At
// EXEC the proxy writes "MULTI, the commands, EXEC" back to back on one connection: a worker
// enqueues them in one step, so no other request can fall between them, and the client gets
// the backend's EXEC reply. WATCH needs the backend connection to itself (WATCH state is per
// connection): the client gets a dedicated connection from WATCH until EXEC, DISCARD or
// UNWATCH (session.h).
//
// Bounded: at most kMaxCommands commands and the pool's max_request_bytes of them (both
// refused with an error that aborts the transaction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chash/node.h"

namespace chash::proxy::redis {

inline constexpr std::string_view kCrossBackendTransaction =
    "ERR chash-proxy: keys of a transaction must map to one backend (use a hash tag)";
inline constexpr std::string_view kExecAbort =
    "EXECABORT Transaction discarded because of previous errors.";

class Transaction {
 public:
  static constexpr std::size_t kMaxCommands = 10000;

  // MULTI (the caller has checked it is not nested). `node`: the WATCHed backend or kNoNode.
  void begin(NodeId node, std::size_t max_bytes);
  bool active() const noexcept { return active_; }
  // Queues one command's bytes (one RESP request) for backend `node` (kNoNode: a key-less
  // command such as PING, which goes wherever the others go). Returns "" or the error text (no
  // "-", no CRLF) to answer; an error also aborts the transaction (aborted()).
  std::string_view queue(NodeId node, std::string_view request);
  // A queueing error answered elsewhere (unknown command, arity, ACL): EXEC will abort.
  void abort() noexcept { aborted_ = true; }
  bool aborted() const noexcept { return aborted_; }
  NodeId node() const noexcept { return node_; }
  std::size_t size() const noexcept { return ends_.size(); }
  std::size_t bytes() const noexcept { return bytes_.size(); }
  // The i-th queued request's bytes.
  std::string_view command(std::size_t i) const noexcept {
    const std::size_t from = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_).substr(from, ends_[i] - from);
  }
  // EXEC or DISCARD: forget everything (the memory goes too).
  void reset();

 private:
  bool active_ = false;
  bool aborted_ = false;
  NodeId node_ = kNoNode;
  std::size_t max_bytes_ = 0;
  std::string bytes_;              // the queued requests, back to back
  std::vector<std::size_t> ends_;  // where each ends in bytes_
};

}  // namespace chash::proxy::redis
