// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/cluster_nodes.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace chash::proxy::redis {

namespace {

constexpr std::size_t kMaxNodes = 4096;  // more lines than this is not a cluster we can front

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      if (start < s.size()) out.push_back(s.substr(start));
      break;
    }
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

template <class T>
bool number(std::string_view s, T& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool has_flag(std::string_view flags, std::string_view f) {
  for (const auto x : split(flags, ',')) {
    if (x == f) return true;
  }
  return false;
}

// "ip:port@cport[,hostname]" -> "ip:port"; "" when it has no port. ":port" (a node that does not
// know its address) takes `from`'s host.
std::string address_of(std::string_view field, const std::string& from) {
  field = field.substr(0, field.find(','));
  field = field.substr(0, field.find('@'));
  const std::size_t colon = field.rfind(':');
  if (colon == std::string_view::npos) return "";
  std::uint32_t port = 0;
  if (!number(field.substr(colon + 1), port) || port == 0 || port > 65535) return "";
  std::string_view host = field.substr(0, colon);
  if (host.empty()) host = std::string_view(from).substr(0, from.rfind(':'));
  if (host.empty() || host.size() > 255) return "";
  std::string h(host);
  // IPv6 literals in brackets, as Address parses and prints them.
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  return h + ":" + std::string(field.substr(colon + 1));
}

struct Line {
  ClusterNodeInfo info;
  bool master = false;
  bool myself = false;
  std::string master_id;
  std::uint64_t epoch = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
  std::uint32_t migrating = 0;
};

}  // namespace

bool ClusterMap::same_topology(const ClusterMap& o) const noexcept {
  auto same_nodes = [](const std::vector<ClusterNodeInfo>& a,
                       const std::vector<ClusterNodeInfo>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].id != b[i].id || a[i].address != b[i].address || a[i].master != b[i].master ||
          a[i].failed != b[i].failed)
        return false;
    }
    return true;
  };
  if (!same_nodes(masters, o.masters) || !same_nodes(replicas, o.replicas)) return false;
  if ((owner == nullptr) != (o.owner == nullptr)) return false;
  return owner == nullptr || *owner == *o.owner;
}

std::vector<std::string> ClusterMap::ranges(std::size_t master) const {
  std::vector<std::string> out;
  if (owner == nullptr) return out;
  const auto& o = *owner;
  for (std::uint32_t s = 0; s < kRedisSlots;) {
    if (o[s] != master) {
      ++s;
      continue;
    }
    std::uint32_t e = s;
    while (e + 1 < kRedisSlots && o[e + 1] == master) ++e;
    out.push_back(s == e ? std::to_string(s) : std::to_string(s) + "-" + std::to_string(e));
    s = e + 1;
  }
  return out;
}

bool parse_cluster_nodes(std::string_view text, const std::string& from, ClusterMap& out,
                         std::string& error) {
  std::vector<Line> lines;
  for (std::string_view raw : split(text, '\n')) {
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.empty()) continue;
    if (lines.size() == kMaxNodes) {
      error = "more than " + std::to_string(kMaxNodes) + " nodes";
      return false;
    }
    const auto f = split(raw, ' ');
    if (f.size() < 8) {
      error = "a CLUSTER NODES line has " + std::to_string(f.size()) + " fields, not 8 or more";
      return false;
    }
    Line l;
    l.info.id = std::string(f[0].substr(0, 64));
    const std::string_view flags = f[2];
    l.myself = has_flag(flags, "myself");
    l.master = has_flag(flags, "master");
    l.info.failed = has_flag(flags, "fail");
    if (has_flag(flags, "handshake") || has_flag(flags, "noaddr")) continue;
    l.info.address = address_of(f[1], l.myself ? from : std::string());
    if (l.info.address.empty()) continue;  // no address a client could use
    if (f[3] != "-") l.master_id = std::string(f[3].substr(0, 64));
    if (!number(f[6], l.epoch)) {
      error = "bad config epoch '" + std::string(f[6].substr(0, 40)) + "'";
      return false;
    }
    for (std::size_t i = 8; i < f.size(); ++i) {
      const std::string_view t = f[i];
      if (t.front() == '[') {  // [slot->-id] migrating, [slot-<-id] importing
        ++l.migrating;
        continue;
      }
      const std::size_t dash = t.find('-');
      std::uint32_t a = 0, b = 0;
      if (!number(t.substr(0, dash), a) ||
          (dash != std::string_view::npos && !number(t.substr(dash + 1), b))) {
        error = "bad slot '" + std::string(t.substr(0, 40)) + "'";
        return false;
      }
      if (dash == std::string_view::npos) b = a;
      if (a > b || b >= kRedisSlots) {
        error = "slot range '" + std::string(t.substr(0, 40)) + "' outside 0-16383";
        return false;
      }
      l.ranges.emplace_back(a, b);
    }
    lines.push_back(std::move(l));
  }
  ClusterMap m;
  m.source = from;
  std::map<std::string, std::size_t> master_index;  // by id
  std::vector<const Line*> masters, replicas;
  for (const auto& l : lines) (l.master ? masters : replicas).push_back(&l);
  auto by_address = [](const Line* a, const Line* b) { return a->info.address < b->info.address; };
  std::sort(masters.begin(), masters.end(), by_address);
  std::sort(replicas.begin(), replicas.end(), by_address);
  auto owner = std::make_shared<std::array<NodeId, kRedisSlots>>();
  owner->fill(kNoNode);
  std::vector<std::uint64_t> epoch(kRedisSlots, 0);
  for (const Line* l : masters) {
    const auto id = static_cast<NodeId>(m.masters.size());
    master_index.emplace(l->info.id, id);
    m.masters.push_back(l->info);
    m.migrating += l->migrating;
    for (const auto& [a, b] : l->ranges) {
      for (std::uint32_t s = a; s <= b; ++s) {
        // Two masters claiming a slot (views in flux): the higher config epoch wins, as in
        // the cluster itself.
        if ((*owner)[s] == kNoNode || l->epoch > epoch[s]) {
          (*owner)[s] = id;
          epoch[s] = l->epoch;
        }
      }
    }
  }
  for (std::uint32_t s = 0; s < kRedisSlots; ++s) {
    if ((*owner)[s] == kNoNode) continue;
    ++m.covered;
    ++m.masters[(*owner)[s]].slots;
  }
  for (const Line* l : replicas) {
    ClusterNodeInfo r = l->info;
    const auto it = master_index.find(l->master_id);
    if (it == master_index.end()) continue;  // a replica of a node we do not know
    r.master = static_cast<std::uint32_t>(it->second);
    m.replicas.push_back(std::move(r));
  }
  if (m.masters.empty()) {
    error = "no master in the CLUSTER NODES reply";
    return false;
  }
  m.owner = std::move(owner);
  out = std::move(m);
  return true;
}

}  // namespace chash::proxy::redis
