// SPDX-License-Identifier: Apache-2.0
/* The real libmemcached (Debian libmemcached-dev 1.1.4, the "awesome" fork) choosing servers for
 * the compat key set: the peer side of the ketama, ketama-spy, libmemcached-consistent,
 * libmemcached-modula and libmemcached__* vectors. Run by generate.sh; writes the key lines of a
 * vector file.
 *
 *   libmemcached_peer route SETTINGS KEYS.hex NAME=WEIGHT...
 *       For every key: the server memcached_generate_hash() picks (and memcached_server_by_key()
 *       must agree), printed as "<key hex>\t<name as given>", after one "# final: ..." comment
 *       line with the client's resulting distribution, weighting and hash (memcached_behavior_get).
 *       No server needs to run. Every key is also routed by one more client per hash this build
 *       accepts, configured the same with MEMCACHED_BEHAVIOR_KETAMA_HASH set to that hash last:
 *       all must pick the same server (1.1.4 stores KETAMA_HASH and never reads it).
 *   libmemcached_peer e2e SETTINGS REPLICAS KEYS.hex NAME=WEIGHT...
 *       End to end against memcached servers listening at the NAMEs (127.0.0.1:port): SET every
 *       key through libmemcached (binary protocol, MEMCACHED_BEHAVIOR_NUMBER_OF_REPLICAS =
 *       REPLICAS), then GET it from every server directly. Prints "<key hex>\t<owner>[\t<replica>
 *       ...]" from where the keys really are, and fails unless the servers holding a key are
 *       exactly memcached_generate_hash()'s choice followed by libmemcached's replica walk.
 *   libmemcached_peer hashes
 *       Which MEMCACHED_BEHAVIOR_HASH values this build accepts (one line each).
 *
 * SETTINGS is how the client is configured before any server is added: "-" for nothing (the
 * defaults, MEMCACHED_DISTRIBUTION_MODULA), else a comma-separated list of NAME=VALUE applied in
 * that order, one memcached_behavior_set() call each:
 *   distribution=MODULA|CONSISTENT|CONSISTENT_KETAMA|CONSISTENT_KETAMA_SPY|CONSISTENT_WEIGHTED
 *                                    MEMCACHED_BEHAVIOR_DISTRIBUTION
 *   ketama=0|1                       MEMCACHED_BEHAVIOR_KETAMA
 *   ketama_weighted=0|1              MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED
 *   ketama_hash=HASH                 MEMCACHED_BEHAVIOR_KETAMA_HASH
 *   hash=HASH                        MEMCACHED_BEHAVIOR_HASH
 * (HASH as in kHashes below.) The presets are such lists: ketama = ketama_weighted=1; ketama-spy
 * = ketama_weighted=1,distribution=CONSISTENT_KETAMA_SPY (1.1.4 has no KETAMA_COMPAT behaviour
 * any more; this is what its own ketama test does for spymemcached); libmemcached-consistent =
 * distribution=CONSISTENT; libmemcached-modula = nothing.
 * Servers are then added one by one: a NAME starting with '/' with
 * memcached_server_add_unix_socket_with_weight(), any other NAME is parsed by libmemcached itself
 * (memcached_servers_parse, so "host" gets the default port exactly as a user's server string
 * would) and added with memcached_server_add_with_weight().
 *
 * Build: cc -O2 -o libmemcached_peer libmemcached_peer.c -lmemcached
 */
#include <libmemcached-1.0/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 4096
#define MAX_NODES 512

static const char* key_hex[MAX_KEYS];
static char* key_bytes[MAX_KEYS];
static size_t key_len[MAX_KEYS];
static size_t n_keys;

static const char* node_name[MAX_NODES];
static unsigned node_weight[MAX_NODES];
static size_t n_nodes;

static void die(const char* what, const char* detail) {
  fprintf(stderr, "libmemcached_peer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static const struct {
  const char* name;
  memcached_hash_t value;
} kHashes[] = {
    {"default", MEMCACHED_HASH_DEFAULT},   {"md5", MEMCACHED_HASH_MD5},
    {"crc", MEMCACHED_HASH_CRC},           {"fnv1_64", MEMCACHED_HASH_FNV1_64},
    {"fnv1a_64", MEMCACHED_HASH_FNV1A_64}, {"fnv1_32", MEMCACHED_HASH_FNV1_32},
    {"fnv1a_32", MEMCACHED_HASH_FNV1A_32}, {"hsieh", MEMCACHED_HASH_HSIEH},
    {"murmur", MEMCACHED_HASH_MURMUR},     {"murmur3", MEMCACHED_HASH_MURMUR3},
    {"jenkins", MEMCACHED_HASH_JENKINS},
};

static memcached_hash_t parse_hash(const char* name) {
  for (size_t i = 0; i < sizeof kHashes / sizeof kHashes[0]; ++i) {
    if (strcmp(kHashes[i].name, name) == 0) return kHashes[i].value;
  }
  die("unknown hash", name);
  return MEMCACHED_HASH_MAX;
}

static void read_keys(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) die("cannot open", path);
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    size_t n = strcspn(line, "\r\n");
    line[n] = 0;
    if (n == 0) continue;
    if (n_keys == MAX_KEYS) die("too many keys", path);
    key_hex[n_keys] = strdup(line);
    char* k = malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; ++i) {
      unsigned v;
      if (sscanf(line + 2 * i, "%2x", &v) != 1) die("bad hex key", line);
      k[i] = (char)v;
    }
    k[n / 2] = 0;
    key_bytes[n_keys] = k;
    key_len[n_keys] = n / 2;
    ++n_keys;
  }
  fclose(f);
}

static void read_nodes(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (n_nodes == MAX_NODES) die("too many nodes", NULL);
    char* eq = strrchr(argv[i], '=');
    if (!eq) die("node must be NAME=WEIGHT", argv[i]);
    *eq = 0;
    node_name[n_nodes] = argv[i];
    node_weight[n_nodes] = (unsigned)strtoul(eq + 1, NULL, 10);
    ++n_nodes;
  }
}

static void check(memcached_st* memc, memcached_return_t rc, const char* what) {
  if (rc != MEMCACHED_SUCCESS) {
    fprintf(stderr, "libmemcached_peer: %s: %s\n", what, memcached_last_error_message(memc));
    exit(1);
  }
}

static const struct {
  const char* name;
  memcached_server_distribution_t value;
} kDistributions[] = {
    {"MODULA", MEMCACHED_DISTRIBUTION_MODULA},
    {"CONSISTENT", MEMCACHED_DISTRIBUTION_CONSISTENT},
    {"CONSISTENT_KETAMA", MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA},
    {"CONSISTENT_KETAMA_SPY", MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY},
    {"CONSISTENT_WEIGHTED", MEMCACHED_DISTRIBUTION_CONSISTENT_WEIGHTED},
};

static const char* distribution_name(uint64_t value) {
  for (size_t i = 0; i < sizeof kDistributions / sizeof kDistributions[0]; ++i) {
    if ((uint64_t)kDistributions[i].value == value) return kDistributions[i].name;
  }
  return "other";
}

static const char* hash_name(uint64_t value) {
  for (size_t i = 0; i < sizeof kHashes / sizeof kHashes[0]; ++i) {
    if ((uint64_t)kHashes[i].value == value) return kHashes[i].name;
  }
  return "other";
}

/* One NAME=VALUE of SETTINGS, applied with memcached_behavior_set(). */
static void apply(memcached_st* memc, char* setting) {
  char* eq = strchr(setting, '=');
  if (!eq) die("setting must be NAME=VALUE", setting);
  *eq = 0;
  const char* name = setting;
  const char* value = eq + 1;
  memcached_return_t rc;
  if (strcmp(name, "distribution") == 0) {
    size_t i = 0;
    while (i < sizeof kDistributions / sizeof kDistributions[0] &&
           strcmp(kDistributions[i].name, value) != 0) {
      ++i;
    }
    if (i == sizeof kDistributions / sizeof kDistributions[0]) die("unknown distribution", value);
    rc = memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_DISTRIBUTION, kDistributions[i].value);
  } else if (strcmp(name, "ketama") == 0) {
    rc = memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA, strtoul(value, NULL, 10));
  } else if (strcmp(name, "ketama_weighted") == 0) {
    rc = memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, strtoul(value, NULL, 10));
  } else if (strcmp(name, "ketama_hash") == 0) {
    rc = memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA_HASH, parse_hash(value));
  } else if (strcmp(name, "hash") == 0) {
    rc = memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_HASH, parse_hash(value));
  } else {
    die("unknown setting", name);
    return;
  }
  *eq = '=';
  check(memc, rc, setting);
}

static void configure(memcached_st* memc, const char* settings) {
  if (strcmp(settings, "-") == 0) return;
  char* list = strdup(settings);
  for (char *save = NULL, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
    apply(memc, s);
  }
  free(list);
}

static void add_servers(memcached_st* memc) {
  for (size_t i = 0; i < n_nodes; ++i) {
    if (node_name[i][0] == '/') {
      check(memc, memcached_server_add_unix_socket_with_weight(memc, node_name[i], node_weight[i]),
            node_name[i]);
      continue;
    }
    memcached_server_st* parsed = memcached_servers_parse(node_name[i]);
    if (!parsed || memcached_server_list_count(parsed) != 1) die("cannot parse", node_name[i]);
    check(
        memc,
        memcached_server_add_with_weight(memc, parsed[0].hostname, parsed[0].port, node_weight[i]),
        node_name[i]);
    memcached_server_list_free(parsed);
  }
  if (memcached_server_count(memc) != n_nodes) die("server count differs", NULL);
}

static memcached_st* make_client(const char* settings) {
  memcached_st* memc = memcached_create(NULL);
  if (!memc) die("memcached_create failed", NULL);
  configure(memc, settings);
  return memc;
}

static int route(const char* settings) {
  memcached_st* memc = make_client(settings);
  add_servers(memc);
  const uint64_t distribution = memcached_behavior_get(memc, MEMCACHED_BEHAVIOR_DISTRIBUTION);
  printf("# final: distribution=%s ketama_weighted=%d hash=%s (memcached_behavior_get)\n",
         distribution_name(distribution),
         (int)memcached_behavior_get(memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED),
         hash_name(memcached_behavior_get(memc, MEMCACHED_BEHAVIOR_HASH)));
  // MEMCACHED_BEHAVIOR_KETAMA_HASH is stored by 1.1.4 but never read when the continuum is built
  // (hosts.cc update_continuum): clients that set it, to any hash, must choose the same servers.
  memcached_st* other[sizeof kHashes / sizeof kHashes[0]];
  size_t n_other = 0;
  for (size_t h = 0; h < sizeof kHashes / sizeof kHashes[0]; ++h) {
    memcached_st* o = make_client(settings);
    if (memcached_behavior_set(o, MEMCACHED_BEHAVIOR_KETAMA_HASH, kHashes[h].value) !=
        MEMCACHED_SUCCESS) {
      memcached_free(o);  // a hash this build lacks (hsieh)
      continue;
    }
    add_servers(o);
    other[n_other++] = o;
  }
  if (n_other < 9) die("too few KETAMA_HASH values accepted", NULL);
  for (size_t k = 0; k < n_keys; ++k) {
    const uint32_t idx = memcached_generate_hash(memc, key_bytes[k], key_len[k]);
    if (idx >= n_nodes) die("server index out of range", key_hex[k]);
    memcached_return_t rc;
    const memcached_instance_st* by_key =
        memcached_server_by_key(memc, key_bytes[k], key_len[k], &rc);
    if (rc != MEMCACHED_SUCCESS || by_key != memcached_server_instance_by_position(memc, idx)) {
      die("memcached_server_by_key disagrees with memcached_generate_hash", key_hex[k]);
    }
    for (size_t o = 0; o < n_other; ++o) {
      if (memcached_generate_hash(other[o], key_bytes[k], key_len[k]) != idx) {
        die("KETAMA_HASH changed the mapping", key_hex[k]);
      }
    }
    printf("%s\t%s\n", key_hex[k], node_name[idx]);
  }
  for (size_t o = 0; o < n_other; ++o) memcached_free(other[o]);
  memcached_free(memc);
  return 0;
}

static int e2e(const char* settings, unsigned replicas) {
  memcached_st* memc = make_client(settings);
  check(memc, memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_BINARY_PROTOCOL, 1), "BINARY");
  check(memc, memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_NUMBER_OF_REPLICAS, replicas),
        "NUMBER_OF_REPLICAS");
  add_servers(memc);
  // One client per server: GET straight from that server.
  memcached_st* direct[MAX_NODES];
  for (size_t s = 0; s < n_nodes; ++s) {
    direct[s] = memcached_create(NULL);
    check(direct[s], memcached_behavior_set(direct[s], MEMCACHED_BEHAVIOR_BINARY_PROTOCOL, 1),
          "BINARY");
    memcached_server_st* parsed = memcached_servers_parse(node_name[s]);
    check(direct[s], memcached_server_push(direct[s], parsed), node_name[s]);
    memcached_server_list_free(parsed);
    check(direct[s], memcached_flush(direct[s], 0), "flush_all");
  }
  for (size_t k = 0; k < n_keys; ++k) {
    check(memc, memcached_set(memc, key_bytes[k], key_len[k], key_hex[k], strlen(key_hex[k]), 0, 0),
          key_hex[k]);
  }
  // Replica copies go out as quiet SETQs: push them out, then make one round trip per server so
  // each has processed everything sent before the checks below read from other connections.
  check(memc, memcached_flush_buffers(memc), "flush_buffers");
  check(memc, memcached_version(memc), "version (barrier)");
  size_t holders_total = 0;
  for (size_t k = 0; k < n_keys; ++k) {
    const uint32_t owner = memcached_generate_hash(memc, key_bytes[k], key_len[k]);
    int held[MAX_NODES];
    size_t n_held = 0;
    for (size_t s = 0; s < n_nodes; ++s) {
      size_t len = 0;
      uint32_t flags = 0;
      memcached_return_t rc;
      char* v = memcached_get(direct[s], key_bytes[k], key_len[k], &len, &flags, &rc);
      held[s] = v != NULL;
      if (v) {
        if (len != strlen(key_hex[k]) || memcmp(v, key_hex[k], len) != 0) {
          die("wrong value on server", node_name[s]);
        }
        ++n_held;
      }
      free(v);
    }
    holders_total += n_held;
    // libmemcached's replica walk (storage.cc memcached_send_binary): owner, owner + 1, ...
    // wrapping at the server count; so is its replica read order (get.cc).
    const size_t copies = replicas + 1 < n_nodes ? replicas + 1 : n_nodes;
    if (n_held != copies) die("key is on an unexpected number of servers", key_hex[k]);
    printf("%s", key_hex[k]);
    for (size_t c = 0; c < copies; ++c) {
      const size_t s = (owner + c) % n_nodes;
      if (!held[s]) die("key missing from the server libmemcached chose", key_hex[k]);
      printf("\t%s", node_name[s]);
    }
    printf("\n");
  }
  fprintf(stderr, "libmemcached_peer e2e: %zu keys, %zu copies found on %zu servers\n", n_keys,
          holders_total, n_nodes);
  for (size_t s = 0; s < n_nodes; ++s) memcached_free(direct[s]);
  memcached_free(memc);
  return 0;
}

static int hashes(void) {
  for (size_t i = 0; i < sizeof kHashes / sizeof kHashes[0]; ++i) {
    memcached_st* memc = memcached_create(NULL);
    const memcached_return_t rc =
        memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_HASH, kHashes[i].value);
    printf("%s\t%s\n", kHashes[i].name, rc == MEMCACHED_SUCCESS ? "accepted" : "refused");
    memcached_free(memc);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "hashes") == 0) return hashes();
  if (argc >= 5 && strcmp(argv[1], "route") == 0) {
    read_keys(argv[3]);
    read_nodes(argc - 4, argv + 4);
    return route(argv[2]);
  }
  if (argc >= 6 && strcmp(argv[1], "e2e") == 0) {
    read_keys(argv[4]);
    read_nodes(argc - 5, argv + 5);
    return e2e(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
  }
  fprintf(stderr,
          "usage: libmemcached_peer route SETTINGS KEYS.hex NAME=WEIGHT...\n"
          "       libmemcached_peer e2e SETTINGS REPLICAS KEYS.hex NAME=WEIGHT...\n"
          "       libmemcached_peer hashes\n");
  return 2;
}
