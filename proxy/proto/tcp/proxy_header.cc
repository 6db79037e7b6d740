// SPDX-License-Identifier: Apache-2.0
#include "proto/tcp/proxy_header.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace chash::proxy::tcp {

namespace {

// proxy-protocol.txt section 2.2: the 12-byte v2 signature, then ver_cmd and fam.
constexpr unsigned char kV2Signature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                            0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
constexpr unsigned char kV2Proxy = 0x21;  // version 2, command PROXY
constexpr unsigned char kV2Local = 0x20;  // version 2, command LOCAL
constexpr unsigned char kV2Tcp4 = 0x11;   // AF_INET, SOCK_STREAM
constexpr unsigned char kV2Tcp6 = 0x21;   // AF_INET6, SOCK_STREAM
constexpr unsigned char kV2Unspec = 0x00;

std::uint16_t port_of(const sockaddr_storage& a) noexcept {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

void put16(std::string& out, std::uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v & 0xff);
}

}  // namespace

sockaddr_storage unmap_v4(const sockaddr_storage& a) noexcept {
  if (a.ss_family != AF_INET6) return a;
  const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&a);
  if (!IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) return a;
  sockaddr_storage out{};
  auto* s4 = reinterpret_cast<sockaddr_in*>(&out);
  s4->sin_family = AF_INET;
  s4->sin_port = s6->sin6_port;
  std::memcpy(&s4->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
  return out;
}

std::string ip_text(const sockaddr_storage& a) {
  const sockaddr_storage u = unmap_v4(a);
  char buf[INET6_ADDRSTRLEN] = {};
  if (u.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&u)->sin_addr, buf, sizeof buf);
  } else if (u.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&u)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

void append_proxy_header(std::string& out, ProxyProtocol version, const sockaddr_storage& src,
                         const sockaddr_storage& dst) {
  if (version == ProxyProtocol::kNone) return;
  const sockaddr_storage s = unmap_v4(src);
  const sockaddr_storage d = unmap_v4(dst);
  // Both ends must be of one family for TCP4/TCP6; anything else is UNKNOWN / LOCAL.
  const bool inet =
      s.ss_family == d.ss_family && (s.ss_family == AF_INET || s.ss_family == AF_INET6);
  if (version == ProxyProtocol::kV1) {
    if (!inet) {
      out += "PROXY UNKNOWN\r\n";
      return;
    }
    out += s.ss_family == AF_INET ? "PROXY TCP4 " : "PROXY TCP6 ";
    out += ip_text(s);
    out += ' ';
    out += ip_text(d);
    out += ' ';
    out += std::to_string(port_of(s));
    out += ' ';
    out += std::to_string(port_of(d));
    out += "\r\n";
    return;
  }
  out.append(reinterpret_cast<const char*>(kV2Signature), sizeof kV2Signature);
  if (!inet) {
    out += static_cast<char>(kV2Local);
    out += static_cast<char>(kV2Unspec);
    put16(out, 0);
    return;
  }
  out += static_cast<char>(kV2Proxy);
  if (s.ss_family == AF_INET) {
    out += static_cast<char>(kV2Tcp4);
    put16(out, 12);
    out.append(reinterpret_cast<const char*>(&reinterpret_cast<const sockaddr_in*>(&s)->sin_addr),
               4);
    out.append(reinterpret_cast<const char*>(&reinterpret_cast<const sockaddr_in*>(&d)->sin_addr),
               4);
  } else {
    out += static_cast<char>(kV2Tcp6);
    put16(out, 36);
    out.append(reinterpret_cast<const char*>(&reinterpret_cast<const sockaddr_in6*>(&s)->sin6_addr),
               16);
    out.append(reinterpret_cast<const char*>(&reinterpret_cast<const sockaddr_in6*>(&d)->sin6_addr),
               16);
  }
  put16(out, port_of(s));
  put16(out, port_of(d));
}

}  // namespace chash::proxy::tcp
