/* Fuzz target: job spec JSON (as stored in the queue) to launcher script.
 * Invariant: every environment name that reaches the script passed the
 * name check, and the script stays within its cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobs/launcher.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *spec = cJSON_ParseWithLength((const char *)data, size);
	nv_buf b;
	nv_err err;

	if (!spec)
		return 0;
	nv_buf_init(&b, 64 * 1024);
	if (nv_launcher_script(spec, &b, &err) == 0) {
		const cJSON *env =
			cJSON_GetObjectItemCaseSensitive(spec, "env");
		const cJSON *item;
		if (!b.data || b.len > 64 * 1024)
			abort();
		if (env && !cJSON_IsObject(env) && !cJSON_IsNull(env))
			abort(); /* a non-object env must have been refused */
		cJSON_ArrayForEach(item, env)
		{
			if (!nv_launcher_env_name_ok(item->string))
				abort();
		}
	}
	nv_buf_free(&b);
	cJSON_Delete(spec);
	return 0;
}
