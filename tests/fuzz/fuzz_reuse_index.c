/* Fuzz target: a reuse index entry (host/reuse/reuse_index.c), as a
 * store anyone with write access to it could hold. Checks invariants,
 * not just the absence of crashes: a refusal says why and leaves an empty
 * entry; an accepted one has a key of its form, a job id of its grammar,
 * and a record URL of a run record, each within its bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reuse/reuse_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nv_reuse_entry e;
	nv_err err;

	if (nv_reuse_index_parse((const char *)data, size, &e, &err) != 0) {
		if (!err.message[0] || e.key[0] || e.job[0] || e.record[0])
			abort();
		return 0;
	}
	if (nv_reuse_key_check(e.key, &err) != 0 ||
	    nv_job_id_check(e.job, &err) != 0 || !e.name[0] ||
	    strlen(e.name) > NV_REUSE_NAME_MAX ||
	    strlen(e.record) > NV_REUSE_URL_MAX ||
	    (strncmp(e.record, "file:///", 8) != 0 &&
	     strncmp(e.record, "s3://", 5) != 0) ||
	    strstr(e.record, "/../"))
		abort();
	for (const char *c = e.name; *c; c++)
		if ((unsigned char)*c < 0x20)
			abort();
	return 0;
}
