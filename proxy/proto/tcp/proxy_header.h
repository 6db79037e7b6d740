// SPDX-License-Identifier: Apache-2.0
// chash-proxy — client addresses for tcp pools: the routing key and the PROXY protocol header.
//
// The key a hash pool routes a connection by is the client's IP address as text, the way
// nginx's $remote_addr prints it ("127.0.5.6", "2001:db8::1"); an IPv4-mapped IPv6 peer
// ("::ffff:10.1.2.3") counts as its IPv4 address, so a dual-stack listener keys an IPv4 client
// as an IPv4 listener would.
//
// The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2) is written to the
// backend before any client byte, so the backend sees the client's address instead of the
// proxy's. Check values (a client 127.0.5.6:40000 connected to the proxy at 127.0.0.1:8080):
//   v1: "PROXY TCP4 127.0.5.6 127.0.0.1 40000 8080\r\n"
//   v2: 0D 0A 0D 0A 00 0D 0A 51 55 49 54 0A | 21 | 11 | 00 0C | 7F 00 05 06 | 7F 00 00 01 |
//       9C 40 | 1F 90
//       (signature | version 2, command PROXY | AF_INET, STREAM | 12 address bytes | src | dst |
//        src port | dst port)
// A client that is not IPv4/IPv6 (a unix socket) gets "PROXY UNKNOWN\r\n" (v1) or the v2 LOCAL
// command with family UNSPEC and no address, which the spec requires receivers to accept.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "config/config.h"

namespace chash::proxy::tcp {

// `a` with an IPv4-mapped IPv6 address turned into the plain IPv4 one; anything else as is.
sockaddr_storage unmap_v4(const sockaddr_storage& a) noexcept;

// The client address as text (inet_ntop), IPv4-mapped shown as IPv4; "" for other families.
std::string ip_text(const sockaddr_storage& a);

// Appends the PROXY header `version` for a connection from `src` to `dst` (the proxy's own
// address of the accepted socket, getsockname). kNone appends nothing.
void append_proxy_header(std::string& out, ProxyProtocol version, const sockaddr_storage& src,
                         const sockaddr_storage& dst);

}  // namespace chash::proxy::tcp
