/* Generates the launcher script (see launcher.h). Every value from the
 * recipe is single-quoted for sh; names are checked, never quoted. */
#include "jobs/launcher.h"

#include <string.h>

static const char *const reserved_env[] = {"PATH", "HOME",  "IFS",  "PS4",
					   "ENV",  "SHELL", "USER", NULL};

int nv_launcher_env_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 128)
		return 0;
	if (!((name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	if (strncmp(name, "NAVETTE_", 8) == 0)
		return 0;
	for (const char *const *r = reserved_env; *r; r++)
		if (strcmp(name, *r) == 0)
			return 0;
	return 1;
}

static const char *string_field(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int nv_launcher_script(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const char *id = string_field(spec, "id");
	const char *commit = string_field(spec, "commit");
	const char *project = string_field(spec, "project");
	const cJSON *command =
		cJSON_GetObjectItemCaseSensitive(spec, "command");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(spec, "env");
	const cJSON *item;

	if (!id || !commit || !project)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job spec lacks id, commit or project");
	if (!cJSON_IsArray(command) || cJSON_GetArraySize(command) == 0)
		return nv_err_set(err, NV_EINVAL,
				  "command is a list of strings: { \"sh\", "
				  "\"run.sh\" }",
				  "job %s has no command", id);

	if (env && !cJSON_IsObject(env) && !cJSON_IsNull(env))
		return nv_err_set(err, NV_EINVAL,
				  "env is a table of NAME = \"value\"",
				  "job %s: env is not an object", id);

	nv_buf_printf(
		out,
		"#!/bin/sh\n"
		"# navette launcher for job %s (generated; `navette plan` "
		"shows it).\n"
		"# Needs only sh: reports phases, runs the command in the "
		"workspace,\n"
		"# keeps its log, records the exit status.\n"
		"set -u\n"
		": \"${NAVETTE_JOB_DIR:?the backend sets "
		"NAVETTE_JOB_DIR}\"\n",
		id);
	nv_buf_puts(out, "NAVETTE_JOB_ID=");
	nv_buf_sh_quote(out, id);
	nv_buf_puts(out, "\nNAVETTE_COMMIT=");
	nv_buf_sh_quote(out, commit);
	nv_buf_puts(out, "\nNAVETTE_PROJECT=");
	nv_buf_sh_quote(out, project);
	nv_buf_puts(out, "\n"
			 "NAVETTE_WORKSPACE=\"$NAVETTE_JOB_DIR/workspace\"\n"
			 "NAVETTE_INPUTS=\"$NAVETTE_JOB_DIR/inputs\"\n"
			 "NAVETTE_OUTPUTS=\"$NAVETTE_JOB_DIR/outputs\"\n"
			 "NAVETTE_LOG=\"$NAVETTE_JOB_DIR/log\"\n"
			 "NAVETTE_STATUS=\"$NAVETTE_JOB_DIR/status\"\n"
			 "export NAVETTE_JOB_ID NAVETTE_COMMIT NAVETTE_PROJECT "
			 "NAVETTE_WORKSPACE NAVETTE_INPUTS NAVETTE_OUTPUTS\n");
	if (cJSON_IsObject(env) && env->child) {
		nv_buf_puts(out, "# the job's environment, as declared "
				 "(never a secret)\n");
		cJSON_ArrayForEach(item, env)
		{
			if (!item->string ||
			    !nv_launcher_env_name_ok(item->string))
				return nv_err_set(
					err, NV_EINVAL,
					"environment names are letters, digits "
					"and '_', not NAVETTE_* or PATH/HOME",
					"job %s: bad environment name '%s'", id,
					item->string ? item->string : "?");
			if (!cJSON_IsString(item))
				return nv_err_set(err, NV_EINVAL, NULL,
						  "job %s: env %s is not a "
						  "string",
						  id, item->string);
			nv_buf_printf(out, "%s=", item->string);
			nv_buf_sh_quote(out, item->valuestring);
			nv_buf_printf(out, "; export %s\n", item->string);
		}
	}
	nv_buf_puts(
		out,
		"report() { printf '%s\\n' \"$1\" >> \"$NAVETTE_STATUS\"; }\n"
		"cd \"$NAVETTE_WORKSPACE\" || { report 'exit 127'; exit "
		"127; }\n"
		"report running\n"
		": >> \"$NAVETTE_LOG\"\n"
		"report logs_visible\n"
		"run_command() {\n\t");
	cJSON_ArrayForEach(item, command)
	{
		if (!cJSON_IsString(item))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: command items must be "
					  "strings",
					  id);
		nv_buf_sh_quote(out, item->valuestring);
		nv_buf_puts(out, " ");
	}
	/* The output goes through the backend's redacting filter when it
	 * gives one (NAVETTE_REDACT), so the log is masked before it is
	 * written; the exit status travels through the status file. */
	nv_buf_puts(
		out,
		"< /dev/null\n"
		"\treport \"exit $?\"\n"
		"}\n"
		"if [ -n \"${NAVETTE_REDACT:-}\" ]; then\n"
		"\trun_command 2>&1 | \"$NAVETTE_REDACT\" redact-stream >> "
		"\"$NAVETTE_LOG\"\n"
		"else\n"
		"\trun_command >> \"$NAVETTE_LOG\" 2>&1\n"
		"fi\n"
		"code=$(sed -n 's/^exit //p' \"$NAVETTE_STATUS\" | tail -n 1)\n"
		"exit \"${code:-1}\"\n");
	if (out->failed)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "job %s: launcher larger than %zu bytes", id,
				  NV_LAUNCHER_MAX);
	return 0;
}
