// SPDX-License-Identifier: Apache-2.0
// chash — IP hash: a client address as the key, for stickiness without cookies.
//
// Two ways to use an address:
//   - ip_key_hash(addr): the whole address (4 or 16 bytes) hashed with xxh3, for any table;
//   - NginxIpHashTable: nginx's ip_hash exactly (ngx_http_upstream_ip_hash_module.c): only the
//     first three octets of an IPv4 address count (a /24 sticks together), all 16 of IPv6;
//     hash = 89, then hash = (hash * 113 + byte) % 6271 per byte; w = hash % total_weight picks a
//     node by walking the weights in list order; a down node continues the hash over the address
//     bytes again, up to 20 tries.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/node.h"
#include "chash/placement.h"

namespace chash {

struct IpAddress {
  std::array<std::uint8_t, 16> bytes{};
  std::uint8_t length = 0;  // 4 (IPv4) or 16 (IPv6)

  std::span<const std::uint8_t> view() const noexcept { return {bytes.data(), length}; }
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// Parses "192.0.2.7", "2001:db8::1", and the same with a port: "192.0.2.7:5000",
// "[2001:db8::1]:5000" (the port is ignored). Returns nullopt for anything else.
std::optional<IpAddress> parse_ip(std::string_view text) noexcept;
// Like parse_ip, but throws Error(kParse) naming the text.
IpAddress parse_ip_or_throw(std::string_view text);
std::string format_ip(const IpAddress& addr);

// The whole-address key hash: xxh3_64 over the 4 or 16 address bytes.
std::uint64_t ip_key_hash(const IpAddress& addr) noexcept;

class NginxIpHashTable {
 public:
  static NginxIpHashTable build(std::span<const Node> nodes);

  // The node nginx's ip_hash picks for `addr`. After 20 down choices nginx falls back to round
  // robin; a stateless table cannot, so it returns the first node that is up in list order
  // after the last choice (kNoNode if all are down).
  NodeId pick(const IpAddress& addr, const DownSet& down = {}) const noexcept;

  std::size_t node_count() const noexcept { return weights_.size(); }

 private:
  std::vector<std::uint32_t> weights_;
  std::uint64_t total_weight_ = 0;
};

}  // namespace chash
