/* Schedules of scheduled tasks (navette.task{ schedule = ... }) and when
 * a task falls due. Three forms, in the machine's local time:
 *   "daily HH:MM"           each day at HH:MM
 *   "weekly DAY HH:MM"      each week, DAY one of mon tue wed thu fri sat sun
 *   "every N{m,h,d}"        every N minutes, hours or days, counted from the
 *                           slot of the last run (1m to 366d)
 * A task's state keeps the time it is next due. When that time has passed
 * (by a few slots, say a laptop that slept), the task runs once, for the
 * latest of the missed slots, and is next due at the first slot after the
 * run: missed slots are caught up once, not one run each. Pure C, no Lua;
 * times are seconds since the epoch (doubles, as nv_now gives). */
#ifndef NV_SCHEDULE_H
#define NV_SCHEDULE_H

#include <stddef.h>

#include "core/nv_err.h"

/* The longest schedule text accepted (bytes, without the NUL). */
#define NV_SCHEDULE_TEXT_MAX 63
/* The bounds of "every": one minute to 366 days. */
#define NV_SCHEDULE_EVERY_MIN 60LL
#define NV_SCHEDULE_EVERY_MAX (366LL * 86400)
/* Missed slots are counted up to this many (a count for people). */
#define NV_SCHEDULE_MISSED_MAX 1000L
/* A task falls due this many seconds before its time at most (a timer
 * that fires a little early must not skip a slot): 60 s, or a tenth of
 * an "every" interval when that is less. */
#define NV_SCHEDULE_EARLY_MAX 60.0

typedef enum {
	NV_SCHEDULE_EVERY = 1,
	NV_SCHEDULE_DAILY = 2,
	NV_SCHEDULE_WEEKLY = 3
} nv_schedule_kind;

typedef struct {
	nv_schedule_kind kind;
	long long every_s; /* EVERY: the interval in seconds */
	int hour, minute;  /* DAILY, WEEKLY: local time of day */
	int weekday;       /* WEEKLY: 0 Sunday .. 6 Saturday (struct tm's) */
} nv_schedule;

/* Parses text into out. Malformed text is NV_EINVAL, the message naming
 * what is wrong and the hint the three forms. */
int nv_schedule_parse(nv_schedule *out, const char *text, nv_err *err);

/* The canonical text of s ("daily 03:00", "weekly mon 04:00",
 * "every 6h") into out; -1 when cap is too small. */
int nv_schedule_format(const nv_schedule *s, char *out, size_t cap);

/* How early a task of schedule s falls due (see NV_SCHEDULE_EARLY_MAX). */
double nv_schedule_early(const nv_schedule *s);

/* The first slot of s strictly after `after`. anchor: for EVERY, a slot
 * the grid goes through (anchor + k * every_s); unused otherwise. -1
 * when none can be computed (the calendar refused every candidate). */
double nv_schedule_next(const nv_schedule *s, double anchor, double after);

/* The latest slot of a DAILY or WEEKLY schedule at or before t; -1 when
 * none can be computed. */
double nv_schedule_prev(const nv_schedule *s, double t);

/* Whether a task of schedule s whose state says it is next due at
 * next_due (<= 0: it never ran) is due at now. When it is: *slot gets the
 * slot it runs for (the latest one that fell due; now for a task that
 * never ran) and *missed the number of slots that fell due since the
 * last run (1 on time, more when catching up, NV_SCHEDULE_MISSED_MAX at
 * most). Returns 1 (due) or 0. */
int nv_schedule_due(const nv_schedule *s, double next_due, double now,
		    double *slot, long *missed);

/* When a task that ran at `ran` for `slot` is next due: the first slot
 * after both (a failed run included: it is retried at its next slot,
 * not at once). -1 when none can be computed. */
double nv_schedule_after_run(const nv_schedule *s, double slot, double ran);

#endif
