// SPDX-License-Identifier: Apache-2.0
// Everything the fleet reads from etcd is network bytes: the gateway's replies
// (membership/etcd/json.h) and the values under the prefix that anyone with access may write
// (membership/fleet/state.h). Each parser must accept or refuse any input with its error type,
// and what it accepts must encode and decode to the same value.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "membership/etcd/json.h"
#include "membership/fleet/state.h"

namespace etcd = chash::proxy::etcd;
namespace fleet = chash::proxy::fleet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    (void)etcd::parse_range(in);
  } catch (const etcd::EtcdError&) {
  }
  try {
    (void)etcd::parse_txn(in);
  } catch (const etcd::EtcdError&) {
  }
  try {
    (void)etcd::parse_watch(in);
  } catch (const etcd::EtcdError&) {
  }
  try {
    (void)etcd::parse_lease_grant(in);
    (void)etcd::parse_lease_keepalive(in);
  } catch (const etcd::EtcdError&) {
  }
  (void)etcd::parse_error(in);
  try {
    const std::string raw = etcd::base64_decode(in);
    if (etcd::base64_decode(etcd::base64_encode(raw)) != raw) std::abort();
  } catch (const etcd::EtcdError&) {
  }
  try {
    const fleet::PoolState s = fleet::decode_state(in);
    if (!(fleet::decode_state(fleet::encode_state(s)) == s)) std::abort();
    (void)fleet::view_of(s);
    (void)fleet::normalize(s);
  } catch (const std::invalid_argument&) {
  }
  try {
    const auto servers = fleet::decode_servers(in);
    if (servers.empty() || fleet::decode_servers(fleet::encode_servers(servers)) != servers) {
      std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
  try {
    const fleet::Registration r = fleet::decode_registration(in);
    (void)fleet::decode_registration(fleet::encode_registration(r));
  } catch (const std::invalid_argument&) {
  }
  try {
    (void)fleet::decode_marker(in);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
