/* Wall-clock time helpers shared by the C modules (no Lua). */
#ifndef NV_CLOCK_H
#define NV_CLOCK_H

/* Seconds since the epoch, with sub-second precision. */
double nv_now(void);

/* Writes "2026-12-02T15:51:54.123Z" (UTC, milliseconds). */
void nv_iso8601(double t, char out[32]);

#endif
