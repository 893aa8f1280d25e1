/* See service.h. The child gets a pipe for stdout and stderr; the parent
 * reads it with poll until it closes or the time is up, keeping what
 * fits, then reaps the child (killed first when late). */
#include "tasks/service.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fsutil.h"

extern char **environ;

int nv_service_run(const char *const *argv, double timeout_s, int *status,
		   char *output, size_t cap, nv_err *err)
{
	posix_spawn_file_actions_t fa;
	char path[4096];
	int pipefd[2], wstatus = 0, rc, killed = 0;
	size_t used = 0;
	double deadline = nv_deadline_after(timeout_s);
	pid_t pid;

	*status = -1;
	if (cap)
		output[0] = '\0';
	if (!argv || !argv[0] || nv_which(argv[0], path, sizeof(path)) != 0)
		return nv_err_set(err, NV_ENOTFOUND, NULL,
				  "%s is not installed here (not on PATH)",
				  argv && argv[0] ? argv[0] : "?");
	if (pipe(pipefd) != 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot run %s", argv[0]);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
					 O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	posix_spawn_file_actions_addclose(&fa, pipefd[1]);
	rc = posix_spawn(&pid, path, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		return nv_err_set_errno(err, NV_ENOTFOUND, rc, NULL,
					"cannot start %s", path);
	}
	for (;;) {
		struct pollfd p = {pipefd[0], POLLIN, 0};
		char buf[1024];
		double left = deadline - nv_monotonic();
		ssize_t n;

		if (left <= 0) {
			kill(pid, SIGKILL);
			killed = 1;
			break;
		}
		rc = poll(&p, 1, (int)(left * 1000) + 1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue; /* (the deadline is checked above) */
		n = read(pipefd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (cap && used + 1 < cap) {
			size_t k = (size_t)n < cap - 1 - used ? (size_t)n
							      : cap - 1 - used;
			memcpy(output + used, buf, k);
			used += k;
			output[used] = '\0';
		}
	}
	close(pipefd[0]);
	/* The pipe closed; the child may still run (it closed its output,
	 * or left a child holding it): reaped by the deadline, else
	 * killed. */
	for (;;) {
		pid_t got = waitpid(pid, &wstatus, WNOHANG);

		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return nv_err_set_errno(err, NV_EIO, errno, NULL,
						"lost %s", argv[0]);
		if (got == 0 && !killed && nv_monotonic() >= deadline) {
			kill(pid, SIGKILL);
			killed = 1;
		}
		if (got == 0)
			usleep(10000);
	}
	if (killed)
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "%s did not answer within %.0f s", argv[0],
				  timeout_s);
	*status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus)
				     : 128 + WTERMSIG(wstatus);
	return 0;
}
