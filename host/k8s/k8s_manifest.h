/* What a navette job becomes on Kubernetes (issue 31, design 3.2): a job
 * description set key by key from text, as a recipe gives it, checked at
 * once with clear errors; and the JSON bodies sent to the API server: the
 * batch/v1 Job, the Secret it owns (the launcher and the job's secrets),
 * the merge patches that release a suspended Job or set its time to live,
 * and the DeleteOptions of a cancel. Pure C over cJSON, no Lua, no I/O.
 *
 * Every body has one key order, so the same description always gives the
 * same bytes (its sha256 is the Job's navette/spec-sha256 for adoption).
 * Only fields of the v1.31 schemas are written (tests/data/k8s).
 *
 * One job and a sweep are both one Indexed Job (completions = parallelism
 * = tasks, backoffLimitPerIndex = retries): the controller then keeps the
 * per-index failure count that the launcher reads as its attempt. No
 * secret goes into the Job: the Job's env takes only values the caller
 * says are not secret, and secrets travel in the Secret's stringData,
 * mounted read-only at /navette/secret. */
#ifndef NV_K8S_MANIFEST_H
#define NV_K8S_MANIFEST_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"

#define NV_K8S_LABEL_PREFIX   "navette"
#define NV_K8S_TASKS_MAX      1000
#define NV_K8S_ENV_MAX        256 /* environment entries of the Job */
#define NV_K8S_SECRETS_MAX    64  /* named secrets in the Secret */
#define NV_K8S_EXIT_CODES_MAX 64  /* retried exit codes */
/* The API server refuses a Secret whose values add up to more. */
#define NV_K8S_SECRET_MAX ((size_t)1024 * 1024)
/* Nor may a object's annotations, keys and values, add up to more. */
#define NV_K8S_ANNOTATIONS_MAX ((size_t)256 * 1024)
/* Caps on the bodies built here. */
#define NV_K8S_JOB_BODY_MAX    ((size_t)1024 * 1024)
#define NV_K8S_SECRET_BODY_MAX ((size_t)8 * 1024 * 1024)
/* The volume folders of the pod. */
#define NV_K8S_SECRET_DIR "/navette/secret"
#define NV_K8S_WORK_DIR   "/navette/work"
/* What the pod tells its launcher (the downward API): the failures of
 * its completion index so far, and its node. Not NAVETTE_*, which a
 * launcher keeps for navette's own values. */
#define NV_K8S_ENV_FAILURES "K8S_INDEX_FAILURES"
#define NV_K8S_ENV_NODE     "K8S_NODE_NAME"

typedef struct nv_k8s_job_desc {
	char *name;      /* the Job's and Secret's name: the navette job id
			  * (a sweep: its first task's); required */
	char *ns;        /* the namespace; required */
	char *image;     /* repo@sha256:<64 hex>; required */
	int tasks;       /* 1: one job; N: a sweep of N indexes */
	int parallelism; /* 0: all tasks at once; else the cap */
	long cpu_milli;  /* 0: none asked */
	long long memory_bytes;
	int gpus;        /* nvidia.com/gpu */
	long time_limit; /* activeDeadlineSeconds; 0: none */
	int retries;     /* attempts after the first, per index */
	int exit_codes[NV_K8S_EXIT_CODES_MAX]; /* retried; sorted, unique */
	size_t nexit_codes;
	int requeue_exit; /* the launcher's requeue code; 0: none */
	int suspend;      /* created suspended (always when after is set) */
	char *node;       /* nodeSelector kubernetes.io/hostname */
	char *image_pull_secret;
	/* labels (navette/job is the name) */
	char *run, *project, *commit, *member, *profile;
	char *member_id; /* the member's full identity (annotation) */
	/* annotations */
	char *task_ids;    /* a sweep's task ids in index order, "a,b,c" */
	char *spec_sha256; /* 64 hex */
	char *after;       /* producers' job ids, "a,b" */
	char **env_names, **env_values; /* not secret */
	size_t nenv;
	char **secret_names, **secret_values; /* wiped when freed */
	size_t *secret_lens;
	size_t nsecrets;
	char *launcher; /* the launcher script; wiped when freed */
	size_t launcher_len;
} nv_k8s_job_desc;

void nv_k8s_desc_init(nv_k8s_job_desc *d);
/* Frees every field, wiping the secrets' and the launcher's bytes first;
 * d is then as nv_k8s_desc_init left it. */
void nv_k8s_desc_free(nv_k8s_job_desc *d);

/* Sets one field from text; NV_EINVAL names the key, the value and what
 * it takes (an unknown key: the known ones, in the hint). Keys:
 *   name          a DNS-1123 label, at most 63 bytes (a navette job id)
 *   namespace     a DNS-1123 label
 *   image         repo@sha256:<64 lowercase hex> (a tag is refused)
 *   tasks         1..NV_K8S_TASKS_MAX
 *   parallelism   1..tasks at build time (how many run at once)
 *   cpus          a count or a decimal with up to 3 places ("0.5")
 *   memory        bytes, or a number with K/M/G/T (and iB or B): "4GiB"
 *   gpus          0..4096
 *   time_limit    seconds, or a number with s/m/h/d ("90m")
 *   retries       0..100 attempts after the first
 *   retry_exit_codes  "7,9": 1..255 each
 *   requeue_exit  1..255, the code the launcher exits with to run again
 *   suspend       true / false
 *   node          the node's name (kubernetes.io/hostname)
 *   image_pull_secret  a DNS-1123 subdomain
 *   run, project, profile  label values (63 bytes: letters, digits, -_.)
 *   commit        hex, 7 to 64 digits (the label keeps 12)
 *   member        any text: the label holds a sanitised form, the
 *                 annotation navette/member-id the whole
 *   task_ids      a sweep's job ids, in index order, "a,b,c"
 *   spec_sha256   64 lowercase hex
 *   after         producers' job ids, "a,b" (the Job is created
 *                 suspended and labelled navette/held=after) */
int nv_k8s_desc_set(nv_k8s_job_desc *d, const char *key, const char *value,
		    nv_err *err);

/* The keys nv_k8s_desc_set takes, NULL-terminated. */
const char *const *nv_k8s_desc_keys(void);

/* Adds NAME=value to the container's env (a later value replaces an
 * earlier one). Refused: secret != 0 (the caller knows the value is a
 * secret: use nv_k8s_desc_add_secret), a name starting with
 * NAVETTE_SECRET, and the names the builder sets itself. */
int nv_k8s_desc_setenv(nv_k8s_job_desc *d, const char *name, const char *value,
		       int secret, nv_err *err);

/* Adds a named secret to the Secret (key s.NAME, mounted at
 * /navette/secret/secrets/NAME). NAME: letters, digits, '_', '-', '.',
 * not starting with '.', at most 200 bytes. value is copied (len bytes,
 * UTF-8 text: stringData). */
int nv_k8s_desc_add_secret(nv_k8s_job_desc *d, const char *name,
			   const char *value, size_t len, nv_err *err);

/* Sets (or replaces: fresh URLs on resume) the launcher script. */
int nv_k8s_desc_set_launcher(nv_k8s_job_desc *d, const char *script, size_t len,
			     nv_err *err);

/* The batch/v1 Job of d as JSON, into *out (malloc'd, NUL-terminated,
 * the caller frees it). NV_EINVAL for a description missing name,
 * namespace or image, a parallelism over tasks, a sweep without its
 * task ids (or with a count that is not tasks), annotations over
 * NV_K8S_ANNOTATIONS_MAX; NV_ENOMEM. */
int nv_k8s_job_manifest(const nv_k8s_job_desc *d, char **out, nv_err *err);

/* The Secret of d (type Opaque, stringData: launcher.sh and s.NAME for
 * each secret), owned by the Job whose metadata.uid the API server gave
 * (job_uid). NV_EINVAL without a launcher or a uid; NV_EREFUSED when the
 * values add up to more than NV_K8S_SECRET_MAX. *out is wiped and freed
 * by the caller with nv_k8s_secret_manifest_free. */
int nv_k8s_secret_manifest(const nv_k8s_job_desc *d, const char *job_uid,
			   char **out, nv_err *err);
void nv_k8s_secret_manifest_free(char *out);

/* {"spec":{"suspend":false}}: the merge patch that releases a Job. */
int nv_k8s_resume_patch(nv_buf *out, nv_err *err);
/* {"spec":{"ttlSecondsAfterFinished":N}}, N >= 0. */
int nv_k8s_ttl_patch(long seconds, nv_buf *out, nv_err *err);
/* The DeleteOptions of a cancel: propagationPolicy Background, so the
 * garbage collector removes the pods and the Secret. */
int nv_k8s_delete_body(nv_buf *out, nv_err *err);

/* Checks a Job manifest (JSON text) for what the API server enforces and
 * the schema does not, as far as navette's Jobs go: restartPolicy Never
 * (a podFailurePolicy and backoffLimitPerIndex need it),
 * podReplacementPolicy Failed with a podFailurePolicy, an image by digest.
 * nv_k8s_job_manifest checks its own output with it. */
int nv_k8s_job_check(const char *json, size_t len, nv_err *err);

#endif
