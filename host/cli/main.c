/* The navette command: a thin client of libnavette. It handles the one
 * command that must not start a Lua state (the agent) and hands everything
 * else to the runtime, whose CLI is written in Lua. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "navette.h"

/* `navette redact-stream`: stdin to stdout through the redactor. The
 * launcher pipes a job's output through it, so the log is masked before
 * it reaches the disk. */
static int redact_stream(void)
{
	navette_runtime *rt = navette_open(NULL);
	int status;

	if (!rt)
		return NAVETTE_SERVICE;
	status = navette_redact_stream(0, 1);
	navette_close(rt);
	return status;
}

int main(int argc, char **argv)
{
	navette_runtime *rt;
	int status;

	if (argc == 2 && strcmp(argv[1], "redact-stream") == 0)
		return redact_stream();
	if (argc >= 2 && strcmp(argv[1], "agent") == 0) {
		int quiet =
			argc >= 3 && strcmp(argv[2], "--quiet-if-running") == 0;
		if (!(argc == 2 || (argc == 3 && quiet))) {
			fprintf(stderr, "usage: navette agent\n");
			return NAVETTE_USAGE;
		}
		/* The runtime resolves the default home; the agent needs the
		 * same one, so ask it. */
		rt = navette_open(NULL);
		if (!rt) {
			fprintf(stderr, "navette: out of memory\n");
			return NAVETTE_SERVICE;
		}
		status = navette_agent(navette_home(rt), quiet);
		navette_close(rt);
		return status;
	}
	rt = navette_open(NULL);
	if (!rt) {
		fprintf(stderr, "navette: out of memory\n");
		return NAVETTE_SERVICE;
	}
	status = navette_main(rt, argc - 1, argv + 1);
	navette_close(rt);
	return status;
}
