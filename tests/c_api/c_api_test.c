/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI (include/chash/chash_c.h), tested from C11 as its users call it: through
 * libchash_c.so. Routing is checked against two authorities: the real peers' vectors
 * (tests/compat/vectors/, every file) and the C++ router built directly from libchash.a
 * (reference.cc). Run under ASan+UBSan by `make asan`, whose LeakSanitizer checks that every error
 * path frees what it allocates.
 *
 * A small runner: each TEST is a function; CHECK records a failure and goes on; the last line is
 * "N passed, M failed" and the exit status is 1 when any failed. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash/chash_c.h"
#include "java_strings_test.h"
#include "reference.h"

#ifndef CHASH_COMPAT_DIR
#error "CHASH_COMPAT_DIR: the tests/compat folder (tests/c_api/CMakeLists.txt)"
#endif

/* ---- Runner -------------------------------------------------------------------------------- */

static int g_failures; /* CHECKs failed in the running test */

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* A check on a status, printing the message of an unexpected error (and freeing it). */
#define CHECK_OK(call_with_err)                                                    \
  do {                                                                             \
    chash_error* err_ = NULL;                                                      \
    chash_error** const errp_ = &err_;                                             \
    (void)errp_;                                                                   \
    int rc_ = (call_with_err);                                                     \
    if (rc_ != CHASH_OK) {                                                         \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call_with_err, \
              chash_status_name(rc_), chash_error_message(err_));                  \
      ++g_failures;                                                                \
    }                                                                              \
    chash_error_free(err_);                                                        \
  } while (0)

static void* xmalloc(size_t n) {
  void* p = malloc(n == 0 ? 1 : n);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

/* ---- Shared data ----------------------------------------------------------------------------- */

static const char* const kNames[] = {"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211",
                                     "10.0.0.4:11211", "10.0.0.5:11211", "10.0.0.6:11211"};
enum { kNodes = 6 };

/* kKeys keys: "user:<i>", and every tenth one binary with NUL bytes inside. */
enum { kKeys = 1000 };
static char g_key_bytes[kKeys][32];
static const char* g_keys[kKeys];
static size_t g_key_lens[kKeys];

static void make_keys(void) {
  for (int i = 0; i < kKeys; ++i) {
    int n = snprintf(g_key_bytes[i], sizeof g_key_bytes[i], "user:%d", i);
    if (i % 10 == 3) {
      g_key_bytes[i][2] = '\0'; /* "us\0r:..." */
      g_key_bytes[i][n] = '\0';
      n += 1; /* the trailing NUL belongs to the key */
    }
    g_keys[i] = g_key_bytes[i];
    g_key_lens[i] = (size_t)n;
  }
}

static chash_router* build(const chash_spec* spec, const char* const* names,
                           const uint32_t* weights, size_t count) {
  chash_nodes nodes = {.names = names, .weights = weights, .count = count};
  chash_router* r = NULL;
  CHECK_OK(chash_router_new(spec, &nodes, &r, errp_));
  return r;
}

/* ---- Versions and the preset list ------------------------------------------------------------ */

static void test_versions(void) {
  const char* v = chash_version();
  unsigned major = 0, minor = 0, patch = 0;
  CHECK(v != NULL && sscanf(v, "%u.%u.%u", &major, &minor, &patch) == 3);
  CHECK(chash_version_number() == major * 10000 + minor * 100 + patch);
  CHECK(chash_c_abi_version() == CHASH_C_ABI_MAJOR * 1000 + CHASH_C_ABI_MINOR);
  CHECK(strcmp(chash_status_name(CHASH_ERR_PARSE), "CHASH_ERR_PARSE") == 0);
  CHECK(strcmp(chash_status_name(12345), "CHASH_ERR_UNKNOWN") == 0);
}

static void test_preset_list(void) {
  const size_t n = chash_preset_count();
  int has_ketama = 0, has_twemproxy = 0;
  CHECK(n > 10);
  for (size_t i = 0; i < n; ++i) {
    const char* name = chash_preset_name(i);
    CHECK(name != NULL && name[0] != '\0');
    if (name && strcmp(name, "ketama") == 0) has_ketama = 1;
    if (name && strcmp(name, "twemproxy") == 0) has_twemproxy = 1;
  }
  CHECK(has_ketama && has_twemproxy);
  CHECK(chash_preset_name(n) == NULL);
}

/* ---- Against the real peers: every vector file of tests/compat ------------------------------- */

/* One vector file (tests/compat/README.md "Vector file format"). */
typedef struct vector_file {
  char preset[64];
  char hash[64];
  char hash_tag[8];
  char vnodes[16];
  unsigned replicas;
  size_t num_settings;
  char* setting_names[16];
  char* setting_values[16];
  char* setting_options[16]; /* "KEY=VALUE" */
  size_t num_nodes;
  char** node_names;
  uint32_t* weights;
  size_t num_keys;
  char** keys;
  size_t* key_lens;
  char** expected; /* the line's node names, tab-separated */
} vector_file;

static int unhex(const char* hex, size_t n, char* out) {
  if (n % 2 != 0) return -1;
  for (size_t i = 0; i < n / 2; ++i) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
    out[i] = (char)v;
  }
  return 0;
}

static void vector_free(vector_file* v) {
  for (size_t i = 0; i < v->num_settings; ++i) {
    free(v->setting_names[i]);
    free(v->setting_values[i]);
    free(v->setting_options[i]);
  }
  for (size_t i = 0; i < v->num_nodes; ++i) free(v->node_names[i]);
  for (size_t i = 0; i < v->num_keys; ++i) {
    free(v->keys[i]);
    free(v->expected[i]);
  }
  free(v->node_names);
  free(v->weights);
  free(v->keys);
  free(v->key_lens);
  free(v->expected);
}

static char* dup_str(const char* s) {
  char* p = xmalloc(strlen(s) + 1);
  strcpy(p, s);
  return p;
}

/* Copies src into dst[cap]; -1 when it does not fit. */
static int set_field(char* dst, size_t cap, const char* src) {
  const size_t n = strlen(src);
  if (n >= cap) return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

/* Reads `path`; returns 0, or -1 (with a message) for a file it cannot read. */
static int vector_load(const char* path, vector_file* v) {
  memset(v, 0, sizeof *v);
  v->replicas = 1;
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t node_cap = 0, key_cap = 0;
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  int ok = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (len == 0 || line[0] == '#') continue;
    if (line[0] == '@') {
      char a[4096], b[4096];
      if (sscanf(line, "@preset %63s", v->preset) == 1) continue;
      if (sscanf(line, "@node %4095s %4095s", a, b) == 2) {
        if (v->num_nodes == node_cap) {
          node_cap = node_cap ? 2 * node_cap : 16;
          v->node_names = realloc(v->node_names, node_cap * sizeof *v->node_names);
          v->weights = realloc(v->weights, node_cap * sizeof *v->weights);
          if (!v->node_names || !v->weights) exit(2);
        }
        v->node_names[v->num_nodes] = dup_str(a);
        v->weights[v->num_nodes++] = (uint32_t)strtoul(b, NULL, 10);
        continue;
      }
      if (sscanf(line, "@setting %4095s %4095s", a, b) == 2 && v->num_settings < 16) {
        v->setting_names[v->num_settings] = dup_str(a);
        v->setting_values[v->num_settings] = dup_str(b);
        char* kv = xmalloc(strlen(a) + strlen(b) + 2);
        sprintf(kv, "%s=%s", a, b);
        v->setting_options[v->num_settings++] = kv;
        continue;
      }
      if (sscanf(line, "@option %4095s %4095s", a, b) == 2) {
        int set = -1;
        if (strcmp(a, "hash") == 0) set = set_field(v->hash, sizeof v->hash, b);
        else if (strcmp(a, "hash_tag") == 0) set = set_field(v->hash_tag, sizeof v->hash_tag, b);
        else if (strcmp(a, "vnodes") == 0) set = set_field(v->vnodes, sizeof v->vnodes, b);
        else if (strcmp(a, "replicas") == 0)
          set = (v->replicas = (unsigned)strtoul(b, NULL, 10)) ? 0 : -1;
        if (set != 0) goto bad;
        continue;
      }
      goto bad;
    }
    char* tab = strchr(line, '\t');
    if (tab == NULL) goto bad;
    if (v->num_keys == key_cap) {
      key_cap = key_cap ? 2 * key_cap : 256;
      v->keys = realloc(v->keys, key_cap * sizeof *v->keys);
      v->key_lens = realloc(v->key_lens, key_cap * sizeof *v->key_lens);
      v->expected = realloc(v->expected, key_cap * sizeof *v->expected);
      if (!v->keys || !v->key_lens || !v->expected) exit(2);
    }
    const size_t hex_len = (size_t)(tab - line);
    char* key = xmalloc(hex_len / 2 + 1);
    if (unhex(line, hex_len, key) != 0) {
      free(key);
      goto bad;
    }
    v->keys[v->num_keys] = key;
    v->key_lens[v->num_keys] = hex_len / 2;
    v->expected[v->num_keys++] = dup_str(tab + 1);
  }
  ok = 1;
bad:
  if (!ok) fprintf(stderr, "%s: cannot read line \"%.80s\"\n", path, line);
  free(line);
  fclose(f);
  return ok ? 0 : -1;
}

/* Every ids[0..n) written as names joined by tabs, as the vector files list them. */
static void join_names(const chash_router* r, const uint32_t* ids, size_t n, char* out,
                       size_t cap) {
  size_t at = 0;
  out[0] = '\0';
  if (n == 0 || ids[0] == CHASH_NO_NODE) {
    snprintf(out, cap, "<none>");
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const char* name = chash_router_node_name(r, ids[i], NULL);
    at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%s%s", i ? "\t" : "",
                           name ? name : "<bad index>");
  }
}

/* The C ABI agrees with the peer on every key of `path` (through chash_route, chash_route_batch
 * and chash_route_n), and with the C++ router. Returns the number of keys that disagree. */
static size_t check_vector_file(const char* path) {
  vector_file v;
  if (vector_load(path, &v) != 0) {
    vector_free(&v);
    return 1;
  }
  size_t bad = 0;
  chash_option options[18];
  size_t num_options = 0;
  if (v.vnodes[0]) options[num_options++] = (chash_option){"vnodes", v.vnodes};
  for (size_t i = 0; i < v.num_settings; ++i) {
    options[num_options++] = (chash_option){"preset-option", v.setting_options[i]};
  }
  const chash_spec spec = {.preset = v.preset,
                           .hash = v.hash[0] ? v.hash : NULL,
                           .hash_tag = v.hash_tag[0] ? v.hash_tag : NULL,
                           .options = options,
                           .num_options = num_options};
  chash_router* r = build(&spec, (const char* const*)v.node_names, v.weights, v.num_nodes);
  if (r == NULL) {
    fprintf(stderr, "%s: the C ABI refused the spec\n", path);
    vector_free(&v);
    return 1;
  }
  const ref_spec ref = {.preset = v.preset,
                        .hash = v.hash[0] ? v.hash : NULL,
                        .hash_tag = v.hash_tag[0] ? v.hash_tag : NULL,
                        .has_vnodes = v.vnodes[0] != '\0',
                        .vnodes = (uint32_t)strtoul(v.vnodes, NULL, 10),
                        .setting_names = (const char* const*)v.setting_names,
                        .setting_values = (const char* const*)v.setting_values,
                        .num_settings = v.num_settings};
  uint32_t* batch = xmalloc(v.num_keys * sizeof *batch);
  uint32_t* cxx = xmalloc(v.num_keys * sizeof *cxx);
  CHECK_OK(chash_route_batch(r, (const char* const*)v.keys, v.key_lens, v.num_keys, batch, errp_));
  CHECK(ref_route(&ref, (const char* const*)v.node_names, v.weights, v.num_nodes,
                  (const char* const*)v.keys, v.key_lens, v.num_keys, cxx) == 0);
  uint32_t ids[64];
  char got[8192];
  for (size_t k = 0; k < v.num_keys; ++k) {
    const uint32_t one = chash_route(r, v.keys[k], v.key_lens[k]);
    size_t n = 1;
    ids[0] = one;
    if (v.replicas > 1) {
      CHECK_OK(chash_route_n(r, v.keys[k], v.key_lens[k], ids, v.replicas < 64 ? v.replicas : 64,
                             &n, errp_));
    }
    join_names(r, ids, n, got, sizeof got);
    const int agrees = strcmp(got, v.expected[k]) == 0 && batch[k] == one && cxx[k] == one;
    if (!agrees && ++bad <= 3) {
      fprintf(stderr, "%s: key %zu: peer \"%s\", C ABI \"%s\" (batch %u, C++ %u)\n", path, k,
              v.expected[k], got, (unsigned)batch[k], (unsigned)cxx[k]);
    }
  }
  free(batch);
  free(cxx);
  chash_router_free(r);
  vector_free(&v);
  return bad;
}

static int compare_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static void test_presets_agree_with_the_peers(void) {
  size_t files = 0, keys_bad = 0;
  const char* dirs[] = {CHASH_COMPAT_DIR "/vectors",
                        CHASH_COMPAT_DIR "/vectors-libmemcached-1.0.18"};
  for (size_t d = 0; d < 2; ++d) {
    DIR* dir = opendir(dirs[d]);
    if (dir == NULL) {
      CHECK(d == 1); /* the 1.0.18 vectors are optional; the main ones are not */
      continue;
    }
    char** names = NULL;
    size_t n = 0, cap = 0;
    struct dirent* e;
    while ((e = readdir(dir)) != NULL) {
      const size_t len = strlen(e->d_name);
      if (len < 5 || strcmp(e->d_name + len - 4, ".tsv") != 0) continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 64;
        names = realloc(names, cap * sizeof *names);
        if (!names) exit(2);
      }
      names[n++] = dup_str(e->d_name);
    }
    closedir(dir);
    qsort(names, n, sizeof *names, compare_str);
    for (size_t i = 0; i < n; ++i) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dirs[d], names[i]);
      keys_bad += check_vector_file(path);
      ++files;
      free(names[i]);
    }
    free(names);
  }
  printf("  %zu vector files\n", files);
  CHECK(files >= 500);
  CHECK(keys_bad == 0);
}

/* ---- Against the C++ router: native algorithms and ring specs --------------------------------- */

typedef struct algo_case {
  const char* algorithm;
  const char* ring;
  const char* hash;
  const char* hash_tag;
  const char* option_name; /* one chash_option, or NULL */
  const char* option_value;
  uint32_t vnodes, probes; /* the same option for the reference */
  uint64_t table_size;
  int weighted; /* weights 1,2,3,1,2,3 */
} algo_case;

static const algo_case kAlgoCases[] = {
    {"ring", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 1},
    {"ring", NULL, "md5", "{}", "vnodes", "40", 40, 0, 0, 0},
    {"ring64", NULL, "xxh64", NULL, NULL, NULL, 0, 0, 0, 1},
    {"jump", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0},
    {"jumpback", NULL, "murmur3_32", NULL, NULL, NULL, 0, 0, 0, 0},
    {"memento", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0},
    {"rendezvous", NULL, "fnv1a_64", NULL, NULL, NULL, 0, 0, 0, 1},
    {"maglev", NULL, NULL, NULL, "table-size", "251", 0, 0, 251, 1},
    {"multiprobe", NULL, NULL, NULL, "probes", "5", 0, 5, 0, 0},
    {"modulo", NULL, "crc32", NULL, NULL, NULL, 0, 0, 0, 0},
    {"slots", NULL, NULL, "{}", NULL, NULL, 0, 0, 0, 0},
    {NULL, "points={name}_v{i}; vnodes=150; hash=md5-int32", NULL, NULL, NULL, NULL, 0, 0, 0, 1},
    {NULL, "points={name}#VN{i}; bare=first; vnodes=150; hash=guava-long", NULL, NULL, NULL, NULL,
     0, 0, 0, 0},
};

static const uint32_t kWeights[kNodes] = {1, 2, 3, 1, 2, 3};

static void test_algorithms_agree_with_the_cxx_router(void) {
  for (size_t c = 0; c < sizeof kAlgoCases / sizeof kAlgoCases[0]; ++c) {
    const algo_case* a = &kAlgoCases[c];
    const chash_option opt = {a->option_name, a->option_value};
    const chash_spec spec = {.algorithm = a->algorithm,
                             .ring = a->ring,
                             .hash = a->hash,
                             .hash_tag = a->hash_tag,
                             .options = a->option_name ? &opt : NULL,
                             .num_options = a->option_name ? 1 : 0};
    const ref_spec ref = {.algorithm = a->algorithm,
                          .ring = a->ring,
                          .hash = a->hash,
                          .hash_tag = a->hash_tag,
                          .has_vnodes = a->vnodes != 0,
                          .vnodes = a->vnodes,
                          .probes = a->probes,
                          .table_size = a->table_size};
    const uint32_t* w = a->weighted ? kWeights : NULL;
    chash_router* r = build(&spec, kNames, w, kNodes);
    CHECK(r != NULL);
    if (r == NULL) continue;
    static uint32_t want[kKeys], got[kKeys];
    CHECK(ref_route(&ref, kNames, w, kNodes, g_keys, g_key_lens, kKeys, want) == 0);
    size_t bad = 0;
    unsigned seen = 0; /* which nodes own keys: a mapping, not a constant */
    for (int k = 0; k < kKeys; ++k) {
      got[k] = chash_route(r, g_keys[k], g_key_lens[k]);
      if (got[k] != want[k]) ++bad;
      if (got[k] < kNodes) seen |= 1u << got[k];
    }
    CHECK(bad == 0);
    CHECK(seen == (1u << kNodes) - 1);
    /* Replicas: three, in the C++ router's order. */
    for (int k = 0; k < kKeys; k += 37) {
      uint32_t ids[3], ref_ids[3];
      size_t n = 0, ref_n = 0;
      CHECK_OK(chash_route_n(r, g_keys[k], g_key_lens[k], ids, 3, &n, errp_));
      CHECK(ref_route_n(&ref, kNames, w, kNodes, g_keys[k], g_key_lens[k], ref_ids, 3, &ref_n) ==
            0);
      CHECK(n == 3 && ref_n == 3 && memcmp(ids, ref_ids, sizeof ids) == 0);
    }
    if (bad != 0) {
      fprintf(stderr, "  %s: %zu of %d keys differ from the C++ router\n", chash_router_describe(r),
              bad, kKeys);
    }
    chash_router_free(r);
  }
}

/* ---- Batch, replicas, names ------------------------------------------------------------------- */

static void test_batch_equals_single_routes(void) {
  const char* presets[] = {"ketama", "twemproxy", "guava", "hash_ring"};
  for (size_t p = 0; p < 4; ++p) {
    const chash_spec spec = {.preset = presets[p]};
    chash_router* r = build(&spec, kNames, NULL, kNodes);
    if (r == NULL) continue;
    static uint32_t out[kKeys];
    /* 1000 keys cross the C layer's 256-key chunks; 1 and 0 keys are edge cases. */
    const size_t counts[] = {kKeys, 257, 1, 0};
    for (size_t c = 0; c < 4; ++c) {
      for (int k = 0; k < kKeys; ++k) out[k] = 0xDEADBEEF;
      CHECK_OK(chash_route_batch(r, g_keys, g_key_lens, counts[c], out, errp_));
      for (size_t k = 0; k < counts[c]; ++k) {
        CHECK(out[k] == chash_route(r, g_keys[k], g_key_lens[k]));
      }
      if (counts[c] < kKeys) CHECK(out[counts[c]] == 0xDEADBEEF); /* nothing past count */
    }
    chash_router_free(r);
  }
}

static void test_replicas_are_distinct_and_start_with_the_owner(void) {
  const chash_spec specs[] = {{.preset = "ketama"}, {.algorithm = "maglev"}, {.algorithm = "jump"}};
  for (size_t s = 0; s < 3; ++s) {
    chash_router* r = build(&specs[s], kNames, NULL, kNodes);
    if (r == NULL) continue;
    for (int k = 0; k < kKeys; k += 7) {
      uint32_t ids[kNodes + 2];
      size_t n = 0;
      CHECK_OK(chash_route_n(r, g_keys[k], g_key_lens[k], ids, kNodes + 2, &n, errp_));
      CHECK(n == kNodes); /* more asked than there are nodes: every node, once */
      CHECK(ids[0] == chash_route(r, g_keys[k], g_key_lens[k]));
      unsigned seen = 0;
      for (size_t i = 0; i < n; ++i) {
        CHECK(ids[i] < kNodes && !(seen & (1u << ids[i])));
        seen |= 1u << ids[i];
      }
      size_t two = 0;
      CHECK_OK(chash_route_n(r, g_keys[k], g_key_lens[k], ids, 2, &two, errp_));
      CHECK(two == 2);
      size_t none = 99;
      CHECK_OK(chash_route_n(r, g_keys[k], g_key_lens[k], NULL, 0, &none, errp_));
      CHECK(none == 0);
    }
    chash_router_free(r);
  }
}

static void test_names_and_description(void) {
  const char* names[] = {"a", "bb\0x", "ccc"}; /* a name with a NUL byte inside */
  const size_t lens[] = {1, 4, 3};
  const uint32_t weights[] = {1, 2, 3};
  const chash_nodes nodes = {.names = names, .name_lengths = lens, .weights = weights, .count = 3};
  const chash_spec spec = {.algorithm = "rendezvous"};
  chash_router* r = NULL;
  CHECK_OK(chash_router_new(&spec, &nodes, &r, errp_));
  if (r == NULL) return;
  CHECK(chash_router_node_count(r) == 3);
  size_t len = 0;
  const char* n1 = chash_router_node_name(r, 1, &len);
  CHECK(n1 != NULL && len == 4 && memcmp(n1, "bb\0x", 4) == 0);
  CHECK(chash_router_node_weight(r, 2) == 3);
  CHECK(chash_router_node_weight(r, 3) == 0);
  CHECK(chash_router_node_name(r, 3, NULL) == NULL);
  CHECK(chash_router_node_name(r, CHASH_NO_NODE, NULL) == NULL);
  CHECK(chash_router_find_node(r, "bb\0x", 4) == 1);
  CHECK(chash_router_find_node(r, "bb", 2) == CHASH_NO_NODE);
  CHECK(strstr(chash_router_describe(r), "rendezvous") != NULL);
  const uint32_t id = chash_route(r, "k", 1);
  size_t name_len = 0;
  const char* owner = chash_route_name(r, "k", 1, &name_len);
  CHECK(owner == chash_router_node_name(r, id, NULL) && name_len == lens[id]);
  CHECK(chash_route(r, NULL, 0) == chash_route(r, "", 0)); /* the empty key */
  chash_router_free(r);
}

/* nginx-ip-hash routes client addresses; anything else has no owner. */
static void test_unroutable_key(void) {
  const chash_spec spec = {.preset = "nginx-ip-hash"};
  chash_router* r = build(&spec, kNames, NULL, kNodes);
  if (r == NULL) return;
  CHECK(chash_route(r, "not an address", 14) == CHASH_NO_NODE);
  CHECK(chash_route_name(r, "not an address", 14, NULL) == NULL);
  CHECK(chash_route(r, "192.168.1.20", 12) < kNodes);
  uint32_t ids[3];
  size_t n = 99;
  CHECK_OK(chash_route_n(r, "not an address", 14, ids, 3, &n, errp_));
  CHECK(n == 0);
  const char* keys[] = {"192.168.1.20", "nope"};
  const size_t lens[] = {12, 4};
  uint32_t out[2];
  CHECK_OK(chash_route_batch(r, keys, lens, 2, out, errp_));
  CHECK(out[0] < kNodes && out[1] == CHASH_NO_NODE);
  chash_router_free(r);
}

/* ---- Membership changes ------------------------------------------------------------------------ */

static void routes(const chash_router* r, uint32_t* out) {
  for (int k = 0; k < kKeys; ++k) out[k] = chash_route(r, g_keys[k], g_key_lens[k]);
}

static void test_membership_changes_return_new_routers(void) {
  const chash_spec spec = {.preset = "ketama"};
  chash_router* r = build(&spec, kNames, NULL, kNodes - 1); /* the first five */
  if (r == NULL) return;
  static uint32_t before[kKeys], now[kKeys], fresh[kKeys];
  routes(r, before);

  /* add: a new router; the old one unchanged. The new one routes as a fresh build of the list. */
  chash_router* added = NULL;
  CHECK_OK(chash_router_add_node(r, kNames[5], strlen(kNames[5]), 1, &added, errp_));
  CHECK(added != NULL && added != r);
  if (added == NULL) {
    chash_router_free(r);
    return;
  }
  CHECK(chash_router_node_count(r) == kNodes - 1 && chash_router_node_count(added) == kNodes);
  chash_router* six = build(&spec, kNames, NULL, kNodes);
  if (six) {
    routes(six, fresh);
    routes(added, now);
    CHECK(memcmp(now, fresh, sizeof now) == 0);
    chash_router_free(six);
  }
  size_t moved = 0;
  for (int k = 0; k < kKeys; ++k) {
    if (now[k] != before[k]) {
      ++moved;
      CHECK(now[k] == 5); /* consistent hashing: keys move only to the new node */
    }
  }
  CHECK(moved > 0 && moved < kKeys / 2);

  /* set_weight keeps the index; remove drops the node and shifts none before it. */
  chash_router* heavy = NULL;
  CHECK_OK(chash_router_set_weight(added, kNames[0], strlen(kNames[0]), 4, &heavy, errp_));
  chash_router* removed = NULL;
  CHECK_OK(chash_router_remove_node(added, kNames[2], strlen(kNames[2]), &removed, errp_));
  if (heavy && removed) {
    CHECK(chash_router_node_weight(heavy, 0) == 4 && chash_router_node_weight(added, 0) == 1);
    CHECK(chash_router_find_node(heavy, kNames[0], strlen(kNames[0])) == 0);
    CHECK(chash_router_node_count(removed) == kNodes - 1);
    CHECK(chash_router_find_node(removed, kNames[2], strlen(kNames[2])) == CHASH_NO_NODE);
    CHECK(chash_router_find_node(removed, kNames[3], strlen(kNames[3])) == 2);
    for (int k = 0; k < kKeys; ++k) {
      const char* name = chash_route_name(removed, g_keys[k], g_key_lens[k], NULL);
      CHECK(name != NULL && strcmp(name, kNames[2]) != 0);
    }
  }
  /* Freed in an order that leaves the first router last: derived routers own their own data. */
  chash_router_free(added);
  chash_router_free(heavy);
  chash_router_free(removed);
  routes(r, now);
  CHECK(memcmp(now, before, sizeof now) == 0);
  chash_router_free(r);
}

/* ---- Errors: a code and a message for each; nothing leaks (LeakSanitizer in make asan) ------- */

/* Expects `rc` == `code` with a message, *out untouched; frees the error. */
static void expect_error(int rc, chash_error* err, int code, const char* needle, int line) {
  if (rc != code || err == NULL || chash_error_code(err) != code ||
      chash_error_message(err)[0] == '\0' ||
      (needle != NULL && strstr(chash_error_message(err), needle) == NULL)) {
    fprintf(stderr, "c_api_test.c:%d: want %s (\"%s\"), got %s: %s\n", line,
            chash_status_name(code), needle ? needle : "", chash_status_name(rc),
            err ? chash_error_message(err) : "(no error object)");
    ++g_failures;
  }
  chash_error_free(err);
}

/* The spec's initializers come last: they hold commas. */
#define EXPECT_BUILD_ERROR(names_, weights_, count_, code_, needle_, ...)                 \
  do {                                                                                    \
    const chash_spec s_ = {__VA_ARGS__};                                                  \
    const chash_nodes n_ = {.names = (names_), .weights = (weights_), .count = (count_)}; \
    chash_router* r_ = NULL;                                                              \
    chash_error* e_ = NULL;                                                               \
    const int rc_ = chash_router_new(&s_, &n_, &r_, &e_);                                 \
    CHECK(r_ == NULL);                                                                    \
    expect_error(rc_, e_, (code_), (needle_), __LINE__);                                  \
  } while (0)

static void test_build_errors(void) {
  const uint32_t zeros[kNodes] = {0};
  const uint32_t one_heavy[kNodes] = {1, 2, 1, 1, 1, 1};
  const uint32_t too_heavy[kNodes] = {1, 70000, 1, 1, 1, 1};
  const char* dup[] = {"a", "b", "a"};
  const char* with_null[] = {"a", NULL};
  const chash_option bad_name[] = {{"vnodez", "3"}};
  const chash_option bad_number[] = {{"vnodes", "12x"}};
  const chash_option null_value[] = {{"vnodes", NULL}};
  const chash_option bad_setting[] = {{"preset-option", "noequals"}};
  const chash_option unknown_setting[] = {{"preset-option", "colour=blue"}};

  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, "no-such-preset",
                     .preset = "no-such-preset");
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, "no-such-algo",
                     .algorithm = "no-such-algo");
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, "no-such-hash", .algorithm = "ring",
                     .hash = "no-such-hash");
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, NULL, .ring = "points=; vnodes=abc");
  EXPECT_BUILD_ERROR(kNames, NULL, 0, CHASH_ERR_EMPTY_NODE_SET, NULL, .preset = "ketama");
  EXPECT_BUILD_ERROR(NULL, NULL, 0, CHASH_ERR_EMPTY_NODE_SET, NULL, .algorithm = "maglev");
  EXPECT_BUILD_ERROR(kNames, zeros, kNodes, CHASH_ERR_EMPTY_NODE_SET, NULL, .preset = "ketama");
  EXPECT_BUILD_ERROR(kNames, zeros, kNodes, CHASH_ERR_EMPTY_NODE_SET, NULL, .algorithm = "ring");
  EXPECT_BUILD_ERROR(kNames, one_heavy, kNodes, CHASH_ERR_UNSUPPORTED, NULL, .algorithm = "jump");
  EXPECT_BUILD_ERROR(kNames, too_heavy, kNodes, CHASH_ERR_LIMIT_EXCEEDED, NULL,
                     .algorithm = "ring");
  EXPECT_BUILD_ERROR(dup, NULL, 3, CHASH_ERR_DUPLICATE_NODE, "\"a\"", .algorithm = "ring");
  EXPECT_BUILD_ERROR(NULL, NULL, 3, CHASH_ERR_INVALID_ARGUMENT, "nodes->names",
                     .algorithm = "ring");
  EXPECT_BUILD_ERROR(with_null, NULL, 2, CHASH_ERR_INVALID_ARGUMENT, "nodes->names[1]",
                     .algorithm = "ring");
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, "choose one",
                     .preset = "ketama", .algorithm = "ring");
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, NULL, 0);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, "hash tag",
                     .algorithm = "ring", .hash_tag = "{");
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, "vnodez",
                     .algorithm = "jump", .options = bad_name, .num_options = 1);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, "12x", .algorithm = "ring",
                     .options = bad_number, .num_options = 1);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, "NULL value",
                     .algorithm = "ring", .options = null_value, .num_options = 1);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, "spec->options",
                     .algorithm = "ring", .num_options = 1);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, "KEY=VALUE", .preset = "ketama",
                     .options = bad_setting, .num_options = 1);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_PARSE, NULL, .preset = "ketama",
                     .options = unknown_setting, .num_options = 1);
  EXPECT_BUILD_ERROR(kNames, NULL, kNodes, CHASH_ERR_INVALID_ARGUMENT, "choose one",
                     .algorithm = "jump", .ring = "vnodes=3");

  /* NULL arguments of chash_router_new itself. */
  const chash_spec spec = {.algorithm = "ring"};
  const chash_nodes nodes = {.names = kNames, .count = kNodes};
  chash_router* r = NULL;
  chash_error* e = NULL;
  int rc = chash_router_new(NULL, &nodes, &r, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "spec", __LINE__);
  e = NULL;
  rc = chash_router_new(&spec, NULL, &r, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "nodes", __LINE__);
  e = NULL;
  rc = chash_router_new(&spec, &nodes, NULL, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "out", __LINE__);
  CHECK(r == NULL);
  /* No error object asked for: the code alone. */
  CHECK(chash_router_new(NULL, NULL, NULL, NULL) == CHASH_ERR_INVALID_ARGUMENT);
  CHECK(chash_error_code(NULL) == CHASH_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(chash_error_message(NULL), "") == 0);
  chash_error_free(NULL);
  chash_router_free(NULL);
}

static void test_lookup_and_change_errors(void) {
  const chash_spec spec = {.preset = "ketama"};
  chash_router* r = build(&spec, kNames, NULL, 2);
  if (r == NULL) return;
  uint32_t out[4];
  size_t n = 0;
  chash_error* e = NULL;
  int rc;
  const char* null_key[] = {NULL};
  const size_t one[] = {1};

  /* Lookups on NULL: a sentinel, never a crash. */
  CHECK(chash_route(NULL, "k", 1) == CHASH_NO_NODE);
  CHECK(chash_route(r, NULL, 1) == CHASH_NO_NODE);
  CHECK(chash_route_name(NULL, "k", 1, NULL) == NULL);
  CHECK(chash_router_node_count(NULL) == 0);
  CHECK(chash_router_find_node(NULL, "a", 1) == CHASH_NO_NODE);
  CHECK(strcmp(chash_router_describe(NULL), "") == 0);

  rc = chash_route_batch(NULL, g_keys, g_key_lens, 1, out, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "router", __LINE__);
  e = NULL;
  rc = chash_route_batch(r, NULL, g_key_lens, 1, out, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "keys", __LINE__);
  e = NULL;
  rc = chash_route_batch(r, g_keys, NULL, 1, out, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "key_lengths", __LINE__);
  e = NULL;
  rc = chash_route_batch(r, g_keys, g_key_lens, 1, NULL, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "out", __LINE__);
  e = NULL;
  rc = chash_route_batch(r, null_key, one, 1, out, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "keys[0]", __LINE__);
  e = NULL;
  rc = chash_route_n(r, "k", 1, out, 2, NULL, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "count", __LINE__);
  e = NULL;
  rc = chash_route_n(r, "k", 1, NULL, 2, &n, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "out", __LINE__);
  e = NULL;
  rc = chash_route_n(NULL, "k", 1, out, 2, &n, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "router", __LINE__);
  e = NULL;
  rc = chash_route_n(r, NULL, 1, out, 2, &n, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "key", __LINE__);

  chash_router* next = NULL;
  e = NULL;
  rc = chash_router_add_node(r, kNames[0], strlen(kNames[0]), 1, &next, &e);
  expect_error(rc, e, CHASH_ERR_DUPLICATE_NODE, kNames[0], __LINE__);
  e = NULL;
  rc = chash_router_add_node(r, "big", 3, 70000, &next, &e);
  expect_error(rc, e, CHASH_ERR_LIMIT_EXCEEDED, NULL, __LINE__);
  e = NULL;
  rc = chash_router_remove_node(r, "nope", 4, &next, &e);
  expect_error(rc, e, CHASH_ERR_UNKNOWN_NODE, "nope", __LINE__);
  e = NULL;
  rc = chash_router_set_weight(r, "nope", 4, 2, &next, &e);
  expect_error(rc, e, CHASH_ERR_UNKNOWN_NODE, "nope", __LINE__);
  e = NULL;
  rc = chash_router_add_node(NULL, "x", 1, 1, &next, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "router", __LINE__);
  e = NULL;
  rc = chash_router_add_node(r, "x", 1, 1, NULL, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "out", __LINE__);
  e = NULL;
  rc = chash_router_add_node(r, NULL, 1, 1, &next, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "name", __LINE__);
  /* Zero weight: ketama refuses it as libmemcached cannot drain a server... */
  e = NULL;
  rc = chash_router_set_weight(r, kNames[0], strlen(kNames[0]), 0, &next, &e);
  expect_error(rc, e, CHASH_ERR_INVALID_ARGUMENT, "weight 0", __LINE__);
  /* ...a native ring drains the node; draining the last one is an empty node set. */
  const chash_spec ring = {.algorithm = "ring"};
  chash_router* two = build(&ring, kNames, NULL, 2);
  chash_router* drained = NULL;
  if (two) CHECK_OK(chash_router_set_weight(two, kNames[0], strlen(kNames[0]), 0, &drained, errp_));
  if (drained) {
    CHECK(chash_router_node_count(drained) == 2 && chash_router_node_weight(drained, 0) == 0);
    for (int k = 0; k < kKeys; ++k) CHECK(chash_route(drained, g_keys[k], g_key_lens[k]) == 1);
    e = NULL;
    rc = chash_router_set_weight(drained, kNames[1], strlen(kNames[1]), 0, &next, &e);
    expect_error(rc, e, CHASH_ERR_EMPTY_NODE_SET, NULL, __LINE__);
    chash_router_free(drained);
  }
  chash_router_free(two);
  /* Removing every node: the last removal fails. */
  chash_router* single = NULL;
  CHECK_OK(chash_router_remove_node(r, kNames[0], strlen(kNames[0]), &single, errp_));
  if (single) {
    e = NULL;
    rc = chash_router_remove_node(single, kNames[1], strlen(kNames[1]), &next, &e);
    expect_error(rc, e, CHASH_ERR_EMPTY_NODE_SET, NULL, __LINE__);
    chash_router_free(single);
  }
  CHECK(next == NULL); /* no failed change wrote *out */
  chash_router_free(r);
}

/* ---- Threads: one router, many readers ------------------------------------------------------- */

typedef struct reader {
  const chash_router* router;
  const uint32_t* want;
  size_t wrong;
} reader;

static void* read_all(void* arg) {
  reader* rd = arg;
  uint32_t out[kKeys];
  for (int round = 0; round < 20; ++round) {
    for (int k = 0; k < kKeys; ++k) {
      if (chash_route(rd->router, g_keys[k], g_key_lens[k]) != rd->want[k]) ++rd->wrong;
    }
    if (chash_route_batch(rd->router, g_keys, g_key_lens, kKeys, out, NULL) != CHASH_OK ||
        memcmp(out, rd->want, sizeof out) != 0) {
      ++rd->wrong;
    }
  }
  return NULL;
}

static void test_concurrent_routes_agree(void) {
  const chash_spec spec = {.preset = "ketama"};
  chash_router* r = build(&spec, kNames, NULL, kNodes);
  if (r == NULL) return;
  static uint32_t want[kKeys];
  routes(r, want);
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  reader readers[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    readers[t] = (reader){r, want, 0};
    CHECK(pthread_create(&threads[t], NULL, read_all, &readers[t]) == 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    CHECK(readers[t].wrong == 0);
  }
  chash_router_free(r);
}

/* chash_route_java_strings: Java String keys packed as KeyPack.java packs them
 * (java_strings_test.c). */
static void test_java_string_batches(void) { g_failures += java_strings_tests(); }

/* ---- main ------------------------------------------------------------------------------------ */

typedef struct test_case {
  const char* name;
  void (*run)(void);
} test_case;

#define T(fn) \
  { #fn, fn }
static const test_case kTests[] = {
    T(test_versions),
    T(test_preset_list),
    T(test_presets_agree_with_the_peers),
    T(test_algorithms_agree_with_the_cxx_router),
    T(test_batch_equals_single_routes),
    T(test_replicas_are_distinct_and_start_with_the_owner),
    T(test_names_and_description),
    T(test_unroutable_key),
    T(test_membership_changes_return_new_routers),
    T(test_build_errors),
    T(test_lookup_and_change_errors),
    T(test_concurrent_routes_agree),
    T(test_java_string_batches),
};

int main(void) {
  make_keys();
  int passed = 0, failed = 0;
  for (size_t i = 0; i < sizeof kTests / sizeof kTests[0]; ++i) {
    g_failures = 0;
    kTests[i].run();
    printf("%s %s\n", g_failures == 0 ? "ok  " : "FAIL", kTests[i].name);
    if (g_failures == 0) ++passed;
    else ++failed;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
