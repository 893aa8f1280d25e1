/* The navette command: a thin client of libnavette. It is its own agent
 * program (navette_agent_main answers `agent` and `redact-stream` without
 * the CLI's Lua) and hands everything else to the runtime, whose CLI is
 * written in Lua. */
#include <stdio.h>
#include <string.h>

#include "core/proc.h"
#include "core/versions.h"
#include "lazy_libs.h"
#include "navette.h"

/* Commands that only read (help, versions, a job's records) and start
 * without libcurl, libgit2 and libcrypto where the program loads its
 * libraries on first use. Every other command loads them all before it
 * does anything, so that a missing library stops it at start, as the
 * dynamic loader would, and never halfway (a job queued, the agent
 * finishing one). */
static int is_fast_command(int argc, char **argv)
{
	static const char *const fast[] = {
		"help",      "--help",     "-h",          "version",
		"--version", "status",     "jobs",        "logs",
		"watch",     "completion", "definitions", NULL,
	};

	if (argc < 2)
		return 1; /* the usage */
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return 1; /* any command's help */
	for (size_t i = 0; fast[i]; i++)
		if (strcmp(argv[1], fast[i]) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	navette_options options;
	navette_runtime *rt;
	int status;

	/* The CLI may hold a credential, and `run --wait` or `watch` live
	 * as long as a job of the same user: keep it out of this process
	 * (programs it executes get their usual rights back). */
	nv_proc_deny_inspection();
#ifdef NAVETTE_LAZY_LIBS
	/* `navette version` must not load a library to ask its version */
	nv_versions_set_pending(nv_lazy_pending);
#endif
	if (!is_fast_command(argc, argv))
		nv_lazy_load_all();
	status = navette_agent_main(argc, argv);
	if (status >= 0)
		return status;
	navette_options_init(&options);
	options.agent_is_self = 1;
	status = navette_open(&rt, &options);
	if (status != NAVETTE_OK) {
		fprintf(stderr, "navette: %s\n",
			navette_last_error(NULL)->message);
		return status;
	}
	status = navette_main(rt, argc - 1, argv + 1);
	navette_close(rt);
	return status;
}
