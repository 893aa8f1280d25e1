/* A reuse index entry: the small object `navette run` writes under
 * "<project>/navette-reuse/<hex of the key>/<job id>" of a profile's store
 * when it submits a job whose content key it knows, and reads back before
 * submitting a job with the same key (lua/navette/reuse). It only points
 * at the job: the job's run record, read next, decides whether it is
 * reused (succeeded, the same key, each output there with its sha256 and
 * size). The entry is read from a store others write too, so it is
 * parsed here, bounded and checked field by field. Pure C. */
#ifndef NV_REUSE_INDEX_H
#define NV_REUSE_INDEX_H

#include <stddef.h>

#include "core/jobid.h"
#include "core/nv_err.h"

/* the largest entry read */
#define NV_REUSE_INDEX_MAX ((size_t)16 * 1024)
/* "sha256:" and 64 hex digits */
#define NV_REUSE_KEY_LEN     71
#define NV_REUSE_NAME_MAX    255
#define NV_REUSE_PROJECT_MAX 63
#define NV_REUSE_PROFILE_MAX 63
#define NV_REUSE_URL_MAX     2048
#define NV_REUSE_TIME_MAX    40

typedef struct nv_reuse_entry {
	char key[NV_REUSE_KEY_LEN + 1];
	char job[NV_JOB_ID_MAX + 1];
	char name[NV_REUSE_NAME_MAX + 1];
	char project[NV_REUSE_PROJECT_MAX + 1];
	char profile[NV_REUSE_PROFILE_MAX + 1];
	char record[NV_REUSE_URL_MAX + 1];   /* the run record's URL */
	char created[NV_REUSE_TIME_MAX + 1]; /* ISO 8601, UTC */
} nv_reuse_entry;

/* 0 when key is "sha256:" and 64 lowercase hex digits; NV_EINVAL else. */
int nv_reuse_key_check(const char *key, nv_err *err);

/* Parses an entry (len bytes of text, not NUL-terminated): a JSON object
 * {"navette_reuse": 1, "key", "job", "name", "project", "profile",
 * "record", "created"}, every field present, of its type and within its
 * bound: the key's form, the job id's grammar (core/jobid.h), a name,
 * project and profile of printable ASCII or UTF-8 without control bytes,
 * a record URL of file:// or s3:// ending in the run record's name, a
 * time of digits, 'T', 'Z', ':', '.', '-'. Other fields are ignored (a
 * later version may add some). 0, or NV_EINVAL with what is wrong. */
int nv_reuse_index_parse(const char *text, size_t len, nv_reuse_entry *out,
			 nv_err *err);

#endif
