/* Time for the C modules (no Lua), in two kinds that are never mixed:
 *  - the wall clock (nv_now), for timestamps that records show and for
 *    expiry times other parties wrote; it jumps with NTP steps and `date`;
 *  - the monotonic clock (nv_monotonic), for durations, time limits and
 *    deadlines; it never jumps, and does not count the time the machine
 *    sleeps, so a laptop closed for an hour does not fail a job's time
 *    limit or a recipe's bound when it wakes. */
#ifndef NV_CLOCK_H
#define NV_CLOCK_H

/* Wall clock: seconds since the epoch, with sub-second precision. For
 * timestamps only, never for durations. */
double nv_now(void);

/* The last wall-clock time navette writes or takes from Lua:
 * 9999-12-31T23:59:59Z (ISO-8601 has four digits for the year). */
#define NV_TIME_MAX 253402300799.0

/* Writes "2026-12-02T15:51:54.123Z" (UTC, milliseconds). t outside
 * 0..NV_TIME_MAX (NaN included) is written as the nearer end. */
void nv_iso8601(double t, char out[32]);

/* Monotonic clock: seconds from an arbitrary origin (about the boot),
 * never decreasing, stopped while the machine sleeps: CLOCK_MONOTONIC on
 * Linux, CLOCK_UPTIME_RAW on macOS (whose CLOCK_MONOTONIC goes on
 * counting during sleep). Comparable only with itself. */
double nv_monotonic(void);

/* The name of the clock nv_monotonic reads ("CLOCK_MONOTONIC",
 * "CLOCK_UPTIME_RAW"), for diagnostics and tests. */
const char *nv_monotonic_clock_name(void);

/* A deadline `seconds` from now on the monotonic clock, and whether it has
 * passed. Time limits and waits are written with these. */
double nv_deadline_after(double seconds);
int nv_deadline_passed(double deadline);

#endif
