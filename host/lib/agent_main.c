/* navette_agent_main (navette.h): the two commands a program that is its
 * own agent answers, `agent` (the local backend's agent in the
 * foreground, and its `status` and `stop`) and `redact-stream` (the filter the
 * launcher pipes a job's output through, so its log is masked before it reaches
 * the disk). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "creds/redact.h"
#include "jobs/agent.h"
#include "lib/lib.h"
#include "navette.h"

#define REDACT_IDLE_FLUSH_MS 1000

/* ---- redact-stream ----------------------------------------------------- */

/* Where the stream writes, and the first write that failed (errno; 0:
 * none). After a failure nothing more is written: a log with a hole in
 * it would read as whole. */
typedef struct stream_sink {
	int fd;
	int failed;
} stream_sink;

static void write_all(const char *buf, size_t len, void *payload)
{
	stream_sink *sink = payload;
	if (!sink->failed && nv_write_all(sink->fd, buf, len) != 0)
		sink->failed = errno;
}

/* in_fd to out_fd through the redactor; a navette_status. A write that
 * failed (a full disk) is said on stderr, the input still read to its end
 * (the command is not killed by a broken pipe), and the status is
 * NAVETTE_FAILED: the launcher reports the log as cut. */
static int redact_stream(int in_fd, int out_fd)
{
	char buf[65536];
	stream_sink sink = {out_fd, 0};
	nv_redact_stream *s =
		nv_redact_stream_new(nv_redact_global(), write_all, &sink);

	if (!s)
		return NAVETTE_SERVICE;
	/* The submitting process's secrets, as salted fingerprints. */
	const char *fp_path = getenv("NAVETTE_REDACT_FINGERPRINTS");
	if (fp_path && *fp_path) {
		char *text = NULL;
		size_t len = 0;
		nv_err err;
		if (nv_read_file(&text, &len, fp_path, (size_t)16 * 1024 * 1024,
				 &err) == 0)
			nv_redact_add_fingerprints(nv_redact_global(), text,
						   len, &err);
		free(text);
	}
	/* A job that pauses after a complete line should see that line in
	 * its log (logs --follow): after a quiet moment, what is held back is
	 * released — but only when the input stopped at a line's end, so a
	 * secret cut in the middle of a line is never released in halves. */
	int at_line_end = 1, pending = 0;
	for (;;) {
		struct pollfd pfd = {in_fd, POLLIN, 0};
		int ready = poll(&pfd, 1, pending ? REDACT_IDLE_FLUSH_MS : -1);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0) {
			if (at_line_end) {
				nv_redact_stream_flush(s);
				pending = 0;
			}
			continue;
		}
		ssize_t n = read(in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		nv_redact_stream_write(s, buf, (size_t)n);
		at_line_end = buf[n - 1] == '\n';
		pending = 1;
	}
	nv_redact_stream_flush(s);
	nv_redact_stream_free(s);
	if (sink.failed) {
		fprintf(stderr, "%s\n", strerror(sink.failed));
		return NAVETTE_FAILED;
	}
	return NAVETTE_OK;
}

/* ---- the commands ------------------------------------------------------ */

/* the same text as lua/navette/cli/agent.lua's usage (test_local_sandbox) */
#define AGENT_USAGE                                                            \
	"usage: navette agent [--quiet-if-running]\n"                          \
	"       navette agent status [--json]\n"                               \
	"       navette agent stop [--force]\n"                                \
	"  `agent` runs the local backend's agent in the foreground (for\n"    \
	"  debugging); `navette run` starts one on demand, detached from "     \
	"the\n"                                                                \
	"  terminal. `status`: its pid, since when, the jobs running and "     \
	"queued,\n"                                                            \
	"  and the sandbox jobs on the host get (bwrap's version, or none).\n" \
	"  `stop` stops it; refused (exit 3) while jobs run or are queued, "   \
	"unless\n"                                                             \
	"  --force: running jobs then go on and the next agent adopts them.\n" \
	"  --quiet-if-running  another agent of this home is not an error\n"   \
	"  --json              status as one JSON object\n"                    \
	"  --force             stop even while jobs run or are queued\n"

static int agent_usage_error(const char *what)
{
	fprintf(stderr, "navette agent: %s\n%s", what, AGENT_USAGE);
	return NAVETTE_USAGE;
}

/* `agent status [--json]` and `agent stop [--force]`. */
static int agent_verb(const char *home, const char *verb, int argc, char **argv)
{
	int json = 0, force = 0;
	nv_err err;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			fputs(AGENT_USAGE, stdout);
			return NAVETTE_OK;
		} else if (strcmp(verb, "status") == 0 &&
			   strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(verb, "stop") == 0 &&
			   strcmp(argv[i], "--force") == 0) {
			force = 1;
		} else {
			char what[160];
			snprintf(what, sizeof(what),
				 "agent %s: unknown option %.60s", verb,
				 argv[i]);
			return agent_usage_error(what);
		}
	}
	if (strcmp(verb, "stop") == 0) {
		long pid = 0;
		int rc = nv_agent_stop(home, force, 15.0, &pid, &err);
		if (rc) {
			fprintf(stderr, "navette agent stop: %s\n  hint: %s\n",
				err.message, err.hint);
			return nv_err_exit_status(rc);
		}
		if (pid)
			printf("agent %ld stopped\n", pid);
		else
			printf("no agent runs for %s\n", home);
		return NAVETTE_OK;
	}
	nv_agent_info info;
	if (nv_agent_status(home, &info, &err) != 0) {
		fprintf(stderr, "navette agent status: %s\n", err.message);
		return nv_err_exit_status(err.code);
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();
		char *text;
		if (!o)
			return NAVETTE_SERVICE;
		cJSON_AddBoolToObject(o, "running", info.alive);
		if (info.alive && info.pid)
			cJSON_AddNumberToObject(o, "pid", (double)info.pid);
		else
			cJSON_AddNullToObject(o, "pid");
		if (info.started[0])
			cJSON_AddStringToObject(o, "since", info.started);
		else
			cJSON_AddNullToObject(o, "since");
		if (info.sandbox[0])
			cJSON_AddStringToObject(o, "sandbox", info.sandbox);
		else
			cJSON_AddNullToObject(o, "sandbox");
		cJSON_AddNumberToObject(o, "jobs_running", info.running);
		cJSON_AddNumberToObject(o, "jobs_queued", info.queued);
		cJSON_AddStringToObject(o, "home", home);
		text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		if (!text)
			return NAVETTE_SERVICE;
		printf("%s\n", text);
		cJSON_free(text);
		return NAVETTE_OK;
	}
	if (info.alive)
		printf("agent: running, pid %ld, since %s\n", info.pid,
		       info.started[0] ? info.started : "(unknown)");
	else
		printf("agent: not running (starts on demand)\n");
	printf("home: %s\n", home);
	printf("jobs: %d running, %d queued\n", info.running, info.queued);
	if (info.alive)
		printf("sandbox: %s\n",
		       info.sandbox[0] ? info.sandbox : "(unknown)");
	return NAVETTE_OK;
}

static int agent_command(int argc, char **argv)
{
	navette_runtime *rt;
	int quiet = 0, status;
	const char *verb = NULL;

	if (argc >= 3 &&
	    (strcmp(argv[2], "status") == 0 || strcmp(argv[2], "stop") == 0))
		verb = argv[2];
	for (int i = 2; !verb && i < argc; i++) {
		if (strcmp(argv[i], "--quiet-if-running") == 0) {
			quiet = 1;
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			fputs(AGENT_USAGE, stdout);
			return NAVETTE_OK;
		} else {
			char what[160];
			snprintf(what, sizeof(what), "unknown argument %.60s",
				 argv[i]);
			return agent_usage_error(what);
		}
	}
	/* the launcher's redact-stream is this program too */
	nv_agent_set_program(NULL, 1);
	/* the runtime resolves the default home; the agent uses the same */
	if (navette_open(&rt, NULL) != NAVETTE_OK) {
		fprintf(stderr, "navette agent: out of memory\n");
		return NAVETTE_SERVICE;
	}
	if (verb)
		status = agent_verb(navette_home(rt), verb, argc - 3, argv + 3);
	else
		status = navette_agent(navette_home(rt), quiet);
	navette_close(rt);
	return status;
}

/* `redact-stream`: stdin to stdout through the redactor. The launcher
 * pipes a job's output through it, so the log is masked before it
 * reaches the disk. */
static int redact_command(void)
{
	navette_runtime *rt;
	int status;

	if (navette_open(&rt, NULL) != NAVETTE_OK)
		return NAVETTE_SERVICE;
	status = redact_stream(0, 1);
	navette_close(rt);
	return status;
}

int navette_agent_main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "redact-stream") == 0)
		return redact_command();
	if (argc >= 2 && strcmp(argv[1], "agent") == 0)
		return agent_command(argc, argv);
	return -1;
}
