/* Who is still submitting: a process that records a submission (a job row
 * with a submit key, see jobdb.h) first takes an exclusive flock on
 * HOME/runs/<token>.lock and keeps it until it exits; the row records the
 * token. A later run adopts such a row as an interrupted submission only
 * when no process holds that lock any more (the run was killed, or ended),
 * never the row of a run still going: two runs of one recipe at once share
 * a submit key but keep their own jobs. The kernel drops a flock when its
 * process dies, SIGKILL included, on Linux and macOS alike, and a reused
 * pid cannot inherit it. The lock file is opened close-on-exec, so the
 * programs a run starts (git, the agent) never hold it. Pure C, no Lua. */
#ifndef NV_RUNLOCK_H
#define NV_RUNLOCK_H

#include "core/nv_err.h"

/* 32 lowercase hex digits */
#define NV_RUNLOCK_TOKEN_LEN 32

/* This process's token, its lock under home taken on first use (and then
 * held until exit; a normal exit removes the file). Also removes the lock
 * files of processes long gone. */
int nv_runlock_token(const char *home, char out[NV_RUNLOCK_TOKEN_LEN + 1],
		     nv_err *err);

/* 1 when no live process holds token's lock under home (its process ended
 * or was killed; its file is gone; token is not a token), 0 when one does
 * (this process included). */
int nv_runlock_gone(const char *home, const char *token);

#endif
