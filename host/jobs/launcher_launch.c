/* The scheduler's part of a node launcher: spec.launch, which the
 * backend's prepare sets (launcher.h), checked and written as shell lines
 * that the fixed part reads. Variable names are checked like a job's
 * environment names, every word and text is single-quoted: nothing of a
 * spec reaches the script unquoted. Pure C. */
#include <string.h>

#include "jobs/launcher.h"
#include "jobs/launcher_internal.h"

/* the most words of a command, and bytes of a word or a text */
#define LAUNCH_WORDS_MAX 32
#define LAUNCH_WORD_MAX  4096
#define LAUNCH_TEXT_MAX  512

/* the variables, and the nv_launch_* line each sets (with its default) */
static const struct {
	const char *key, *shell, *dflt;
} launch_vars[] = {
	{"array_index", NULL, NULL}, /* (the array's case, launcher.c) */
	{"attempt", "nv_launch_restarts", "0"},
	{"node", "nv_launch_node", ""},
	{"job", "nv_launch_job", ""},
	{NULL, NULL, NULL},
};
static const char *const launch_commands[] = {"requeue", "time_left",
					      "timed_out", NULL};
/* the texts, and what a launcher without them says */
static const struct {
	const char *key, *dflt;
} launch_texts[] = {
	{"scheduler", "the scheduler"},
	{"requeue_needs", "a backend that gives its launcher a requeue "
			  "command (spec.launch.requeue)"},
	{NULL, NULL},
};

static const cJSON *launch_of(const cJSON *spec)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(spec, "launch");
	return cJSON_IsObject(l) ? l : NULL;
}

const char *nv_launcher_array_index(const cJSON *spec)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(launch_of(spec),
							  "array_index");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int nv_launcher_in_container(const cJSON *spec)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(launch_of(spec),
							     "in_container"));
}

static int known_key(const char *key)
{
	for (int k = 0; launch_vars[k].key; k++)
		if (strcmp(key, launch_vars[k].key) == 0)
			return 1;
	for (int k = 0; launch_texts[k].key; k++)
		if (strcmp(key, launch_texts[k].key) == 0)
			return 1;
	for (const char *const *c = launch_commands; *c; c++)
		if (strcmp(key, *c) == 0)
			return 1;
	return strcmp(key, "in_container") == 0 ||
	       strcmp(key, "requeue_exit") == 0;
}

/* A text of messages: printable ASCII, 1 to LAUNCH_TEXT_MAX bytes. */
static int text_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > LAUNCH_TEXT_MAX)
		return 0;
	for (const char *p = s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			return 0;
	return 1;
}

/* A command: 1 to LAUNCH_WORDS_MAX strings, the first (its program) not
 * empty. */
static int command_ok(const cJSON *words)
{
	const cJSON *w;
	int n = 0;

	if (!cJSON_IsArray(words))
		return 0;
	cJSON_ArrayForEach(w, words)
	{
		if (!cJSON_IsString(w) ||
		    strlen(w->valuestring) > LAUNCH_WORD_MAX ||
		    (n == 0 && !w->valuestring[0]))
			return 0;
		n++;
	}
	return n >= 1 && n <= LAUNCH_WORDS_MAX;
}

static int launch_check(const cJSON *spec, const cJSON *launch, nv_err *err)
{
	const char *id = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(spec, "id"));
	const cJSON *item, *v;
	const char *problem;
	int commands = 0;

	id = id ? id : "?";
	cJSON_ArrayForEach(item, launch)
	{
		if (!item->string || !known_key(item->string))
			return nv_err_set(err, NV_EINVAL,
					  "the backend's prepare sets it "
					  "(lua/navette/backends/init.lua)",
					  "job %s: spec.launch has no field "
					  "'%s'",
					  id,
					  item->string ? item->string : "?");
	}
	for (int k = 0; launch_vars[k].key; k++) {
		v = cJSON_GetObjectItemCaseSensitive(launch,
						     launch_vars[k].key);
		if (!v)
			continue;
		problem = cJSON_IsString(v)
				  ? nv_launcher_env_name_problem(v->valuestring)
				  : "it is not a string";
		if (problem)
			return nv_err_set(err, NV_EINVAL, problem,
					  "job %s: spec.launch.%s is not a "
					  "variable the launcher may read",
					  id, launch_vars[k].key);
	}
	for (int k = 0; launch_texts[k].key; k++) {
		v = cJSON_GetObjectItemCaseSensitive(launch,
						     launch_texts[k].key);
		if (v && !(cJSON_IsString(v) && text_ok(v->valuestring)))
			return nv_err_set(err, NV_EINVAL,
					  "a text of printable ASCII, at most "
					  "512 bytes",
					  "job %s: bad spec.launch.%s", id,
					  launch_texts[k].key);
	}
	for (const char *const *c = launch_commands; *c; c++) {
		v = cJSON_GetObjectItemCaseSensitive(launch, *c);
		if (!v)
			continue;
		if (!command_ok(v))
			return nv_err_set(err, NV_EINVAL,
					  "a command is 1 to 32 words (strings "
					  "of at most 4096 bytes), its program "
					  "first",
					  "job %s: bad spec.launch.%s", id, *c);
		commands++;
	}
	if (commands && !cJSON_GetObjectItemCaseSensitive(launch, "job"))
		return nv_err_set(err, NV_EINVAL,
				  "name the variable of the job's reference "
				  "(spec.launch.job), which the commands get",
				  "job %s: spec.launch has commands but no job",
				  id);
	v = cJSON_GetObjectItemCaseSensitive(launch, "requeue_exit");
	if (v &&
	    !(cJSON_IsNumber(v) && v->valuedouble >= 1 &&
	      v->valuedouble <= 255 && v->valuedouble == (double)v->valueint))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: spec.launch.requeue_exit is not an "
				  "exit code from 1 to 255",
				  id);
	if (v && cJSON_GetObjectItemCaseSensitive(launch, "requeue"))
		return nv_err_set(err, NV_EINVAL,
				  "a backend gives its launcher one way to "
				  "be run again",
				  "job %s: spec.launch has both requeue and "
				  "requeue_exit",
				  id);
	v = cJSON_GetObjectItemCaseSensitive(launch, "in_container");
	if (v && !cJSON_IsBool(v))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: spec.launch.in_container is not "
				  "true or false",
				  id);
	return 0;
}

/* nv_launch_KEY_program='PROGRAM' and nv_launch_KEY() { WORDS "$@"; },
 * or nv_launch_KEY_program= when the spec gives no such command. */
static void command_lines(nv_buf *out, const char *key, const cJSON *words)
{
	const cJSON *w;

	nv_buf_printf(out, "nv_launch_%s_program=", key);
	if (!words) {
		nv_buf_puts(out, "\n");
		return;
	}
	nv_buf_sh_quote(out, words->child->valuestring);
	nv_buf_printf(out, "\nnv_launch_%s() { ", key);
	cJSON_ArrayForEach(w, words)
	{
		nv_buf_sh_quote(out, w->valuestring);
		nv_buf_puts(out, " ");
	}
	nv_buf_puts(out, "\"$@\"; }\n");
}

int nv_launcher_launch_header(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const cJSON *given = cJSON_GetObjectItemCaseSensitive(spec, "launch");
	const cJSON *launch = launch_of(spec), *v;
	int rc;

	if (given && !cJSON_IsNull(given) && !launch)
		return nv_err_set(
			err, NV_EINVAL, NULL,
			"job %s: spec.launch is not an object",
			cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(spec, "id")));
	if (launch && (rc = launch_check(spec, launch, err)) != 0)
		return rc;
	nv_buf_puts(out, launch ? "# how the scheduler runs the job "
				  "(spec.launch)\n"
				: "# no scheduler's values (spec.launch): "
				  "one plain run\n");
	for (int k = 0; launch_texts[k].key; k++) {
		v = cJSON_GetObjectItemCaseSensitive(launch,
						     launch_texts[k].key);
		nv_buf_printf(out, "nv_launch_%s=", launch_texts[k].key);
		nv_buf_sh_quote(out, v ? v->valuestring : launch_texts[k].dflt);
		nv_buf_puts(out, "\n");
	}
	for (int k = 0; launch_vars[k].key; k++) {
		if (!launch_vars[k].shell)
			continue;
		v = cJSON_GetObjectItemCaseSensitive(launch,
						     launch_vars[k].key);
		/* (a checked name) */
		if (v)
			nv_buf_printf(out, "%s=${%s:-%s}\n",
				      launch_vars[k].shell, v->valuestring,
				      launch_vars[k].dflt);
		else
			nv_buf_printf(out, "%s=%s\n", launch_vars[k].shell,
				      launch_vars[k].dflt);
	}
	for (const char *const *c = launch_commands; *c; c++)
		command_lines(out, *c,
			      cJSON_GetObjectItemCaseSensitive(launch, *c));
	/* (a checked number) */
	v = cJSON_GetObjectItemCaseSensitive(launch, "requeue_exit");
	if (v)
		nv_buf_printf(out, "nv_launch_requeue_exit=%d\n", v->valueint);
	else
		nv_buf_puts(out, "nv_launch_requeue_exit=\n");
	return 0;
}
