/* SPDX-License-Identifier: Apache-2.0 */
/* chash — the C ABI: libchash's router for C and for every language that can call C (Java's JNI,
 * Go's cgo, Node's N-API, Python's ctypes).
 *
 * A chash_router is built from the same spec the CLI (`chash route`) and chash-proxy (a pool's
 * keys) take — a compatibility preset, a native algorithm or a ring spec, a key hash, a hash tag
 * and the options named as the CLI's flags — and an ordered node list with weights. It maps a key
 * to exactly the node the C++ chash::Router (chash/router.h) picks for that spec, which for a
 * preset is the node the peer itself picks (tests/compat/ vectors, docs/COMPATIBILITY.md).
 *
 * Example (C11; error handling shortened):
 *   const char* names[] = {"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"};
 *   chash_spec spec = {.preset = "ketama"};
 *   chash_nodes nodes = {.names = names, .count = 3};
 *   chash_router* r = NULL;
 *   chash_error* err = NULL;
 *   if (chash_router_new(&spec, &nodes, &r, &err) != CHASH_OK) {
 *     fprintf(stderr, "chash: %s\n", chash_error_message(err));
 *     chash_error_free(err);
 *   }
 *   uint32_t id = chash_route(r, "user:42", 7);           // as libmemcached's ketama picks
 *   printf("%s\n", chash_router_node_name(r, id, NULL));
 *   chash_router_free(r);
 *
 * Errors: every function that can fail returns an int status (CHASH_OK or a CHASH_ERR_* code)
 * and, when `err` is not NULL, stores an error the caller owns and frees with
 * chash_error_free(); `*err` and `*out` are written only on failure and on success respectively.
 * No C++ exception crosses this interface: everything, std::bad_alloc included, is caught and
 * returned as a code (CHASH_ERR_NO_MEMORY when memory runs out). The lookups (chash_route,
 * chash_route_name) are the hot path and report with their return value alone, as chash's
 * lookups do: a check and an error object per key would cost more than the lookup.
 *
 * Thread safety: a built chash_router is immutable. Any number of threads may route through one
 * router at the same time with no locking, and may derive new routers from it
 * (chash_router_add_node ...). Only chash_router_free must not race with other calls on the same
 * router. Membership changes never modify a router: they return a new one, and the old one keeps
 * routing as before until it is freed — publish the new pointer to readers (an atomic store) and
 * free the old one when no reader holds it.
 *
 * Allocation: the lookups do not allocate, except that the first walk past 16 nodes on a thread
 * (chash_route_n asking for more than 16 replicas of a preset) allocates that thread's scratch
 * memory once (chash/internal/scratch.h); if that allocation fails the process aborts, as the
 * C++ API does.
 *
 * ABI promise (docs/BINDINGS.md): the types are opaque or frozen, functions are only appended, and
 * libchash_c.so's SONAME (libchash_c.so.CHASH_C_ABI_MAJOR) changes only when a function or a
 * struct changes incompatibly — independently of libchash.so, whose C++ ABI may change in any
 * minor release before 1.0. The library exports nothing but the chash_* symbols below.
 */
#ifndef CHASH_CHASH_C_H_
#define CHASH_CHASH_C_H_

#include <stddef.h>
#include <stdint.h>

/* The C ABI's own version (not the library's: see chash_version()). MAJOR is the SONAME's
 * number and changes only with an incompatible change; MINOR counts appended functions. The
 * build reads both numbers from here (CMakeLists.txt), so they are written only here. */
#define CHASH_C_ABI_MAJOR 1
#define CHASH_C_ABI_MINOR 1

/* Only the functions of this header leave libchash_c.so; the library is compiled with
 * -fvisibility=hidden and linked with a version script (src/c/chash_c.map) that keeps chash_*
 * only. */
#if defined(_WIN32)
#define CHASH_C_API
#elif defined(__GNUC__)
#define CHASH_C_API __attribute__((visibility("default")))
#else
#define CHASH_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes ----------------------------------------------------------------------------
 * The first seven are chash::ErrorCode (chash/error.h) plus one; new codes are only appended. */
enum {
  CHASH_OK = 0,
  CHASH_ERR_INVALID_ARGUMENT = 1, /* a NULL argument, a value outside its range, a bad option */
  CHASH_ERR_EMPTY_NODE_SET = 2,   /* no node, or no node with a positive weight */
  CHASH_ERR_DUPLICATE_NODE = 3,   /* two nodes share a name */
  CHASH_ERR_UNKNOWN_NODE = 4,     /* a node name that is not in the router */
  CHASH_ERR_LIMIT_EXCEEDED = 5,   /* weights, points or table sizes beyond chash's limits */
  CHASH_ERR_UNSUPPORTED = 6,      /* an option the algorithm or preset does not have */
  CHASH_ERR_PARSE = 7,            /* text that does not parse: an unknown preset, algorithm
                                     or hash name, a bad ring spec or number */
  CHASH_ERR_NO_MEMORY = 8,        /* std::bad_alloc inside the library */
  CHASH_ERR_INTERNAL = 9          /* any other exception: a bug in chash, please report it */
};

/* Returned by the lookups when no node can be chosen: the key cannot be routed (nginx-ip-hash
 * given something that is not an IP address) or the router argument was NULL. */
#define CHASH_NO_NODE UINT32_C(0xFFFFFFFF)

/* ---- Opaque types ------------------------------------------------------------------------------ */
typedef struct chash_router chash_router;
typedef struct chash_error chash_error;

/* ---- The spec: how keys are routed -------------------------------------------------------------
 * Exactly one of preset, algorithm and ring (NULL or "" for the others), as `chash route`'s
 * --preset, --algo and --ring. Everything else is optional: NULL leaves chash's default.
 * These two structs are frozen (never reordered or grown): new spec settings arrive as new option
 * names. Zero-initialize them ({0} or designated initializers) so unused fields are NULL. */
typedef struct chash_option {
  const char* name;  /* a `chash route` flag without its dashes, see chash_spec.options */
  const char* value; /* its value as text, as on the command line */
} chash_option;

typedef struct chash_spec {
  const char* preset;    /* a compatibility preset: "ketama", "twemproxy", "guava", ... */
  const char* algorithm; /* a native algorithm: "ring", "jump", "maglev", "rendezvous", ... */
  const char* ring;      /* a ring spec, e.g. "points={name}_v{i}; vnodes=150; hash=md5-int32" */
  const char* hash;      /* key hash: chash's for an algorithm ("xxh3" default, "md5", ...), the
                            peer's own setting for a preset (twemproxy's "fnv1a_64") */
  const char* hash_tag;  /* two characters, e.g. "{}": hash only the bytes between them */
  /* The other flags of `chash route`, in order:
   *   "vnodes"          points per node (ring, ring64, presets with points, ring specs)
   *   "table-size"      maglev's table size, a prime (default 65537)
   *   "probes"          multiprobe's probes per key (default 21)
   *   "point-format"    ring point names, with {name} and {i}
   *   "balance-factor"  bounded loads, a percent >= 100 (kept with the router; 0 = off)
   *   "preset-option"   "KEY=VALUE", a preset's own setting in the peer's spelling (repeatable,
   *                     applied in order), e.g. libmemcached's "distribution=CONSISTENT_KETAMA_SPY"
   * An unknown name is CHASH_ERR_INVALID_ARGUMENT. */
  const chash_option* options;
  size_t num_options;
} chash_spec;

/* An ordered node list. A node's index (its NodeId, what the lookups return) is its position in
 * this list. Names are arbitrary bytes, unique, at most 4096 bytes; weights 0..65536 (0 keeps
 * the node's place but gives it no keys, where the placement is weighted). */
typedef struct chash_nodes {
  const char* const* names;   /* count names */
  const size_t* name_lengths; /* count lengths, or NULL: every name is NUL-terminated */
  const uint32_t* weights;    /* count weights, or NULL: every weight is 1 */
  size_t count;
} chash_nodes;

/* ---- Building and freeing --------------------------------------------------------------------- */

/* Builds a router for `spec` and `nodes`. On success stores it in *out (free it with
 * chash_router_free). Fails with the code chash's C++ builder gives (an unknown preset or
 * algorithm, an option the placement does not take, an empty node list, no positive weight,
 * duplicate names ...) and a message a person can act on. O(build of the placement). */
CHASH_C_API int chash_router_new(const chash_spec* spec, const chash_nodes* nodes,
                                 chash_router** out, chash_error** err);

/* Frees a router (NULL is allowed). Routers derived from it are independent and stay valid. */
CHASH_C_API void chash_router_free(chash_router* router);

/* ---- Lookups (read-only: safe from any number of threads at once) ----------------------------- */

/* The index of the node that owns the `key_len` bytes at `key` (key may be NULL when key_len is
 * 0), or CHASH_NO_NODE (see above). Allocation-free; the C++ Router::route. */
CHASH_C_API uint32_t chash_route(const chash_router* router, const char* key, size_t key_len);

/* The owner's name, or NULL when chash_route would return CHASH_NO_NODE. The pointer is owned by
 * the router and valid until it is freed; the name is NUL-terminated and, when name_len is not
 * NULL, its length is stored there (names may hold NUL bytes). */
CHASH_C_API const char* chash_route_name(const chash_router* router, const char* key,
                                         size_t key_len, size_t* name_len);

/* Routes `count` keys: out[i] = chash_route(router, keys[i], key_lengths[i]), computed several
 * times faster for the MD5 and jump-class placements (hashes side by side, pipelined lookups;
 * the C++ Router::route_batch). keys[i] may be NULL only when key_lengths[i] is 0. On failure
 * (a NULL argument) the contents of out are unspecified. */
CHASH_C_API int chash_route_batch(const chash_router* router, const char* const* keys,
                                  const size_t* key_lengths, size_t count, uint32_t* out,
                                  chash_error** err);

/* Java Strings' text as the JDK holds it (compact strings): Latin-1 bytes or UTF-16 units in the
 * platform's byte order. */
enum { CHASH_JAVA_LATIN1 = 0, CHASH_JAVA_UTF16 = 1 };

/* Routes `count` Java Strings, each as its String.getBytes(UTF_8) (an unpaired surrogate becomes
 * '?'): out[i] = chash_route of that encoding. Key i is data[from .. offsets[i + 1]) in coders[i]'s
 * form (CHASH_JAVA_LATIN1 or CHASH_JAVA_UTF16), where from is offsets[i] rounded up to even for a
 * UTF-16 key (UTF-16 keys start at an even offset, with a byte of padding before when needed);
 * offsets has count + 1 entries, in bytes. With coders NULL every key is UTF-16 and the offsets
 * count units (data holds data_len / 2 units, a char[] of String.getChars). data must be aligned
 * to 2 bytes, as a Java array's elements are (else CHASH_ERR_INVALID_ARGUMENT). The Java binding
 * packs a batch's Strings so (bindings/java/src/dev/chash/KeyPack.java), copying each String's
 * bytes as they are instead of encoding them in Java; the ASCII keys, the common ones, are routed
 * where they lie and the guava preset hashes the others without a second pass (C ABI 1.1).
 * Offsets outside data_len, going backwards, a UTF-16 key of an odd byte length or an unknown
 * coder: CHASH_ERR_INVALID_ARGUMENT naming the key, nothing read outside data, and only the
 * keys before that key's chunk routed. Allocation-free except for a key whose UTF-8 exceeds
 * 16 KiB on a router other than guava (CHASH_ERR_NO_MEMORY if that fails). */
CHASH_C_API int chash_route_java_strings(const chash_router* router, const char* data,
                                         size_t data_len, const uint8_t* coders,
                                         const int32_t* offsets, size_t count, uint32_t* out,
                                         chash_error** err);

/* Replicas: up to `max` distinct nodes for the key in the placement's preference order (the
 * owner first, then the next distinct nodes clockwise on a ring, or the peer's own next choice);
 * stores how many in *count (every node when max exceeds the node count; 0 when the key cannot
 * be routed). The C++ Router::route_n. */
CHASH_C_API int chash_route_n(const chash_router* router, const char* key, size_t key_len,
                              uint32_t* out, size_t max, size_t* count, chash_error** err);

/* ---- Membership changes: each returns a NEW router --------------------------------------------
 * The old router is not modified and stays valid (and keeps routing as before) until freed; the
 * new one is built from the same spec and the changed node list, as editing the node list given
 * to `chash route` would. Node indexes belong to one router: removing a node moves every later
 * node down by one index; use names to follow a node across changes. */

/* `name` appended to the list with `weight`. CHASH_ERR_DUPLICATE_NODE if it is there already. */
CHASH_C_API int chash_router_add_node(const chash_router* router, const char* name, size_t name_len,
                                      uint32_t weight, chash_router** out, chash_error** err);

/* `name` taken out of the list. CHASH_ERR_UNKNOWN_NODE if it is not there; removing the last
 * node is CHASH_ERR_EMPTY_NODE_SET. */
CHASH_C_API int chash_router_remove_node(const chash_router* router, const char* name,
                                         size_t name_len, chash_router** out, chash_error** err);

/* `name` given a new weight, keeping its index (0 drains it where the placement is weighted).
 * CHASH_ERR_UNKNOWN_NODE if it is not there; the builder's error if the placement refuses. */
CHASH_C_API int chash_router_set_weight(const chash_router* router, const char* name,
                                        size_t name_len, uint32_t weight, chash_router** out,
                                        chash_error** err);

/* ---- Description -------------------------------------------------------------------------------- */

/* The number of nodes (0 for NULL). */
CHASH_C_API size_t chash_router_node_count(const chash_router* router);

/* Node `index`'s name (owned by the router, NUL-terminated, length in *name_len when not NULL),
 * or NULL when index >= chash_router_node_count (CHASH_NO_NODE included). */
CHASH_C_API const char* chash_router_node_name(const chash_router* router, uint32_t index,
                                               size_t* name_len);

/* Node `index`'s weight, or 0 when index is out of range. */
CHASH_C_API uint32_t chash_router_node_weight(const chash_router* router, uint32_t index);

/* The index of the node called `name`, or CHASH_NO_NODE. O(nodes). */
CHASH_C_API uint32_t chash_router_find_node(const chash_router* router, const char* name,
                                            size_t name_len);

/* One line a person reads: "preset ketama", "maglev (xxh3)" — as `chash route` would describe
 * it. Owned by the router. */
CHASH_C_API const char* chash_router_describe(const chash_router* router);

/* The presets this library has, in a stable order: chash_preset_name(i) for i < count (NULL
 * past the end). Static strings. */
CHASH_C_API size_t chash_preset_count(void);
CHASH_C_API const char* chash_preset_name(size_t index);

/* ---- Errors ------------------------------------------------------------------------------------- */

/* The error's CHASH_ERR_* code (CHASH_ERR_INVALID_ARGUMENT for NULL). */
CHASH_C_API int chash_error_code(const chash_error* error);
/* Its message, NUL-terminated, owned by the error (valid until chash_error_free). */
CHASH_C_API const char* chash_error_message(const chash_error* error);
/* Frees an error (NULL is allowed). */
CHASH_C_API void chash_error_free(chash_error* error);
/* The code's name, "CHASH_ERR_PARSE"; "CHASH_ERR_UNKNOWN" for a code this library does not
 * know. A static string. */
CHASH_C_API const char* chash_status_name(int code);

/* ---- Versions ----------------------------------------------------------------------------------- */

/* The library's version, "major.minor.patch" (chash/version.h's CHASH_VERSION_STRING), and as one
 * number: major * 10000 + minor * 100 + patch (0.2.0 -> 200). */
CHASH_C_API const char* chash_version(void);
CHASH_C_API uint32_t chash_version_number(void);
/* The C ABI the loaded library implements: CHASH_C_ABI_MAJOR * 1000 + CHASH_C_ABI_MINOR. A
 * program that needs a function appended in ABI 1.N checks for >= 1000 + N at run time. */
CHASH_C_API uint32_t chash_c_abi_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CHASH_CHASH_C_H_ */
