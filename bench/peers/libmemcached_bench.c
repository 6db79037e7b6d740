// SPDX-License-Identifier: Apache-2.0
/* libmemcached (Debian libmemcached-dev) as the ketama preset drives it: weighted ketama
 * (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED), default hash, every server weight 1, added in file
 * order. Times memcached_server_by_key() over the keys; no server needs to run (it only picks).
 *
 *   libmemcached_bench NODES.txt KEYS.txt ROUNDS   ->  "libmemcached\t<ns per key>\t<checksum>"
 *
 * The checksum (sum of node_index * (i % 1000 + 1)) comes from memcached_generate_hash() in an
 * untimed pass; it must equal chash_peers' for the ketama preset.
 * Build: cc -O2 -o libmemcached_bench libmemcached_bench.c -lmemcached
 */
#include <libmemcached-1.0/memcached.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char** read_lines(const char* path, size_t* count) {
  FILE* f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "libmemcached_bench: cannot open %s\n", path);
    exit(1);
  }
  size_t cap = 1024, n = 0;
  char** v = malloc(cap * sizeof *v);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0]) continue;
    if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    v[n++] = strdup(line);
  }
  fclose(f);
  *count = n;
  return v;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: libmemcached_bench NODES KEYS ROUNDS\n");
    return 2;
  }
  size_t n_nodes, n_keys;
  char** nodes = read_lines(argv[1], &n_nodes);
  char** keys = read_lines(argv[2], &n_keys);
  size_t* lens = malloc(n_keys * sizeof *lens);
  for (size_t i = 0; i < n_keys; ++i) lens[i] = strlen(keys[i]);
  const int rounds = atoi(argv[3]);

  memcached_st* memc = memcached_create(NULL);
  memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
  for (size_t i = 0; i < n_nodes; ++i) {
    char host[256];
    snprintf(host, sizeof host, "%s", nodes[i]);
    char* colon = strrchr(host, ':');
    in_port_t port = 11211;
    if (colon) {
      *colon = 0;
      port = (in_port_t)atoi(colon + 1);
    }
    if (memcached_server_add_with_weight(memc, host, port, 1) != MEMCACHED_SUCCESS) {
      fprintf(stderr, "libmemcached_bench: cannot add %s\n", nodes[i]);
      return 1;
    }
  }
  unsigned long long checksum = 0;
  for (size_t i = 0; i < n_keys; ++i) {
    checksum +=
        (unsigned long long)memcached_generate_hash(memc, keys[i], lens[i]) * (i % 1000 + 1);
  }
  double best = 1e300;
  uintptr_t sink = 0;
  for (int r = 0; r < rounds + 1; ++r) { /* the first pass warms the caches */
    const double t0 = now_ns();
    for (size_t i = 0; i < n_keys; ++i) {
      memcached_return_t rc;
      sink += (uintptr_t)memcached_server_by_key(memc, keys[i], lens[i], &rc);
    }
    const double ns = (now_ns() - t0) / (double)n_keys;
    if (r > 0 && ns < best) best = ns;
  }
  printf("libmemcached\t%.2f\t%llu\n", best, checksum);
  if (sink == 1) puts("");
  memcached_free(memc);
  return 0;
}
