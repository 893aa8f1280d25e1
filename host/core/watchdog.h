/* The watchdog of a recipe's time bound. The count hook stops a recipe
 * that runs Lua code past its limit; it never fires while the recipe is
 * inside a C function (a backtracking pattern match, a huge string
 * operation). The watchdog does not depend on the recipe's cooperation: a
 * thread that, once armed, ends the process with a clear message when the
 * evaluation is still running at its hard deadline (the limit plus one
 * second). Nothing is half-done then: a recipe's evaluation has no side
 * effect until the run is accepted. */
#ifndef NV_WATCHDOG_H
#define NV_WATCHDOG_H

typedef struct nv_watchdog nv_watchdog;

/* Arms *w (created on first use) to end the process at kill_at (the
 * monotonic clock, nv_monotonic) with status 2, printing message on
 * stderr. Returns 0, or -1 when no thread could be started (the hook still
 * bounds Lua code). */
int nv_watchdog_arm(nv_watchdog **w, double kill_at, const char *message);

/* While note is set (not NULL), the process is ended with note instead of
 * the armed message: a caller blocked in a known operation (a library's
 * fetch) says what it was doing. NULL clears it; arming clears it too.
 * w NULL: nothing to do. */
void nv_watchdog_note(nv_watchdog *w, const char *note);

/* Stops w until nv_watchdog_resume, keeping its message (NULL: nothing
 * to do). */
void nv_watchdog_pause(nv_watchdog *w);
/* Arms w again, with the message it had, to end the process at kill_at. */
void nv_watchdog_resume(nv_watchdog *w, double kill_at);

/* Disarms w (NULL: nothing to do). */
void nv_watchdog_disarm(nv_watchdog *w);

/* Stops and frees w (NULL: nothing to do). */
void nv_watchdog_free(nv_watchdog *w);

#endif
