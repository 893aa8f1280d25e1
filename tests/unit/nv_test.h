/* A minimal unit-test harness: CHECK records a failure and goes on;
 * nv_test_done() prints "N passed, N failed" and returns the exit status. */
#ifndef NV_TEST_H
#define NV_TEST_H

#include <stdio.h>
#include <string.h>

static int nv_test_passed, nv_test_failed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			nv_test_passed++;                                      \
		} else {                                                       \
			nv_test_failed++;                                      \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *nv_a_ = (a), *nv_b_ = (b);                         \
		if (nv_a_ && nv_b_ && strcmp(nv_a_, nv_b_) == 0) {             \
			nv_test_passed++;                                      \
		} else {                                                       \
			nv_test_failed++;                                      \
			fprintf(stderr, "%s:%d: '%s' != '%s'\n", __FILE__,     \
				__LINE__, nv_a_ ? nv_a_ : "(null)",            \
				nv_b_ ? nv_b_ : "(null)");                     \
		}                                                              \
	} while (0)

static inline int nv_test_done(void)
{
	printf("%d passed, %d failed\n", nv_test_passed, nv_test_failed);
	return nv_test_failed ? 1 : 0;
}

#endif
