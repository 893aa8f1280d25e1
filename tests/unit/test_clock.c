/* Unit tests of host/core/clock.c: durations and deadlines are measured on
 * the monotonic clock that does not count sleep (CLOCK_MONOTONIC on Linux,
 * CLOCK_UPTIME_RAW on macOS), never on the wall clock that NTP and `date`
 * step; timestamps are the wall clock's. Without a way to step the
 * machine's clock here, these check the API's contract: which clock is
 * read, that the two kinds differ, and that deadlines pass on time. */
#include "core/clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nv_test.h"

static double read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* nv_monotonic reads the named clock, the one that stops during sleep. */
static void test_which_clock(void)
{
#if defined(__APPLE__)
	clockid_t want = CLOCK_UPTIME_RAW;
	CHECK_STR(nv_monotonic_clock_name(), "CLOCK_UPTIME_RAW");
#else
	clockid_t want = CLOCK_MONOTONIC;
	CHECK_STR(nv_monotonic_clock_name(), "CLOCK_MONOTONIC");
#endif
	double before = read_clock(want);
	double mono = nv_monotonic();
	double after = read_clock(want);

	CHECK(before <= mono && mono <= after);
	/* and not the wall clock: that one counts from 1970 */
	CHECK(nv_now() - mono > 1e6);
	double wall = read_clock(CLOCK_REALTIME);
	CHECK(nv_now() >= wall && nv_now() - wall < 1.0);
}

static void test_monotonic_never_decreases(void)
{
	double last = nv_monotonic();
	int backwards = 0;

	for (int i = 0; i < 100000; i++) {
		double t = nv_monotonic();
		if (t < last)
			backwards++;
		last = t;
	}
	CHECK(backwards == 0);
}

/* A deadline is on the monotonic clock: it lies `seconds` after
 * nv_monotonic(), passes once that much time has gone, and means nothing
 * on the wall clock (a deadline compared with nv_now() would have passed
 * decades ago, which is how a mixed-up caller shows itself). */
static void test_deadlines(void)
{
	double start = nv_monotonic();
	double d = nv_deadline_after(0.2);

	CHECK(d - start >= 0.2 && d - start < 0.25);
	CHECK(!nv_deadline_passed(d));
	CHECK(d < nv_now()); /* not a wall-clock time */
	pause_ms(50);
	CHECK(!nv_deadline_passed(d));
	pause_ms(200);
	CHECK(nv_deadline_passed(d));
	CHECK(nv_monotonic() - start >= 0.25);

	/* a zero or negative bound has passed at once */
	CHECK(nv_deadline_passed(nv_deadline_after(0)));
	CHECK(nv_deadline_passed(nv_deadline_after(-5)));
}

static void test_iso8601(void)
{
	char out[32];

	nv_iso8601(1764690714.5, out);
	CHECK_STR(out, "2025-12-02T15:51:54.500Z");
	nv_iso8601(0, out);
	CHECK_STR(out, "1970-01-01T00:00:00.000Z");
}

int main(void)
{
	test_which_clock();
	test_monotonic_never_decreases();
	test_deadlines();
	test_iso8601();
	return nv_test_done();
}
