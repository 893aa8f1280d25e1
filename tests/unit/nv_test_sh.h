/* Shell helpers for unit tests that build fixtures with real tools (git,
 * tar, curl): sh() runs a command and reports a failure on stderr;
 * sh_out() keeps its output (bounded). */
#ifndef NV_TEST_SH_H
#define NV_TEST_SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

/* The whole output of a command into out[cap]; 0 when it exited 0. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), unused))
#endif
static int
sh_out(char *out, size_t cap, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	FILE *p;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out[0] = '\0';
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? 0 : -1;
}

#endif
