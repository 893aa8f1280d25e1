/* Fuzz target: schedule parsing and due times (host/tasks/schedule.c),
 * whose text comes from recipes (navette.task{ schedule = ... }) and from
 * the task database. Checks invariants, not just the absence of crashes:
 * a refusal says why; an accepted schedule formats to a text that parses
 * back to the same schedule; its next slot is after the time asked and
 * the one after that later still; a task due for a slot is next due
 * after it (catching up never loops). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[NV_SCHEDULE_TEXT_MAX + 16],
		canonical[NV_SCHEDULE_TEXT_MAX + 1];
	nv_schedule s, again;
	double now = 1780000000.0, next, after, slot;
	long missed;
	nv_err err;

	if (size >= sizeof(text))
		size = sizeof(text) - 1;
	memcpy(text, data, size);
	text[size] = '\0';
	setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
	if (nv_schedule_parse(&s, text, &err) != 0) {
		if (err.code != NV_EINVAL || !err.message[0])
			abort();
		return 0;
	}
	if (nv_schedule_format(&s, canonical, sizeof(canonical)) != 0)
		abort();
	if (nv_schedule_parse(&again, canonical, &err) != 0 ||
	    memcmp(&again, &s, sizeof(s)) != 0)
		abort();
	/* the input's last bytes, when any, move "now" over a few years */
	if (size >= 4)
		now += (double)((uint32_t)data[size - 1] << 16 |
				(uint32_t)data[size - 2] << 8 |
				data[size - 3]) *
		       7.0;
	next = nv_schedule_next(&s, now, now);
	if (!(next > now) || next > now + 10 * 86400.0 + (double)s.every_s)
		abort();
	after = nv_schedule_next(&s, now, next);
	if (!(after > next))
		abort();
	if (nv_schedule_due(&s, next, after, &slot, &missed) != 1 ||
	    missed < 1 || slot < next || slot > after + nv_schedule_early(&s))
		abort();
	if (!(nv_schedule_after_run(&s, slot, after) > after))
		abort();
	return 0;
}
