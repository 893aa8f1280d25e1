/* `navette agent status` and `navette agent stop` (agent.h): what the
 * agent of a NAVETTE_HOME is, and a clean stop of it. The lock says
 * whether an agent runs; agent.lock holds its pid, agent.json when it
 * started and which sandbox its host jobs get. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/clock.h"
#include "core/fsutil.h"
#include "jobs/agent.h"
#include "jobs/agent_internal.h"
#include "jobs/jobdb.h"

static long lock_pid(const char *home)
{
	char path[PATH_CAP];
	char *text = NULL;
	size_t len = 0;
	nv_err err;
	long pid;

	nv_pathf(path, sizeof(path), "%s/agent.lock", home);
	if (nv_read_file(&text, &len, path, 64, &err) != 0)
		return 0;
	pid = strtol(text, NULL, 10);
	free(text);
	return pid > 0 ? pid : 0;
}

static void info_read(const char *home, nv_agent_info *info)
{
	char path[PATH_CAP];
	char *text = NULL;
	size_t len = 0;
	nv_err err;
	cJSON *o;

	nv_pathf(path, sizeof(path), "%s/" NV_AGENT_INFO_FILE, home);
	if (nv_read_file(&text, &len, path, 4096, &err) != 0)
		return;
	o = cJSON_ParseWithLength(text, len);
	free(text);
	const cJSON *pid = ofield(o, "pid");
	/* the file of this agent, not one an earlier agent left */
	if (cJSON_IsNumber(pid) && (long)pid->valuedouble == info->pid) {
		const char *started = sfield(o, "started");
		const char *sandbox = sfield(o, "sandbox");
		nv_pathf(info->started, sizeof(info->started), "%s",
			 started ? started : "");
		nv_pathf(info->sandbox, sizeof(info->sandbox), "%s",
			 sandbox ? sandbox : "");
	}
	cJSON_Delete(o);
}

/* The jobs queued and running in home's queue (0 when it has none). */
static int queue_counts(const char *home, int *queued, int *running,
			nv_err *err)
{
	char path[PATH_CAP];
	struct stat st;
	nv_jobdb *q = NULL;
	int rc;

	*queued = *running = 0;
	nv_pathf(path, sizeof(path), "%s/jobs.db", home);
	if (stat(path, &st) != 0)
		return 0;
	if ((rc = nv_jobdb_open(&q, home, err)) != 0)
		return rc;
	rc = nv_jobdb_active(q, queued, running, err);
	nv_jobdb_close(q);
	return rc;
}

int nv_agent_status(const char *home, nv_agent_info *info, nv_err *err)
{
	memset(info, 0, sizeof(*info));
	info->alive = nv_agent_alive(home);
	if (info->alive) {
		info->pid = lock_pid(home);
		info->sandbox[0] = '\0';
		info_read(home, info);
	}
	return queue_counts(home, &info->queued, &info->running, err);
}

int nv_agent_stop(const char *home, int force, double wait_s, long *pid,
		  nv_err *err)
{
	int queued, running, rc;
	struct timespec tick = {0, 50000000L};

	*pid = 0;
	if (!nv_agent_alive(home))
		return 0;
	if ((rc = queue_counts(home, &queued, &running, err)) != 0)
		return rc;
	if ((queued || running) && !force)
		return nv_err_set(
			err, NV_EREFUSED,
			"wait for them (navette jobs), cancel them, or "
			"`navette agent stop --force`: running jobs then go "
			"on, and the agent the next navette command starts "
			"adopts them and takes the queued ones",
			"the agent has %d job(s) running and %d queued",
			running, queued);
	*pid = lock_pid(home);
	if (*pid <= 0)
		return nv_err_set(err, NV_EBACKEND,
				  "try again in a moment (it is starting)",
				  "agent.lock names no agent");
	if (kill((pid_t)*pid, SIGTERM) != 0 && errno != ESRCH)
		return nv_err_set_errno(
			err, NV_EBACKEND, errno, "is it another user's agent?",
			"cannot signal the agent (pid %ld)", *pid);
	double deadline = nv_deadline_after(wait_s);
	while (nv_agent_alive(home)) {
		if (nv_monotonic() > deadline)
			return nv_err_set(err, NV_EBACKEND,
					  "see NAVETTE_HOME/agent.log",
					  "the agent (pid %ld) still runs "
					  "after %.0f s",
					  *pid, wait_s);
		nanosleep(&tick, NULL);
	}
	return 0;
}
