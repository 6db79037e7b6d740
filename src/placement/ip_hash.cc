// SPDX-License-Identifier: Apache-2.0
#include "chash/ip_hash.h"

#include <arpa/inet.h>

#include <cstring>

#include "chash/error.h"
#include "chash/hash.h"

namespace chash {

std::optional<IpAddress> parse_ip(std::string_view text) noexcept {
  // Longest textual IPv6 address with brackets and a port: "[" + 45 + "]:65535".
  if (text.empty() || text.size() > 60) return std::nullopt;
  std::string_view host = text;
  std::string_view port;
  if (host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
      if (port.empty()) return std::nullopt;
    }
    host = host.substr(1, close - 1);
  } else if (host.find(':') == host.rfind(':') && host.find(':') != std::string_view::npos) {
    // Exactly one colon: IPv4 with a port.
    const std::size_t colon = host.find(':');
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
    if (port.empty()) return std::nullopt;
  }
  if (port.size() > 5) return std::nullopt;
  unsigned port_value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return std::nullopt;
    port_value = port_value * 10 + static_cast<unsigned>(c - '0');
  }
  if (port_value > 65535) return std::nullopt;

  char buf[64];
  std::memcpy(buf, host.data(), host.size());
  buf[host.size()] = '\0';
  IpAddress addr;
  if (inet_pton(AF_INET, buf, addr.bytes.data()) == 1) {
    addr.length = 4;
    return addr;
  }
  if (inet_pton(AF_INET6, buf, addr.bytes.data()) == 1) {
    addr.length = 16;
    return addr;
  }
  return std::nullopt;
}

IpAddress parse_ip_or_throw(std::string_view text) {
  auto a = parse_ip(text);
  if (!a) {
    throw Error(ErrorCode::kParse,
                "not an IPv4 or IPv6 address: \"" + std::string(text.substr(0, 64)) + "\"");
  }
  return *a;
}

std::string format_ip(const IpAddress& addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(addr.length == 4 ? AF_INET : AF_INET6, addr.bytes.data(), buf, sizeof buf);
  return buf;
}

std::uint64_t ip_key_hash(const IpAddress& addr) noexcept {
  return hash::xxh3_64(
      std::string_view(reinterpret_cast<const char*>(addr.bytes.data()), addr.length));
}

NginxIpHashTable NginxIpHashTable::build(std::span<const Node> nodes) {
  validate_nodes(nodes);
  NginxIpHashTable t;
  for (const Node& n : nodes) {
    t.weights_.push_back(n.weight);
    t.total_weight_ += n.weight;
  }
  return t;
}

NodeId NginxIpHashTable::pick(const IpAddress& addr, const DownSet& down) const noexcept {
  // ngx_http_upstream_get_ip_hash_peer(): IPv4 hashes its first 3 octets, IPv6 all 16.
  const std::size_t len = addr.length == 4 ? 3 : addr.length;
  std::uint32_t hash = 89;
  NodeId p = 0;
  for (int tries = 0; tries <= 20; ++tries) {
    for (std::size_t i = 0; i < len; ++i) hash = (hash * 113 + addr.bytes[i]) % 6271;
    std::uint64_t w = hash % total_weight_;
    p = 0;
    while (w >= weights_[p]) {
      w -= weights_[p];
      ++p;
    }
    if (!down.contains(p)) return p;
  }
  // nginx would switch to round robin here; take the next node that is up.
  for (std::size_t i = 1; i <= weights_.size(); ++i) {
    const NodeId q = static_cast<NodeId>((p + i) % weights_.size());
    if (weights_[q] > 0 && !down.contains(q)) return q;
  }
  return kNoNode;
}

}  // namespace chash
