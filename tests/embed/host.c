/* A small host program of libnavette (tests/integration/core/test_embed.sh
 * builds it against the installed prefix): it registers the module
 * host.greet, plans and runs a recipe through navette.h and reads the
 * job's status, printing each JSON document on its own line:
 *
 *   PLAN <json>, RESULT <json>, STATUS <json>, OUTPUT <what the output
 *   callback received, escaped>, ERROR <status> <message>, CODE <the
 *   error's code>
 *
 * and checks what it can itself (exit 1 on a failed check).
 *
 *   host [--agent PROGRAM] [--self] [--no-wait] RECIPE
 *
 * --agent: the agent program; --self: this program is its own agent (it
 * answers `agent` through navette_agent_main, unless HOST_NO_DISPATCH is
 * set, to show what happens when a host does not). The agent navette
 * starts gets a minimal environment without HOST_NO_DISPATCH, so the
 * started copy learns it from a file, host-no-dispatch in NAVETTE_HOME. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include <navette.h>

static char captured[1 << 16];
static size_t captured_len;
static int failures;

#define EXPECT(cond, what)                                                     \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "host: check failed: %s\n", what);     \
			failures++;                                            \
		}                                                              \
	} while (0)

/* The passes host.greet.hello was called in, as navette_mode says
 * ("plan,check,run,"): a module makes its side effects in "run" only. */
static char modes[256];

/* host.greet.hello(name) -> "hello, NAME from the host" */
static int greet_hello(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	const char *mode = navette_mode(L);
	if (strlen(modes) + strlen(mode) + 2 < sizeof(modes)) {
		strcat(modes, mode);
		strcat(modes, ",");
	}
	lua_pushfstring(L, "hello, %s from the host", name);
	return 1;
}

static int luaopen_greet(lua_State *L)
{
	static const luaL_Reg fns[] = {{"hello", greet_hello}, {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}

static void on_output(int stream, const char *text, size_t len, void *payload)
{
	(void)payload;
	(void)stream;
	if (len > sizeof(captured) - 1 - captured_len)
		len = sizeof(captured) - 1 - captured_len;
	memcpy(captured + captured_len, text, len);
	captured_len += len;
	captured[captured_len] = '\0';
}

/* The first "id" of the first job of a run's result. */
static int first_job_id(const char *json, char *out, size_t cap)
{
	const char *jobs = strstr(json, "\"jobs\":[");
	const char *id = jobs ? strstr(jobs, "\"id\":\"") : NULL;
	const char *end;

	if (!id)
		return -1;
	id += 6;
	end = strchr(id, '"');
	if (!end || (size_t)(end - id) >= cap)
		return -1;
	memcpy(out, id, (size_t)(end - id));
	out[end - id] = '\0';
	return 0;
}

static void print_escaped(const char *label, const char *s)
{
	printf("%s ", label);
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", stdout);
		else if (*s == '\\')
			fputs("\\\\", stdout);
		else
			putchar(*s);
	}
	putchar('\n');
}

/* An option too long is refused, never shortened: the runtime is not
 * opened and navette_last_error(NULL) names the option. */
static void check_open_refusals(const navette_options *base)
{
	static char long_text[5000];
	navette_options options = *base;
	navette_runtime *rt = (navette_runtime *)(void *)long_text;

	memset(long_text, 'p', sizeof(long_text) - 1);
	long_text[300] = '\0';
	options.profile = long_text;
	EXPECT(navette_open(&rt, &options) == NAVETTE_USAGE,
	       "a profile of 300 bytes is refused");
	EXPECT(rt == NULL, "a refused open hands over no runtime");
	EXPECT(navette_last_error(NULL)->status == NAVETTE_USAGE &&
		       strstr(navette_last_error(NULL)->message, "profile"),
	       "navette_last_error(NULL) names the profile");

	options = *base;
	long_text[300] = 'p';
	long_text[0] = '/';
	options.agent_program = long_text;
	EXPECT(navette_open(&rt, &options) == NAVETTE_USAGE,
	       "an agent_program of 4999 bytes is refused");
	EXPECT(strstr(navette_last_error(NULL)->message, "agent_program"),
	       "navette_last_error(NULL) names agent_program");
}

/* HOST_NO_DISPATCH, in the environment or as a file in NAVETTE_HOME */
static int no_dispatch(void)
{
	const char *home = getenv("NAVETTE_HOME");
	char path[4096];
	FILE *f;

	if (getenv("HOST_NO_DISPATCH"))
		return 1;
	if (!home || snprintf(path, sizeof(path), "%s/host-no-dispatch",
			      home) >= (int)sizeof(path))
		return 0;
	f = fopen(path, "r");
	if (f)
		fclose(f);
	return f != NULL;
}

int main(int argc, char **argv)
{
	navette_options options;
	navette_runtime *rt;
	const char *recipe = NULL;
	char *json = NULL;
	char id[128];
	int wait = 1, status;

	if (!no_dispatch()) {
		status = navette_agent_main(argc, argv);
		if (status >= 0)
			return status;
	}
	navette_options_init(&options);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--agent") == 0 && i + 1 < argc)
			options.agent_program = argv[++i];
		else if (strcmp(argv[i], "--self") == 0)
			options.agent_is_self = 1;
		else if (strcmp(argv[i], "--no-wait") == 0)
			wait = 0;
		else if (!recipe && strlen(argv[i]) > 4 &&
			 strcmp(argv[i] + strlen(argv[i]) - 4, ".lua") == 0)
			recipe = argv[i];
		else {
			fprintf(stderr, "host: unknown command '%s'\n",
				argv[i]);
			return 2;
		}
	}
	if (!recipe) {
		fprintf(stderr, "usage: host [--agent P] [--self] RECIPE\n");
		return 2;
	}
	options.output = on_output;
	check_open_refusals(&options);
	if (navette_open(&rt, &options) != NAVETTE_OK) {
		fprintf(stderr, "host: cannot open a runtime: %s\n",
			navette_last_error(NULL)->message);
		return 1;
	}
	EXPECT(navette_last_error(NULL)->status == NAVETTE_OK,
	       "a successful open leaves NAVETTE_OK for "
	       "navette_last_error(NULL)");
	printf("VERSION %s\n", navette_version());

	/* a module name out of the rules is refused */
	EXPECT(navette_register_module(rt, "../x", luaopen_greet) ==
		       NAVETTE_USAGE,
	       "a bad module name is refused");
	EXPECT(navette_register_module(rt, "greet", luaopen_greet) ==
		       NAVETTE_OK,
	       "host.greet registers");

	status = navette_plan(rt, recipe, &json);
	if (status != NAVETTE_OK) {
		printf("ERROR %d %s\n", status,
		       navette_last_error(rt)->message);
		printf("CODE %s\n", navette_last_error(rt)->code);
		navette_close(rt);
		return status;
	}
	printf("PLAN %s\n", json);
	EXPECT(strstr(json, "\"actions\":[") != NULL, "the plan has actions");
	EXPECT(strcmp(modes, "plan,") == 0, "navette_mode says plan in a plan");
	modes[0] = '\0';
	navette_free(json);
	json = NULL;

	status = navette_run(rt, recipe, wait ? NAVETTE_RUN_WAIT : 0, &json);
	print_escaped("OUTPUT", captured);
	if (!json) {
		const navette_error *e = navette_last_error(rt);
		EXPECT(e->status == status, "the error slot has the status");
		print_escaped("ERROR", e->message);
		printf("CODE %s\n", e->code);
		if (e->hint[0])
			print_escaped("HINT", e->hint);
		navette_close(rt);
		return status ? status : 1;
	}
	printf("RESULT %s\n", json);
	printf("MODES %s\n", modes);
	EXPECT(strcmp(modes, "check,run,") == 0,
	       "navette_mode tells the checking pass from the pass that "
	       "submits");
	if (first_job_id(json, id, sizeof(id)) != 0) {
		fprintf(stderr, "host: no job id in the result\n");
		failures++;
		id[0] = '\0';
	}
	navette_free(json);
	json = NULL;

	if (id[0]) {
		EXPECT(navette_job_status(rt, id, &json) == NAVETTE_OK,
		       "the job's status is read");
		printf("STATUS %s\n", json ? json : "");
		navette_free(json);
		json = NULL;
	}
	EXPECT(navette_job_status(rt, "no-such-job-zz", &json) != NAVETTE_OK,
	       "an unknown job is an error");
	EXPECT(json == NULL, "an error hands over no JSON");
	EXPECT(navette_last_error(rt)->message[0] != '\0',
	       "an error has a message");
	navette_close(rt);
	if (failures)
		return 1;
	return status;
}
