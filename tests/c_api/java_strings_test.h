/* SPDX-License-Identifier: Apache-2.0 */
/* java_strings_test.c: chash_route_java_strings, the Java binding's String batches. */
#ifndef CHASH_TESTS_JAVA_STRINGS_TEST_H_
#define CHASH_TESTS_JAVA_STRINGS_TEST_H_

/* Runs its checks; returns how many failed (each printed to stderr). */
int java_strings_tests(void);

#endif
