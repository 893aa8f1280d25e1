/* libnavette: the public C API an embedding program sees.
 *
 * A runtime owns one Lua state with the recipe library loaded. The CLI is a
 * thin client: it opens a runtime and hands it the command line. Strings
 * returned by the library belong to the runtime and live until it is
 * closed. */
#ifndef NAVETTE_H
#define NAVETTE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct navette_runtime navette_runtime;

typedef struct navette_options {
	const char *home;     /* NAVETTE_HOME; NULL: from env / default */
	const char *lua_path; /* load lua/ from this folder; NULL: embedded */
	size_t memory_limit;  /* bytes for the Lua state; 0: default */
	double recipe_timeout_s; /* run-time bound of a recipe; 0: default */
} navette_options;

/* Exit statuses of the CLI (README "Exit codes"). */
enum navette_status {
	NAVETTE_OK = 0,
	NAVETTE_FAILED = 1,  /* the job failed or a check said no */
	NAVETTE_USAGE = 2,   /* usage or recipe error */
	NAVETTE_REFUSED = 3, /* refused by a precondition or policy */
	NAVETTE_SERVICE = 4  /* a service or backend unreachable or refusing */
};

const char *navette_version(void);

/* Returns NULL when out of memory; options may be NULL. The caller frees
 * with navette_close(). */
navette_runtime *navette_open(const navette_options *options);
void navette_close(navette_runtime *rt);

/* The NAVETTE_HOME the runtime resolved (absolute). */
const char *navette_home(const navette_runtime *rt);

/* Runs a CLI command (argv[0] is the command name, e.g. "run"). Returns a
 * navette_status. Everything is printed through the output module. */
int navette_main(navette_runtime *rt, int argc, char **argv);

/* Runs the local job agent in the foreground until idle (see jobs/agent.h);
 * quiet_if_running: another agent holding the lock is not an error.
 * Returns a navette_status. */
int navette_agent(const char *home, int quiet_if_running);

/* Copies in_fd to out_fd through the redactor (secret values this process
 * loaded, and secret shapes), until end of input. */
int navette_redact_stream(int in_fd, int out_fd);

#ifdef __cplusplus
}
#endif

#endif
