/* The wall clock and its ISO-8601 form, as every record shows it, and the
 * monotonic clock that durations and deadlines are measured with. */
#include "core/clock.h"

#include <stdio.h>
#include <time.h>

/* macOS: CLOCK_MONOTONIC counts sleep there; CLOCK_UPTIME_RAW (10.12+)
 * does not, as Linux's CLOCK_MONOTONIC does not. */
#if defined(__APPLE__)
#define NV_MONOTONIC_CLOCK      CLOCK_UPTIME_RAW
#define NV_MONOTONIC_CLOCK_NAME "CLOCK_UPTIME_RAW"
#else
#define NV_MONOTONIC_CLOCK      CLOCK_MONOTONIC
#define NV_MONOTONIC_CLOCK_NAME "CLOCK_MONOTONIC"
#endif

static double seconds_of(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0.0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double nv_now(void)
{
	return seconds_of(CLOCK_REALTIME);
}

double nv_monotonic(void)
{
	return seconds_of(NV_MONOTONIC_CLOCK);
}

const char *nv_monotonic_clock_name(void)
{
	return NV_MONOTONIC_CLOCK_NAME;
}

double nv_deadline_after(double seconds)
{
	return nv_monotonic() + seconds;
}

int nv_deadline_passed(double deadline)
{
	return nv_monotonic() >= deadline;
}

void nv_iso8601(double t, char out[32])
{
	/* converting a double outside time_t's range is undefined */
	if (!(t >= 0))
		t = 0;
	if (t > NV_TIME_MAX)
		t = NV_TIME_MAX;
	time_t secs = (time_t)t;
	int millis = (int)((t - (double)secs) * 1000.0);
	struct tm tm;

	if (millis < 0)
		millis = 0;
	if (millis > 999)
		millis = 999;
	gmtime_r(&secs, &tm);
	/* strftime keeps the compiler sure of the width */
	char date[24];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%.19s.%03dZ", date, millis);
}
