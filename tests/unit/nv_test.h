/* A minimal unit-test harness: CHECK records a failure and goes on;
 * SKIP says why a part cannot run here; nv_test_done() prints "N passed,
 * N failed, N skipped" and returns the exit status: 1 on a failure, else
 * 77 (ctest's SKIP_RETURN_CODE) when a part was skipped, else 0. */
#ifndef NV_TEST_H
#define NV_TEST_H

#include <stdio.h>
#include <string.h>

static int nv_test_passed, nv_test_failed, nv_test_skipped;

/* A part of the test that cannot run here (a tool or privilege missing):
 * said on stdout, and the whole test counts as skipped, not passed. */
#define SKIP(why)                                                              \
	do {                                                                   \
		nv_test_skipped++;                                             \
		printf("SKIP: %s\n", (why));                                   \
	} while (0)

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
	printf("%d passed, %d failed, %d skipped\n", nv_test_passed,
	       nv_test_failed, nv_test_skipped);
	if (nv_test_failed)
		return 1;
	return nv_test_skipped ? 77 : 0;
}

#endif
