/* The local backend's durable queue: one SQLite database (WAL) under
 * NAVETTE_HOME holding every job, its phases with timestamps, and its final
 * state. Shared by the CLI (submit, status, cancel) and the agent. Pure C. */
#ifndef NV_JOBDB_H
#define NV_JOBDB_H

#include <stddef.h>

#include "core/nv_err.h"

typedef struct nv_jobdb nv_jobdb;

/* Opens (creating) HOME/jobs.db. Free with nv_jobdb_close(). */
int nv_jobdb_open(nv_jobdb **out, const char *home, nv_err *err);
void nv_jobdb_close(nv_jobdb *q);

/* Writes how the database is kept on disk, "journal_mode=wal
 * synchronous=N fullfsync=N", into out (for diagnostics and tests). */
int nv_jobdb_durability(nv_jobdb *q, char *out, size_t cap, nv_err *err);

/* Inserts a new job in state "queued", phase "submitted". backend: "local"
 * (NULL: the same) jobs are the agent's to run; other backends' jobs
 * (slurm...) are recorded here by the CLI, which submits and follows them.
 * A duplicate id is NV_EREFUSED (the caller draws a new id). */
int nv_jobdb_insert(nv_jobdb *q, const char *id, const char *project,
		    const char *profile, const char *name,
		    const char *spec_json, const char *backend, double at,
		    nv_err *err);

/* The same, for a submission that may be interrupted: submit_key (NULL:
 * none) names the submission (see lua/navette/runner.lua) and stays on the
 * row until nv_jobdb_submitted() says the submission is complete. The row
 * records this process as its submitter (runlock.h: the lock is taken
 * first) and is held, never started by the agent, until
 * nv_jobdb_audited() or nv_jobdb_submitted(): no job runs without its
 * audit line. When id is already the row of an unfinished submission of
 * the same key (still queued, no remote id), its spec is replaced instead
 * (a re-run completing it). */
int nv_jobdb_insert_keyed(nv_jobdb *q, const char *id, const char *project,
			  const char *profile, const char *name,
			  const char *spec_json, const char *backend,
			  const char *submit_key, double at, nv_err *err);

/* Marks the submission of job id complete (its key cleared, its hold
 * lifted). */
int nv_jobdb_submitted(nv_jobdb *q, const char *id, nv_err *err);

/* The audit line of job id's submission is written: the agent may start
 * it. */
int nv_jobdb_audited(nv_jobdb *q, const char *id, nv_err *err);

/* Groups the writes that follow (submit, set_remote, phase, submitted)
 * into one transaction, written at once by nv_jobdb_commit (a job
 * array's rows, before and after its one request) or undone by
 * nv_jobdb_rollback. Not around claim or cancel, which have their own. */
int nv_jobdb_begin(nv_jobdb *q, nv_err *err);
int nv_jobdb_commit(nv_jobdb *q, nv_err *err);
void nv_jobdb_rollback(nv_jobdb *q);

/* The newest job whose submission of submit_key never completed, that is
 * not cancelled or failed and whose submitter is gone (killed, ended: see
 * runlock.h) or this process, as a JSON object with its spec (caller
 * frees); *json_out NULL when there is none. The row is taken in the same
 * transaction (this process becomes its submitter), so two runs never
 * adopt one row, and a run never adopts the row of a run still going. */
int nv_jobdb_interrupted(nv_jobdb *q, const char *submit_key, char **json_out,
			 nv_err *err);

/* A remote backend's job: its id there (may be NULL: unchanged) and a
 * state ("queued", "running"; NULL: unchanged) that a final state is never
 * replaced by. */
int nv_jobdb_set_remote(nv_jobdb *q, const char *id, const char *remote_id,
			const char *state, nv_err *err);

/* Jobs of backend/profile/name recorded but whose submission never got an
 * answer (no remote id, still queued), newest first, as a JSON array of
 * job objects with their spec (caller frees): a re-run looks them up in
 * the backend before submitting again. */
int nv_jobdb_pending_remote(nv_jobdb *q, const char *backend,
			    const char *profile, const char *name,
			    char **json_out, nv_err *err);

/* Records a phase (idempotent) and makes it the job's current phase. */
int nv_jobdb_phase(nv_jobdb *q, const char *id, const char *phase, double at,
		   nv_err *err);

/* The jobs of one `navette run` (their spec's "run"), oldest first: a
 * JSON array of their ids in *json_out and the full run id in *run_out
 * (both malloc'd). run may be a unique prefix of the id. NV_ENOTFOUND when
 * no job has it; NV_EINVAL when it is not a run id or starts several. */
int nv_jobdb_run_json(nv_jobdb *q, const char *run, char **run_out,
		      char **json_out, nv_err *err);

/* Takes the oldest queued job that waits for no job: state becomes
 * "running". A job waits for each id of its spec's "after" list until that
 * job has succeeded; when one failed or was cancelled (or is not in the
 * database), the waiting job ends cancelled at "accepted", the reason
 * naming it. *id_out and *spec_out are malloc'd (caller frees); both NULL
 * when none can run. */
int nv_jobdb_claim(nv_jobdb *q, char **id_out, char **spec_out, nv_err *err);

int nv_jobdb_set_pid(nv_jobdb *q, const char *id, long pid, nv_err *err);

/* The attempt the job is at (retries: 2, 3...); a row without one is at
 * its first. */
int nv_jobdb_set_attempt(nv_jobdb *q, const char *id, int attempt, nv_err *err);

/* Final state: "succeeded", "failed" or "cancelled". failure_* may be
 * NULL. exit_code < -1000 means none. */
int nv_jobdb_finish(nv_jobdb *q, const char *id, const char *state,
		    int exit_code, const char *failure_phase,
		    const char *failure_reason, const char *failure_hint,
		    const char *record_url, nv_err *err);

/* Asks for a cancel. A queued job is cancelled at once (*state_out gets
 * "cancelled"); a running one is flagged for the agent ("cancelling"); a
 * finished one is left alone (its state is returned). state_out: 16 bytes.*/
int nv_jobdb_cancel(nv_jobdb *q, const char *id, char *state_out, nv_err *err);

/* Deletes the row of a finished job (succeeded, failed or cancelled) and
 * its phases: `navette gc`. id must be whole (no prefix). NV_ENOTFOUND when
 * there is no such job, NV_EREFUSED when it has not finished. Its folder
 * under NAVETTE_HOME/jobs goes first (the caller's): a row never goes
 * before its folder, or the database would list fewer jobs than there are
 * folders (queue_lost_check). */
int nv_jobdb_delete(nv_jobdb *q, const char *id, nv_err *err);

/* Whether a cancel was asked for a running job. */
int nv_jobdb_cancel_requested(nv_jobdb *q, const char *id, int *requested,
			      nv_err *err);

/* The job as a JSON object (malloc'd, caller frees): id, name, project,
 * profile, state, phase, phases[{phase,at}], exit_code, failure, pid,
 * record_url, created, updated, backend, remote_id, spec. NV_ENOTFOUND when
 * unknown. A unique prefix of an id is accepted. */
int nv_jobdb_get_json(nv_jobdb *q, const char *id, char **json_out,
		      nv_err *err);

/* The most recent jobs (newest first) as a JSON array (caller frees). */
int nv_jobdb_list_json(nv_jobdb *q, int limit, char **json_out, nv_err *err);

/* Counts jobs waiting or running (the agent's idle test). */
int nv_jobdb_active(nv_jobdb *q, int *queued, int *running, nv_err *err);

/* Calls fn for each job in state "running" (agent restart: adoption). */
int nv_jobdb_each_running(nv_jobdb *q,
			  void (*fn)(const char *id, const char *spec, long pid,
				     void *payload),
			  void *payload, nv_err *err);

#endif
