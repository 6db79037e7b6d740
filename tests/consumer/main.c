/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI from outside the source tree, as a C program uses it: built by tests/consumer/run.sh
 * step (d) with a C compiler against an installed copy (pkg-config chash_c), linking only
 * libchash_c.so. The answers are main.cc's (printed by `chash route`, see there): the C ABI must
 * route as the C++ library and the CLI do. A wrong answer exits 1. */
#include <stdio.h>
#include <string.h>

#include "chash/chash_c.h"

static const char* const kNodes[] = {"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211",
                                     "10.0.0.4:11211"};

static const struct {
  const char* key;
  const char* ketama; /* libmemcached's ketama (the `ketama` preset) */
  const char* ring;   /* chash's own ring: xxh3 key hash, 160 points per node */
} kExpected[] = {
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

static chash_router* build(const chash_spec* spec) {
  const chash_nodes nodes = {.names = kNodes, .count = 4};
  chash_router* r = NULL;
  chash_error* err = NULL;
  if (chash_router_new(spec, &nodes, &r, &err) != CHASH_OK) {
    fprintf(stderr, "chash_router_new: %s\n", chash_error_message(err));
    chash_error_free(err);
  }
  return r;
}

int main(void) {
  chash_router* ketama = build(&(chash_spec){.preset = "ketama"});
  chash_router* ring = build(&(chash_spec){.algorithm = "ring"});
  if (ketama == NULL || ring == NULL) return 1;
  int wrong = 0;
  for (size_t i = 0; i < sizeof kExpected / sizeof kExpected[0]; ++i) {
    const char* key = kExpected[i].key;
    const char* by_ketama = chash_route_name(ketama, key, strlen(key), NULL);
    const char* by_ring = chash_route_name(ring, key, strlen(key), NULL);
    if (!by_ketama || !by_ring || strcmp(by_ketama, kExpected[i].ketama) != 0 ||
        strcmp(by_ring, kExpected[i].ring) != 0) {
      fprintf(stderr, "%s: ketama %s (want %s), ring %s (want %s)\n", key,
              by_ketama ? by_ketama : "-", kExpected[i].ketama, by_ring ? by_ring : "-",
              kExpected[i].ring);
      ++wrong;
    }
  }
  printf("libchash_c %s (C ABI %u): %s\n", chash_version(), (unsigned)chash_c_abi_version(),
         wrong == 0 ? "ok" : "WRONG");
  chash_router_free(ketama);
  chash_router_free(ring);
  return wrong == 0 ? 0 : 1;
}
