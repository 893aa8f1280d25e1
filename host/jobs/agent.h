/* The local backend's agent: a per-user process, detached from any
 * terminal, that takes jobs from the queue, prepares their workspace and
 * inputs, runs their launcher, publishes their outputs, log and run record,
 * and records every phase. One agent per NAVETTE_HOME (a lock file). */
#ifndef NV_AGENT_H
#define NV_AGENT_H

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

#endif
