/* Processes (process.h). Each system says it its own way: Linux with
 * prctl and /proc/PID/stat, macOS with ptrace and sysctl; any other system
 * gets neither and says so (-1). */
#include "core/process.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#include "core/fsutil.h"

#ifdef __linux__
/* Not dumpable: the kernel then refuses same-user ptrace and the
 * /proc/PID files that show memory or the environment. */
int nv_process_deny_inspection(void)
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
int nv_process_start_time(pid_t pid, char *out, size_t cap)
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
int nv_process_deny_inspection(void)
{
	return ptrace(PT_DENY_ATTACH, 0, 0, 0) == 0 ? 0 : -1;
}

int nv_process_start_time(pid_t pid, char *out, size_t cap)
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

int nv_process_deny_inspection(void)
{
	errno = ENOSYS;
	return -1;
}

int nv_process_start_time(pid_t pid, char *out, size_t cap)
{
	(void)pid;
	out[0] = '\0';
	(void)cap;
	return -1;
}
#endif

int nv_process_alive(pid_t pid)
{
	if (pid <= 0)
		return 0;
	if (kill(pid, 0) != 0 && errno != EPERM)
		return 0;
	return !is_zombie(pid);
}

int nv_process_group_alive(pid_t pgid)
{
	if (pgid <= 0)
		return 0;
	if (kill(-pgid, 0) != 0 && errno == ESRCH)
		return 0;
	return group_has_live_member(pgid);
}
