/* navette_agent_main (navette.h): the two commands a program that is its
 * own agent answers, `agent` (the local backend's agent in the
 * foreground) and `redact-stream` (the filter the launcher pipes a job's
 * output through, so its log is masked before it reaches the disk). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "creds/redact.h"
#include "jobs/agent.h"
#include "lib/lib.h"
#include "navette.h"

#define REDACT_IDLE_FLUSH_MS 1000

/* ---- redact-stream ----------------------------------------------------- */

static void write_all(const char *buf, size_t len, void *payload)
{
	int fd = *(int *)payload;
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* in_fd to out_fd through the redactor; a navette_status. */
static int redact_stream(int in_fd, int out_fd)
{
	char buf[65536];
	nv_redact_stream *s =
		nv_redact_stream_new(nv_redact_global(), write_all, &out_fd);

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
	return NAVETTE_OK;
}

/* ---- the commands ------------------------------------------------------ */

static int agent_command(int argc, char **argv)
{
	navette_runtime *rt;
	int quiet = 0, status;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--quiet-if-running") == 0) {
			quiet = 1;
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			printf("usage: navette agent [--quiet-if-running]\n"
			       "  runs the local backend's job agent in the "
			       "foreground until it is idle\n"
			       "  (NAVETTE_AGENT_IDLE seconds, default 30); "
			       "`run` starts one by itself\n"
			       "  --quiet-if-running  another agent of this "
			       "home is not an error\n");
			return NAVETTE_OK;
		} else {
			fprintf(stderr, "usage: navette agent "
					"[--quiet-if-running]\n");
			return NAVETTE_USAGE;
		}
	}
	/* the launcher's redact-stream is this program too */
	nv_agent_set_program(NULL, 1);
	/* the runtime resolves the default home; the agent uses the same */
	if (navette_open(&rt, NULL) != NAVETTE_OK) {
		fprintf(stderr, "navette agent: out of memory\n");
		return NAVETTE_SERVICE;
	}
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
