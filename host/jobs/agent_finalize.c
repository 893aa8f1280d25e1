/* The end of a local agent's job (see agent_internal.h): the success
 * condition, the publication (agent_publish.c), the run record built from
 * the spec and the queue's phase timeline, and the final state in the
 * queue. A job whose launcher publishes by itself (an S3 transfer) ends
 * with what its run record says, through the job record's rule
 * (record.h). */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "jobs/agent_internal.h"

int agent_disk_nearly_full(const char *dir)
{
	struct statvfs st;

	return statvfs(dir, &st) == 0 &&
	       (unsigned long long)st.f_bavail * st.f_frsize < 256 * 1024;
}

/* NAVETTE_HOME/.navette-reserve: space kept aside on the disk of the
 * queue, so that a job that filled the disk still gets its final state
 * recorded (agent_reserve_release); made again at each agent start when
 * there is room. */
#define RESERVE_NAME  ".navette-reserve"
#define RESERVE_BYTES (256 * 1024)

void agent_reserve_make(const agent *a)
{
	char path[PATH_CAP];
	static const char zeros[16384];
	struct stat st;
	int fd;

	if (nv_pathf(path, sizeof(path), "%s/%s", a->home, RESERVE_NAME) != 0)
		return;
	if (stat(path, &st) == 0 && st.st_size >= RESERVE_BYTES)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	for (size_t done = 0; done < RESERVE_BYTES; done += sizeof(zeros)) {
		if (write(fd, zeros, sizeof(zeros)) != (ssize_t)sizeof(zeros)) {
			/* no room for it now: none, rather than a part */
			close(fd);
			unlink(path);
			return;
		}
	}
	if (fsync(fd) != 0 || close(fd) != 0)
		unlink(path);
}

int agent_reserve_release(const agent *a)
{
	char path[PATH_CAP];

	if (nv_pathf(path, sizeof(path), "%s/%s", a->home, RESERVE_NAME) != 0)
		return 0;
	return unlink(path) == 0;
}

/* A job that failed on a disk that is now (nearly) full says so: its log
 * or outputs were cut short there, whatever the command's own error. */
static void disk_full_note(const job *j, nv_record_outcome *o)
{
	size_t n;

	if (o->state != NV_STATE_FAILED ||
	    !(j->disk_full || agent_disk_nearly_full(j->dir)))
		return;
	n = strlen(o->reason);
	if (!strstr(o->reason, "No space left") && n < sizeof(o->reason))
		snprintf(o->reason + n, sizeof(o->reason) - n,
			 " (the disk of NAVETTE_HOME was full)");
	snprintf(o->hint, sizeof(o->hint),
		 "free space on the disk of NAVETTE_HOME (%.300s), then run "
		 "the job again",
		 j->dir);
}

/* ---- the success condition -------------------------------------------- */

int agent_exit_code_ok(const cJSON *spec, int code)
{
	const cJSON *success = ofield(spec, "success");
	const cJSON *codes = success ? ofield(success, "exit_codes") : NULL;
	const cJSON *c;

	if (!cJSON_IsArray(codes) || cJSON_GetArraySize(codes) == 0)
		return code == 0;
	cJSON_ArrayForEach(c,
			   codes) if (cJSON_IsNumber(c) &&
				      c->valuedouble == (double)code) return 1;
	return 0;
}

static int log_has(const char *logpath, const char *needle)
{
	char *data;
	size_t len;
	nv_err err;
	int found;

	if (!needle[0])
		return 0;
	if (nv_read_file(&data, &len, logpath, (size_t)LOG_MAX_DEFAULT * 4,
			 &err) != 0)
		return 0;
	found = strstr(data, needle) != NULL;
	free(data);
	return found;
}

/* The spec's success condition, for a command that ran: its exit status,
 * the failure patterns of its log, its required outputs. */
static void check_success(const job *j, const char *outdir, const char *logpath,
			  nv_record_outcome *o)
{
	const cJSON *spec = j->spec;
	const cJSON *success = ofield(spec, "success");
	const cJSON *failure = ofield(spec, "failure_condition");
	const cJSON *req = success ? ofield(success, "outputs") : NULL;
	const cJSON *pats = failure ? ofield(failure, "log_patterns") : NULL;
	const char *fhint = failure ? sfield(failure, "hint") : NULL;
	const cJSON *it;

	if (!agent_exit_code_ok(spec, j->exit_code))
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       fhint ? fhint
				     : "read the log (navette logs ID): check "
				       "the parameters, the data and the "
				       "dependencies",
			       "the command exited with status %d",
			       j->exit_code);
	cJSON_ArrayForEach(it, pats)
	{
		if (cJSON_IsString(it) && log_has(logpath, it->valuestring))
			nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
				       fhint ? fhint
					     : "read the log (navette logs ID)",
				       "the log matched the failure pattern "
				       "'%s'",
				       it->valuestring);
	}
	cJSON_ArrayForEach(it, req)
	{
		char p[PATH_CAP];
		struct stat st;
		if (!cJSON_IsString(it))
			continue;
		nv_pathf(p, sizeof(p), "%s/%s", outdir, it->valuestring);
		if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
			nv_record_fail(o, NV_STATE_FAILED,
				       NV_PHASE_OUTPUTS_PUBLISHED,
				       "the command must write it into "
				       "$NAVETTE_OUTPUTS; check the "
				       "publication path",
				       "required output '%s' is missing",
				       it->valuestring);
	}
}

/* ---- the run record ----------------------------------------------------- */

/* The spec's logs.max_bytes, validated already; a cast of a double
 * outside long long's range would be undefined, so larger ones mean
 * 2^53. */
static long long log_max_bytes(const cJSON *spec)
{
	const cJSON *logs = ofield(spec, "logs");
	const cJSON *maxb = logs ? ofield(logs, "max_bytes") : NULL;

	if (cJSON_IsNumber(maxb) && maxb->valuedouble >= 1)
		return maxb->valuedouble < 9007199254740992.0
			       ? (long long)maxb->valuedouble
			       : 9007199254740992LL;
	return LOG_MAX_DEFAULT;
}

/* Whether the job publishes its log (logs.publish, true unless false). */
static int log_published(const cJSON *spec)
{
	const cJSON *logs = ofield(spec, "logs");
	const cJSON *pub = logs ? ofield(logs, "publish") : NULL;

	return !cJSON_IsFalse(pub);
}

/* The node's fingerprint the launcher wrote (launcher_fingerprint.sh), or
 * null: an object, at most 64 KiB, or nothing of it. */
static cJSON *node_fingerprint(const job *j)
{
	char path[PATH_CAP + 32], *text = NULL;
	size_t len = 0;
	cJSON *node = NULL;
	nv_err err;

	if (nv_pathf(path, sizeof(path), "%s/fingerprint.json", j->dir) == 0 &&
	    nv_read_file(&text, &len, path, 64 * 1024, &err) == 0)
		node = cJSON_ParseWithLength(text, len);
	free(text);
	if (node && !cJSON_IsObject(node)) {
		cJSON_Delete(node);
		node = NULL;
	}
	return node ? node : cJSON_CreateNull();
}

/* Fills record (its outputs already there) from the spec, the queue's
 * phase timeline and o; takes record_log. */
static void build_record(agent *a, const job *j, const nv_record_outcome *o,
			 cJSON *record, cJSON *record_log)
{
	char *json = NULL;
	cJSON *row = NULL;
	nv_err err;

	cJSON_AddNumberToObject(record, "navette_run_record", 1);
	for (const char *const *k = nv_record_spec_fields; j->spec && *k; k++) {
		const cJSON *v = ofield(j->spec, *k);
		if (v)
			cJSON_AddItemToObject(record, *k,
					      cJSON_Duplicate(v, 1));
	}
	if (nv_jobdb_get_json(a->queue, j->id, &json, &err) == 0 &&
	    (row = cJSON_Parse(json)) != NULL) {
		cJSON *ph = cJSON_DetachItemFromObject(row, "phases");
		if (ph)
			cJSON_AddItemToObject(record, "phases", ph);
	}
	free(json);
	cJSON_Delete(row);
	cJSON_AddStringToObject(record, "state",
				nv_record_state_name(o->state));
	if (j->have_exit)
		cJSON_AddNumberToObject(record, "exit_code", j->exit_code);
	else
		cJSON_AddNullToObject(record, "exit_code");
	if (o->state != NV_STATE_SUCCEEDED) {
		cJSON *f = cJSON_AddObjectToObject(record, "failure");
		cJSON_AddStringToObject(f, "phase",
					nv_record_phase_name(o->phase));
		cJSON_AddStringToObject(f, "reason", o->reason);
		cJSON_AddStringToObject(f, "hint", o->hint);
	} else {
		cJSON_AddNullToObject(record, "failure");
	}
	cJSON_AddItemToObject(record, "log", record_log);
	cJSON_AddItemToObject(record, "node", node_fingerprint(j));
	agent_attempts_record(j, o, record);
	agent_checkpoint_record(j, record);
}

/* ---- the final state ---------------------------------------------------- */

/* The final state into the queue, the scratch folders (copies, or what a
 * launcher downloaded) removed: the log and status stay for `navette
 * logs`. */
static void finish(agent *a, job *j, nv_record_outcome *o,
		   const char *record_url, const char *const *scratch,
		   const char *how)
{
	int failed = o->state != NV_STATE_SUCCEEDED;
	char path[PATH_CAP];
	nv_err err;

	disk_full_note(j, o);
	/* the secrets' folder goes first, whatever the outcome: gone by the
	 * time the job reads as ended */
	agent_secrets_remove(j);
	for (int attempt = 0;; attempt++) {
		if (nv_jobdb_finish(
			    a->queue, j->id, nv_record_state_name(o->state),
			    j->have_exit ? j->exit_code : -1001,
			    failed ? nv_record_phase_name(o->phase) : NULL,
			    failed ? o->reason : NULL, failed ? o->hint : NULL,
			    record_url[0] ? record_url : NULL, &err) == 0)
			break;
		/* a full disk: the reserve navette keeps makes room for the
		 * final state, which a job never loses (a wait would follow
		 * it forever) */
		if (attempt == 0 && agent_reserve_release(a)) {
			agent_log("job %s: the disk of NAVETTE_HOME is full: "
				  "navette's reserve freed to record the "
				  "final state",
				  j->id);
			continue;
		}
		agent_log("job %s: cannot record the final state: %s", j->id,
			  err.message);
		break;
	}
	for (const char *const *sc = scratch; *sc; sc++) {
		agent_job_path(j, *sc, path, sizeof(path));
		if (getenv("NAVETTE_KEEP_WORKSPACE") == NULL) {
			/* a launcher leaves inputs read-only */
			if (j->transfer)
				chmod(path, 0755);
			nv_remove_tree(path, &err);
		}
	}
	agent_log("job %s: %s%s%s%s", j->id, nv_record_state_name(o->state),
		  failed ? " at " : "",
		  failed ? nv_record_phase_name(o->phase) : "", how);
}

/* A transfer job's end: what its launcher published, read from the run
 * record it left in the job folder. The agent's own outcome (a cancel,
 * the time limit, a launcher that died) comes first. */
static void finalize_transfer(agent *a, job *j, nv_record_outcome *o)
{
	static const char *const scratch[] = {
		"workspace", "inputs",          "outputs", ".navette",
		"home",      AGENT_SANDBOX_LOG, NULL};
	const cJSON *outputs = ofield(j->spec, "outputs");
	const char *prefix_url = outputs ? sfield(outputs, "url") : NULL;
	char path[PATH_CAP], record_url[NV_FILESTORE_PATH_MAX + 64] = "";
	char *text = NULL;
	size_t len = 0;
	nv_err err;
	nv_record_verdict v = {
		.said = *o,
		.stopped = o->state != NV_STATE_SUCCEEDED,
		.missing_reason = "the launcher left no run record",
		.missing_hint = "read the log (navette logs ID); the node "
				"could not publish its run record",
	};

	v.said.have_exit = j->have_exit;
	v.said.exit_code = j->exit_code;
	agent_job_path(j, NV_RECORD_RUN_RECORD, path, sizeof(path));
	if (!j->final_seen ||
	    nv_read_file(&text, &len, path, NV_RECORD_MAX, &err) != 0) {
		free(text);
		text = NULL;
	}
	nv_record_decide(text, len, &v, o);
	free(text);
	j->have_exit = o->have_exit;
	j->exit_code = o->exit_code;
	if (o->record_found && prefix_url)
		nv_record_key(record_url, sizeof(record_url), prefix_url,
			      NV_RECORD_RUN_RECORD);
	/* phases the queue has not seen yet (the order is the queue's) */
	agent_phase_end(a, j, o->state);
	agent_job_path(j, "log", path, sizeof(path));
	if (agent_reredact_log(j->spec, path, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
	finish(a, j, o, record_url, scratch, " (node launcher)");
}

void agent_finalize(agent *a, job *j, nv_record_outcome *o)
{
	static const char *const scratch[] = {"workspace",       "inputs",
					      "outputs",         "home",
					      AGENT_SANDBOX_LOG, NULL};
	const cJSON *spec = j->spec;
	const cJSON *outputs = spec ? ofield(spec, "outputs") : NULL;
	const char *prefix = outputs ? sfield(outputs, "prefix") : NULL;
	char outdir[PATH_CAP], logpath[PATH_CAP];
	char record_url[NV_FILESTORE_PATH_MAX + 64] = "";
	nv_filestore *store = NULL;
	cJSON *record, *published, *record_log;
	nv_err err;

	if (j->transfer) {
		finalize_transfer(a, j, o);
		return;
	}
	record = cJSON_CreateObject();
	published = cJSON_AddArrayToObject(record, "outputs");
	record_log = cJSON_CreateObject();
	agent_job_path(j, "outputs", outdir, sizeof(outdir));
	agent_job_path(j, "log", logpath, sizeof(logpath));
	if (!prefix)
		prefix = "";
	if (o->state == NV_STATE_SUCCEEDED) /* the command ran */
		check_success(j, outdir, logpath, o);
	/* a log cut while it was written (a full disk, a redactor that
	 * could not run) is not the job's whole log: the job does not pass
	 * on it, and the reason names the disk only when it was full */
	if (j->log_cut[0] && (strstr(j->log_cut, strerror(ENOSPC)) ||
			      strstr(j->log_cut, strerror(EDQUOT))))
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "free space on the disk of NAVETTE_HOME, then "
			       "run the job again",
			       "the log could not be written whole (%s): the "
			       "disk of NAVETTE_HOME was full",
			       j->log_cut);
	else if (j->log_cut[0])
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "the log goes through navette's redactor "
			       "(NAVETTE_REDACT redact-stream) into the job's "
			       "folder: check that both work there, then run "
			       "the job again",
			       "the log could not be written whole (%s)",
			       j->log_cut);
	store = spec ? agent_output_store(spec, &err) : NULL;
	if (!store)
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       "check the profile's storage and its rights",
			       "cannot open the output store: %s",
			       spec ? err.message : "unreadable job spec");
	/* outputs only for a job that met its condition */
	if (store && o->state == NV_STATE_SUCCEEDED) {
		agent_publish_outputs(store, prefix, outdir, published, o);
		if (o->state == NV_STATE_SUCCEEDED)
			agent_phase(a, j, NV_PHASE_OUTPUTS_PUBLISHED);
	}
	/* the log and the run record, whatever the outcome; a log that could
	 * not be masked once more (a full disk) stays as it was, whole, and
	 * is not published */
	int masked = 1;
	if (spec && agent_reredact_log(spec, logpath, &err) != 0) {
		masked = 0;
		agent_log("job %s: %s", j->id, err.message);
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       "free space on the disk of NAVETTE_HOME, then "
			       "run the job again (navette logs ID shows the "
			       "log)",
			       "the log was not published (it stays whole in "
			       "the job's folder): %s",
			       err.message);
	}
	if (store && log_published(spec) && masked &&
	    agent_publish_log(store, prefix, logpath, log_max_bytes(spec),
			      j->log_cut[0] != '\0', record_log, &err) != 0)
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       "check the store's rights and free space",
			       "cannot publish the log: %s", err.message);
	if (spec && (!log_published(spec) || !masked)) {
		/* (as the node launcher does for an unpublished log) */
		cJSON_Delete(record_log);
		record_log = cJSON_CreateNull();
	}
	agent_phase_end(a, j, o->state);
	build_record(a, j, o, record, record_log);
	if (store &&
	    agent_publish_record(store, spec, prefix, record, record_url,
				 sizeof(record_url), &err) != 0)
		agent_log("job %s: cannot publish the run record: %s", j->id,
			  err.message);
	cJSON_Delete(record);
	nv_filestore_free(store);
	finish(a, j, o, record_url, scratch, "");
}
