/* Counts, durations and sizes as a recipe writes them (see units.h). */
#include "core/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A whole non-negative decimal number, at most max. */
int nv_units_count(const char *v, long long max, long long *out)
{
	char *end;
	long long n;

	if (!v || !isdigit((unsigned char)v[0]))
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < 0 || n > max)
		return -1;
	*out = n;
	return 0;
}

/* "3600", "90s", "30m", "2h", "1d" -> seconds. */
int nv_units_seconds(const char *v, double *out)
{
	char *end;
	double n;

	if (!v || !(isdigit((unsigned char)v[0]) || v[0] == '.'))
		return -1;
	errno = 0;
	n = strtod(v, &end);
	if (errno || !isfinite(n) || n < 0)
		return -1;
	if (*end == 's' && !end[1])
		;
	else if (*end == 'm' && !end[1])
		n *= 60;
	else if (*end == 'h' && !end[1])
		n *= 3600;
	else if (*end == 'd' && !end[1])
		n *= 86400;
	else if (*end)
		return -1;
	*out = n;
	return 0;
}

/* "4294967296", "512M", "4GiB", "1.5G" -> bytes. */
int nv_units_bytes(const char *v, double *out)
{
	static const char units[] = "KMGT";
	char *end;
	double n, mult = 1;
	const char *u;

	if (!v || !(isdigit((unsigned char)v[0]) || v[0] == '.'))
		return -1;
	errno = 0;
	n = strtod(v, &end);
	if (errno || !isfinite(n) || n < 0)
		return -1;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return -1;
		for (const char *p = units; p <= u; p++)
			mult *= 1024;
		end++;
		if (*end == 'i' && end[1] == 'B' && !end[2])
			;
		else if ((*end == 'B' || *end == 'b') && !end[1])
			;
		else if (*end)
			return -1;
	}
	*out = n * mult;
	return 0;
}
