/* check.h — the unit tests' CHECK(cond, fmt, ...): a failed condition is counted in failures
 * and printed as "not ok - FILE:LINE: message"; a test exits 1 if failures is not 0. One
 * translation unit per test, so the counter lives here. */
#ifndef CLAIMD_TESTS_CHECK_H
#define CLAIMD_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		printf("not ok - %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

#endif
