/* podq's wire (podq.h): manifests written with cJSON, status objects read
 * with it. Every input is bounded: a name of at most 63 bytes, a launcher
 * of at most 1 MiB, a status object of at most 64 KiB. */
#include "podq/podq.h"

#include <string.h>

#include <cjson/cJSON.h>

#define LAUNCHER_MAX (1024 * 1024)
#define STATUS_MAX   (64 * 1024)

static int name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '.'))
			return 0;
	return 1;
}

int nv_podq_manifest(const char *name, const char *image, const char *launcher,
		     size_t launcher_len, int tasks, nv_buf *out, nv_err *err)
{
	cJSON *m, *spec, *c, *cmd;
	char *text;
	int rc = 0;

	if (!name_ok(name))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "podq: bad job name (a-z, 0-9, '-', '.')");
	if (!image || !*image || !launcher || launcher_len > LAUNCHER_MAX ||
	    memchr(launcher, '\0', launcher_len))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "podq: a manifest needs an image and a "
				  "launcher of at most 1 MiB");
	if (tasks < 1 || tasks > NV_PODQ_TASKS_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "podq: %d tasks (1 to %d)", tasks,
				  NV_PODQ_TASKS_MAX);
	if (!(m = cJSON_CreateObject()))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	spec = cJSON_AddObjectToObject(m, "spec");
	c = spec ? cJSON_AddObjectToObject(spec, "container") : NULL;
	cmd = c ? cJSON_AddArrayToObject(c, "command") : NULL;
	if (!cJSON_AddStringToObject(m, "kind", "Job") ||
	    !cJSON_AddStringToObject(m, "name", name) || !cmd ||
	    !cJSON_AddNumberToObject(spec, "completions", tasks) ||
	    !cJSON_AddStringToObject(spec, "completionMode",
				     tasks > 1 ? "Indexed" : "NonIndexed") ||
	    !cJSON_AddStringToObject(c, "image", image)) {
		cJSON_Delete(m);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	{
		/* (the launcher, a string of its own length) */
		char *script = cJSON_malloc(launcher_len + 1);
		if (script) {
			memcpy(script, launcher, launcher_len);
			script[launcher_len] = '\0';
			cJSON_AddItemToArray(cmd, cJSON_CreateString(script));
			cJSON_free(script);
		}
	}
	if (cJSON_GetArraySize(cmd) != 3 ||
	    !(text = cJSON_PrintUnformatted(m))) {
		cJSON_Delete(m);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	if (nv_buf_puts(out, text) != 0)
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"podq: the manifest is too large");
	cJSON_free(text);
	cJSON_Delete(m);
	return rc;
}

int nv_podq_state(const char *json, size_t len, const char **state, nv_err *err)
{
	static const char *const known[] = {"queued", "running", "succeeded",
					    "failed", NULL};
	cJSON *o;
	const cJSON *s;
	int rc = NV_EBACKEND;

	*state = NULL;
	if (!json || len > STATUS_MAX)
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "podq: no status, or one over 64 KiB");
	if (!(o = cJSON_ParseWithLength(json, len)))
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "podq: the status is not JSON");
	s = cJSON_GetObjectItemCaseSensitive(o, "state");
	for (int i = 0; known[i]; i++)
		if (cJSON_IsString(s) &&
		    strcmp(s->valuestring, known[i]) == 0) {
			*state = known[i];
			rc = 0;
		}
	cJSON_Delete(o);
	if (rc)
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "podq: the status names no known state");
	return 0;
}
