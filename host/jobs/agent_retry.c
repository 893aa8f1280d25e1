/* The local agent's retries (see agent_internal.h): a job whose attempt
 * failed in a way its spec.retries.on names runs again, with the same id
 * and output prefix (nothing of a failed attempt is published), until
 * `max` more attempts have run. The failures, as the agent tells them:
 *   timeout    the agent stopped it at resources.time_limit;
 *   preempted  the command ended by a SIGTERM navette did not send
 *              (status 143): the machine's owner, a scheduler, a user;
 *   node_fail  the launcher ended without an exit status (killed with
 *              its agent, the machine restarted, the OOM killer);
 *   exit:N     the command exited with status N, not a success status
 *              (a preempted command is exit:143 too).
 * A cancel is never retried. What the attempts left (attempts.json in the
 * job folder) lets an agent that adopts the job go on counting. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fsutil.h"
#include "jobs/agent_internal.h"

#define ATTEMPTS_FILE "attempts.json"
#define ATTEMPTS_MAX  ((size_t)1024 * 1024)

void agent_attempts_save(const job *j)
{
	cJSON *s = cJSON_CreateObject();
	char path[PATH_CAP], *text;
	nv_err err;

	cJSON_AddNumberToObject(s, "attempt", j->attempt);
	cJSON_AddItemToObject(s, "attempts", cJSON_Duplicate(j->attempts, 1));
	cJSON_AddItemToObject(s, "restored",
			      cJSON_Duplicate(j->ckpt_restored, 1));
	cJSON_AddItemToObject(s, "written",
			      cJSON_Duplicate(j->ckpt_written, 1));
	text = cJSON_PrintUnformatted(s);
	cJSON_Delete(s);
	agent_job_path(j, ATTEMPTS_FILE, path, sizeof(path));
	if (!text ||
	    nv_write_file_atomic(path, text, strlen(text), 0600, &err) != 0)
		agent_log("job %s: cannot keep its attempts: %s", j->id,
			  text ? err.message : "out of memory");
	cJSON_free(text);
}

/* item of s into *slot, when it is an array */
static void take_array(cJSON *s, const char *key, cJSON **slot)
{
	cJSON *v = cJSON_DetachItemFromObject(s, key);

	if (cJSON_IsArray(v)) {
		cJSON_Delete(*slot);
		*slot = v;
	} else {
		cJSON_Delete(v);
	}
}

void agent_attempts_load(job *j)
{
	char path[PATH_CAP], *text = NULL;
	size_t len;
	cJSON *s;
	nv_err err;

	agent_job_path(j, ATTEMPTS_FILE, path, sizeof(path));
	if (nv_read_file(&text, &len, path, ATTEMPTS_MAX, &err) != 0)
		return;
	s = cJSON_Parse(text);
	free(text);
	if (!s)
		return;
	const cJSON *n = ofield(s, "attempt");
	if (cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble < 1000)
		j->attempt = (int)n->valuedouble;
	take_array(s, "attempts", &j->attempts);
	take_array(s, "restored", &j->ckpt_restored);
	take_array(s, "written", &j->ckpt_written);
	cJSON_Delete(s);
}

/* The failure of the attempt that ended with o, named as retries.on
 * names it, into kind ("": not one that is retried). */
static void failure_kind(const job *j, const nv_record_outcome *o, char *kind,
			 size_t cap)
{
	kind[0] = '\0';
	if (j->killed == KILL_CANCEL || j->image_failed[0])
		return;
	if (j->killed == KILL_TIMEOUT)
		snprintf(kind, cap, "timeout");
	else if (!j->have_exit) /* (the agent's verdict says so) */
		snprintf(kind, cap, "%s",
			 o->state != NV_STATE_SUCCEEDED ? "node_fail" : "");
	else if (agent_exit_code_ok(j->spec, j->exit_code))
		return; /* the command succeeded, or failed otherwise */
	else if (j->exit_code == 143 && !j->killed)
		snprintf(kind, cap, "preempted");
	else
		snprintf(kind, cap, "exit:%d", j->exit_code);
}

static int kind_listed(const job *j, const cJSON *on, const char *kind)
{
	char exit_kind[16] = "";
	const cJSON *it;

	if (j->have_exit)
		snprintf(exit_kind, sizeof(exit_kind), "exit:%d", j->exit_code);
	cJSON_ArrayForEach(it, on)
	{
		if (cJSON_IsString(it) &&
		    (strcmp(it->valuestring, kind) == 0 ||
		     (exit_kind[0] && strcmp(it->valuestring, exit_kind) == 0)))
			return 1;
	}
	return 0;
}

/* Why the attempt ended, in words, into out. */
static void ended_why(const job *j, const nv_record_outcome *o,
		      const char *kind, char *out, size_t cap)
{
	if (o->state != NV_STATE_SUCCEEDED) {
		size_t n = strnlen(o->reason, cap - 1); /* cut if longer */
		memcpy(out, o->reason, n);
		out[n] = '\0';
	} else if (strcmp(kind, "preempted") == 0)
		snprintf(out, cap,
			 "the command was stopped by a SIGTERM navette did "
			 "not send (status 143)");
	else
		snprintf(out, cap, "the command exited with status %d",
			 j->exit_code);
}

static cJSON *attempt_entry(const job *j, const char *state, const char *kind,
			    const char *why)
{
	cJSON *e = cJSON_CreateObject();
	char at[32], node[256] = "";

	cJSON_AddNumberToObject(e, "attempt", j->attempt);
	cJSON_AddStringToObject(e, "state", state);
	if (kind && kind[0])
		cJSON_AddStringToObject(e, "failure", kind);
	if (why && why[0])
		cJSON_AddStringToObject(e, "reason", why);
	if (j->have_exit)
		cJSON_AddNumberToObject(e, "exit_code", j->exit_code);
	nv_iso8601(j->attempt_started, at);
	cJSON_AddStringToObject(e, "started", at);
	nv_iso8601(nv_now(), at);
	cJSON_AddStringToObject(e, "ended", at);
	if (gethostname(node, sizeof(node) - 1) == 0)
		cJSON_AddStringToObject(e, "node", node);
	return e;
}

/* A line of navette's in the job's log, between two attempts. */
static void log_note(const job *j, const char *text)
{
	char path[PATH_CAP];
	int fd;

	agent_job_path(j, "log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0)
		agent_log("job %s: cannot write its log", j->id);
	close(fd);
}

int agent_retry_wanted(agent *a, job *j, const nv_record_outcome *o)
{
	const cJSON *r = ofield(j->spec, "retries");
	const cJSON *max = r ? ofield(r, "max") : NULL;
	char kind[16], why[600], line[800];
	nv_err err;

	if (!cJSON_IsObject(r) || j->transfer || !cJSON_IsNumber(max))
		return 0;
	failure_kind(j, o, kind, sizeof(kind));
	if (!kind[0] || !kind_listed(j, ofield(r, "on"), kind))
		return 0;
	if (j->attempt > (int)max->valuedouble) {
		agent_log("job %s: %s, no attempt left", j->id, kind);
		return 0;
	}
	ended_why(j, o, kind, why, sizeof(why));
	cJSON_AddItemToArray(j->attempts,
			     attempt_entry(j, "failed", kind, why));
	snprintf(line, sizeof(line),
		 "navette: attempt %d ended (%s: %s); attempt %d of %d "
		 "starts\n",
		 j->attempt, kind, why, j->attempt + 1,
		 (int)max->valuedouble + 1);
	log_note(j, line);
	j->attempt++;
	agent_attempts_save(j);
	if (nv_jobdb_set_attempt(a->queue, j->id, j->attempt, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
	agent_log("job %s: %s, attempt %d starts", j->id, kind, j->attempt);
	return 1;
}

int agent_retry_clear(const job *j, nv_err *err)
{
	DIR *d = opendir(j->dir);
	struct dirent *e;
	char path[PATH_CAP];
	int rc = 0;

	if (!d)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check NAVETTE_HOME", "cannot read %s",
					j->dir);
	while (!rc && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, "log") == 0 ||
		    strcmp(e->d_name, ATTEMPTS_FILE) == 0)
			continue;
		agent_job_path(j, e->d_name, path, sizeof(path));
		rc = nv_remove_tree(path, err);
	}
	closedir(d);
	return rc;
}

void agent_attempts_record(const job *j, const nv_record_outcome *o,
			   cJSON *record)
{
	cJSON *list;
	char kind[16], why[600] = "";

	if (!cJSON_IsObject(ofield(j->spec, "retries")))
		return;
	list = cJSON_Duplicate(j->attempts, 1);
	failure_kind(j, o, kind, sizeof(kind));
	if (o->state != NV_STATE_SUCCEEDED)
		ended_why(j, o, kind, why, sizeof(why));
	cJSON_AddItemToArray(
		list,
		attempt_entry(j, nv_record_state_name(o->state), kind, why));
	cJSON_AddItemToObject(record, "attempts", list);
}
