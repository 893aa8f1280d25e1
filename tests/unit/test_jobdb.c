/* The durable queue: insert, claim in order, phases, lookup by prefix,
 * cancel, final state. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "jobs/jobdb.h"
#include "nv_test.h"

static cJSON *get(nv_jobdb *q, const char *id)
{
	char *json = NULL;
	nv_err err;
	if (nv_jobdb_get_json(q, id, &json, &err) != 0)
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

/* Runs python3 on code with the folder as sys.argv[1]. */
static int python(const char *dir, const char *code)
{
	char path[600], cmd[1400];
	nv_err err;

	snprintf(path, sizeof(path), "%s/step.py", dir);
	if (nv_write_file_atomic(path, code, strlen(code), 0600, &err) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s'", path, dir);
	return system(cmd);
}

static void count_running(const char *id, const char *spec, long pid,
			  void *payload)
{
	(void)id, (void)spec, (void)pid;
	(*(int *)payload)++;
}

/* Ids are checked by the database itself: every entry point that takes
 * one refuses a bad one, naming it; rows with a bad id written around it
 * are failed, never handed to the agent (which makes a folder of the id);
 * a damaged file says how to recover. */
static void test_ids_and_damage(void)
{
	static const char *const bad[] = {
		"..",  "../../victim", "/",           "/tmp/abs",
		"",    "-rf",          "caf\xc3\xa9", "a\nb",
		"A-1", "a/b",          "p-1-aaa-",    NULL};
	char home[] = "/tmp/navette-queue-ids-XXXXXX";
	char longid[100], name[64], *id = NULL, *spec = NULL, *list = NULL;
	nv_jobdb *q = NULL;
	nv_err err;
	int requested, adopted = 0, failed = 0;

	CHECK(mkdtemp(home) != NULL);
	CHECK(nv_jobdb_open(&q, home, &err) == 0);
	for (int i = 0; bad[i]; i++) {
		const char *b = bad[i];
		nv_err_clear(&err);
		CHECK(nv_jobdb_insert(q, b, "p", "local", "x", "{}", NULL, 1.0,
				      &err) == NV_EINVAL);
		CHECK(strstr(err.message, "job id") != NULL);
		CHECK(nv_jobdb_phase(q, b, "accepted", 2.0, &err) == NV_EINVAL);
		CHECK(nv_jobdb_finish(q, b, "failed", 1, NULL, NULL, NULL, NULL,
				      &err) == NV_EINVAL);
		CHECK(nv_jobdb_set_remote(q, b, "1", "running", &err) ==
		      NV_EINVAL);
		CHECK(nv_jobdb_set_pid(q, b, 1, &err) == NV_EINVAL);
		CHECK(nv_jobdb_cancel_requested(q, b, &requested, &err) ==
		      NV_EINVAL);
	}
	/* NUL-free but overlong */
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	CHECK(nv_jobdb_insert(q, longid, "p", "local", "x", "{}", NULL, 1.0,
			      &err) == NV_EINVAL);
	CHECK(strstr(err.message, "longer than 63") != NULL);
	/* the message names the id, a control byte shown as \xNN */
	CHECK(nv_jobdb_insert(q, "a\nb", "p", "local", "x", "{}", NULL, 1.0,
			      &err) == NV_EINVAL);
	CHECK(strstr(err.message, "'a\\x0ab'") != NULL);
	/* a look-up by a prefix that no id can have: not found, saying why */
	CHECK(nv_jobdb_get_json(q, "../x", &id, &err) == NV_ENOTFOUND);
	CHECK(strstr(err.message, "'../x'") != NULL);
	CHECK(nv_jobdb_list_json(q, 10, &list, &err) == 0);
	CHECK_STR(list, "[]"); /* nothing was written */
	free(list);

	/* rows written around the checks (by hand, another program): the
	 * queued one, older than the good one, is failed and skipped; the
	 * running one is never adopted */
	CHECK(nv_jobdb_insert(q, "p-1-good", "p", "local", "good", "{}", NULL,
			      5.0, &err) == 0);
	CHECK(python(home,
		     "import sqlite3, sys\n"
		     "c = sqlite3.connect(sys.argv[1] + '/jobs.db')\n"
		     "sql = 'INSERT INTO jobs(id, project, profile, name, spec,"
		     " state, phase, created, updated, pid)"
		     " VALUES(?, \"p\", \"local\", \"evil\", \"{}\", ?, ?, ?, "
		     "?,"
		     " 1)'\n"
		     "c.execute(sql, ('../../victim', 'queued', 'submitted', 1,"
		     " 1))\n"
		     "c.execute(sql, ('/tmp/abs', 'running', 'running', 2, "
		     "2))\n"
		     "c.commit()\n") == 0);
	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	CHECK_STR(id, "p-1-good");
	free(id);
	free(spec);
	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	CHECK(id == NULL);
	CHECK(nv_jobdb_each_running(q, count_running, &adopted, &err) == 0);
	CHECK(adopted == 1); /* p-1-good only */
	CHECK(nv_jobdb_list_json(q, 10, &list, &err) == 0);
	cJSON *arr = cJSON_Parse(list);
	const cJSON *row;
	cJSON_ArrayForEach(row, arr)
	{
		const char *rid = str(row, "id");
		if (rid && (strcmp(rid, "../../victim") == 0 ||
			    strcmp(rid, "/tmp/abs") == 0)) {
			CHECK_STR(str(row, "state"), "failed");
			failed++;
		}
	}
	CHECK(failed == 2);
	cJSON_Delete(arr);
	free(list);

	/* a damaged page: an error with the recovery hint, not a shorter
	 * list */
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "p-%d-fill", i);
		CHECK(nv_jobdb_insert(q, name, "p", "local", name,
				      "{\"pad\":\"0123456789012345678901234567"
				      "8901234567890123456789\"}",
				      NULL, 10.0 + i, &err) == 0);
	}
	nv_jobdb_close(q);
	CHECK(python(home, "import os, sqlite3, sys\n"
			   "p = sys.argv[1] + '/jobs.db'\n"
			   "c = sqlite3.connect(p)\n"
			   "c.execute('PRAGMA wal_checkpoint(TRUNCATE)')\n"
			   "c.close()\n"
			   "size = os.path.getsize(p)\n"
			   "f = open(p, 'r+b')\n"
			   "f.seek(4096)\n" /* all but the schema's page */
			   "f.write(b'\\xa5' * (size - 4096))\n"
			   "f.close()\n") == 0);
	nv_err_clear(&err);
	if (nv_jobdb_open(&q, home, &err) == 0) {
		CHECK(nv_jobdb_list_json(q, 1000, &list, &err) == NV_EIO);
		nv_jobdb_close(q);
	}
	CHECK(strstr(err.message, "is damaged") != NULL);
	CHECK(strstr(err.hint, "jobs.db.damaged") != NULL);

	/* not a database at all */
	CHECK(python(home,
		     "import sys, os\n"
		     "d = sys.argv[1]\n"
		     "open(d + '/jobs.db', 'wb').write(b'garbage ' * 600)\n"
		     "for x in ('-wal', '-shm'):\n"
		     "    if os.path.exists(d + '/jobs.db' + x):\n"
		     "        os.unlink(d + '/jobs.db' + x)\n") == 0);
	CHECK(nv_jobdb_open(&q, home, &err) == NV_EIO);
	CHECK(q == NULL);
	CHECK(strstr(err.message, "is damaged") != NULL);
	CHECK(strstr(err.message, "/jobs.db") != NULL);
	CHECK(strstr(err.hint, "jobs.db.damaged") != NULL);
	CHECK(strstr(err.hint, "navette-run.json") != NULL);
	nv_remove_tree(home, &err);
}

/* The failure's field k of a row, or NULL. */
static const char *failure(const cJSON *row, const char *k)
{
	return str(cJSON_GetObjectItemCaseSensitive(row, "failure"), k);
}

static void claim_expect(nv_jobdb *q, const char *expected)
{
	char *id = NULL, *spec = NULL;
	nv_err err;

	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	if (expected)
		CHECK_STR(id ? id : "(none)", expected);
	else
		CHECK(id == NULL);
	free(id);
	free(spec);
}

/* "after": a job runs once every job it names has succeeded; a failed or
 * cancelled one (or one not in the database) cancels it, and what waits
 * for it, naming the job. */
static void test_after(void)
{
	char dir[] = "/tmp/navette-after-XXXXXX";
	nv_jobdb *q = NULL;
	nv_err err;
	cJSON *row;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(nv_jobdb_open(&q, dir, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-1", "p", "local", "a", "{}", NULL, 1,
			      &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-2", "p", "local", "b",
			      "{\"after\":[\"p-1\"]}", NULL, 2, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-3", "p", "local", "c",
			      "{\"after\":[\"p-1\",\"p-2\"]}", NULL, 3,
			      &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-4", "p", "local", "d", "not json", NULL, 4,
			      &err) == 0);
	claim_expect(q, "p-1");
	claim_expect(q, "p-4"); /* b and c wait for a; d's spec names none */
	claim_expect(q, NULL);
	CHECK(nv_jobdb_finish(q, "p-1", "succeeded", 0, NULL, NULL, NULL, NULL,
			      &err) == 0);
	claim_expect(q, "p-2");
	claim_expect(q, NULL); /* c waits for b too */
	CHECK(nv_jobdb_finish(q, "p-2", "failed", 1, "running", "exit 1", NULL,
			      NULL, &err) == 0);
	claim_expect(q, NULL);
	row = get(q, "p-3");
	CHECK_STR(str(row, "state"), "cancelled");
	CHECK(failure(row, "reason") &&
	      strstr(failure(row, "reason"), "b (p-2), which ended failed"));
	cJSON_Delete(row);

	/* a chain ends whole; a missing job cancels too */
	CHECK(nv_jobdb_insert(q, "p-5", "p", "local", "e",
			      "{\"after\":[\"p-9\"]}", NULL, 5, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-6", "p", "local", "f",
			      "{\"after\":[\"p-5\"]}", NULL, 6, &err) == 0);
	claim_expect(q, NULL);
	row = get(q, "p-5");
	CHECK_STR(str(row, "state"), "cancelled");
	CHECK(failure(row, "reason") &&
	      strstr(failure(row, "reason"), "p-9, which is not in"));
	cJSON_Delete(row);
	row = get(q, "p-6");
	CHECK_STR(str(row, "state"), "cancelled");
	CHECK_STR(failure(row, "phase"), "accepted");
	CHECK(failure(row, "reason") &&
	      strstr(failure(row, "reason"), "e (p-5), which ended cancelled"));
	cJSON_Delete(row);
	nv_jobdb_close(q);
	nv_remove_tree(dir, &err);
}

/* The jobs of one run, by its id or a unique prefix of it. */
static void test_run(void)
{
	char dir[] = "/tmp/navette-run-XXXXXX";
	nv_jobdb *q = NULL;
	char *run = NULL, *json = NULL;
	nv_err err;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(nv_jobdb_open(&q, dir, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-1", "p", "local", "a",
			      "{\"run\":\"p-run-aa1\"}", NULL, 1, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-2", "p", "local", "b",
			      "{\"run\":\"p-run-bb2\"}", NULL, 2, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-3", "p", "local", "c",
			      "{\"run\":\"p-run-aa1\"}", NULL, 3, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-4", "p", "local", "d", "not json", NULL, 4,
			      &err) == 0);
	CHECK(nv_jobdb_run_json(q, "p-run-aa", &run, &json, &err) == 0);
	CHECK_STR(run ? run : "", "p-run-aa1");
	CHECK_STR(json ? json : "", "[\"p-1\",\"p-3\"]");
	free(run);
	free(json);
	CHECK(nv_jobdb_run_json(q, "p-run-", &run, &json, &err) == NV_EINVAL);
	CHECK(run == NULL && json == NULL);
	CHECK(nv_jobdb_run_json(q, "p-run-cc", &run, &json, &err) ==
	      NV_ENOTFOUND);
	CHECK(nv_jobdb_run_json(q, "p-run-%", &run, &json, &err) == NV_EINVAL);
	CHECK(nv_jobdb_run_json(q, "p-run-_a1", &run, &json, &err) ==
	      NV_EINVAL);
	CHECK(nv_jobdb_run_json(q, "", &run, &json, &err) == NV_EINVAL);
	nv_jobdb_close(q);
	nv_remove_tree(dir, &err);
}

int main(void)
{
	char home[] = "/tmp/navette-queue-XXXXXX";
	nv_jobdb *q = NULL;
	nv_err err;
	char *id = NULL, *spec = NULL;
	char state[16];
	int requested = -1, queued = -1, running = -1;

	CHECK(mkdtemp(home) != NULL);
	CHECK(nv_jobdb_open(&q, home, &err) == 0);

	/* kept in WAL, and SQLite's syncs reach the drive (F_FULLFSYNC on
	 * macOS: fullfsync is on, a no-op elsewhere) */
	char durability[128];
	CHECK(nv_jobdb_durability(q, durability, sizeof(durability), &err) ==
	      0);
	CHECK_STR(durability, "journal_mode=wal synchronous=1 fullfsync=1");
	CHECK(nv_jobdb_durability(q, durability, 8, &err) != 0);

	CHECK(nv_jobdb_insert(q, "p-1-aaa", "p", "local", "one", "{\"n\":1}",
			      NULL, 100.0, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-2-bbb", "p", "local", "two", "{\"n\":2}",
			      NULL, 101.0, &err) == 0);
	CHECK(nv_jobdb_insert(q, "p-1-aaa", "p", "local", "dup", "{}", NULL,
			      102.0, &err) == NV_EREFUSED);
	CHECK(nv_jobdb_active(q, &queued, &running, &err) == 0);
	CHECK(queued == 2 && running == 0);

	/* oldest first */
	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	CHECK_STR(id, "p-1-aaa");
	CHECK_STR(spec, "{\"n\":1}");
	free(id);
	free(spec);
	CHECK(nv_jobdb_phase(q, "p-1-aaa", "accepted", 103.0, &err) == 0);
	CHECK(nv_jobdb_phase(q, "p-1-aaa", "accepted", 104.0, &err) == 0);

	cJSON *v = get(q, "p-1");
	CHECK(v != NULL);
	CHECK_STR(str(v, "state"), "running");
	CHECK_STR(str(v, "phase"), "accepted");
	cJSON *phases = cJSON_GetObjectItemCaseSensitive(v, "phases");
	CHECK(cJSON_GetArraySize(phases) == 2); /* submitted, accepted once */
	cJSON_Delete(v);

	/* prefixes: unique works, ambiguous and unknown do not */
	CHECK(nv_jobdb_get_json(q, "p-", &id, &err) == NV_EINVAL);
	CHECK(nv_jobdb_get_json(q, "zzz", &id, &err) == NV_ENOTFOUND);
	CHECK(nv_jobdb_get_json(q, "p%", &id, &err) == NV_ENOTFOUND);

	/* cancel: queued at once, running flagged for the agent */
	CHECK(nv_jobdb_cancel(q, "p-2-bbb", state, &err) == 0);
	CHECK_STR(state, "cancelled");
	CHECK(nv_jobdb_cancel(q, "p-1-aaa", state, &err) == 0);
	CHECK_STR(state, "cancelling");
	CHECK(nv_jobdb_cancel_requested(q, "p-1-aaa", &requested, &err) == 0);
	CHECK(requested == 1);
	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	CHECK(id == NULL); /* the cancelled job is not handed out */

	CHECK(nv_jobdb_finish(q, "p-1-aaa", "failed", 3, "running", "exit 3",
			      "read the log", "file:///r", &err) == 0);
	v = get(q, "p-1-aaa");
	CHECK_STR(str(v, "state"), "failed");
	CHECK_STR(str(v, "record_url"), "file:///r");
	cJSON *failure = cJSON_GetObjectItemCaseSensitive(v, "failure");
	CHECK_STR(str(failure, "phase"), "running");
	CHECK(cJSON_GetObjectItemCaseSensitive(v, "exit_code")->valueint == 3);
	cJSON_Delete(v);

	char *list = NULL;
	CHECK(nv_jobdb_list_json(q, 10, &list, &err) == 0);
	cJSON *arr = cJSON_Parse(list);
	CHECK(cJSON_GetArraySize(arr) == 2);
	CHECK_STR(str(cJSON_GetArrayItem(arr, 0), "id"), "p-2-bbb");
	cJSON_Delete(arr);
	free(list);

	/* a remote backend's job: never the agent's, its remote id and
	 * state kept, a final state never replaced */
	CHECK(nv_jobdb_insert(q, "p-3-ccc", "p", "hpc", "three", "{}", "slurm",
			      105.0, &err) == 0);
	CHECK(nv_jobdb_active(q, &queued, &running, &err) == 0);
	CHECK(queued == 0);
	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	CHECK(id == NULL);
	CHECK(nv_jobdb_pending_remote(q, "slurm", "hpc", "three", &list,
				      &err) == 0);
	arr = cJSON_Parse(list);
	CHECK(cJSON_GetArraySize(arr) == 1);
	CHECK_STR(str(cJSON_GetArrayItem(arr, 0), "backend"), "slurm");
	cJSON_Delete(arr);
	free(list);
	CHECK(nv_jobdb_set_remote(q, "p-3-ccc", "4242", "running", &err) == 0);
	CHECK(nv_jobdb_pending_remote(q, "slurm", "hpc", "three", &list,
				      &err) == 0);
	CHECK_STR(list, "[]"); /* answered: no longer pending */
	free(list);
	v = get(q, "p-3-ccc");
	CHECK_STR(str(v, "remote_id"), "4242");
	CHECK_STR(str(v, "state"), "running");
	cJSON_Delete(v);
	CHECK(nv_jobdb_finish(q, "p-3-ccc", "succeeded", 0, NULL, NULL, NULL,
			      NULL, &err) == 0);
	CHECK(nv_jobdb_set_remote(q, "p-3-ccc", NULL, "running", &err) == 0);
	v = get(q, "p-3-ccc");
	CHECK_STR(str(v, "state"), "succeeded");
	cJSON_Delete(v);

	/* delete (navette gc): a finished job's row and phases go; an
	 * unfinished one, a prefix and an unknown id are refused */
	CHECK(nv_jobdb_insert(q, "p-4-ddd", "p", "local", "four", "{}", NULL,
			      106.0, &err) == 0);
	CHECK(nv_jobdb_delete(q, "p-4-ddd", &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "has not finished") != NULL);
	CHECK(nv_jobdb_delete(q, "p-3", &err) == NV_ENOTFOUND); /* no prefix */
	CHECK(nv_jobdb_delete(q, "../x", &err) == NV_EINVAL);
	CHECK(nv_jobdb_delete(q, "p-9-zzz", &err) == NV_ENOTFOUND);
	CHECK(nv_jobdb_delete(q, "p-3-ccc", &err) == 0);
	CHECK(nv_jobdb_get_json(q, "p-3-ccc", &id, &err) == NV_ENOTFOUND);
	CHECK(nv_jobdb_delete(q, "p-3-ccc", &err) == NV_ENOTFOUND);
	CHECK(python(home, "import sqlite3, sys\n"
			   "c = sqlite3.connect(sys.argv[1] + '/jobs.db')\n"
			   "n = c.execute('SELECT count(*) FROM phases WHERE"
			   " job_id=\"p-3-ccc\"').fetchone()[0]\n"
			   "sys.exit(n)\n") == 0);
	v = get(q, "p-4-ddd");
	CHECK_STR(str(v, "state"), "queued"); /* untouched */
	cJSON_Delete(v);
	nv_jobdb_close(q);
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
	CHECK(nv_jobdb_open(&q, old, &err) == 0);
	CHECK(nv_jobdb_claim(q, &id, &spec, &err) == 0);
	CHECK_STR(id, "o-1");
	free(id);
	free(spec);
	nv_jobdb_close(q);
	CHECK(nv_jobdb_open(&q, old, &err) == 0); /* upgraded once only */
	nv_jobdb_close(q);
	nv_remove_tree(old, &err);
	test_ids_and_damage();
	test_after();
	test_run();
	return nv_test_done();
}
