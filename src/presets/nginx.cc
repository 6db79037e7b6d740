// SPDX-License-Identifier: Apache-2.0
// nginx 1.22.1 upstream balancers (http and stream: the stream modules are the same code):
//   nginx-hash-consistent  `hash $key consistent`  ngx_http_upstream_hash_module.c, *_chash_*
//   nginx-hash             `hash $key`             the same file, *_get_hash_peer
//   nginx-ip-hash          `ip_hash`               ngx_http_upstream_ip_hash_module.c
//
// A node is one `server` line of the upstream block: its name exactly as written there
// ("10.0.0.1:8080", "10.0.0.2" for port 80, "[::1]:8080", "unix:/run/app.sock") and its weight=.
// Weight 0 stands for `server NAME down;`: nginx keeps a down server in every hash walk with its
// default weight 1 and skips it only when it is drawn, so its keys go to their next choice and no
// other key moves. Verified on every key against Debian's nginx 1.22.1 run end to end, both
// modules (tests/compat/nginx/, docs/compat/nginx.md).
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/ip_hash.h"
#include "chash/placement.h"
#include "chash/ring.h"
#include "common.h"
#include "registry.h"

namespace chash::presets {
namespace {

// Each balancer gives up after 20 retries within one request ("tries > 20") and hands the
// request to round robin, which is stateful; chash continues deterministically (per preset).
constexpr int kMaxTries = 20;

// ---- The upstream's servers ---------------------------------------------------------------------

// The server list as ngx_http_upstream_init_round_robin() sees it: weights in list order, down
// servers at weight 1, and what round robin would pick first where nginx falls back to it.
struct Servers {
  std::vector<std::uint32_t> weight;      // nginx's weight: a down server (weight 0 here) counts 1
  std::vector<std::uint64_t> cumulative;  // cumulative[i] = weight[0] + ... + weight[i]
  std::vector<std::uint8_t> down;         // 1 for `server NAME down;`
  bool any_down = false;
  // Up servers in the order nginx's smooth weighted round robin first picks them from a fresh
  // state: highest weight first, list order among equals (ngx_http_upstream_get_peer takes the
  // first of equal current_weight). Answers for what nginx round-robins: an empty key, and an
  // upstream with a single server (peers->single).
  std::vector<NodeId> round_robin;

  std::uint64_t total() const noexcept { return cumulative.back(); }
  std::size_t size() const noexcept { return weight.size(); }

  // The server `w` (< total) falls on when the weights are walked in list order, as
  // `while (w >= peer->weight) { w -= peer->weight; peer = peer->next; }` does.
  NodeId walk(std::uint64_t w) const noexcept {
    return static_cast<NodeId>(std::upper_bound(cumulative.begin(), cumulative.end(), w) -
                               cumulative.begin());
  }
};

Servers make_servers(std::span<const Node> nodes) {
  validate_nodes(nodes);
  Servers s;
  std::uint64_t sum = 0;
  for (const Node& n : nodes) {
    const bool down = n.weight == 0;
    s.weight.push_back(down ? 1 : n.weight);
    sum += s.weight.back();
    s.cumulative.push_back(sum);
    s.down.push_back(down ? 1 : 0);
    s.any_down = s.any_down || down;
  }
  for (NodeId i = 0; i < nodes.size(); ++i) {
    if (s.down[i] == 0) s.round_robin.push_back(i);
  }
  std::stable_sort(s.round_robin.begin(), s.round_robin.end(),
                   [&](NodeId a, NodeId b) { return s.weight[a] > s.weight[b]; });
  return s;
}

std::size_t copy_round_robin(const Servers& s, std::span<NodeId> out) {
  const std::size_t n = std::min(out.size(), s.round_robin.size());
  std::copy_n(s.round_robin.begin(), n, out.begin());
  return n;
}

// ---- hash and ip_hash: a hash sequence walked over the weights ----------------------------------
// ngx_http_upstream_get_hash_peer() and ngx_http_upstream_get_ip_hash_peer() share one loop: take
// the next value of the key's hash sequence, walk the weights with value % total_weight, and if
// that server is down or was already tried in this request, count a try and take the next value.
// A retry (proxy_next_upstream) continues the same sequence and the same try count. After 20
// tries nginx round-robins; chash then takes the next up servers in list order after the last
// server drawn (as NginxIpHashTable does).
template <class Sequence>
std::size_t walk_n(const Servers& s, Sequence seq, std::span<NodeId> out) {
  std::size_t n = 0;
  if (out.empty()) return 0;
  internal::SeenSet tried(s.size());
  NodeId last = 0;
  for (int tries = 0; n < out.size() && tries <= kMaxTries;) {
    last = s.walk(seq() % s.total());
    if (s.down[last] != 0 || tried.contains(last)) {
      ++tries;
      continue;
    }
    tried.insert(last);
    out[n++] = last;
  }
  for (std::size_t i = 1; n < out.size() && i <= s.size(); ++i) {
    const auto q = static_cast<NodeId>((last + i) % s.size());
    if (s.down[q] == 0 && tried.insert(q)) out[n++] = q;
  }
  return n;
}

// `hash $key`: value i is the running sum of ((crc32([i] key) >> 16) & 0x7fff), where [i] is
// the attempt number in decimal, left out for the first (ngx_http_upstream_get_hash_peer, after
// Cache::Memcached). zlib's crc32 continues a finished CRC, so crc32(crc32(0, "i"), key) is the
// CRC of the concatenation without copying the key.
class HashSequence {
 public:
  explicit HashSequence(std::string_view key) noexcept : key_(key) {}

  std::uint32_t operator()() noexcept {
    std::uint32_t crc;
    if (rehash_ == 0) {
      crc = hash::crc32(key_);
    } else {
      char digits[24];
      char* end = digits + sizeof digits;
      char* p = end;
      for (std::uint64_t v = rehash_; v != 0; v /= 10) *--p = static_cast<char>('0' + v % 10);
      uLong c = ::crc32_z(0L, reinterpret_cast<const Bytef*>(p), static_cast<z_size_t>(end - p));
      c = ::crc32_z(c, reinterpret_cast<const Bytef*>(key_.data()), key_.size());
      crc = static_cast<std::uint32_t>(c);
    }
    ++rehash_;
    sum_ += (crc >> 16) & 0x7fff;  // hp->hash is a uint32_t; 21 terms cannot overflow it
    return sum_;
  }

 private:
  std::string_view key_;
  std::uint64_t rehash_ = 0;
  std::uint32_t sum_ = 0;
};

class NginxHashPreset final : public Preset {
 public:
  explicit NginxHashPreset(Servers servers) : s_(std::move(servers)) {}

  NodeId route(std::string_view key) const noexcept override {
    // An empty key or a single server: nginx round-robins (hp->key.len == 0, peers->single).
    if (key.empty() || s_.size() == 1) return s_.round_robin.front();
    HashSequence seq(key);
    NodeId p = 0;
    for (int tries = 0; tries <= kMaxTries; ++tries) {
      p = s_.walk(seq() % s_.total());
      if (s_.down[p] == 0) return p;
    }
    for (std::size_t i = 1; i <= s_.size(); ++i) {
      const auto q = static_cast<NodeId>((p + i) % s_.size());
      if (s_.down[q] == 0) return q;
    }
    return kNoNode;  // unreachable: make_servers requires an up server
  }

  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    if (key.empty() || s_.size() == 1) return copy_round_robin(s_, out);
    return walk_n(s_, HashSequence(key), out);
  }

  std::size_t node_count() const noexcept override { return s_.size(); }

 private:
  Servers s_;
};

// ---- ip_hash ------------------------------------------------------------------------------------
// The key is the client address as text ("192.0.2.7", "2001:db8::1"; a ":port" is ignored).
// route() is NginxIpHashTable, which is nginx's walk; route_n() continues the same sequence the
// way a retry does: hash = 89, then per attempt hash = (hash * 113 + byte) % 6271 over the first
// 3 bytes of an IPv4 address or all 16 of IPv6.
class IpHashSequence {
 public:
  explicit IpHashSequence(const IpAddress& a) noexcept : addr_(a) {}

  std::uint32_t operator()() noexcept {
    const std::size_t len = addr_.length == 4 ? 3 : addr_.length;
    for (std::size_t i = 0; i < len; ++i) hash_ = (hash_ * 113 + addr_.bytes[i]) % 6271;
    return hash_;
  }

 private:
  IpAddress addr_;
  std::uint32_t hash_ = 89;
};

class NginxIpHashPreset final : public Preset {
 public:
  NginxIpHashPreset(Servers servers, NginxIpHashTable table, DownSet down)
      : s_(std::move(servers)), table_(std::move(table)), down_(std::move(down)) {}

  NodeId route(std::string_view key) const noexcept override {
    const auto addr = parse_ip(key);
    if (!addr) return kNoNode;
    return table_.pick(*addr, down_);
  }

  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    const auto addr = parse_ip(key);
    if (!addr) return 0;
    if (s_.size() == 1) return copy_round_robin(s_, out);  // peers->single: round robin
    return walk_n(s_, IpHashSequence(*addr), out);
  }

  std::size_t node_count() const noexcept override { return s_.size(); }

 private:
  Servers s_;
  NginxIpHashTable table_;
  DownSet down_;
};

std::unique_ptr<Preset> make_ip_hash(std::span<const Node> nodes) {
  Servers s = make_servers(nodes);
  // NginxIpHashTable walks the weights as given; a down server keeps nginx's weight 1 there and
  // is skipped through the DownSet, as ngx_http_upstream_get_ip_hash_peer skips peer->down.
  std::vector<Node> as_nginx(nodes.begin(), nodes.end());
  DownSet down(nodes.size());
  for (std::size_t i = 0; i < as_nginx.size(); ++i) {
    as_nginx[i].weight = s.weight[i];
    if (s.down[i] != 0) down.set(static_cast<NodeId>(i), true);
  }
  NginxIpHashTable table = NginxIpHashTable::build(as_nginx);
  return std::make_unique<NginxIpHashPreset>(std::move(s), std::move(table), std::move(down));
}

// ---- hash consistent ----------------------------------------------------------------------------
// ngx_http_upstream_init_chash(): per server, in list order, weight * 160 points. The string
// hashed is the server's name exactly as written in the upstream block, cut at its port: HOST
// "\0" PORT, where PORT is the run of digits after the last ':' (none when the name does not end
// in ":digits" — "10.0.0.2" hashes as "10.0.0.2\0", not with nginx's default ":80"), and a
// "unix:" name is HOST = the path. Point j is crc32(HOST "\0" PORT prev) with prev the previous
// point's 4 bytes little-endian (0 for the first), after Cache::Memcached::Fast. The points are
// sorted with qsort — glibc 2.36's qsort is a merge sort, so equal points keep list order — and
// duplicates dropped, keeping the first. A key's position is crc32(key); its server owns the
// first point >= it, wrapping to the first point.

struct HostPort {
  std::string_view host;
  std::string_view port;
};

HostPort split_server_name(std::string_view name) noexcept {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (name.size() >= 5 && lower(name[0]) == 'u' && lower(name[1]) == 'n' && lower(name[2]) == 'i' &&
      lower(name[3]) == 'x' && name[4] == ':') {
    return {name.substr(5), {}};
  }
  // Only digits between the last ':' and the end? Then that is the port.
  for (std::size_t j = 0; j < name.size(); ++j) {
    const char c = name[name.size() - j - 1];
    if (c == ':') return {name.substr(0, name.size() - j - 1), name.substr(name.size() - j)};
    if (c < '0' || c > '9') break;
  }
  return {name, {}};
}

RingTable chash_ring(std::span<const Node> nodes, const Servers& s) {
  const std::uint64_t total = s.total() * 160;
  if (total > kMaxRingPoints) {
    throw Error(ErrorCode::kLimitExceeded,
                "nginx would make " + std::to_string(total) +
                    " points (160 x the weights summed); chash takes at most " +
                    std::to_string(kMaxRingPoints));
  }
  std::vector<RingTable::Point> points;
  points.reserve(static_cast<std::size_t>(total));
  std::string buf;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const HostPort hp = split_server_name(nodes[i].name);
    buf.assign(hp.host);
    buf.push_back('\0');
    buf.append(hp.port);
    const std::size_t prefix = buf.size();
    std::uint32_t prev = 0;
    for (std::uint32_t j = 0; j < s.weight[i] * 160; ++j) {
      buf.resize(prefix);
      for (int b = 0; b < 4; ++b) buf.push_back(static_cast<char>(prev >> (8 * b) & 0xff));
      prev = hash::crc32(buf);
      points.push_back({prev, static_cast<NodeId>(i)});
    }
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.position < b.position; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const auto& a, const auto& b) { return a.position == b.position; }),
               points.end());
  return RingTable::from_points(std::move(points), nodes.size(), RingSuccessor::kGreaterOrEqual);
}

class NginxConsistentPreset final : public Preset {
 public:
  NginxConsistentPreset(Servers servers, RingTable ring)
      : s_(std::move(servers)), ring_(std::move(ring)) {}

  // ngx_http_upstream_get_chash_peer(): the server of the owning point, or, when it is down,
  // the server of the next point, and so on. nginx looks at 21 points and then round-robins;
  // chash keeps walking the ring (every up server has points, so the walk ends).
  NodeId route(std::string_view key) const noexcept override {
    if (key.empty() || s_.size() == 1) return s_.round_robin.front();
    std::size_t i = ring_.index_of(hash::crc32(key));
    const auto owners = ring_.owners();
    if (!s_.any_down) return owners[i];
    for (std::size_t step = 0; step < owners.size(); ++step) {
      if (s_.down[owners[i]] == 0) return owners[i];
      if (++i == owners.size()) i = 0;
    }
    return kNoNode;  // unreachable: make_servers requires an up server
  }

  // A retry stays on the point it stopped at and skips the servers already tried, so nginx's
  // failover order is the distinct up servers clockwise from the owning point (exact while the
  // walk needs at most 20 steps past the owner; nginx round-robins after that).
  std::size_t route_n(std::string_view key, std::span<NodeId> out) const override {
    if (key.empty() || s_.size() == 1) return copy_round_robin(s_, out);
    std::size_t n = 0;
    if (out.empty()) return 0;
    ring_.visit(hash::crc32(key), [&](NodeId id) {
      if (s_.down[id] == 0) out[n++] = id;
      return n < out.size();
    });
    return n;
  }

  std::size_t node_count() const noexcept override { return s_.size(); }
  const RingTable* ring32() const noexcept override { return &ring_; }

 private:
  Servers s_;
  RingTable ring_;
};

}  // namespace

std::unique_ptr<Preset> make_nginx(std::string_view name, std::span<const Node> nodes,
                                   const PresetOptions& options) {
  // nginx has no hash, hash tag or point-count setting: the key is whatever `hash` is given
  // (a variable), the hash is crc32 and the points 160 per unit of weight.
  reject_options(name, options, /*hash=*/false, /*hash_tag=*/false, /*vnodes=*/false);
  if (name == "nginx-ip-hash") return make_ip_hash(nodes);
  Servers s = make_servers(nodes);
  if (name == "nginx-hash") return std::make_unique<NginxHashPreset>(std::move(s));
  if (name == "nginx-hash-consistent") {
    RingTable ring = chash_ring(nodes, s);
    return std::make_unique<NginxConsistentPreset>(std::move(s), std::move(ring));
  }
  throw Error(ErrorCode::kUnsupported, "not an nginx preset: " + std::string(name.substr(0, 64)));
}

}  // namespace chash::presets
