/* The local backend's agent: a per-user process, detached from any
 * terminal, that takes jobs from the queue, prepares their workspace and
 * inputs, runs their launcher, publishes their outputs, log and run record,
 * and records every phase. One agent per NAVETTE_HOME (a lock file). */
#ifndef NV_AGENT_H
#define NV_AGENT_H

#include "core/agent_program.h"
#include "core/nv_err.h"

/* Runs the agent loop until it has been idle for NAVETTE_AGENT_IDLE
 * seconds (default 30). Returns 0, or NV_EREFUSED when another agent holds
 * the lock (then it did nothing). */
int nv_agent_run(const char *home, nv_err *err);

/* Starts a detached agent (own session, stdio on HOME/agent.log) unless one
 * already holds the lock. *started tells which. */
int nv_agent_ensure(const char *home, int *started, nv_err *err);

/* Whether an agent holds the lock of home right now. */
int nv_agent_alive(const char *home);

/* HOME/agent.json, written by a running agent: pid, started, sandbox. */
#define NV_AGENT_INFO_FILE "agent.json"

/* What `navette agent status` shows. */
typedef struct nv_agent_info {
	int alive;
	long pid;
	char started[32];  /* ISO-8601 UTC; "" unknown */
	char sandbox[160]; /* "bubblewrap 0.8.0", "off (...)", "none" */
	int queued, running;
} nv_agent_info;

int nv_agent_status(const char *home, nv_agent_info *info, nv_err *err);

/* Stops the agent of home (SIGTERM, then waits up to wait_s for it to
 * let go of its lock). Refused (NV_EREFUSED) while jobs run or are
 * queued, unless force: the running ones then go on, and the next agent
 * adopts them. *pid: the agent stopped, 0 when none ran. */
int nv_agent_stop(const char *home, int force, double wait_s, long *pid,
		  nv_err *err);

/* The `navette agent` command: runs the agent in the foreground for home.
 * quiet_if_running: another agent holding the lock is not an error.
 * Returns a navette_status. */
int navette_agent(const char *home, int quiet_if_running);

#endif
