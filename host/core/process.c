/* Processes (process.h). Each system says it its own way: Linux with
 * prctl and /proc/PID/stat, macOS with ptrace and sysctl; any other system
 * gets neither and says so (-1). */
#include "core/process.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#ifdef __APPLE__
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

/* Field 22 of /proc/PID/stat: clock ticks from boot to the start. The
 * command name (field 2) may hold spaces and ')': read after the last
 * ')'. */
int nv_process_start_time(pid_t pid, char *out, size_t cap)
{
	char path[64], stat[1024];
	unsigned long long start = 0;
	size_t n;
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	const char *p = strrchr(stat, ')');
	if (!p)
		return -1;
	/* the 20th blank after it opens field 22 */
	for (int blank = 0; blank < 20 && p; blank++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return -1;
	return nv_pathf(out, cap, "%llu", start) == 0 ? 0 : -1;
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
#else
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
