/* Wall-clock time and its ISO-8601 form, as every record shows it. */
#include "core/clock.h"

#include <stdio.h>
#include <time.h>

double nv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void nv_iso8601(double t, char out[32])
{
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
