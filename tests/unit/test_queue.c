/* The durable queue: insert, claim in order, phases, lookup by prefix,
 * cancel, final state. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "jobs/queue.h"
#include "nv_test.h"

static cJSON *get(nv_queue *q, const char *id)
{
	char *json = NULL;
	nv_err err;
	if (nv_queue_get_json(q, id, &json, &err) != 0)
		return NULL;
	cJSON *v = cJSON_Parse(json);
	free(json);
	return v;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int main(void)
{
	char home[] = "/tmp/navette-queue-XXXXXX";
	nv_queue *q = NULL;
	nv_err err;
	char *id = NULL, *spec = NULL;
	char state[16];
	int requested = -1, queued = -1, running = -1;

	CHECK(mkdtemp(home) != NULL);
	CHECK(nv_queue_open(&q, home, &err) == 0);

	/* kept in WAL, and SQLite's syncs reach the drive (F_FULLFSYNC on
	 * macOS: fullfsync is on, a no-op elsewhere) */
	char durability[128];
	CHECK(nv_queue_durability(q, durability, sizeof(durability), &err) ==
	      0);
	CHECK_STR(durability, "journal_mode=wal synchronous=1 fullfsync=1");
	CHECK(nv_queue_durability(q, durability, 8, &err) != 0);

	CHECK(nv_queue_insert(q, "p-1-aaa", "p", "local", "one", "{\"n\":1}",
			      NULL, 100.0, &err) == 0);
	CHECK(nv_queue_insert(q, "p-2-bbb", "p", "local", "two", "{\"n\":2}",
			      NULL, 101.0, &err) == 0);
	CHECK(nv_queue_insert(q, "p-1-aaa", "p", "local", "dup", "{}", NULL,
			      102.0, &err) == NV_EREFUSED);
	CHECK(nv_queue_active(q, &queued, &running, &err) == 0);
	CHECK(queued == 2 && running == 0);

	/* oldest first */
	CHECK(nv_queue_claim(q, &id, &spec, &err) == 0);
	CHECK_STR(id, "p-1-aaa");
	CHECK_STR(spec, "{\"n\":1}");
	free(id);
	free(spec);
	CHECK(nv_queue_phase(q, "p-1-aaa", "accepted", 103.0, &err) == 0);
	CHECK(nv_queue_phase(q, "p-1-aaa", "accepted", 104.0, &err) == 0);

	cJSON *v = get(q, "p-1");
	CHECK(v != NULL);
	CHECK_STR(str(v, "state"), "running");
	CHECK_STR(str(v, "phase"), "accepted");
	cJSON *phases = cJSON_GetObjectItemCaseSensitive(v, "phases");
	CHECK(cJSON_GetArraySize(phases) == 2); /* submitted, accepted once */
	cJSON_Delete(v);

	/* prefixes: unique works, ambiguous and unknown do not */
	CHECK(nv_queue_get_json(q, "p-", &id, &err) == NV_EINVAL);
	CHECK(nv_queue_get_json(q, "zzz", &id, &err) == NV_ENOTFOUND);
	CHECK(nv_queue_get_json(q, "p%", &id, &err) == NV_ENOTFOUND);

	/* cancel: queued at once, running flagged for the agent */
	CHECK(nv_queue_cancel(q, "p-2-bbb", state, &err) == 0);
	CHECK_STR(state, "cancelled");
	CHECK(nv_queue_cancel(q, "p-1-aaa", state, &err) == 0);
	CHECK_STR(state, "cancelling");
	CHECK(nv_queue_cancel_requested(q, "p-1-aaa", &requested, &err) == 0);
	CHECK(requested == 1);
	CHECK(nv_queue_claim(q, &id, &spec, &err) == 0);
	CHECK(id == NULL); /* the cancelled job is not handed out */

	CHECK(nv_queue_finish(q, "p-1-aaa", "failed", 3, "running", "exit 3",
			      "read the log", "file:///r", &err) == 0);
	v = get(q, "p-1-aaa");
	CHECK_STR(str(v, "state"), "failed");
	CHECK_STR(str(v, "record_url"), "file:///r");
	cJSON *failure = cJSON_GetObjectItemCaseSensitive(v, "failure");
	CHECK_STR(str(failure, "phase"), "running");
	CHECK(cJSON_GetObjectItemCaseSensitive(v, "exit_code")->valueint == 3);
	cJSON_Delete(v);

	char *list = NULL;
	CHECK(nv_queue_list_json(q, 10, &list, &err) == 0);
	cJSON *arr = cJSON_Parse(list);
	CHECK(cJSON_GetArraySize(arr) == 2);
	CHECK_STR(str(cJSON_GetArrayItem(arr, 0), "id"), "p-2-bbb");
	cJSON_Delete(arr);
	free(list);

	/* a remote backend's job: never the agent's, its remote id and
	 * state kept, a final state never replaced */
	CHECK(nv_queue_insert(q, "p-3-ccc", "p", "hpc", "three", "{}", "slurm",
			      105.0, &err) == 0);
	CHECK(nv_queue_active(q, &queued, &running, &err) == 0);
	CHECK(queued == 0);
	CHECK(nv_queue_claim(q, &id, &spec, &err) == 0);
	CHECK(id == NULL);
	CHECK(nv_queue_pending_remote(q, "slurm", "hpc", "three", &list,
				      &err) == 0);
	arr = cJSON_Parse(list);
	CHECK(cJSON_GetArraySize(arr) == 1);
	CHECK_STR(str(cJSON_GetArrayItem(arr, 0), "backend"), "slurm");
	cJSON_Delete(arr);
	free(list);
	CHECK(nv_queue_set_remote(q, "p-3-ccc", "4242", "running", &err) == 0);
	CHECK(nv_queue_pending_remote(q, "slurm", "hpc", "three", &list,
				      &err) == 0);
	CHECK_STR(list, "[]"); /* answered: no longer pending */
	free(list);
	v = get(q, "p-3-ccc");
	CHECK_STR(str(v, "remote_id"), "4242");
	CHECK_STR(str(v, "state"), "running");
	cJSON_Delete(v);
	CHECK(nv_queue_finish(q, "p-3-ccc", "succeeded", 0, NULL, NULL, NULL,
			      NULL, &err) == 0);
	CHECK(nv_queue_set_remote(q, "p-3-ccc", NULL, "running", &err) == 0);
	v = get(q, "p-3-ccc");
	CHECK_STR(str(v, "state"), "succeeded");
	cJSON_Delete(v);
	nv_queue_close(q);
	nv_remove_tree(home, &err);

	/* a database of the previous version (no backend column) opens, and
	 * its jobs are local ones */
	char old[] = "/tmp/navette-queue-old-XXXXXX";
	static const char old_schema[] =
		"CREATE TABLE jobs(id TEXT PRIMARY KEY, project TEXT NOT NULL,"
		" profile TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT "
		"NULL,"
		" state TEXT NOT NULL, phase TEXT NOT NULL, created REAL NOT "
		"NULL,"
		" updated REAL NOT NULL, pid INTEGER, exit_code INTEGER,"
		" cancel_requested INTEGER DEFAULT 0, failure_phase TEXT,"
		" failure_reason TEXT, failure_hint TEXT, record_url TEXT);"
		"INSERT INTO jobs(id, project, profile, name, spec, state, "
		"phase,"
		" created, updated) VALUES('o-1', 'p', 'local', 'old', '{}',"
		" 'queued', 'submitted', 1, 1);";
	char cmd[1024], sql[600];
	CHECK(mkdtemp(old) != NULL);
	snprintf(sql, sizeof(sql), "%s/old.sql", old);
	CHECK(nv_write_file_atomic(sql, old_schema, strlen(old_schema), 0600,
				   &err) == 0);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sqlite3, sys; c = "
		 "sqlite3.connect(sys.argv[1]);"
		 " c.executescript(open(sys.argv[2]).read()); c.commit()'"
		 " %s/jobs.db %s",
		 old, sql);
	CHECK(system(cmd) == 0);
	CHECK(nv_queue_open(&q, old, &err) == 0);
	CHECK(nv_queue_claim(q, &id, &spec, &err) == 0);
	CHECK_STR(id, "o-1");
	free(id);
	free(spec);
	nv_queue_close(q);
	CHECK(nv_queue_open(&q, old, &err) == 0); /* upgraded once only */
	nv_queue_close(q);
	nv_remove_tree(old, &err);
	return nv_test_done();
}
