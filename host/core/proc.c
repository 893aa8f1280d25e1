/* See proc.h. posix_spawn with file actions (no code of ours runs in the
 * child); every descriptor of ours is close-on-exec, and the child gets
 * only stdin, stdout and stderr from us. The parent's ends are
 * non-blocking, read and written in one poll loop until each is closed or
 * the time is up; then the child is reaped (killed first when late).
 * What is said of other processes each system says its own way: Linux
 * with prctl and /proc/PID/stat, macOS with ptrace and sysctl; any other
 * system gets neither and says so (-1). */
/* posix_spawn_file_actions_addchdir_np, in glibc's spawn.h */
#define _GNU_SOURCE

#include "core/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <dirent.h>
#include <sys/prctl.h>
#endif

#ifdef __APPLE__
#include <sys/proc.h>
#include <sys/ptrace.h>
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

#include "core/clock.h"
#include "core/fsutil.h"

extern char **environ;

#define CHUNK ((size_t)64 * 1024) /* one read or write at most */

/* A byte-wise wipe the compiler cannot drop (it may hold a secret). */
static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* A descriptor moved above stdio (a file action dup2'ing it onto itself
 * would keep its close-on-exec flag and the child would lose it),
 * close-on-exec, and non-blocking when asked. -1 on failure (closed). */
static int own_fd(int fd, int nonblock)
{
	if (fd >= 0 && fd <= STDERR_FILENO) {
		int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
		close(fd);
		fd = moved;
	}
	if (fd < 0)
		return -1;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 ||
	    (nonblock &&
	     fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* pipe() with both ends owned: the parent's (child_reads ? write : read)
 * end non-blocking. macOS has no pipe2, so another thread's fork may see
 * them for an instant before they are close-on-exec. */
static int proc_pipe(int fds[2], int child_reads)
{
	if (pipe(fds) != 0)
		return -1;
	fds[0] = own_fd(fds[0], !child_reads);
	fds[1] = own_fd(fds[1], child_reads);
	if (fds[0] < 0 || fds[1] < 0) {
		close_fd(&fds[0]);
		close_fd(&fds[1]);
		errno = EMFILE;
		return -1;
	}
	return 0;
}

/* One output of the child as the loop reads it. */
typedef struct reader {
	int fd;
	const nv_proc_stream *to;
	size_t len, dropped;
} reader;

/* Reads what is there: kept up to the cap, the rest counted. 1 while
 * open, 0 at end of file or on an error (then closed). */
static int read_some(reader *r)
{
	char scratch[4096];
	size_t room = r->to->cap > r->len + 1 ? r->to->cap - 1 - r->len : 0;
	char *into = room ? r->to->buf + r->len : scratch;
	size_t want = room ? (room < CHUNK ? room : CHUNK) : sizeof(scratch);
	ssize_t n = read(r->fd, into, want);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		close_fd(&r->fd);
		return 0;
	}
	if (r->to->echo) /* best effort: a closed stderr loses it */
		(void)nv_write_all(STDERR_FILENO, into, (size_t)n);
	if (room) {
		r->len += (size_t)n;
		r->to->buf[r->len] = '\0';
	} else {
		r->dropped += (size_t)n;
		wipe(scratch, (size_t)n);
	}
	return 1;
}

/* The file actions giving the child its stdio. */
static int stdio_actions(posix_spawn_file_actions_t *fa, const nv_proc_opts *o,
			 const int in[2], const int out[2], const int errp[2])
{
	int rc = 0;

	if (in[0] >= 0)
		rc |= posix_spawn_file_actions_adddup2(fa, in[0], STDIN_FILENO);
	else
		rc |= posix_spawn_file_actions_addopen(
			fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (out[1] >= 0)
		rc |= posix_spawn_file_actions_adddup2(fa, out[1],
						       STDOUT_FILENO);
	else if (o->out.to == NV_PROC_NULL)
		rc |= posix_spawn_file_actions_addopen(
			fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	else if (o->out.to == NV_PROC_TO_STDERR)
		rc |= posix_spawn_file_actions_adddup2(fa, STDERR_FILENO,
						       STDOUT_FILENO);
	if (errp[1] >= 0)
		rc |= posix_spawn_file_actions_adddup2(fa, errp[1],
						       STDERR_FILENO);
	else if (o->err.to == NV_PROC_MERGE)
		/* after stdout has its place: the same pipe or file */
		rc |= posix_spawn_file_actions_adddup2(fa, STDOUT_FILENO,
						       STDERR_FILENO);
	else if (o->err.to == NV_PROC_NULL)
		rc |= posix_spawn_file_actions_addopen(
			fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (o->cwd)
		rc |= posix_spawn_file_actions_addchdir_np(fa, o->cwd);
	return rc;
}

/* Starts the child; its errno on failure. The child's signal mask is
 * empty and SIGPIPE is back to its default, whatever ours are. */
static int spawn(const nv_proc_opts *o, const int in[2], const int out[2],
		 const int errp[2], pid_t *pid)
{
	const char *program = o->program ? o->program : o->argv[0];
	char *const *envp = o->envp ? o->envp : environ;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, pipe_only;
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	int rc;

	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	sigemptyset(&none);
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (o->own_group)
		flags |= POSIX_SPAWN_SETPGROUP;
	if (stdio_actions(&fa, o, in, out, errp) != 0 ||
	    posix_spawnattr_setflags(&attr, flags) != 0 ||
	    posix_spawnattr_setsigmask(&attr, &none) != 0 ||
	    posix_spawnattr_setsigdefault(&attr, &pipe_only) != 0 ||
	    (o->own_group && posix_spawnattr_setpgroup(&attr, 0) != 0))
		rc = ENOMEM;
	else if (o->search_path)
		rc = posix_spawnp(pid, program, &fa, &attr,
				  (char *const *)o->argv, envp);
	else
		rc = posix_spawn(pid, program, &fa, &attr,
				 (char *const *)o->argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

static void kill_child(const nv_proc_opts *o, pid_t pid)
{
	if (o->own_group && kill(-pid, SIGKILL) == 0)
		return;
	kill(pid, SIGKILL);
}

/* Milliseconds poll may wait: until the deadline (rounded up), or for
 * ever without one. */
static int wait_ms(double deadline)
{
	double left;

	if (deadline <= 0)
		return -1;
	left = (deadline - nv_monotonic()) * 1000.0;
	if (left <= 0)
		return 0;
	return left > 60000.0 ? 60000 : (int)left + 1;
}

/* Feeds stdin and drains the outputs until all are closed, the time is
 * up or a cap is passed (then the child is killed). -> 1 when killed. */
static int pump(const nv_proc_opts *o, nv_proc_result *res, pid_t pid,
		double deadline, int *in_fd, reader *out, reader *errr,
		int *epipe)
{
	const unsigned char *input = o->input;

	if (*in_fd >= 0 && res->input_written == o->input_len)
		close_fd(in_fd); /* nothing to write: end of file at once */
	while (*in_fd >= 0 || out->fd >= 0 || errr->fd >= 0) {
		struct pollfd p[3];
		int n = 0, in_at = -1, out_at = -1, err_at = -1, rc;

		if (deadline > 0 && nv_deadline_passed(deadline)) {
			res->timed_out = 1;
			kill_child(o, pid);
			return 1;
		}
		if (*in_fd >= 0) {
			p[n] = (struct pollfd){*in_fd, POLLOUT, 0};
			in_at = n++;
		}
		if (out->fd >= 0) {
			p[n] = (struct pollfd){out->fd, POLLIN, 0};
			out_at = n++;
		}
		if (errr->fd >= 0) {
			p[n] = (struct pollfd){errr->fd, POLLIN, 0};
			err_at = n++;
		}
		rc = poll(p, (nfds_t)n, wait_ms(deadline));
		if (rc < 0 && errno != EINTR && errno != EAGAIN) {
			kill_child(o, pid); /* cannot watch it: end it */
			return 1;
		}
		if (rc <= 0)
			continue; /* (the deadline is checked above) */
		if (in_at >= 0 && p[in_at].revents) {
			size_t left = o->input_len - res->input_written;
			ssize_t w = write(*in_fd, input + res->input_written,
					  left < CHUNK ? left : CHUNK);
			if (w > 0)
				res->input_written += (size_t)w;
			else if (w < 0 && errno != EINTR && errno != EAGAIN) {
				*epipe = errno == EPIPE;
				close_fd(in_fd); /* it stopped reading */
			}
			if (res->input_written == o->input_len)
				close_fd(in_fd);
		}
		if (out_at >= 0 && p[out_at].revents)
			read_some(out);
		if (err_at >= 0 && p[err_at].revents)
			read_some(errr);
		if (o->stop_at_cap && (out->dropped || errr->dropped)) {
			res->over_cap = 1;
			kill_child(o, pid);
			return 1;
		}
	}
	return 0;
}

/* Reaps the child: at once when killed, else by the deadline (killed
 * then). 0, or the errno of waitpid. */
static int reap(const nv_proc_opts *o, nv_proc_result *res, pid_t pid,
		double deadline, int killed, int *wstatus)
{
	for (;;) {
		int block = killed || deadline <= 0;
		pid_t got = waitpid(pid, wstatus, block ? 0 : WNOHANG);

		if (got == pid)
			return 0;
		if (got < 0 && errno != EINTR)
			return errno;
		if (got == 0 && nv_deadline_passed(deadline)) {
			res->timed_out = 1;
			kill_child(o, pid);
			killed = 1;
		} else if (got == 0) {
			struct timespec pause = {0, 10 * 1000 * 1000};
			nanosleep(&pause, NULL);
		}
	}
}

int nv_proc_run(const nv_proc_opts *o, nv_proc_result *res, int *start_errno,
		nv_err *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
	int rc, killed, wstatus = 0, epipe = 0, pipe_was_pending = 0;
	const char *name = o->argv && o->argv[0] ? o->argv[0] : "?";
	reader out_reader, err_reader;
	sigset_t pipe_only, old_mask, pending;
	double deadline;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	res->exit_status = -1;
	if (start_errno)
		*start_errno = 0;
	if (o->out.to == NV_PROC_CAPTURE && o->out.cap)
		o->out.buf[0] = '\0';
	if (o->err.to == NV_PROC_CAPTURE && o->err.cap)
		o->err.buf[0] = '\0';
	if (!o->argv || !o->argv[0])
		return nv_err_set(err, NV_EINVAL, NULL, "no program to run");
	if ((o->input && proc_pipe(in, 1) != 0) ||
	    (o->out.to == NV_PROC_CAPTURE && proc_pipe(out, 0) != 0) ||
	    (o->err.to == NV_PROC_CAPTURE && proc_pipe(errp, 0) != 0)) {
		rc = errno;
		goto not_started;
	}
	rc = spawn(o, in, out, errp, &pid);
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&errp[1]);
	if (rc != 0)
		goto not_started;
	res->pid = pid;
	deadline = o->timeout_s > 0 ? nv_deadline_after(o->timeout_s) : 0;
	/* A write to a stdin it closed raises SIGPIPE in this thread:
	 * blocked here, and taken back below unless it was pending
	 * before. */
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (in[1] >= 0) {
		pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
		sigpending(&pending);
		pipe_was_pending = sigismember(&pending, SIGPIPE);
	}
	out_reader = (reader){out[0], &o->out, 0, 0};
	err_reader = (reader){errp[0], &o->err, 0, 0};
	killed = pump(o, res, pid, deadline, &in[1], &out_reader, &err_reader,
		      &epipe);
	close_fd(&in[1]);
	close_fd(&out_reader.fd);
	close_fd(&err_reader.fd);
	if (o->input) {
		sigpending(&pending);
		if (epipe && !pipe_was_pending &&
		    sigismember(&pending, SIGPIPE)) {
			int taken;
			sigwait(&pipe_only, &taken);
		}
		pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	}
	res->out_len = out_reader.len;
	res->out_dropped = out_reader.dropped;
	res->err_len = err_reader.len;
	res->err_dropped = err_reader.dropped;
	rc = reap(o, res, pid, deadline, killed, &wstatus);
	if (rc != 0)
		return nv_err_set_errno(err, NV_EIO, rc, NULL, "lost %s", name);
	if (WIFEXITED(wstatus)) {
		res->exited = 1;
		res->exit_status = WEXITSTATUS(wstatus);
	} else if (WIFSIGNALED(wstatus)) {
		res->signal = WTERMSIG(wstatus);
	}
	return 0;
not_started:
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	if (start_errno)
		*start_errno = rc;
	return nv_err_set_errno(err, rc == ENOENT ? NV_ENOTFOUND : NV_EIO, rc,
				NULL, "cannot start %s", name);
}

int nv_proc_status(const nv_proc_result *res)
{
	if (res->exited)
		return res->exit_status;
	if (res->signal)
		return 128 + res->signal;
	return -1;
}

/* ---- other processes --------------------------------------------------- */

#ifdef __linux__
/* Not dumpable: the kernel then refuses same-user ptrace and the
 * /proc/PID files that show memory or the environment. */
int nv_proc_deny_inspection(void)
{
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : -1;
}

/* /proc/PID/stat into buf; -> what follows the command name (field 2,
 * which may hold spaces and ')': read after the last ')'), or NULL. */
static const char *proc_stat(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strrchr(buf, ')');
}

/* Field 22 of /proc/PID/stat: clock ticks from boot to the start. */
int nv_proc_start_time(pid_t pid, char *out, size_t cap)
{
	char stat[1024];
	unsigned long long start = 0;
	const char *p = proc_stat(pid, stat, sizeof(stat));

	out[0] = '\0';
	/* the 20th blank after it opens field 22 */
	for (int blank = 0; blank < 20 && p; blank++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return -1;
	return nv_pathf(out, cap, "%llu", start) == 0 ? 0 : -1;
}

/* Fields 3 and 5 of each /proc/PID/stat: its state and its group. */
static int group_has_live_member(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int alive = 0;

	if (!d)
		return 1; /* cannot tell: the signal said it lives */
	while (!alive && (e = readdir(d))) {
		char stat[1024], state;
		long group;
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		const char *p;

		if (*end || pid <= 0 ||
		    !(p = proc_stat((pid_t)pid, stat, sizeof(stat))))
			continue;
		if (sscanf(p + 1, " %c %*d %ld", &state, &group) == 2 &&
		    group == (long)pgid && state != 'Z' && state != 'X')
			alive = 1;
	}
	closedir(d);
	return alive;
}

/* Field 3 of /proc/PID/stat: Z (zombie) or X (dead). */
static int is_zombie(pid_t pid)
{
	char stat[1024], state;
	const char *p = proc_stat(pid, stat, sizeof(stat));
	return p && sscanf(p + 1, " %c", &state) == 1 &&
	       (state == 'Z' || state == 'X');
}
#elif defined(__APPLE__)
/* A debugger cannot attach; the environment stays readable to the same
 * user through sysctl KERN_PROCARGS2, so the environment must be minimal
 * (nv_agent_ensure, navette_agent). */
int nv_proc_deny_inspection(void)
{
	return ptrace(PT_DENY_ATTACH, 0, 0, 0) == 0 ? 0 : -1;
}

int nv_proc_start_time(pid_t pid, char *out, size_t cap)
{
	int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, (int)pid};
	struct kinfo_proc info;
	size_t size = sizeof(info);

	out[0] = '\0';
	memset(&info, 0, sizeof(info));
	if (sysctl(mib, 4, &info, &size, NULL, 0) != 0 || size == 0)
		return -1;
	return nv_pathf(out, cap, "%ld.%06ld",
			(long)info.kp_proc.p_starttime.tv_sec,
			(long)info.kp_proc.p_starttime.tv_usec) == 0
		       ? 0
		       : -1;
}

/* The group's processes (sysctl KERN_PROC_PGRP), zombies left out. */
static int group_has_live_member(pid_t pgid)
{
	int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PGRP, (int)pgid};
	struct kinfo_proc *list = NULL;
	size_t size = 0;
	int alive = 1; /* cannot tell: the signal said it lives */

	if (sysctl(mib, 4, NULL, &size, NULL, 0) != 0 || size == 0)
		return alive;
	size += 4 * sizeof(*list); /* room for processes started meanwhile */
	if (!(list = malloc(size)) ||
	    sysctl(mib, 4, list, &size, NULL, 0) != 0) {
		free(list);
		return alive;
	}
	alive = 0;
	for (size_t i = 0; i < size / sizeof(*list); i++)
		if (list[i].kp_proc.p_stat != SZOMB)
			alive = 1;
	free(list);
	return alive;
}

static int is_zombie(pid_t pid)
{
	int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, (int)pid};
	struct kinfo_proc info;
	size_t size = sizeof(info);

	memset(&info, 0, sizeof(info));
	return sysctl(mib, 4, &info, &size, NULL, 0) == 0 && size > 0 &&
	       info.kp_proc.p_stat == SZOMB;
}
#else
static int is_zombie(pid_t pid)
{
	(void)pid;
	return 0; /* no way to tell here: the signal said it lives */
}

static int group_has_live_member(pid_t pgid)
{
	(void)pgid;
	return 1; /* no way to tell a zombie here: the signal said it lives */
}

int nv_proc_deny_inspection(void)
{
	errno = ENOSYS;
	return -1;
}

int nv_proc_start_time(pid_t pid, char *out, size_t cap)
{
	(void)pid;
	out[0] = '\0';
	(void)cap;
	return -1;
}
#endif

int nv_proc_alive(pid_t pid)
{
	if (pid <= 0)
		return 0;
	if (kill(pid, 0) != 0 && errno != EPERM)
		return 0;
	return !is_zombie(pid);
}

int nv_proc_group_alive(pid_t pgid)
{
	if (pgid <= 0)
		return 0;
	if (kill(-pgid, 0) != 0 && errno == ESRCH)
		return 0;
	return group_has_live_member(pgid);
}
