/* Fuzz target: the check of a bucket policy before it is sent
 * (nv_s3_policy_check, s3_policy.c), which reads a JSON document built
 * from a team's policy file. Invariants, not just no crash: a document
 * over the bound or holding a NUL is refused; one accepted parses as a
 * JSON object with a string Version and a non-empty Statement array. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "storage/s3_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *json = (const char *)data;
	nv_err err;
	int rc = nv_s3_policy_check(json, size, &err);

	if (size == 0 || size > NV_S3_POLICY_MAX || memchr(json, '\0', size)) {
		if (rc != NV_EINVAL)
			abort();
		return 0;
	}
	if (rc == 0) {
		cJSON *root = cJSON_ParseWithLength(json, size);
		const cJSON *v =
			cJSON_GetObjectItemCaseSensitive(root, "Version");
		const cJSON *s =
			cJSON_GetObjectItemCaseSensitive(root, "Statement");

		if (!cJSON_IsObject(root) || !cJSON_IsString(v) ||
		    !cJSON_IsArray(s) || cJSON_GetArraySize(s) == 0)
			abort();
		cJSON_Delete(root);
	} else if (rc != NV_EINVAL) {
		abort();
	}
	return 0;
}
