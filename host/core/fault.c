/* Test-only fault points (see fault.h). They are compiled into every build
 * rather than behind a tests-only option on purpose: the interruption tests
 * then exercise the very binary that ships, and a point is inert (one
 * getenv, no other effect) unless NAVETTE_FAULT names it. Nothing is
 * gained by a user setting it: the process only dies, as it could be
 * killed from outside at the same place. */
#include "core/fault.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nv_fault_selected(const char *point, const char *detail)
{
	const char *want = getenv("NAVETTE_FAULT");
	size_t n;

	if (!want || !*want || !point)
		return 0;
	n = strlen(point);
	if (strncmp(want, point, n) != 0)
		return 0;
	if (want[n] == ':')
		return detail && strstr(detail, want + n + 1);
	return want[n] == '\0';
}

void nv_fault_point(const char *point, const char *detail)
{
	if (!nv_fault_selected(point, detail))
		return;
	kill(getpid(), SIGKILL);
	_exit(137); /* not reached: SIGKILL cannot be caught */
}
