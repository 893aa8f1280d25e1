/* Unit tests of host/core/proc.c: exit status and signal, a missing
 * program, stdout and stderr kept up to their caps (the rest counted),
 * big outputs on both streams at once and stdin larger than a pipe
 * buffer (no deadlock), a program that stops reading its stdin, the
 * time limit (a lingering child and a whole process group), the
 * environment, the working folder, and what the child inherits (no
 * descriptor of ours, an empty signal mask). The child is this program
 * run again as `test_proc child MODE ...`, so no tool of the system is
 * needed beyond /bin/sh. And the other processes: a process group is
 * alive while one of its processes runs, and ended once only zombies are
 * left (processes killed but not yet reaped: after an agent dies, its
 * launchers' groups are reaped by init, which may take its time); the
 * start time tells a process from a later one with the same pid. */
#include "core/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "nv_test.h"

static char self[PATH_MAX];

/* ---- the child's modes -------------------------------------------------- */

static void write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		c += w;
		n -= (size_t)w;
	}
}

/* The byte at offset i of a stream named by seed: the reader can check
 * every byte, and a byte of one stream in the other shows. */
static unsigned char pattern(size_t i, unsigned seed)
{
	return (unsigned char)((i * 131 + seed * 17 + (i >> 12)) & 0xff);
}

static int child(int argc, char **argv)
{
	const char *mode = argv[2];

	if (strcmp(mode, "spew") == 0 && argc == 5) {
		/* N bytes on stdout and M on stderr, interleaved */
		size_t n = strtoul(argv[3], NULL, 10);
		size_t m = strtoul(argv[4], NULL, 10), i = 0, j = 0;
		unsigned char buf[8192];
		while (i < n || j < m) {
			size_t k;
			for (k = 0; k < sizeof(buf) && i < n; k++, i++)
				buf[k] = pattern(i, 1);
			write_all(STDOUT_FILENO, buf, k);
			for (k = 0; k < sizeof(buf) && j < m; k++, j++)
				buf[k] = pattern(j, 2);
			write_all(STDERR_FILENO, buf, k);
		}
		return 0;
	}
	if (strcmp(mode, "cat") == 0) {
		/* stdin to stdout, as it comes; its size on stderr */
		char buf[4096];
		size_t total = 0;
		ssize_t n;
		while ((n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return 4;
			write_all(STDOUT_FILENO, buf, (size_t)n);
			total += (size_t)n;
		}
		fprintf(stderr, "%zu", total);
		return 0;
	}
	if (strcmp(mode, "read-some") == 0 && argc == 4) {
		/* reads N bytes of stdin, then closes it and exits */
		size_t want = strtoul(argv[3], NULL, 10), got = 0;
		char buf[4096];
		while (got < want) {
			ssize_t n =
				read(STDIN_FILENO, buf,
				     want - got < sizeof(buf) ? want - got
							      : sizeof(buf));
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		close(STDIN_FILENO);
		printf("%zu", got);
		return 0;
	}
	if (strcmp(mode, "env") == 0 && argc == 4) {
		const char *v = getenv(argv[3]);
		printf("%s", v ? v : "(unset)");
		return 0;
	}
	if (strcmp(mode, "cwd") == 0) {
		char cwd[PATH_MAX];
		printf("%s", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
		return 0;
	}
	if (strcmp(mode, "fds") == 0) {
		/* the descriptors above stdio it was given */
		for (int fd = 3; fd < 1024; fd++)
			if (fcntl(fd, F_GETFD) != -1)
				printf("%d ", fd);
		return 0;
	}
	if (strcmp(mode, "signals") == 0) {
		sigset_t mask;
		struct sigaction sa;
		sigprocmask(SIG_BLOCK, NULL, &mask);
		sigaction(SIGPIPE, NULL, &sa);
		printf("usr1 %s, pipe %s",
		       sigismember(&mask, SIGUSR1) ? "blocked" : "open",
		       sa.sa_handler == SIG_IGN ? "ignored" : "default");
		return 0;
	}
	return 2;
}

/* ---- helpers ------------------------------------------------------------ */

static nv_proc_opts opts_for(const char *const *argv)
{
	nv_proc_opts o;
	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.timeout_s = 60;
	return o;
}

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			n++;
	return n;
}

/* ---- the tests ---------------------------------------------------------- */

static void test_status_and_signal(void)
{
	const char *exit3[] = {"/bin/sh", "-c", "exit 3", NULL};
	const char *term[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
	nv_proc_opts o = opts_for(exit3);
	nv_proc_result r;
	nv_err err;

	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.exited && r.exit_status == 3 && r.signal == 0);
	CHECK(nv_proc_status(&r) == 3);
	CHECK(!r.timed_out && !r.over_cap && r.pid > 0);

	o = opts_for(term);
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(!r.exited && r.exit_status == -1 && r.signal == SIGTERM);
	CHECK(nv_proc_status(&r) == 128 + SIGTERM);
}

static void test_missing_program(void)
{
	const char *gone[] = {"/nonexistent/navette-no-such-program", NULL};
	const char *bare[] = {"navette-no-such-program-on-path", NULL};
	const char *sh[] = {"sh", "-c", "exit 0", NULL};
	nv_proc_opts o = opts_for(gone);
	nv_proc_result r;
	nv_err err;
	int why = 0;

	CHECK(nv_proc_run(&o, &r, &why, &err) == NV_ENOTFOUND);
	CHECK(why == ENOENT);
	CHECK(strstr(err.message,
		     "cannot start "
		     "/nonexistent/navette-no-such-program") != NULL);
	o = opts_for(bare);
	o.search_path = 1;
	CHECK(nv_proc_run(&o, &r, &why, &err) == NV_ENOTFOUND);
	CHECK(why == ENOENT);
	/* a bare name is looked up in PATH only when asked */
	o = opts_for(sh);
	o.search_path = 1;
	CHECK(nv_proc_run(&o, &r, &why, &err) == 0 && why == 0);
	CHECK(r.exited && r.exit_status == 0);
	o.search_path = 0;
	o.cwd = "/nonexistent-folder-of-navette";
	CHECK(nv_proc_run(&o, &r, &why, &err) < 0 && why != 0);
	/* the program apart from argv[0] */
	const char *named[] = {"custom-name", "-c", "printf %s \"$0\"", NULL};
	char out[64];
	o = opts_for(named);
	o.program = "/bin/sh";
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "custom-name");
}

static void test_capture_and_caps(void)
{
	const char *both[] = {"/bin/sh", "-c",
			      "printf out; printf err >&2; printf more", NULL};
	const char *merged[] = {"/bin/sh", "-c", "echo a; echo b >&2; echo c",
				NULL};
	const char *spew[] = {self, "child", "spew", "10000", "3000", NULL};
	char out[101], errs[16];
	nv_proc_opts o = opts_for(both);
	nv_proc_result r;
	nv_err err;
	int ok;

	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, errs, sizeof(errs), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "outmore");
	CHECK_STR(errs, "err");
	CHECK(r.out_len == 7 && r.err_len == 3);
	CHECK(r.out_dropped == 0 && r.err_dropped == 0);

	/* stderr into stdout, in order */
	o = opts_for(merged);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	o.err.to = NV_PROC_MERGE;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "a\nb\nc\n");

	/* over the caps: the first cap - 1 kept, the rest counted */
	o = opts_for(spew);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, errs, sizeof(errs), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.exited && r.exit_status == 0 && !r.over_cap);
	CHECK(r.out_len == 100 && r.out_dropped == 9900);
	CHECK(r.err_len == 15 && r.err_dropped == 2985);
	CHECK(out[100] == '\0' && errs[15] == '\0');
	ok = 1;
	for (size_t i = 0; i < 100; i++)
		ok &= (unsigned char)out[i] == pattern(i, 1);
	for (size_t i = 0; i < 15; i++)
		ok &= (unsigned char)errs[i] == pattern(i, 2);
	CHECK(ok);

	/* cap 0: nothing kept, all counted; NULL: neither kept nor counted */
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, NULL, 0, 0};
	o.err = (nv_proc_stream){NV_PROC_NULL, NULL, 0, 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.out_len == 0 && r.out_dropped == 10000);
	CHECK(r.err_len == 0 && r.err_dropped == 0);
}

static void test_stop_at_cap(void)
{
	/* it would print for ever: killed at once past the cap */
	const char *yes[] = {"/bin/sh", "-c", "while :; do echo y; done", NULL};
	char out[1000];
	nv_proc_opts o = opts_for(yes);
	nv_proc_result r;
	nv_err err;
	double t0 = nv_monotonic();

	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	o.stop_at_cap = 1;
	o.timeout_s = 30;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.over_cap && !r.timed_out && r.signal == SIGKILL);
	CHECK(r.out_len == sizeof(out) - 1 && r.out_dropped > 0);
	CHECK(nv_monotonic() - t0 < 10);
}

/* 4 MiB on each stream, interleaved, read with both caps large enough:
 * a reader of one pipe at a time would wait for ever. */
static void test_big_output_both_streams(void)
{
	const size_t n = (size_t)4 << 20;
	char count[32];
	const char *spew[] = {self, "child", "spew", count, count, NULL};
	char *out = malloc(n + 1), *errs = malloc(n + 1);
	nv_proc_opts o = opts_for(spew);
	nv_proc_result r;
	nv_err err;
	int ok = 1;

	snprintf(count, sizeof(count), "%zu", n);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, n + 1, 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, errs, n + 1, 0};
	o.timeout_s = 60;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.exited && r.exit_status == 0 && !r.timed_out);
	CHECK(r.out_len == n && r.err_len == n);
	CHECK(r.out_dropped == 0 && r.err_dropped == 0);
	for (size_t i = 0; i < n && ok; i++)
		ok = (unsigned char)out[i] == pattern(i, 1) &&
		     (unsigned char)errs[i] == pattern(i, 2);
	CHECK(ok);
	free(out);
	free(errs);
}

/* stdin of many sizes, the largest far above a pipe's buffer, copied back
 * by the child as it reads: stdin and stdout flow at once. */
static void test_stdin(void)
{
	static const size_t sizes[] = {0,     1,       4095,         4096,
				       4097,  65535,   65536,        65537,
				       70000, 1 << 20, (3 << 20) + 7};
	const char *cat[] = {self, "child", "cat", NULL};
	const size_t most = (3 << 20) + 7;
	unsigned char *in = malloc(most);
	char *out = malloc(most + 1), errs[32], want[32];

	for (size_t i = 0; i < most; i++)
		in[i] = pattern(i, 3);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		nv_proc_opts o = opts_for(cat);
		nv_proc_result r;
		nv_err err;

		o.input = in;
		o.input_len = sizes[k];
		o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, most + 1, 0};
		o.err = (nv_proc_stream){NV_PROC_CAPTURE, errs, sizeof(errs),
					 0};
		CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
		CHECK(r.exited && r.exit_status == 0);
		CHECK(r.input_written == sizes[k]);
		CHECK(r.out_len == sizes[k]);
		CHECK(memcmp(out, in, sizes[k]) == 0);
		snprintf(want, sizeof(want), "%zu", sizes[k]);
		CHECK_STR(errs, want);
	}
	/* a small cap on the copy: kept and counted add up */
	{
		const char *cat2[] = {self, "child", "cat", NULL};
		nv_proc_opts o = opts_for(cat2);
		nv_proc_result r;
		nv_err err;
		char small[4097];

		o.input = in;
		o.input_len = most;
		o.out = (nv_proc_stream){NV_PROC_CAPTURE, small, sizeof(small),
					 0};
		CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
		CHECK(r.out_len == 4096 && r.out_len + r.out_dropped == most);
		CHECK(memcmp(small, in, 4096) == 0);
	}
	/* no input: /dev/null, end of file at once */
	{
		nv_proc_opts o = opts_for(cat);
		nv_proc_result r;
		nv_err err;

		o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, 16, 0};
		CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
		CHECK(r.exited && r.exit_status == 0 && r.out_len == 0);
	}
	free(in);
	free(out);
}

/* A child that reads 10 bytes of 2 MiB and exits: not an error, and no
 * SIGPIPE reaches us (it would end this test), none is left pending and
 * our signal mask is as it was. */
static void test_stdin_closed_early(void)
{
	const size_t n = (size_t)2 << 20;
	const char *some[] = {self, "child", "read-some", "10", NULL};
	unsigned char *in = calloc(1, n);
	char out[32];
	nv_proc_opts o = opts_for(some);
	nv_proc_result r;
	nv_err err;
	sigset_t before, after, pending;

	sigprocmask(SIG_BLOCK, NULL, &before);
	o.input = in;
	o.input_len = n;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.exited && r.exit_status == 0);
	CHECK_STR(out, "10");
	CHECK(r.input_written >= 10 && r.input_written < n);
	sigprocmask(SIG_BLOCK, NULL, &after);
	CHECK(sigismember(&after, SIGPIPE) == sigismember(&before, SIGPIPE));
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
	free(in);
}

static void test_timeout(void)
{
	const char *sleeper[] = {"/bin/sh", "-c", "exec sleep 30", NULL};
	/* closes its outputs, then lingers */
	const char *linger[] = {"/bin/sh", "-c",
				"exec >/dev/null 2>&1; sleep 30", NULL};
	/* a child of its own keeps the pipe open after it ends */
	const char *group[] = {"/bin/sh", "-c",
			       "sleep 30 & echo started; exec sleep 30", NULL};
	char out[64];
	nv_proc_opts o = opts_for(sleeper);
	nv_proc_result r;
	nv_err err;
	double t0 = nv_monotonic();

	o.timeout_s = 0.5;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.timed_out && !r.exited && r.signal == SIGKILL);
	CHECK(nv_monotonic() - t0 < 5);

	t0 = nv_monotonic();
	o = opts_for(linger);
	o.timeout_s = 0.5;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.timed_out && r.signal == SIGKILL);
	CHECK(nv_monotonic() - t0 < 5);

	t0 = nv_monotonic();
	o = opts_for(group);
	o.timeout_s = 0.5;
	o.own_group = 1;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(r.timed_out && r.signal == SIGKILL);
	CHECK_STR(out, "started\n");
	CHECK(nv_monotonic() - t0 < 5);
	/* the whole group is gone (its orphan is init's to reap) */
	for (int i = 0; i < 500 && nv_proc_group_alive(r.pid); i++)
		usleep(10000);
	CHECK(!nv_proc_group_alive(r.pid));

	/* a quick program is not held to the limit */
	const char *quick[] = {"/bin/sh", "-c", "exit 0", NULL};
	t0 = nv_monotonic();
	o = opts_for(quick);
	o.timeout_s = 20;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK(!r.timed_out && r.exited && nv_monotonic() - t0 < 5);
}

static void test_environment_and_folder(void)
{
	const char *env[] = {self, "child", "env", "NV_PROC_TEST", NULL};
	const char *home[] = {self, "child", "env", "HOME", NULL};
	const char *cwd[] = {self, "child", "cwd", NULL};
	char *const given[] = {"NV_PROC_TEST=given", NULL};
	char out[PATH_MAX];
	nv_proc_opts o = opts_for(env);
	nv_proc_result r;
	nv_err err;

	setenv("NV_PROC_TEST", "inherited", 1);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "inherited");
	o.envp = given;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "given");
	/* only what was given */
	setenv("HOME", "/somewhere", 1);
	o.argv = home;
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "(unset)");
	unsetenv("NV_PROC_TEST");

	o = opts_for(cwd);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	o.cwd = "/";
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "/");
}

/* What the child inherits: no descriptor of ours but those we left
 * inheritable on purpose; an empty signal mask; SIGPIPE at its default. */
static void test_inheritance(void)
{
	const char *fds[] = {self, "child", "fds", NULL};
	const char *sigs[] = {self, "child", "signals", NULL};
	char out[4096], want[4096] = "";
	size_t used = 0;
	nv_proc_opts o = opts_for(fds);
	nv_proc_result r;
	nv_err err;
	sigset_t usr1, old;
	void (*old_pipe)(int);

	for (int fd = 3; fd < 1024; fd++) {
		int flags = fcntl(fd, F_GETFD);
		if (flags != -1 && !(flags & FD_CLOEXEC))
			used += (size_t)snprintf(
				want + used, sizeof(want) - used, "%d ", fd);
	}
	o.input = "x";
	o.input_len = 1;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, NULL, 0, 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, want);

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	old_pipe = signal(SIGPIPE, SIG_IGN);
	o = opts_for(sigs);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	CHECK_STR(out, "usr1 open, pipe default");
	signal(SIGPIPE, old_pipe);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Many runs leave no descriptor and no child behind. */
static void test_no_leaks(void)
{
	const char *cat[] = {self, "child", "cat", NULL};
	const char *gone[] = {"/nonexistent/navette-no-such-program", NULL};
	int before = open_fds(), ok = 1;
	char out[64];

	for (int i = 0; i < 100; i++) {
		nv_proc_opts o = opts_for(i % 10 ? cat : gone);
		nv_proc_result r;
		nv_err err;

		o.input = "hello";
		o.input_len = 5;
		o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 0};
		o.err = (nv_proc_stream){NV_PROC_CAPTURE, NULL, 0, 0};
		if (i % 10)
			ok &= nv_proc_run(&o, &r, NULL, &err) == 0 &&
			      strcmp(out, "hello") == 0;
		else
			ok &= nv_proc_run(&o, &r, NULL, &err) == NV_ENOTFOUND;
	}
	CHECK(ok);
	CHECK(open_fds() == before);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

/* The echo: what is captured also goes to our stderr as it comes. */
static void test_echo(void)
{
	const char *both[] = {"/bin/sh", "-c", "printf hello", NULL};
	char path[] = "/tmp/nv_proc_echo_XXXXXX", out[16], seen[16] = "";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	nv_proc_opts o = opts_for(both);
	nv_proc_result r;
	nv_err err;
	ssize_t n;

	CHECK(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, sizeof(out), 1};
	CHECK(nv_proc_run(&o, &r, NULL, &err) == 0);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, seen, sizeof(seen) - 1, 0);
	CHECK(n == 5);
	CHECK_STR(seen, "hello");
	CHECK_STR(out, "hello");
	close(fd);
	unlink(path);
}

/* ---- other processes ---------------------------------------------------- */

/* A group leader whose child runs too; -> the leader's pid, the child's
 * in *child. Both pause until killed. */
static pid_t start_group(pid_t *child)
{
	int fds[2];
	pid_t leader;

	CHECK(pipe(fds) == 0);
	leader = fork();
	CHECK(leader >= 0);
	if (leader == 0) {
		setpgid(0, 0);
		pid_t c = fork();
		if (c == 0) {
			for (;;)
				pause();
		}
		ssize_t w = write(fds[1], &c, sizeof(c));
		(void)w;
		for (;;)
			pause();
	}
	close(fds[1]);
	CHECK(read(fds[0], child, sizeof(*child)) == (ssize_t)sizeof(*child));
	close(fds[0]);
	return leader;
}

/* waits (at most 5 s) until pid is no longer running: a zombie or gone */
static int wait_not_running(pid_t pid)
{
	char start[32];
	struct timespec tick = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 500; i++) {
		if (kill(pid, 0) != 0 ||
		    nv_proc_start_time(pid, start, sizeof(start)) != 0)
			return 1;
#ifdef __linux__
		char path[64], stat[256];
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
		if ((f = fopen(path, "r"))) {
			size_t n = fread(stat, 1, sizeof(stat) - 1, f);
			fclose(f);
			stat[n] = '\0';
			const char *p = strrchr(stat, ')');
			if (p && (p[2] == 'Z' || p[2] == 'X'))
				return 1;
		}
#endif
		nanosleep(&tick, NULL);
	}
	return 0;
}

static void test_group_and_start_time(void)
{
	pid_t child, leader = start_group(&child);
	char a[32], b[32];

	CHECK(nv_proc_group_alive(leader) == 1);
	CHECK(nv_proc_group_alive(0) == 0);
	CHECK(nv_proc_start_time(leader, a, sizeof(a)) == 0 && a[0]);
	CHECK(nv_proc_start_time(leader, b, sizeof(b)) == 0);
	CHECK(strcmp(a, b) == 0);

	/* the leader killed and left unreaped: its child still runs */
	CHECK(kill(leader, SIGKILL) == 0);
	CHECK(wait_not_running(leader));
	CHECK(nv_proc_group_alive(leader) == 1);

	/* the child killed too: only zombies, or nothing, are left */
	CHECK(kill(child, SIGKILL) == 0);
	CHECK(wait_not_running(child));
#ifdef __linux__
	/* the signal still reaches the group: the unreaped leader keeps it */
	CHECK(kill(-leader, 0) == 0);
#endif
	CHECK(nv_proc_group_alive(leader) == 0);

	/* reaped: the group is gone for the system as well */
	CHECK(waitpid(leader, NULL, 0) == leader);
	CHECK(nv_proc_group_alive(leader) == 0);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "child") == 0)
		return child(argc, argv);
	if (!realpath(argv[0], self)) {
		fprintf(stderr, "cannot find this program's path\n");
		return 1;
	}
	test_status_and_signal();
	test_missing_program();
	test_capture_and_caps();
	test_stop_at_cap();
	test_big_output_both_streams();
	test_stdin();
	test_stdin_closed_early();
	test_timeout();
	test_environment_and_folder();
	test_inheritance();
	test_no_leaks();
	test_echo();
	test_group_and_start_time();
	return nv_test_done();
}
