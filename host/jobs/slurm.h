/* The Slurm backend's client of slurmrestd, Slurm's REST API: submit a
 * batch script with a job description, read a job (state, reason, exit
 * code, nodes, times, restarts), find a job by the name/comment that holds
 * the navette job id (idempotent submission), list, cancel; and the pure
 * mapping from Slurm's job states to navette's view of a job. Pure C over
 * host/net/http.h (one kept-alive session per nv_slurm) and cJSON; no Lua.
 *
 * The API version is discovered from the server (a ping per version
 * navette knows, newest first) unless the caller names one. Everything
 * that differs between versions (URLs, the JSON of a submission, the JSON
 * of a job) lives in one table in slurm_protocol.c: adding v0.0.39..v0.0.41
 * means adding a row and its two functions.
 *
 * Identity: every request carries X-SLURM-USER-NAME and X-SLURM-USER-TOKEN.
 * The token is either pre-issued (a bearer secret, e.g. from
 * `scontrol token`) or minted here as an HS256 JWT (iat, exp, sun) from the
 * cluster's signing key (an hs256 secret), with a lifespan chosen by the
 * caller and capped by a maximum; minted tokens are renewed before they
 * expire. slurmrestd 22.05 answers a refused token with a bare HTTP 500;
 * this module turns that (and 401) into NV_EREFUSED with a hint naming the
 * token/key, the clock and the user. */
#ifndef NV_SLURM_H
#define NV_SLURM_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"
#include "net/http.h"

#define NV_SLURM_TOKEN_LIFESPAN_DEFAULT 600.0   /* seconds */
#define NV_SLURM_TOKEN_MAX_DEFAULT      86400.0 /* seconds */
#define NV_SLURM_SCRIPT_MAX             ((size_t)4 * 1024 * 1024)
#define NV_SLURM_ENV_MAX                256 /* environment entries */
#define NV_SLURM_TEXT_MAX               256 /* name, comment, node list */

/* ---- job descriptions ------------------------------------------------ */

/* What a submission asks for. Strings are owned (set them with
 * nv_slurm_desc_set). Zero / NULL / -1 fields are left to Slurm. */
typedef struct nv_slurm_job_desc {
	char *name; /* required */
	char *comment;
	char *partition;
	char *account;
	char *qos;
	long time_limit_min;     /* 0: the partition's */
	int cpus;                /* CPUs for the one task */
	long long memory_mb;     /* per node */
	int gpus;                /* per job */
	char *gres;              /* e.g. "gpu:a100:2" */
	char *nodelist;          /* e.g. "gpu-b" or "gpu-[a-b]" */
	char *working_directory; /* required, absolute */
	char *standard_output;   /* absolute; Slurm's %j etc. allowed */
	char *standard_error;
	int requeue; /* -1: Slurm's default; 0 or 1 */
	int hold;    /* submitted held (priority 0) */
	char *after; /* Slurm job ids "12,13" (or array tasks "12_0"): runs
		      * once each completed with exit 0; cancelled by
		      * Slurm when one cannot */
	char *array; /* a job array's task indexes, "0-5" */
	char **env;  /* "NAME=value" entries */
	size_t nenv;
} nv_slurm_job_desc;

void nv_slurm_desc_init(nv_slurm_job_desc *d);
void nv_slurm_desc_free(nv_slurm_job_desc *d);

/* The longest `after` list, in bytes ("12,13,..."): 10,000 ids of
 * Slurm's 32-bit job numbers. */
#define NV_SLURM_AFTER_MAX ((size_t)10000 * 11)

/* Sets one field from text. Keys: name, comment, partition, account, qos,
 * time_limit (seconds, or a number with s/m/h/d: "90m", "2h"; rounded up
 * to minutes), cpus, memory (bytes, or with K/M/G/T and optional iB:
 * "4GiB"; rounded up to MiB), gpus, gres, nodes (a node list),
 * working_directory, stdout, stderr, requeue and hold ("true"/"false"),
 * after (Slurm job ids or array tasks: "12,13_0"), array (task
 * indexes: "0-999").
 * An unknown key is NV_EINVAL naming the known ones, before anything is
 * sent; so is a value out of range. */
int nv_slurm_desc_set(nv_slurm_job_desc *d, const char *key, const char *value,
		      nv_err *err);

/* Adds NAME=value to the job's environment (NAME: [A-Za-z_][A-Za-z0-9_]*;
 * a later value replaces an earlier one). */
int nv_slurm_desc_setenv(nv_slurm_job_desc *d, const char *name,
			 const char *value, nv_err *err);

/* The keys nv_slurm_desc_set takes, NULL-terminated. */
const char *const *nv_slurm_desc_keys(void);

/* ---- sbatch (Slurm through a login node) ----------------------------- */

/* The options of `sbatch` that submit d with its batch script on standard
 * input, one word each (never joined: the caller quotes them for the
 * login node's shell): --parsable, --job-name, --comment, --partition,
 * --account, --qos, --time (minutes), --cpus-per-task, --mem (MiB),
 * --gpus, --gres, --nodelist, --chdir, --output, --error, --requeue or
 * --no-requeue, --hold, --dependency=afterok:A:B with
 * --kill-on-invalid-dep=yes, --array, and --export=NAME=value,... for the
 * environment (--export=NONE for none). NV_EINVAL for a description with
 * no name or working directory, or an environment value holding a comma
 * (sbatch would split it); NV_ENOMEM. *argv is NULL-terminated, freed
 * with nv_slurm_sbatch_args_free (which wipes the words). */
int nv_slurm_sbatch_args(const nv_slurm_job_desc *d, char ***argv, size_t *argc,
			 nv_err *err);
void nv_slurm_sbatch_args_free(char **argv, size_t argc);

/* ---- jobs as Slurm reports them -------------------------------------- */

typedef struct nv_slurm_job {
	long long job_id;
	char name[NV_SLURM_TEXT_MAX];
	char comment[NV_SLURM_TEXT_MAX];
	char user[64];
	char partition[64];
	char state[32];   /* base state: PENDING, RUNNING, COMPLETED... */
	char reason[128]; /* state_reason: Priority, NonZeroExitCode... */
	char state_description[NV_SLURM_TEXT_MAX];
	char nodes[NV_SLURM_TEXT_MAX]; /* allocated nodes ("" if none) */
	char batch_host[64];
	int exit_code;   /* of the batch script; -1 when killed by a signal */
	int exit_signal; /* the signal that ended it, or 0 */
	int restarts;    /* times Slurm requeued it */
	int requeue;     /* whether Slurm may requeue it */
	long time_limit_min;    /* 0: none */
	long long array_job_id; /* the array it belongs to, 0: none */
	long array_task_id;     /* its task, -1: none (or the array's
				 * record of its tasks not started yet) */
	char array_tasks[NV_SLURM_TEXT_MAX]; /* those tasks: "0-3,5" */
	double submit_time, start_time,
		end_time; /* epoch seconds, 0: not yet */
} nv_slurm_job;

/* navette's view of a Slurm job. */
typedef struct nv_slurm_view {
	int done;          /* the job will not change any more */
	int blocked;       /* queued for a reason that needs someone to act */
	const char *state; /* queued, running, succeeded, failed, cancelled */
	/* The navette phase it is in, or, once failed or cancelled, the phase
	 * the failure belongs to: "accepted" (before start: identity, image,
	 * quota, node) or "running" (parameters, data, dependencies). */
	const char *phase;
	int exit_code;                  /* when it ran and ended, else -1 */
	char detail[NV_SLURM_TEXT_MAX]; /* "NODE_FAIL on gpu-a", "PENDING
					   (Priority)" */
	char hint[NV_ERR_HINT_MAX];     /* what to check next, or "" */
} nv_slurm_view;

/* Maps a job to navette's view. requeue_allowed: 1 or 0 as the recipe
 * says, -1 to take the job's own requeue flag. PREEMPTED and NODE_FAIL
 * are not done when requeue is allowed (Slurm puts the job back in the
 * queue). Pure: no I/O. */
void nv_slurm_map(const nv_slurm_job *job, int requeue_allowed,
		  nv_slurm_view *out);

/* ---- pure JSON building and parsing (version-specific) --------------- */

/* The API versions navette speaks, newest first, NULL-terminated. */
const char *const *nv_slurm_api_versions(void);

/* The body of POST .../job/submit for version: script (must start with
 * "#!") and d. An empty environment becomes {"PATH": "/usr/bin:/bin"}
 * (slurmrestd refuses an empty one). *json_out is malloc'd. */
int nv_slurm_build_submit(const char *version, const char *script,
			  const nv_slurm_job_desc *d, char **json_out,
			  nv_err *err);

/* The job id of a submit answer (its "errors" may hold warnings). */
int nv_slurm_parse_submit(const char *version, const char *body, size_t len,
			  long long *job_id, nv_err *err);

/* The jobs of a job or jobs answer: *jobs is malloc'd (free()), *njobs
 * entries. At most max_jobs are read (0: no cap); more is NV_ENOMEM. */
int nv_slurm_parse_jobs(const char *version, const char *body, size_t len,
			size_t max_jobs, nv_slurm_job **jobs, size_t *njobs,
			nv_err *err);

/* The outcome of an answer: 0 for a 2xx without errors, or the NV_E* code
 * and message for it: NV_EREFUSED for identity (401, or a 500 whose only
 * errors are slurmrestd's "Unspecified error": a refused token or an
 * unreachable slurmctld) and for requests slurmctld refused, NV_ENOTFOUND
 * for an unknown job or URL, NV_EINVAL for fields slurmrestd could not
 * parse, NV_EBACKEND otherwise. what names the operation ("submit").
 * *slurm_errno gets the first Slurm error number (0 when none). */
int nv_slurm_classify(long status, const char *body, size_t len,
		      const char *what, int *slurm_errno, nv_err *err);

#define NV_SLURM_ERRNO_INVALID_JOB_ID 2017
#define NV_SLURM_ERRNO_ALREADY_DONE   2021

/* ---- sessions with slurmrestd ----------------------------------------- */

typedef struct nv_slurm nv_slurm;

typedef struct nv_slurm_config {
	const char *endpoint; /* "https://host:6820[/prefix]" */
	const char *user;     /* X-SLURM-USER-NAME */
	/* bearer ("token"): a pre-issued token, used as is; hs256 ("key"):
	 * the cluster's signing key, tokens minted here with sun = user. Not
	 * owned; must outlive the session. */
	const nv_secret *credential;
	double token_lifespan_s; /* minted tokens; 0: the default */
	double token_max_s;      /* cap on any token's life; 0: the default */
	const char *api_version; /* NULL: discovered */
	nv_http_policy policy;   /* strings not owned */
} nv_slurm_config;

/* Opens a session: checks the config, the token (an expired one or one
 * living longer than token_max_s is refused before any request), then
 * pings each known API version, newest first, until one answers; so a
 * wrong token or key shows here. */
int nv_slurm_open(nv_slurm **out, const nv_slurm_config *cfg, nv_err *err);
void nv_slurm_close(nv_slurm *s);

/* Points the session at the credential again (a binding that looks its
 * handle up at every call, so a closed handle is never read). It must be
 * of the kind the session was opened with: NV_EINVAL otherwise. */
int nv_slurm_set_credential(nv_slurm *s, const nv_secret *credential,
			    nv_err *err);

/* "v0.0.38". */
const char *nv_slurm_version(const nv_slurm *s);
/* The lifespan minted tokens get (after the cap), 0 for a pre-issued one. */
double nv_slurm_token_lifespan(const nv_slurm *s);
/* Connections the session opened so far; requests made. */
long nv_slurm_connections(const nv_slurm *s);
long nv_slurm_requests(const nv_slurm *s);

int nv_slurm_submit(nv_slurm *s, const char *script, const nv_slurm_job_desc *d,
		    long long *job_id, nv_err *err);

/* After a failed nv_slurm_submit: 1 when slurmrestd answered with a 4xx,
 * so the job is certainly not in Slurm; 0 when no answer came (reset,
 * timeout), the answer was a 5xx (a gateway's, maybe after slurmrestd took
 * the job) or a 2xx that could not be read: the job may be in Slurm. */
int nv_slurm_submit_refused(const nv_slurm *s);
/* NV_ENOTFOUND when Slurm does not know the job (any more). */
int nv_slurm_job_get(nv_slurm *s, long long job_id, nv_slurm_job *job,
		     nv_err *err);
/* Task `task` of job array array_id: its own record once Slurm started
 * it, else the array's record of its waiting tasks when that lists it
 * (state and reason are the array's). A task the array no longer lists
 * while the array is known was cancelled before it started: its record
 * then says CANCELLED. NV_ENOTFOUND when Slurm knows no such array. */
int nv_slurm_task_get(nv_slurm *s, long long array_id, long task,
		      nv_slurm_job *job, nv_err *err);
/* nv_slurm_task_get's choice among the records of a GET of the array:
 * 0 and *job, or -1 when none is of that array. Pure. */
int nv_slurm_task_pick(const nv_slurm_job *jobs, size_t n, long long array_id,
		       long task, nv_slurm_job *job);
/* Whether task is one of tasks ("0-3,5,7-9:2", "%N" limits ignored). */
int nv_slurm_task_listed(const char *tasks, long task);
/* Cancels one task of an array (a task that already ended, or was
 * cancelled before it started, sets *was_done). */
int nv_slurm_task_cancel(nv_slurm *s, long long array_id, long task,
			 int *was_done, nv_err *err);
/* The session user's jobs Slurm still knows (malloc'd, free()). */
int nv_slurm_jobs(nv_slurm *s, nv_slurm_job **jobs, size_t *njobs, nv_err *err);
/* The newest job of the session's user whose name equals name (when
 * given) and whose comment equals comment (when given): 0 and *job, or
 * NV_ENOTFOUND. *matches gets how many matched (may be NULL). Only a
 * complete, successful listing can say "not found", so a retry after a
 * lost submit answer never submits twice because of an error. */
int nv_slurm_find(nv_slurm *s, const char *name, const char *comment,
		  nv_slurm_job *job, int *matches, nv_err *err);
/* Cancels; a job that already ended is not an error (*was_done set). */
int nv_slurm_cancel(nv_slurm *s, long long job_id, int *was_done, nv_err *err);
/* Puts a job back in the queue, where the API version offers it;
 * NV_EREFUSED with a hint where it does not (v0.0.38: Slurm requeues a
 * job with requeue=true on node failure by itself). */
int nv_slurm_requeue(nv_slurm *s, long long job_id, nv_err *err);

/* Slurm's accounting API (slurmrestd's dbv0.0.NN plugin, which slurmdbd
 * serves): METHOD /slurmdb/VERSION/PATH with a JSON body (or NULL), the
 * answer's body (at most NV_SLURM_DB_MAX bytes) copied into out, a
 * malloc'd NUL-terminated string the caller frees. path: 1..200 bytes of
 * [A-Za-z0-9_/.-] and '?=&' (no "..": the accounting API only). An answer
 * with errors is the error, classified as for the job API (a write by a
 * user who is not an administrator: NV_EREFUSED, "Access/permission
 * denied"). */
#define NV_SLURM_DB_MAX ((size_t)4 * 1024 * 1024)
int nv_slurm_db(nv_slurm *s, const char *method, const char *path,
		const char *body, char **out, nv_err *err);

#endif
