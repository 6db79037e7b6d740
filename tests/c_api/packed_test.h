/* SPDX-License-Identifier: Apache-2.0 */
/* packed_test.c: the bindings' batch helpers (bindings/common/chash_packed.h). */
#ifndef CHASH_TESTS_PACKED_TEST_H_
#define CHASH_TESTS_PACKED_TEST_H_

/* Runs the helpers' checks; returns how many failed (each printed to stderr). */
int packed_tests(void);

#endif
