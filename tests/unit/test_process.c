/* Unit tests of host/core/process.c: a process group is alive while one
 * of its processes runs, and ended once only zombies are left (processes
 * killed but not yet reaped: after an agent dies, its launchers' groups
 * are reaped by init, which may take its time). The start time tells a
 * process from a later one with the same pid. */
#include "core/process.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nv_test.h"

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
		    nv_process_start_time(pid, start, sizeof(start)) != 0)
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

int main(void)
{
	pid_t child, leader = start_group(&child);
	char a[32], b[32];

	CHECK(nv_process_group_alive(leader) == 1);
	CHECK(nv_process_group_alive(0) == 0);
	CHECK(nv_process_start_time(leader, a, sizeof(a)) == 0 && a[0]);
	CHECK(nv_process_start_time(leader, b, sizeof(b)) == 0);
	CHECK(strcmp(a, b) == 0);

	/* the leader killed and left unreaped: its child still runs */
	CHECK(kill(leader, SIGKILL) == 0);
	CHECK(wait_not_running(leader));
	CHECK(nv_process_group_alive(leader) == 1);

	/* the child killed too: only zombies, or nothing, are left */
	CHECK(kill(child, SIGKILL) == 0);
	CHECK(wait_not_running(child));
#ifdef __linux__
	/* the signal still reaches the group: the unreaped leader keeps it */
	CHECK(kill(-leader, 0) == 0);
#endif
	CHECK(nv_process_group_alive(leader) == 0);

	/* reaped: the group is gone for the system as well */
	CHECK(waitpid(leader, NULL, 0) == leader);
	CHECK(nv_process_group_alive(leader) == 0);
	return nv_test_done();
}
