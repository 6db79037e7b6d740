// SPDX-License-Identifier: Apache-2.0
// A program that uses libchash from outside the source tree, as a user's project does: built by
// tests/consumer/run.sh against an installed copy (find_package and pkg-config) and against the
// source tree (add_subdirectory). The README's "Use libchash from your project" shows this code.
//
// The expected nodes were printed by this tree's CLI, once:
//   N=10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211,10.0.0.4:11211
//   printf 'user:%s\n' $(seq 12) | build/chash route --preset ketama --nodes $N
//   printf 'user:%s\n' $(seq 12) | build/chash route --algo ring --nodes $N
// A wrong answer, or a library that is not the version of its headers, exits 1.
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash.h"
#include "chash/version.h"

namespace {

struct Expected {
  const char* key;
  const char* ketama;  // libmemcached's ketama (the `ketama` preset)
  const char* ring;    // chash's own ring: xxh3 key hash, 160 points per node
};

constexpr Expected kExpected[] = {
    {"user:1", "10.0.0.2:11211", "10.0.0.4:11211"},
    {"user:2", "10.0.0.4:11211", "10.0.0.1:11211"},
    {"user:3", "10.0.0.3:11211", "10.0.0.3:11211"},
    {"user:4", "10.0.0.2:11211", "10.0.0.3:11211"},
    {"user:5", "10.0.0.2:11211", "10.0.0.3:11211"},
    {"user:6", "10.0.0.4:11211", "10.0.0.1:11211"},
    {"user:7", "10.0.0.2:11211", "10.0.0.1:11211"},
    {"user:8", "10.0.0.2:11211", "10.0.0.2:11211"},
    {"user:9", "10.0.0.4:11211", "10.0.0.1:11211"},
    {"user:10", "10.0.0.3:11211", "10.0.0.3:11211"},
    {"user:11", "10.0.0.1:11211", "10.0.0.2:11211"},
    {"user:12", "10.0.0.4:11211", "10.0.0.1:11211"},
};

}  // namespace

int main() {
  const std::vector<chash::Node> nodes = {
      {"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 1}, {"10.0.0.3:11211", 1}, {"10.0.0.4:11211", 1}};

  // As libmemcached's ketama would pick (a compatibility preset) ...
  chash::RoutingSpec ketama_spec;
  ketama_spec.preset = "ketama";
  const chash::Router ketama = chash::Router::build(ketama_spec, nodes);
  // ... and chash's own ring (xxh3 key hash, 160 points per node).
  chash::RoutingSpec ring_spec;
  ring_spec.algorithm = "ring";
  const chash::Router ring = chash::Router::build(ring_spec, nodes);

  int wrong = 0;
  for (const Expected& e : kExpected) {
    const std::string_view by_ketama = ketama.name(ketama.route(e.key));
    const std::string_view by_ring = ring.name(ring.route(e.key));
    if (by_ketama != e.ketama || by_ring != e.ring) {
      std::fprintf(stderr, "%s: ketama %.*s (want %s), ring %.*s (want %s)\n", e.key,
                   static_cast<int>(by_ketama.size()), by_ketama.data(), e.ketama,
                   static_cast<int>(by_ring.size()), by_ring.data(), e.ring);
      ++wrong;
    }
  }
  // Failover: with 10.0.0.2 down, its keys go to their next choice and no other key moves.
  const chash::NodeId down = ketama.find("10.0.0.2:11211");
  for (const Expected& e : kExpected) {
    const chash::NodeId id = ketama.route(e.key, [&](chash::NodeId n) { return n != down; });
    chash::NodeId order[2];
    const bool ok = ketama.route_n(e.key, order) == 2 &&
                    id == (order[0] == down ? order[1] : order[0]) && id != down;
    if (!ok) {
      std::fprintf(stderr, "%s: failover to %s\n", e.key, std::string(ketama.name(id)).c_str());
      ++wrong;
    }
  }
  if (chash::version() != CHASH_VERSION_STRING || chash::version() != "0.2.0") {
    std::fprintf(stderr, "libchash %s, headers %s, want 0.2.0\n",
                 std::string(chash::version()).c_str(), CHASH_VERSION_STRING);
    ++wrong;
  }
  std::printf("libchash %s: %d wrong\n", CHASH_VERSION_STRING, wrong);
  return wrong == 0 ? 0 : 1;
}
