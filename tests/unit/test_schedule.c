/* host/tasks/schedule.c: the three schedule forms and what is refused,
 * next slots across month, year and daylight-saving ends (in a fixed
 * POSIX time zone, so that the test needs no zoneinfo), the weekly wrap,
 * and missed slots caught up by one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nv_test.h"
#include "tasks/schedule.h"

/* seconds since the epoch of a UTC date and time */
static double utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	return (double)timegm(&tm);
}

static void set_tz(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

static nv_schedule parsed(const char *text)
{
	nv_schedule s;
	nv_err err;

	CHECK(nv_schedule_parse(&s, text, &err) == 0);
	return s;
}

static void test_parse(void)
{
	static const char *const good[][2] = {
		{"daily 03:00", "daily 03:00"},
		{"daily 23:59", "daily 23:59"},
		{"weekly mon 04:00", "weekly mon 04:00"},
		{"weekly sun 00:00", "weekly sun 00:00"},
		{"every 6h", "every 6h"},
		{"every 30m", "every 30m"},
		{"every 90m", "every 90m"},
		{"every 24h", "every 1d"},
		{"every 2d", "every 2d"},
		{"every 1m", "every 1m"},
		{"every 366d", "every 366d"},
	};
	static const char *const bad[] = {
		"",
		"daily",
		"daily ",
		"daily 3:00",
		"daily 24:00",
		"daily 03:60",
		"daily 03:00 ",
		" daily 03:00",
		"DAILY 03:00",
		"daily 03-00",
		"weekly monday 04:00",
		"weekly mon",
		"weekly 04:00",
		"weekly xyz 04:00",
		"every",
		"every ",
		"every 6",
		"every h",
		"every 0h",
		"every 0m",
		"every 6x",
		"every 6hours",
		"every 367d",
		"every 9999999m",
		"every -1h",
		"every 1.5h",
		"hourly",
		"every 6h and more",
		"daily 03:00 daily 03:00 daily 03:00 daily 03:00 daily 03:00 "
		"daily 03:00"};
	char text[NV_SCHEDULE_TEXT_MAX + 1];
	nv_schedule s;
	nv_err err;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		nv_err_clear(&err);
		CHECK(nv_schedule_parse(&s, good[i][0], &err) == 0);
		CHECK(nv_schedule_format(&s, text, sizeof(text)) == 0);
		CHECK_STR(text, good[i][1]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nv_err_clear(&err);
		if (nv_schedule_parse(&s, bad[i], &err) != NV_EINVAL)
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
		CHECK(err.code == NV_EINVAL);
		CHECK(strstr(err.message, "schedule '") == err.message);
		CHECK(strstr(err.hint, "daily HH:MM") != NULL);
	}
	s = parsed("weekly wed 07:05");
	CHECK(s.kind == NV_SCHEDULE_WEEKLY && s.weekday == 3 && s.hour == 7 &&
	      s.minute == 5);
	s = parsed("every 6h");
	CHECK(s.kind == NV_SCHEDULE_EVERY && s.every_s == 6 * 3600);
	/* a buffer too small is refused, not cut */
	CHECK(nv_schedule_format(&s, text, 4) == -1 && text[0] == '\0');
}

static void test_daily_utc(void)
{
	nv_schedule s = parsed("daily 03:00");

	set_tz("UTC0");
	/* before the time: today; at or after it: tomorrow */
	CHECK(nv_schedule_next(&s, 0, utc(2026, 5, 10, 2, 59)) ==
	      utc(2026, 5, 10, 3, 0));
	CHECK(nv_schedule_next(&s, 0, utc(2026, 5, 10, 3, 0)) ==
	      utc(2026, 5, 11, 3, 0));
	/* month, leap-less February and year ends */
	CHECK(nv_schedule_next(&s, 0, utc(2026, 1, 31, 12, 0)) ==
	      utc(2026, 2, 1, 3, 0));
	CHECK(nv_schedule_next(&s, 0, utc(2026, 2, 28, 12, 0)) ==
	      utc(2026, 3, 1, 3, 0));
	CHECK(nv_schedule_next(&s, 0, utc(2028, 2, 28, 12, 0)) ==
	      utc(2028, 2, 29, 3, 0));
	CHECK(nv_schedule_next(&s, 0, utc(2026, 12, 31, 3, 0)) ==
	      utc(2027, 1, 1, 3, 0));
	CHECK(nv_schedule_prev(&s, utc(2027, 1, 1, 2, 0)) ==
	      utc(2026, 12, 31, 3, 0));
	CHECK(nv_schedule_prev(&s, utc(2027, 1, 1, 3, 0)) ==
	      utc(2027, 1, 1, 3, 0));
}

static void test_daily_dst(void)
{
	/* Central Europe: CET (UTC+1), CEST (UTC+2) from the last Sunday
	 * of March 02:00 to the last Sunday of October 03:00; in 2026 the
	 * 29th of March and the 25th of October */
	nv_schedule s = parsed("daily 03:00");
	double a, b, c;

	set_tz("CET-1CEST,M3.5.0,M10.5.0/3");
	a = nv_schedule_next(&s, 0, utc(2026, 3, 28, 0, 0));
	CHECK(a == utc(2026, 3, 28, 2, 0)); /* 03:00 CET */
	b = nv_schedule_next(&s, 0, a);
	CHECK(b == utc(2026, 3, 29, 1, 0)); /* 03:00 CEST */
	CHECK(b - a == 23 * 3600);          /* the short day */
	c = nv_schedule_next(&s, 0, utc(2026, 10, 24, 12, 0));
	CHECK(c == utc(2026, 10, 25, 2, 0)); /* 03:00 CET, the long day */
	CHECK(c - nv_schedule_prev(&s, utc(2026, 10, 24, 12, 0)) == 25 * 3600);

	/* 02:30 does not exist on the 29th of March: one slot that day,
	 * whatever time mktime gives it, and the next the day after */
	s = parsed("daily 02:30");
	a = nv_schedule_next(&s, 0, utc(2026, 3, 28, 12, 0));
	CHECK(a > utc(2026, 3, 28, 23, 0) && a < utc(2026, 3, 29, 22, 0));
	b = nv_schedule_next(&s, 0, a);
	CHECK(b == utc(2026, 3, 30, 0, 30)); /* 02:30 CEST */
	/* mktime reads the missing 02:30 with the offset before the gap
	 * (02:30 CET, 01:30 UTC, shown 03:30 CEST: glibc, macOS) or after
	 * it (02:30 CEST, 00:30 UTC, shown 01:30 CET); the slot is one of
	 * the two, and each has its exact expectation below */
	{
		int before_gap = a == utc(2026, 3, 29, 1, 30);
		int after_gap = a == utc(2026, 3, 29, 0, 30);

		if (!before_gap && !after_gap)
			fprintf(stderr,
				"daily 02:30 on the 29th of March 2026 is at "
				"%.0f, neither reading of 02:30 (CET or "
				"CEST)\n",
				a);
		CHECK(before_gap || after_gap);
		/* a catch-up run after the gap (the clock says 03:10 CEST):
		 * a slot still ahead (03:30 CEST) is that day's slot, not
		 * the next day's; a slot already past (01:30 CET) gives
		 * the next day's */
		if (before_gap)
			CHECK(nv_schedule_next(&s, 0,
					       utc(2026, 3, 29, 1, 10)) == a);
		if (after_gap)
			CHECK(nv_schedule_next(&s, 0,
					       utc(2026, 3, 29, 1, 10)) ==
			      utc(2026, 3, 30, 0, 30));
	}
	/* 02:30 happens twice on the 25th of October: one slot that day */
	a = nv_schedule_next(&s, 0, utc(2026, 10, 24, 12, 0));
	CHECK(a == utc(2026, 10, 25, 0, 30) || a == utc(2026, 10, 25, 1, 30));
	b = nv_schedule_next(&s, 0, a);
	CHECK(b == utc(2026, 10, 26, 1, 30)); /* 02:30 CET */
	/* and from between the two 02:30s as well */
	CHECK(nv_schedule_next(&s, 0, utc(2026, 10, 25, 1, 0)) >=
		      utc(2026, 10, 25, 1, 30) &&
	      nv_schedule_next(&s, 0, utc(2026, 10, 25, 1, 0)) <=
		      utc(2026, 10, 26, 1, 30));
	set_tz("UTC0");
}

static void test_weekly(void)
{
	nv_schedule s = parsed("weekly mon 04:00");

	set_tz("UTC0");
	/* Sunday the 27th of December 2026 -> Monday the 28th */
	CHECK(nv_schedule_next(&s, 0, utc(2026, 12, 27, 12, 0)) ==
	      utc(2026, 12, 28, 4, 0));
	/* Monday after the time -> next Monday, across the year's end */
	CHECK(nv_schedule_next(&s, 0, utc(2026, 12, 28, 4, 0)) ==
	      utc(2027, 1, 4, 4, 0));
	CHECK(nv_schedule_next(&s, 0, utc(2026, 12, 28, 3, 59)) ==
	      utc(2026, 12, 28, 4, 0));
	CHECK(nv_schedule_prev(&s, utc(2027, 1, 3, 0, 0)) ==
	      utc(2026, 12, 28, 4, 0));
	s = parsed("weekly sun 23:00");
	CHECK(nv_schedule_next(&s, 0, utc(2026, 12, 27, 23, 30)) ==
	      utc(2027, 1, 3, 23, 0));
	/* across the spring change in Europe: still Monday 04:00 local */
	set_tz("CET-1CEST,M3.5.0,M10.5.0/3");
	s = parsed("weekly mon 04:00");
	CHECK(nv_schedule_next(&s, 0, utc(2026, 3, 27, 0, 0)) ==
	      utc(2026, 3, 30, 2, 0));
	set_tz("UTC0");
}

static void test_due_and_catch_up(void)
{
	nv_schedule every = parsed("every 6h");
	nv_schedule daily = parsed("daily 03:00");
	double t = utc(2026, 6, 1, 0, 0), slot, next;
	long missed;

	set_tz("UTC0");
	/* never ran: due at once, for now */
	CHECK(nv_schedule_due(&every, 0, t, &slot, &missed) == 1);
	CHECK(slot == t && missed == 1);
	next = nv_schedule_after_run(&every, slot, t + 5);
	CHECK(next == t + 6 * 3600);
	/* right after: not due */
	CHECK(nv_schedule_due(&every, next, t + 10, &slot, &missed) == 0);
	/* on time, and a little early (a timer): due, one slot */
	CHECK(nv_schedule_due(&every, next, next, &slot, &missed) == 1);
	CHECK(slot == next && missed == 1);
	CHECK(nv_schedule_due(&every, next, next - 30, &slot, &missed) == 1);
	CHECK(slot == next);
	CHECK(nv_schedule_after_run(&every, slot, next - 30) ==
	      next + 6 * 3600);
	CHECK(nv_schedule_due(&every, next, next - 120, &slot, &missed) == 0);
	/* asleep for 20 hours: the four missed slots run once, for the
	 * latest, and the next is the first slot after the run */
	CHECK(nv_schedule_due(&every, next, next + 20 * 3600, &slot, &missed) ==
	      1);
	CHECK(missed == 4 && slot == next + 18 * 3600);
	CHECK(nv_schedule_after_run(&every, slot, next + 20 * 3600) ==
	      next + 24 * 3600);
	/* a failed run is retried at its next slot, never at once */
	CHECK(nv_schedule_due(&every, next + 24 * 3600, next + 20 * 3600 + 1,
			      &slot, &missed) == 0);
	/* a run that outlasts its interval (7 h of an every 6h): missed
	 * slots are caught up once, so the next is the first slot after
	 * the run ended, never one already past */
	CHECK(nv_schedule_after_run(&every, t, t + 7 * 3600) == t + 12 * 3600);
	CHECK(nv_schedule_due(&every, t + 12 * 3600, t + 7 * 3600 + 1, &slot,
			      &missed) == 0);
	CHECK(nv_schedule_after_run(&every, t, t + 6 * 3600) == t + 12 * 3600);
	CHECK(nv_schedule_after_run(&daily, utc(2026, 6, 1, 3, 0),
				    utc(2026, 6, 2, 5, 0)) ==
	      utc(2026, 6, 3, 3, 0));
	/* a short interval falls due at most a tenth early */
	every = parsed("every 1m");
	CHECK(nv_schedule_early(&every) == 6.0);
	CHECK(nv_schedule_due(&every, t, t - 7, &slot, &missed) == 0);
	CHECK(nv_schedule_due(&every, t, t - 5, &slot, &missed) == 1);

	/* daily: three days asleep, then 10:00 -> one run for today's slot */
	CHECK(nv_schedule_due(&daily, utc(2026, 6, 1, 3, 0),
			      utc(2026, 6, 4, 10, 0), &slot, &missed) == 1);
	CHECK(missed == 4 && slot == utc(2026, 6, 4, 3, 0));
	CHECK(nv_schedule_after_run(&daily, slot, utc(2026, 6, 4, 10, 0)) ==
	      utc(2026, 6, 5, 3, 0));
	CHECK(nv_schedule_due(&daily, utc(2026, 6, 5, 3, 0),
			      utc(2026, 6, 4, 10, 1), &slot, &missed) == 0);
	/* years asleep: the count stops at its bound, the slot is today's */
	CHECK(nv_schedule_due(&daily, utc(2020, 1, 1, 3, 0),
			      utc(2026, 6, 4, 10, 0), &slot, &missed) == 1);
	CHECK(missed == NV_SCHEDULE_MISSED_MAX &&
	      slot == utc(2026, 6, 4, 3, 0));
	CHECK(nv_schedule_due(&every, utc(2020, 1, 1, 3, 0),
			      utc(2026, 6, 4, 10, 0), &slot, &missed) == 1);
	CHECK(missed == NV_SCHEDULE_MISSED_MAX);
	CHECK(slot <= utc(2026, 6, 4, 10, 0) &&
	      slot > utc(2026, 6, 4, 10, 0) - 60);
}

int main(void)
{
	test_parse();
	test_daily_utc();
	test_daily_dst();
	test_weekly();
	test_due_and_catch_up();
	return nv_test_done();
}
