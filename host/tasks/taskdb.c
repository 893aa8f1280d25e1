/* The task state database and the maintain lock (see taskdb.h). Every
 * statement is prepared, bound and run in one function; busy waits are
 * bounded by the busy timeout, so that `maintain --list` can read while a
 * run writes. */
#include "tasks/taskdb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/fsutil.h"
#include "core/sqldb.h"

struct nv_taskdb {
	sqlite3 *db;
	char path[4200]; /* of tasks.db, for messages */
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS tasks("
	" project TEXT NOT NULL, recipe TEXT NOT NULL, name TEXT NOT NULL,"
	" schedule TEXT NOT NULL, last_run REAL NOT NULL DEFAULT 0,"
	" last_slot REAL NOT NULL DEFAULT 0, duration REAL NOT NULL DEFAULT 0,"
	" result TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT '',"
	" next_due REAL NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0,"
	" failures INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY(project, recipe, name));";

static int db_error(nv_taskdb *t, nv_err *err, const char *what)
{
	int code = sqlite3_errcode(t->db);

	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		return nv_err_set(err, NV_EIO,
				  "move that file aside (rename it to "
				  "tasks.db.damaged): the next `navette "
				  "maintain` starts afresh and runs every task "
				  "once",
				  "the task database %s is damaged (%s: %s)",
				  t->path, what, sqlite3_errmsg(t->db));
	return nv_err_set(err, NV_EIO,
			  "check that NAVETTE_HOME is writable and not full",
			  "task database: %s: %s", what, sqlite3_errmsg(t->db));
}

int nv_taskdb_open(nv_taskdb **out, const char *home, int read_only,
		   nv_err *err)
{
	nv_taskdb *t;
	struct stat st;
	const char *step;
	int rc;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (nv_pathf(t->path, sizeof(t->path), "%s/tasks.db", home) != 0) {
		free(t);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "NAVETTE_HOME is too long");
	}
	if (read_only && stat(t->path, &st) != 0) {
		free(t);
		return nv_err_set(err, NV_ENOTFOUND, NULL,
				  "no task has run under %s", home);
	}
	if (!read_only && nv_mkdir_p(home, 0700, err) != 0) {
		free(t);
		return err->code;
	}
	rc = nv_sqldb_open(&t->db, t->path,
			   read_only
				   ? SQLITE_OPEN_READONLY
				   : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			   err);
	if (rc) {
		free(t);
		return rc;
	}
	if (read_only) {
		*out = t;
		return 0;
	}
	if (nv_sqldb_setup(t->db, schema, 0, &step) != SQLITE_OK) {
		rc = db_error(t, err, step);
		nv_taskdb_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

void nv_taskdb_close(nv_taskdb *t)
{
	if (!t)
		return;
	sqlite3_close(t->db);
	free(t);
}

void nv_task_copy_text(char *out, size_t cap, const char *text)
{
	size_t n;

	if (cap == 0)
		return;
	n = text ? strnlen(text, cap) : 0;
	if (n == cap) { /* too long: cut before a continuation byte */
		n = cap - 1;
		while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
			n--;
	}
	if (n)
		memcpy(out, text, n);
	out[n] = '\0';
}

static void column_text(sqlite3_stmt *st, int col, char *out, size_t cap)
{
	nv_task_copy_text(out, cap, (const char *)sqlite3_column_text(st, col));
}

static void read_row(sqlite3_stmt *st, nv_task_state *s)
{
	memset(s, 0, sizeof(*s));
	column_text(st, 0, s->project, sizeof(s->project));
	column_text(st, 1, s->recipe, sizeof(s->recipe));
	column_text(st, 2, s->name, sizeof(s->name));
	column_text(st, 3, s->schedule, sizeof(s->schedule));
	s->last_run = sqlite3_column_double(st, 4);
	s->last_slot = sqlite3_column_double(st, 5);
	s->duration = sqlite3_column_double(st, 6);
	column_text(st, 7, s->result, sizeof(s->result));
	column_text(st, 8, s->message, sizeof(s->message));
	s->next_due = sqlite3_column_double(st, 9);
	s->runs = sqlite3_column_int64(st, 10);
	s->failures = sqlite3_column_int64(st, 11);
}

#define COLUMNS                                                                \
	"project, recipe, name, schedule, last_run, last_slot, duration, "     \
	"result, message, next_due, runs, failures"

static int fits(const char *s, size_t cap)
{
	return s && strnlen(s, cap) < cap;
}

int nv_taskdb_get(nv_taskdb *t, const char *project, const char *recipe,
		  const char *name, nv_task_state *out, int *found, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*found = 0;
	memset(out, 0, sizeof(*out));
	if (!fits(project, sizeof(out->project)) ||
	    !fits(recipe, sizeof(out->recipe)) ||
	    !fits(name, sizeof(out->name)))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "task key too long or missing");
	nv_task_copy_text(out->project, sizeof(out->project), project);
	nv_task_copy_text(out->recipe, sizeof(out->recipe), recipe);
	nv_task_copy_text(out->name, sizeof(out->name), name);
	if (sqlite3_prepare_v2(t->db,
			       "SELECT " COLUMNS " FROM tasks WHERE project=?1"
			       " AND recipe=?2 AND name=?3;",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(t, err, "get");
	sqlite3_bind_text(st, 1, project, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, recipe, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		read_row(st, out);
		*found = 1;
	} else if (rc != SQLITE_DONE) {
		rc = db_error(t, err, "get");
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return 0;
}

int nv_taskdb_put(nv_taskdb *t, const nv_task_state *s, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (!s->project[0] || !s->name[0] ||
	    !fits(s->project, sizeof(s->project)) ||
	    !fits(s->recipe, sizeof(s->recipe)) ||
	    !fits(s->name, sizeof(s->name)) ||
	    !fits(s->schedule, sizeof(s->schedule)) ||
	    !fits(s->result, sizeof(s->result)) ||
	    !fits(s->message, sizeof(s->message)))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "task state: a text is missing or too long");
	if (sqlite3_prepare_v2(t->db,
			       "INSERT OR REPLACE INTO tasks(" COLUMNS ")"
			       " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,"
			       "?12);",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(t, err, "put");
	sqlite3_bind_text(st, 1, s->project, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, s->recipe, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, s->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, s->schedule, -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 5, s->last_run);
	sqlite3_bind_double(st, 6, s->last_slot);
	sqlite3_bind_double(st, 7, s->duration);
	sqlite3_bind_text(st, 8, s->result, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, s->message, -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 10, s->next_due);
	sqlite3_bind_int64(st, 11, s->runs);
	sqlite3_bind_int64(st, 12, s->failures);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(t, err, "put");
	sqlite3_finalize(st);
	return rc;
}

int nv_taskdb_each(nv_taskdb *t, const char *project,
		   int (*fn)(const nv_task_state *st, void *payload),
		   void *payload, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	nv_task_state s;
	int rc;

	if (sqlite3_prepare_v2(t->db,
			       "SELECT " COLUMNS " FROM tasks WHERE ?1 IS NULL"
			       " OR project=?1 ORDER BY project, recipe, name;",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(t, err, "list");
	if (project)
		sqlite3_bind_text(st, 1, project, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		read_row(st, &s);
		if (fn(&s, payload))
			break;
	}
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0
						   : db_error(t, err, "list");
	sqlite3_finalize(st);
	return rc;
}

/* ---- the lock ---------------------------------------------------------- */

int nv_taskdb_lock(const char *home, int *fd_out, long *holder, nv_err *err)
{
	char path[4200], text[32];
	int fd, n;

	*fd_out = -1;
	*holder = 0;
	if (nv_mkdir_p(home, 0700, err) != 0)
		return err->code;
	if (nv_pathf(path, sizeof(path), "%s/maintain.lock", home) != 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "NAVETTE_HOME is too long");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check that NAVETTE_HOME is writable",
					"cannot open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		ssize_t got = pread(fd, text, sizeof(text) - 1, 0);

		close(fd);
		if (e != EWOULDBLOCK)
			return nv_err_set_errno(err, NV_EIO, e, NULL,
						"cannot lock %s", path);
		text[got > 0 ? got : 0] = '\0';
		*holder = strtol(text, NULL, 10);
		return nv_err_set(
			err, NV_EREFUSED,
			"wait for it to end (one `navette maintain` runs at a "
			"time per NAVETTE_HOME), or stop it",
			"another `navette maintain` (pid %ld) is running on %s",
			*holder, home);
	}
	n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
		/* the pid is for people; the lock is what counts */
	}
	*fd_out = fd;
	return 0;
}

void nv_taskdb_unlock(int fd)
{
	if (fd < 0)
		return;
	/* the pid goes before the lock: a reader never sees a stale one */
	if (ftruncate(fd, 0) != 0) {
		/* best effort */
	}
	flock(fd, LOCK_UN);
	close(fd);
}
