/* What the files of the slurmrestd client share (slurm_desc.c: job
 * descriptions; slurm_protocol.c: the JSON of each API version, errors and
 * the state map; slurm.c: sessions). Private to host/jobs. */
#ifndef NV_SLURM_INTERNAL_H
#define NV_SLURM_INTERNAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "jobs/slurm.h"

/* One API version: everything that differs between versions. */
struct slurm_api {
	const char *name;
	/* The version's requeue request; NULL when it has none. */
	int (*requeue)(nv_slurm *s, long long job_id, nv_err *err);
	/* Fills the "job" object of a submission. */
	int (*build_job)(cJSON *job, const nv_slurm_job_desc *d);
	/* Reads one element of "jobs"; -1 when it is not a job. */
	int (*parse_job)(const cJSON *o, nv_slurm_job *job);
	/* Without requeue: why, and what to do instead. */
	const char *no_requeue;
};

/* The versions, newest first (discovery tries them in this order). */
extern const struct slurm_api slurm_apis[];
extern const size_t slurm_api_count;

/* The version called version, or NULL with err set. */
const struct slurm_api *slurm_api_find(const char *version, nv_err *err);

/* Copies a JSON string into dst (cap bytes), cut at a character boundary,
 * control characters replaced by '?'. Anything else gives "". */
void slurm_copy_text(char *dst, size_t cap, const cJSON *item);

/* A number within [lo, hi], or dflt (null, absent, out of range). */
double slurm_number_in(const cJSON *item, double lo, double hi, double dflt);

/* The hint of an answer that refused the identity (nv_slurm_classify):
 * a session adds what it knows of the token. */
extern const char slurm_identity_hint[];

/* A Slurm name (partition, account, qos, gres, node lists): letters,
 * digits, "_-." and the characters of extra. */
int slurm_word_ok(const char *v, const char *extra);

#endif
