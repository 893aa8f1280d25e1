/* The navette command: a thin client of libnavette. It is its own agent
 * program (navette_agent_main answers `agent` and `redact-stream` without
 * the CLI's Lua) and hands everything else to the runtime, whose CLI is
 * written in Lua. */
#include <stdio.h>

#include "navette.h"

int main(int argc, char **argv)
{
	navette_options options;
	navette_runtime *rt;
	int status = navette_agent_main(argc, argv);

	if (status >= 0)
		return status;
	navette_options_init(&options);
	options.agent_is_self = 1;
	if (navette_open(&rt, &options) != NAVETTE_OK) {
		fprintf(stderr, "navette: out of memory\n");
		return NAVETTE_SERVICE;
	}
	status = navette_main(rt, argc - 1, argv + 1);
	navette_close(rt);
	return status;
}
