/* Schedules and due times (see schedule.h). Local times go through
 * mktime with tm_isdst = -1, so that daylight-saving changes move a
 * "daily 03:00" slot with the wall clock: a slot in the hour skipped in
 * spring runs once that day at whatever time mktime gives it, and the
 * hour repeated in autumn never runs a slot twice (a day's slot is
 * compared by its local date, not only its time). */
#include "tasks/schedule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const weekdays[7] = {"sun", "mon", "tue", "wed",
					"thu", "fri", "sat"};

#define SCHEDULE_FORMS                                                         \
	"write \"daily HH:MM\", \"weekly DAY HH:MM\" (DAY: mon, tue, wed, "    \
	"thu, fri, sat or sun) or \"every N\" with a unit m, h or d (every "   \
	"30m, every 6h, every 2d); times are the machine's local time"

static int bad(nv_err *err, const char *text, const char *why)
{
	return nv_err_set(err, NV_EINVAL, SCHEDULE_FORMS, "schedule '%.*s': %s",
			  NV_SCHEDULE_TEXT_MAX, text, why);
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "HH:MM" exactly, 00:00 to 23:59. */
static int parse_time(const char *p, int *hour, int *minute)
{
	if (!digit(p[0]) || !digit(p[1]) || p[2] != ':' || !digit(p[3]) ||
	    !digit(p[4]) || p[5] != '\0')
		return -1;
	*hour = (p[0] - '0') * 10 + (p[1] - '0');
	*minute = (p[3] - '0') * 10 + (p[4] - '0');
	return *hour <= 23 && *minute <= 59 ? 0 : -1;
}

static int parse_every(nv_schedule *out, const char *text, const char *p,
		       nv_err *err)
{
	long long n = 0, unit;
	int digits = 0;

	while (digit(*p)) {
		if (++digits > 6)
			return bad(err, text, "the interval is too long");
		n = n * 10 + (*p++ - '0');
	}
	if (digits == 0)
		return bad(err, text,
			   "\"every\" needs a number, as in every 6h");
	switch (*p) {
	case 'm': unit = 60; break;
	case 'h': unit = 3600; break;
	case 'd': unit = 86400; break;
	default:
		return bad(err, text,
			   "the interval needs a unit: m, h or d (every 6h)");
	}
	if (p[1] != '\0')
		return bad(err, text, "unexpected text after the interval");
	n *= unit;
	if (n < NV_SCHEDULE_EVERY_MIN || n > NV_SCHEDULE_EVERY_MAX)
		return bad(err, text, "the interval must be from 1m to 366d");
	out->kind = NV_SCHEDULE_EVERY;
	out->every_s = n;
	return 0;
}

int nv_schedule_parse(nv_schedule *out, const char *text, nv_err *err)
{
	size_t len;

	memset(out, 0, sizeof(*out));
	if (!text)
		return bad(err, "", "no schedule");
	len = strnlen(text, NV_SCHEDULE_TEXT_MAX + 1);
	if (len > NV_SCHEDULE_TEXT_MAX)
		return bad(err, text, "too long");
	if (strncmp(text, "every ", 6) == 0)
		return parse_every(out, text, text + 6, err);
	if (strncmp(text, "daily ", 6) == 0) {
		if (parse_time(text + 6, &out->hour, &out->minute) != 0)
			return bad(
				err, text,
				"the time must be HH:MM from 00:00 to 23:59");
		out->kind = NV_SCHEDULE_DAILY;
		return 0;
	}
	if (strncmp(text, "weekly ", 7) == 0) {
		const char *p = text + 7;
		int d;

		for (d = 0; d < 7; d++)
			if (strncmp(p, weekdays[d], 3) == 0 && p[3] == ' ')
				break;
		if (d == 7)
			return bad(err, text,
				   "the day must be mon, tue, wed, thu, fri, "
				   "sat or sun");
		if (parse_time(p + 4, &out->hour, &out->minute) != 0)
			return bad(
				err, text,
				"the time must be HH:MM from 00:00 to 23:59");
		out->kind = NV_SCHEDULE_WEEKLY;
		out->weekday = d;
		return 0;
	}
	return bad(err, text, "unknown form");
}

int nv_schedule_format(const nv_schedule *s, char *out, size_t cap)
{
	int n = -1;

	switch (s->kind) {
	case NV_SCHEDULE_EVERY:
		if (s->every_s % 86400 == 0)
			n = snprintf(out, cap, "every %lldd",
				     s->every_s / 86400);
		else if (s->every_s % 3600 == 0)
			n = snprintf(out, cap, "every %lldh",
				     s->every_s / 3600);
		else
			n = snprintf(out, cap, "every %lldm", s->every_s / 60);
		break;
	case NV_SCHEDULE_DAILY:
		n = snprintf(out, cap, "daily %02d:%02d", s->hour, s->minute);
		break;
	case NV_SCHEDULE_WEEKLY:
		n = snprintf(out, cap, "weekly %s %02d:%02d",
			     weekdays[s->weekday % 7], s->hour, s->minute);
		break;
	}
	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

double nv_schedule_early(const nv_schedule *s)
{
	if (s->kind == NV_SCHEDULE_EVERY &&
	    (double)s->every_s / 10.0 < NV_SCHEDULE_EARLY_MAX)
		return (double)s->every_s / 10.0;
	return NV_SCHEDULE_EARLY_MAX;
}

/* The local day `days` after the one of t, at the schedule's time:
 * the time (or -1), and the weekday of that date in *wday. */
static double local_slot(const nv_schedule *s, const struct tm *day, int days,
			 int *wday)
{
	struct tm c;
	time_t x;

	memset(&c, 0, sizeof(c));
	c.tm_year = day->tm_year;
	c.tm_mon = day->tm_mon;
	c.tm_mday = day->tm_mday + days;
	c.tm_hour = s->hour;
	c.tm_min = s->minute;
	c.tm_isdst = -1;
	x = mktime(&c);
	if (x == (time_t)-1)
		return -1;
	*wday = c.tm_wday;
	return (double)x;
}

static int local_day(double t, struct tm *out)
{
	time_t x;

	if (!(t >= 0 && t < 253402300799.0))
		return -1;
	x = (time_t)floor(t);
	return localtime_r(&x, out) ? 0 : -1;
}

/* Whether the time of day of tm is at or after the schedule's. */
static int at_or_past(const nv_schedule *s, const struct tm *tm)
{
	return tm->tm_hour > s->hour ||
	       (tm->tm_hour == s->hour && tm->tm_min >= s->minute);
}

/* Whether the slot x is not at the schedule's time of day: mktime moved
 * it past a spring gap (02:30 does not exist; it gave 03:30). */
static int moved_by_gap(const nv_schedule *s, double x)
{
	struct tm tm;

	return local_day(x, &tm) == 0 &&
	       (tm.tm_hour != s->hour || tm.tm_min != s->minute);
}

double nv_schedule_next(const nv_schedule *s, double anchor, double after)
{
	struct tm day;
	int d, wday;

	if (s->kind == NV_SCHEDULE_EVERY) {
		double every = (double)s->every_s;
		double k;

		if (!(after >= anchor))
			return anchor > after ? anchor : -1;
		k = floor((after - anchor) / every) + 1;
		return anchor + k * every;
	}
	if (local_day(after, &day) != 0)
		return -1;
	/* the slot of `after`'s own date only while its time is ahead, so
	 * that an autumn's repeated hour does not give the day a second
	 * slot, or when a spring gap moved it later than the clock says
	 * (daily 02:30 is 03:30 that day: still ahead at 03:10); a week and
	 * two days cover every weekday */
	for (d = 0; d <= 9; d++) {
		double x = local_slot(s, &day, d, &wday);

		if (x < 0 || x <= after)
			continue;
		if (d == 0 && at_or_past(s, &day) && !moved_by_gap(s, x))
			continue;
		if (s->kind == NV_SCHEDULE_WEEKLY && wday != s->weekday)
			continue;
		return x;
	}
	return -1;
}

double nv_schedule_prev(const nv_schedule *s, double t)
{
	struct tm day;
	int d, wday;

	if (s->kind == NV_SCHEDULE_EVERY || local_day(t, &day) != 0)
		return -1;
	for (d = 0; d >= -9; d--) {
		double x = local_slot(s, &day, d, &wday);

		if (x < 0 || x > t)
			continue;
		if (s->kind == NV_SCHEDULE_WEEKLY && wday != s->weekday)
			continue;
		return x;
	}
	return -1;
}

int nv_schedule_due(const nv_schedule *s, double next_due, double now,
		    double *slot, long *missed)
{
	double horizon = now + nv_schedule_early(s);

	*slot = now;
	*missed = 0;
	if (!(next_due > 0)) { /* never ran: due at once */
		*missed = 1;
		return 1;
	}
	if (next_due > horizon)
		return 0;
	if (s->kind == NV_SCHEDULE_EVERY) {
		double every = (double)s->every_s;
		double k = floor((horizon - next_due) / every);

		*missed = k + 1 >= (double)NV_SCHEDULE_MISSED_MAX
				  ? NV_SCHEDULE_MISSED_MAX
				  : (long)k + 1;
		*slot = next_due + k * every;
		return 1;
	}
	/* count the slots from next_due to the horizon (bounded) */
	{
		double x = next_due, last = next_due;
		long n = 0;

		while (x > 0 && x <= horizon && n < NV_SCHEDULE_MISSED_MAX) {
			n++;
			last = x;
			x = nv_schedule_next(s, x, x);
		}
		if (n == NV_SCHEDULE_MISSED_MAX) {
			double p = nv_schedule_prev(s, horizon);
			if (p > 0)
				last = p;
		}
		*missed = n > 0 ? n : 1;
		*slot = last;
	}
	return 1;
}

double nv_schedule_after_run(const nv_schedule *s, double slot, double ran)
{
	double after = ran > slot ? ran : slot;

	return nv_schedule_next(s, slot, after);
}
