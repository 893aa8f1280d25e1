/* Test-only fault points: a named place in a multi-step operation (a
 * submission) where the process can be made to die at once, so that the
 * interruption tests hit each step every time instead of racing a timer.
 *
 * NAVETTE_FAULT=POINT or NAVETTE_FAULT=POINT:TEXT selects one point (and,
 * with TEXT, only where the point's detail contains it); the process then
 * sends itself SIGKILL there, as `kill -9` from outside would. Unset, a
 * point costs one getenv. */
#ifndef NV_CORE_FAULT_H
#define NV_CORE_FAULT_H

/* Whether NAVETTE_FAULT selects point (detail may be NULL): for a point
 * that must do part of a step before it dies (half of an audit line). */
int nv_fault_selected(const char *point, const char *detail);

/* Dies by SIGKILL when NAVETTE_FAULT selects point (detail may be NULL). */
void nv_fault_point(const char *point, const char *detail);

#endif
