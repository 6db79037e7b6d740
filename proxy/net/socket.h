// SPDX-License-Identifier: Apache-2.0
// chash-proxy — non-blocking sockets: listen, connect, small helpers over the BSD calls.
// Every function returns -1 (and sets errno) or false on failure; nothing throws.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace chash::proxy::net {

// A listening socket (non-blocking, close-on-exec, SO_REUSEADDR; unix sockets are unlinked
// first and chmod'ed to address.mode when given). -1 on failure; `error` says why.
int listen_on(const Address& address, int backlog, std::string& error);

// Starts a non-blocking connect; returns the fd (connection in progress or made) or -1.
// Host names are resolved with getaddrinfo (blocking; done off the hot path by callers).
int connect_to(const Address& address, std::string& error);

// The local port a TCP socket is bound to (0 if unknown).
std::uint16_t local_port(int fd);

bool set_nodelay(int fd);
bool set_keepalive(int fd);
// SO_ERROR of a socket whose connect completed: 0 on success.
int socket_error(int fd);

}  // namespace chash::proxy::net
