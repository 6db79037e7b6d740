// SPDX-License-Identifier: Apache-2.0
#include "registry.h"

#include <string>

#include "chash/error.h"

namespace chash {

namespace {

struct Entry {
  PresetInfo info;
  presets::Factory factory;
};

// The presets that take PresetOptions::settings (the peer's own behaviours); every other preset
// refuses any, here, so that no factory can forget to.
bool takes_settings(const Entry& e) noexcept { return e.factory == presets::make_libmemcached; }

// One line per preset: which peer, which version was verified (docs/COMPATIBILITY.md has more).
constexpr Entry kPresets[] = {
    {{"ketama", "libmemcached 1.1.4 weighted ketama (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED)"},
     presets::make_libmemcached},
    {{"ketama-spy",
      "libmemcached 1.1.4 weighted ketama, MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY"},
     presets::make_libmemcached},
    {{"libketama", "libketama (the original, last.fm)"}, presets::make_libketama},
    {{"spymemcached", "spymemcached 2.12 KetamaNodeLocator (KetamaConnectionFactory, no weights)"},
     presets::make_spymemcached},
    {{"libmemcached-consistent",
      "libmemcached 1.1.4 MEMCACHED_DISTRIBUTION_CONSISTENT (unweighted)"},
     presets::make_libmemcached},
    {{"libmemcached-modula", "libmemcached 1.1.4 default distribution (modula)"},
     presets::make_libmemcached},
    {{"twemproxy", "twemproxy (nutcracker) 0.5.0 distribution: ketama"}, presets::make_twemproxy},
    {{"twemproxy-modula", "twemproxy (nutcracker) 0.5.0 distribution: modula"},
     presets::make_twemproxy},
    {{"nginx-hash-consistent", "nginx 1.22.1 upstream `hash $key consistent` (http and stream)"},
     presets::make_nginx},
    {{"nginx-hash", "nginx 1.22.1 upstream `hash $key`"}, presets::make_nginx},
    {{"nginx-ip-hash", "nginx 1.22.1 upstream `ip_hash` (keys are client addresses)", true},
     presets::make_nginx},
    {{"jedis", "Jedis sharding (MurmurHash64A, 160 x weight points)"}, presets::make_jvm},
    {{"guava", "Guava 31.1 Hashing.consistentHash(murmur3_128(key, UTF-8), n)"}, presets::make_jvm},
    {{"uhashring", "uhashring 2.1 (Python) default mode"}, presets::make_scripting},
    {{"uhashring-ketama", "uhashring 2.1 (Python) hash_fn=\"ketama\""}, presets::make_scripting},
    {{"hash_ring", "hash_ring 1.3.1 (Python)"}, presets::make_scripting},
    {{"node-hashring", "hashring 3.2.0 (npm)"}, presets::make_scripting},
    {{"groupcache", "groupcache consistenthash (Go)"}, presets::make_groupcache},
    {{"envoy-ring-hash", "Envoy ring_hash load balancer, default settings"}, presets::make_envoy},
    {{"envoy-maglev", "Envoy maglev load balancer, default settings"}, presets::make_envoy},
    {{"redis-cluster", "Redis Cluster 7.0 key slots; slots split as redis-cli --cluster create"},
     presets::make_redis_cluster},
    {{"guava-iphash", "article 000's Java IP-hash balancer: Math.abs(murmur3_128(ip).asInt() % n)"},
     presets::make_articles},
    {{"guava-treemap",
      "article 000's Java TreeMap ring: Guava murmur3_128 asLong, server + server#VN{i} x150"},
     presets::make_articles},
    {{"java-hashcode-ring",
      "article 002's Java ring: Math.abs(String.hashCode()), server + server#{i} x3, tailMap"},
     presets::make_articles},
    {{"python-md5-ring",
      "article 003's Python ring: int(md5 hexdigest, 16) % 2**32 of {node}_v{i} x150"},
     presets::make_articles},
    {{"murmur64a-treemap",
      "article 004's Java ring: MurmurHash64A seed 0x1234ABCD of node + i x500, TreeMap<Long>"},
     presets::make_articles},
};

}  // namespace

std::span<const PresetInfo> preset_list() noexcept {
  static const auto infos = [] {
    std::vector<PresetInfo> v;
    for (const Entry& e : kPresets) v.push_back(e.info);
    return v;
  }();
  return infos;
}

std::unique_ptr<Preset> make_preset(std::string_view name, std::span<const Node> nodes,
                                    const PresetOptions& options) {
  for (const Entry& e : kPresets) {
    if (e.info.name != name) continue;
    if (!options.settings.empty() && !takes_settings(e)) {
      std::string with;
      for (const Entry& s : kPresets) {
        if (!takes_settings(s)) continue;
        if (!with.empty()) with += ", ";
        with += s.info.name;
      }
      throw Error(ErrorCode::kUnsupported, "preset " + std::string(name) +
                                               " has no settings (got \"" +
                                               options.settings.front().first.substr(0, 64) +
                                               "\"); presets with settings: " + with);
    }
    return e.factory(name, nodes, options);
  }
  std::string valid;
  for (const Entry& e : kPresets) {
    if (!valid.empty()) valid += ", ";
    valid += e.info.name;
  }
  throw Error(ErrorCode::kParse,
              "unknown preset \"" + std::string(name.substr(0, 64)) + "\" (valid: " + valid + ")");
}

}  // namespace chash
