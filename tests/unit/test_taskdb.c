/* host/tasks/taskdb.c: the task state database (rows written and read
 * back, listed in order, bounded text, WAL like jobs.db, a read-only open
 * of a home without one) and the maintain lock (one holder, its pid). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "nv_test.h"
#include "core/fsutil.h"
#include "tasks/taskdb.h"

static nv_task_state row(const char *recipe, const char *name)
{
	nv_task_state s;

	memset(&s, 0, sizeof(s));
	strcpy(s.project, "proj");
	strcpy(s.recipe, recipe);
	strcpy(s.name, name);
	strcpy(s.schedule, "daily 03:00");
	return s;
}

static void test_rows(const char *home)
{
	nv_taskdb *db = NULL;
	nv_task_state s, got;
	int found = -1;
	nv_err err;

	CHECK(nv_taskdb_open(&db, home, 1, &err) == NV_ENOTFOUND);
	CHECK(db == NULL);
	CHECK(nv_taskdb_open(&db, home, 0, &err) == 0);
	CHECK(nv_taskdb_get(db, "proj", "r.lua", "a", &got, &found, &err) == 0);
	CHECK(found == 0 && strcmp(got.name, "a") == 0 && got.next_due == 0);

	s = row("r.lua", "b");
	s.last_run = 1780000000.5;
	s.last_slot = 1780000000;
	s.duration = 1.25;
	strcpy(s.result, "failed");
	strcpy(s.message, "no route to host");
	s.next_due = 1780086400;
	s.runs = 3;
	s.failures = 1;
	CHECK(nv_taskdb_put(db, &s, &err) == 0);
	s = row("r.lua", "a");
	strcpy(s.result, "ok");
	CHECK(nv_taskdb_put(db, &s, &err) == 0);
	s = row("other.lua", "z");
	strcpy(s.project, "other");
	CHECK(nv_taskdb_put(db, &s, &err) == 0);

	CHECK(nv_taskdb_get(db, "proj", "r.lua", "b", &got, &found, &err) == 0);
	CHECK(found == 1);
	CHECK(got.last_run == 1780000000.5 && got.last_slot == 1780000000 &&
	      got.duration == 1.25 && got.next_due == 1780086400 &&
	      got.runs == 3 && got.failures == 1);
	CHECK_STR(got.result, "failed");
	CHECK_STR(got.message, "no route to host");
	CHECK_STR(got.schedule, "daily 03:00");
	/* a row replaced, not added */
	s = row("r.lua", "b");
	s.runs = 4;
	CHECK(nv_taskdb_put(db, &s, &err) == 0);
	CHECK(nv_taskdb_get(db, "proj", "r.lua", "b", &got, &found, &err) == 0);
	CHECK(found == 1 && got.runs == 4 && got.result[0] == '\0');
	/* the same name in another recipe is another task */
	CHECK(nv_taskdb_get(db, "proj", "x.lua", "b", &got, &found, &err) == 0);
	CHECK(found == 0);
	/* a key too long is refused, not cut */
	s = row("r.lua", "b");
	memset(s.name, 'n', sizeof(s.name)); /* no NUL */
	CHECK(nv_taskdb_put(db, &s, &err) == NV_EINVAL);
	s = row("r.lua", "");
	CHECK(nv_taskdb_put(db, &s, &err) == NV_EINVAL);
	nv_taskdb_close(db);
}

static int collect(const nv_task_state *s, void *payload)
{
	char *out = payload;

	strcat(out, s->project);
	strcat(out, "/");
	strcat(out, s->recipe);
	strcat(out, "/");
	strcat(out, s->name);
	strcat(out, " ");
	return 0;
}

static void test_list(const char *home)
{
	nv_taskdb *db = NULL;
	char seen[512] = "";
	nv_err err;

	CHECK(nv_taskdb_open(&db, home, 1, &err) == 0);
	CHECK(nv_taskdb_each(db, "proj", collect, seen, &err) == 0);
	CHECK_STR(seen, "proj/r.lua/a proj/r.lua/b ");
	seen[0] = '\0';
	CHECK(nv_taskdb_each(db, NULL, collect, seen, &err) == 0);
	CHECK_STR(seen, "other/other.lua/z proj/r.lua/a proj/r.lua/b ");
	nv_taskdb_close(db);
}

static void test_wal(const char *home)
{
	char path[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	nv_pathf(path, sizeof(path), "%s/tasks.db", home);
	CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	      SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode;", -1, &st, NULL) ==
	      SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_copy_text(void)
{
	char out[6];

	nv_task_copy_text(out, sizeof(out), "abc");
	CHECK_STR(out, "abc");
	nv_task_copy_text(out, sizeof(out), "abcdefgh");
	CHECK_STR(out, "abcde");
	/* "abcé…": é is 2 bytes at offset 3; cut before it, never inside */
	nv_task_copy_text(out, sizeof(out), "abcd\xc3\xa9xyz");
	CHECK_STR(out, "abcd");
	nv_task_copy_text(out, sizeof(out), "ab\xe2\x80\xa6xyz");
	CHECK_STR(out, "ab\xe2\x80\xa6");
	nv_task_copy_text(out, sizeof(out), NULL);
	CHECK_STR(out, "");
}

static void test_lock(const char *home)
{
	int fd = -1, fd2 = -1;
	long holder = -1;
	char path[4200], *text = NULL;
	size_t len;
	nv_err err;

	CHECK(nv_taskdb_lock(home, &fd, &holder, &err) == 0);
	CHECK(fd >= 0 && holder == 0);
	nv_pathf(path, sizeof(path), "%s/maintain.lock", home);
	CHECK(nv_read_file(&text, &len, path, 64, &err) == 0);
	CHECK(text && atol(text) == (long)getpid());
	free(text);
	/* a second taker (another open file: flock's unit) is refused,
	 * told who holds it */
	CHECK(nv_taskdb_lock(home, &fd2, &holder, &err) == NV_EREFUSED);
	CHECK(fd2 == -1 && holder == (long)getpid());
	CHECK(strstr(err.message, "another `navette maintain`") != NULL);
	nv_taskdb_unlock(fd);
	CHECK(nv_taskdb_lock(home, &fd2, &holder, &err) == 0);
	nv_taskdb_unlock(fd2);
	nv_taskdb_unlock(-1); /* harmless */
}

int main(void)
{
	char tmpl[] = "/tmp/nv-taskdb-XXXXXX";
	char *home = mkdtemp(tmpl);
	nv_err err;

	if (!home) {
		perror("mkdtemp");
		return 1;
	}
	test_rows(home);
	test_list(home);
	test_wal(home);
	test_copy_text();
	test_lock(home);
	nv_remove_tree(home, &err);
	return nv_test_done();
}
