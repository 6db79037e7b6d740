/* SPDX-License-Identifier: Apache-2.0 */
/* The C++ router's answers, for the C tests to compare the C ABI with (reference.cc). The spec is
 * given field by field as chash::RoutingSpec has them, so the C ABI's own translation of a
 * chash_spec (option names, "KEY=VALUE" settings, NULL handling) is what the tests check. */
#ifndef CHASH_TESTS_C_API_REFERENCE_H_
#define CHASH_TESTS_C_API_REFERENCE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ref_spec {
  const char* preset; /* NULL: unset; likewise for the other strings */
  const char* algorithm;
  const char* ring;
  const char* hash;
  const char* hash_tag;
  int has_vnodes; /* vnodes is set (0 is a value: a ring spec's bare points only) */
  uint32_t vnodes;
  uint64_t table_size;              /* 0: unset */
  uint32_t probes;                  /* 0: unset */
  const char* const* setting_names; /* num_settings preset settings, in order */
  const char* const* setting_values;
  size_t num_settings;
} ref_spec;

/* out[i] = chash::Router::build(spec, nodes).route(keys[i]) (names NUL-terminated). Returns 0, or
 * -1 when the build throws (the message is printed). */
int ref_route(const ref_spec* spec, const char* const* names, const uint32_t* weights,
              size_t num_nodes, const char* const* keys, const size_t* key_lengths, size_t num_keys,
              uint32_t* out);

/* *count = Router::route_n(key, out[0..max)). Returns 0, or -1 when the build throws. */
int ref_route_n(const ref_spec* spec, const char* const* names, const uint32_t* weights,
                size_t num_nodes, const char* key, size_t key_len, uint32_t* out, size_t max,
                size_t* count);

#ifdef __cplusplus
}
#endif

#endif /* CHASH_TESTS_C_API_REFERENCE_H_ */
