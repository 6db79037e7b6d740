// SPDX-License-Identifier: Apache-2.0
// chash-proxy — non-blocking sockets: listen, connect, small helpers over the BSD calls.
// Every function returns -1 (and sets errno) or false on failure; nothing throws.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"

namespace chash::proxy::net {

// A listening socket (non-blocking, close-on-exec, SO_REUSEADDR; unix sockets are unlinked
// first and chmod'ed to address.mode when given). -1 on failure; `error` says why.
int listen_on(const Address& address, int backlog, std::string& error);

// Starts a non-blocking connect; returns the fd (connection in progress or made) or -1.
// Host names are resolved with getaddrinfo, which blocks: never call this on a worker (workers
// connect with connect_addr to what membership/resolver.h resolved).
int connect_to(const Address& address, std::string& error);

// A unix path or a numeric IPv4/IPv6 address into `ss`, without any lookup; false for a name.
bool resolve_numeric(const Address& address, sockaddr_storage& ss, socklen_t& len);
// resolve_numeric, else getaddrinfo (blocking: start-up, the resolver thread, tests).
bool resolve(const Address& address, sockaddr_storage& ss, socklen_t& len, std::string& error);
// Starts a non-blocking connect to a resolved address; `what` names it in errors.
int connect_addr(const sockaddr_storage& ss, socklen_t len, std::string_view what,
                 std::string& error);

// The local port a TCP socket is bound to (0 if unknown).
std::uint16_t local_port(int fd);

bool set_nodelay(int fd);
bool set_keepalive(int fd);
// SO_ERROR of a socket whose connect completed: 0 on success.
int socket_error(int fd);

}  // namespace chash::proxy::net
