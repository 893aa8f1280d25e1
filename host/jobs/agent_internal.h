/* What the files of the local agent share (agent.c: the loop, preparing,
 * starting and following jobs; agent_finalize.c: a job's end and its run
 * record; agent_publish.c: what goes to the output store). Private to
 * host/jobs. */
#ifndef NV_AGENT_INTERNAL_H
#define NV_AGENT_INTERNAL_H

#include <sys/types.h>

#include <cjson/cJSON.h>

#include "core/nv_err.h"
#include "jobs/jobdb.h"
#include "jobs/record.h"
#include "storage/filestore.h"

#define PATH_CAP        4200
#define LOG_MAX_DEFAULT ((long long)64 * 1024 * 1024)

enum kill_reason { KILL_NONE, KILL_CANCEL, KILL_TIMEOUT };

typedef struct job {
	char id[65];
	char dir[PATH_CAP];
	cJSON *spec;
	pid_t pid;
	char start_time[32]; /* the launcher's (proc.h); "" unknown */
	int own_child;       /* started by this agent: reaped with waitpid */
	int reaped;
	double started;
	double time_limit; /* 0: none */
	enum kill_reason killed;
	double kill_sent;
	int term_sent, kill9_sent;
	long status_read; /* bytes of the status file already handled */
	int have_exit;
	int exit_code;
	/* S3 storage: the launcher fetches, publishes and writes the run
	 * record itself (the agent holds no storage key) */
	int transfer;
	int final_seen;
	int container;          /* runs in an image, through a runtime */
	int disk_full;          /* NAVETTE_HOME's disk was full at its end */
	char log_cut[256];      /* why the log could not be written whole */
	char image_failed[512]; /* why the launcher could not pull it */
	/* retries (agent_retry.c) and checkpoints (agent_checkpoint.c) */
	int attempt;            /* 1, 2...: this run of the job */
	double attempt_started; /* nv_now() when this attempt started */
	cJSON *attempts;        /* the attempts that ended before it */
	double ckpt_every;      /* seconds between saves; 0: no checkpoint */
	double ckpt_saved;      /* nv_monotonic() of the last save */
	cJSON *ckpt_files;      /* the files of the last manifest written */
	cJSON *ckpt_restored;   /* the checkpoints restored, an array */
	cJSON *ckpt_written;    /* the checkpoints written, an array */
	struct job *next;
} job;

/* The sandbox host jobs run in (agent_sandbox.c), chosen when the agent
 * starts. */
typedef enum {
	SANDBOX_NONE, /* none found: host jobs are refused */
	SANDBOX_OFF,  /* NAVETTE_LOCAL_SANDBOX=off */
	SANDBOX_BWRAP,
	SANDBOX_SEATBELT
} sandbox_kind;

typedef struct agent_sandbox {
	sandbox_kind kind;
	char program[PATH_CAP];
	char version[128]; /* `bwrap --version`'s line */
} agent_sandbox;

typedef struct agent {
	char home[PATH_CAP];
	nv_jobdb *queue;
	job *jobs;
	int running;
	int slots;
	agent_sandbox sandbox;
} agent;

/* The agent's own log (through the redactor). */
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline const char *sfield(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline const cJSON *ofield(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Records a phase of j in the queue (a failure is logged). */
void agent_phase(agent *a, job *j, nv_record_phase phase);
/* ... and the one that names how it ended. */
void agent_phase_end(agent *a, job *j, nv_record_state state);

/* dir/name of the job's folder into out. */
void agent_job_path(const job *j, const char *name, char *out, size_t cap);

/* Whether the disk of dir is (nearly) full. */
int agent_disk_nearly_full(const char *dir);

/* The space navette keeps aside in NAVETTE_HOME for a final state on a
 * full disk: made (when there is room; best effort), and released (1
 * when there was one to free). */
void agent_reserve_make(const agent *a);
int agent_reserve_release(const agent *a);

/* ---- agent_finalize.c ---- */

/* Whether code is one of the spec's successful exit statuses. */
int agent_exit_code_ok(const cJSON *spec, int code);

/* Ends j with o: the success condition, publication (or, for a transfer,
 * what its launcher published), the run record, the final state in the
 * queue, and the scratch folders removed. */
void agent_finalize(agent *a, job *j, nv_record_outcome *o);

/* ---- agent_publish.c ---- */

/* The regular files under a folder, as relative paths. A symlink, a
 * special file or a name that is not UTF-8 is refused (bad says which):
 * what is published must be what the job wrote. */
typedef struct file_list {
	char **paths;
	size_t count, cap;
	char bad[1024];
} file_list;

/* The files under root into l, sorted; -1 with l->bad set (or empty: out
 * of memory). l is freed with agent_file_list_free either way. */
int agent_walk_files(const char *root, file_list *l);
void agent_file_list_free(file_list *l);

/* The filestore the job's outputs go to (spec.outputs.store). */
nv_filestore *agent_output_store(const cJSON *spec, nv_err *err);

/* Passes the log once more, whole, through a redactor holding the
 * submitter's fingerprints, and replaces it. */
int agent_reredact_log(const cJSON *spec, const char *logpath, nv_err *err);

/* Publishes the outputs under outdir (a job that met its condition) as
 * prefix + path, entries into published; a failure goes into o and rolls
 * back what was published. */
void agent_publish_outputs(nv_filestore *store, const char *prefix,
			   const char *outdir, cJSON *published,
			   nv_record_outcome *o);

/* Publishes the log (its end, when over max_bytes); its url, key, bytes
 * and truncated into record_log (true as well for a log cut while it was
 * written: cut). */
int agent_publish_log(nv_filestore *store, const char *prefix,
		      const char *logpath, long long max_bytes, int cut,
		      cJSON *record_log, nv_err *err);

/* Publishes the run record, masked by a redactor of the job; its URL into
 * url (cap bytes). */
int agent_publish_record(nv_filestore *store, const cJSON *spec,
			 const char *prefix, const cJSON *record, char *url,
			 size_t cap, nv_err *err);

/* ---- agent_checkpoint.c ---- */

/* Reads spec.checkpoint into j (every: 0 when the job has none). */
void agent_checkpoint_init(job *j);

/* Makes the job's checkpoint folder and fills it with the latest
 * checkpoint in the store, if any (noted in j->ckpt_restored). */
int agent_checkpoint_restore(job *j, nv_err *err);

/* Saves the folder when `every` has passed since the last save (force:
 * now); a failure is logged, the job goes on. */
void agent_checkpoint_tick(job *j, int force);

/* The record's "checkpoints": {restored, written}, when the job has one. */
void agent_checkpoint_record(const job *j, cJSON *record);

/* ---- agent_sandbox.c ---- */

/* What bwrap (and the launcher's own shell) say on stderr, in the job
 * folder: why a sandbox could not start. */
#define AGENT_SANDBOX_LOG "sandbox.log"

/* A NULL-ended list of strings (an argv, an envp) and their bytes. */
typedef struct agent_strv {
	char **items;
	size_t count;
	char *arena;
	size_t used;
	int overflow;
} agent_strv;
void agent_strv_free(agent_strv *v);

/* Which sandbox this agent runs host jobs in: NAVETTE_LOCAL_SANDBOX=off,
 * else bwrap (Linux) or sandbox-exec (macOS), else none. */
void agent_sandbox_detect(agent_sandbox *sb);
/* "bubblewrap 0.8.0", "off (...)", "none". */
const char *agent_sandbox_describe(const agent_sandbox *sb);

/* The environment of a host job's launcher: PATH (spec.local.path or
 * /usr/local/bin:/usr/bin:/bin), HOME (the job folder's home/), TMPDIR,
 * PYTHONUNBUFFERED, the locale and user names, navette's. exe: the
 * redactor program. -1 when out of memory. */
int agent_job_env(const job *j, const char *exe, agent_strv *env);

/* The argv that runs launcher (a host job's) in the sandbox; an error
 * naming what to install when there is none. home: NAVETTE_HOME. */
int agent_sandbox_command(const agent_sandbox *sb, const char *home,
			  const job *j, const char *launcher, const char *exe,
			  agent_strv *argv, nv_err *err);

/* The folder of j's secrets (spec.secrets_dir, written by `navette run`),
 * or NULL when it has none or the path is not a secrets folder of j. */
const char *agent_secrets_dir(const job *j);
/* Whether j's secrets are there to mount (each declared file in its
 * folder): an error saying what is missing (a restart emptied the tmpfs,
 * say), or that a job in an image gets none on this backend. */
int agent_secrets_check(const job *j, nv_err *err);
/* Removes j's secrets folder (a job without one: nothing). */
void agent_secrets_remove(const job *j);

/* Whether the sandbox log of j says something (its first line into out):
 * asked when a launcher ended without a word. */
int agent_sandbox_failure(const job *j, char *out, size_t cap);

/* ---- agent_retry.c ---- */

/* The attempt number and what earlier attempts left (attempts.json in
 * the job folder), read back by an agent that adopts the job. */
void agent_attempts_load(job *j);
void agent_attempts_save(const job *j);

/* Whether j, which ended with o, runs again: the failure is one of
 * spec.retries.on and attempts are left. If so, the attempt that ended
 * joins j->attempts, j->attempt grows, and the log says why. */
int agent_retry_wanted(agent *a, job *j, const nv_record_outcome *o);

/* Empties the job folder for the next attempt, keeping its log and
 * attempts.json. */
int agent_retry_clear(const job *j, nv_err *err);

/* The record's "attempts", the last one ending with o, when the job has
 * retries. */
void agent_attempts_record(const job *j, const nv_record_outcome *o,
			   cJSON *record);

#endif
