// SPDX-License-Identifier: Apache-2.0
// Factories of the compatibility presets, one family per file in src/presets/.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "chash/preset.h"

namespace chash::presets {

using Factory = std::unique_ptr<Preset> (*)(std::string_view name, std::span<const Node> nodes,
                                            const PresetOptions& options);

// libmemcached.cc: ketama, ketama-spy, libmemcached-consistent, libmemcached-modula; libketama;
// spymemcached.
std::unique_ptr<Preset> make_libmemcached(std::string_view, std::span<const Node>,
                                          const PresetOptions&);
std::unique_ptr<Preset> make_libketama(std::string_view, std::span<const Node>,
                                       const PresetOptions&);
std::unique_ptr<Preset> make_spymemcached(std::string_view, std::span<const Node>,
                                          const PresetOptions&);
// twemproxy.cc: twemproxy, twemproxy-modula.
std::unique_ptr<Preset> make_twemproxy(std::string_view, std::span<const Node>,
                                       const PresetOptions&);
// nginx.cc: nginx-hash-consistent, nginx-hash, nginx-ip-hash.
std::unique_ptr<Preset> make_nginx(std::string_view, std::span<const Node>, const PresetOptions&);
// jvm.cc: jedis, guava.
std::unique_ptr<Preset> make_jvm(std::string_view, std::span<const Node>, const PresetOptions&);
// scripting.cc: uhashring, uhashring-ketama, hash_ring, node-hashring.
std::unique_ptr<Preset> make_scripting(std::string_view, std::span<const Node>,
                                       const PresetOptions&);
// groupcache.cc: groupcache.
std::unique_ptr<Preset> make_groupcache(std::string_view, std::span<const Node>,
                                        const PresetOptions&);
// envoy.cc: envoy-ring-hash, envoy-maglev.
std::unique_ptr<Preset> make_envoy(std::string_view, std::span<const Node>, const PresetOptions&);
// redis_cluster.cc: redis-cluster.
std::unique_ptr<Preset> make_redis_cluster(std::string_view, std::span<const Node>,
                                           const PresetOptions&);

// articles.cc: guava-iphash, guava-treemap, java-hashcode-ring, python-md5-ring,
// murmur64a-treemap (the articles' hand-written balancers).
std::unique_ptr<Preset> make_articles(std::string_view, std::span<const Node>,
                                      const PresetOptions&);

}  // namespace chash::presets
