// SPDX-License-Identifier: Apache-2.0
// chash-proxy — one switch from a pool's protocol to its session classes.
//
// Each protocol lives in proto/<name>/ and provides a client side (created per accepted
// connection; owns itself and frees itself through the worker's loop when it closes), for
// key-sharding protocols a BackendConn, and a health probe's conversation (ProbeCheck).
// Nothing else in core/ names a protocol.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "config/config.h"
#include "core/connection.h"
#include "membership/probe_check.h"
#include "membership/topology.h"

namespace chash::proxy {

class Worker;

// A new client connection `fd` (non-blocking) on pool `pool_index`; `peer` is its address.
void accept_client(Worker& worker, std::size_t pool_index, int fd, const sockaddr_storage& peer,
                   socklen_t peer_len);

// A connection to backend `node` of `pool` (not started).
std::unique_ptr<BackendConn> make_backend(Worker& worker, std::shared_ptr<const Pool> pool,
                                          NodeId node);

// The health probe's conversation with `server` of `pool` (membership/probe_check.h).
std::unique_ptr<ProbeCheck> make_probe_check(const PoolConfig& pool, const ServerConfig& server);

// What a client over client_connections is told before it is closed ("" = close silently).
std::string_view too_many_clients_reply(PoolProtocol protocol) noexcept;

}  // namespace chash::proxy
