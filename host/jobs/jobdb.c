/* The durable job queue over SQLite (see jobdb.h). Every statement is
 * prepared, bound and run in one function (the frequent ones are kept
 * prepared for the handle's life: statement()); busy waits are bounded by
 * the busy timeout so two CLIs and the agent can share the file. */
#include "jobs/jobdb.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "core/clock.h"
#include "core/fsutil.h"
#include "core/jobid.h"
#include "core/sqldb.h"
#include "jobs/record.h"
#include "jobs/runlock.h"

/* Statements kept prepared per handle: a sweep's submission runs the
 * same few a thousand times each, and preparing one costs more than
 * running it. */
#define QUEUE_KEPT_STATEMENTS 24

struct nv_jobdb {
	sqlite3 *db;
	sqlite3_stmt *kept[QUEUE_KEPT_STATEMENTS]; /* the first ones used */
	char path[4200]; /* of jobs.db, for the recovery hint */
	char home[4200]; /* where the submission locks are (runlock.h) */
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS jobs("
	" id TEXT PRIMARY KEY, project TEXT NOT NULL, profile TEXT NOT NULL,"
	" name TEXT NOT NULL, spec TEXT NOT NULL, state TEXT NOT NULL,"
	" phase TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,"
	" pid INTEGER, exit_code INTEGER, cancel_requested INTEGER DEFAULT 0,"
	" failure_phase TEXT, failure_reason TEXT, failure_hint TEXT,"
	" record_url TEXT, backend TEXT NOT NULL DEFAULT 'local',"
	" remote_id TEXT, submit_key TEXT, attempt INTEGER, submitter TEXT,"
	" unaudited INTEGER);"
	"CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, created);"
	"CREATE TABLE IF NOT EXISTS phases("
	" job_id TEXT NOT NULL, phase TEXT NOT NULL, at REAL NOT NULL,"
	" PRIMARY KEY(job_id, phase));";

/* A database SQLite cannot read (not a database, a damaged page) is not
 * fixed by retrying: the hint says what to check, how to start again and
 * what is lost. The job folders go aside with it: a new, empty database
 * beside them would be taken for a lost one (queue_lost_check). */
#define QUEUE_RECOVERY_HINT                                                    \
	"check the disk (a full or failing disk, a copy or a sync tool "       \
	"writing to NAVETTE_HOME while navette ran); restore jobs.db from a "  \
	"backup if you have one, or else move it aside (rename it to "         \
	"jobs.db.damaged) with the folder NAVETTE_HOME/jobs (to "              \
	"jobs.damaged): the next command starts an empty job database. "       \
	"The jobs are then no longer listed or followed; their folders "       \
	"(launcher, log) and what they published in the store "                \
	"(outputs, " NV_RECORD_LOG ", " NV_RECORD_RUN_RECORD ") stay"

static int db_damaged(nv_jobdb *q, nv_err *err, const char *what)
{
	return nv_err_set(err, NV_EIO, QUEUE_RECOVERY_HINT,
			  "the job database %s is damaged (%s: %s)", q->path,
			  what, sqlite3_errmsg(q->db));
}

static int db_error(nv_jobdb *q, nv_err *err, const char *what)
{
	int code = sqlite3_errcode(q->db);

	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		return db_damaged(q, err, what);
	return nv_err_set(err, NV_EIO,
			  "check that NAVETTE_HOME is writable and not full",
			  "job database: %s: %s", what, sqlite3_errmsg(q->db));
}

static int pragma_text(nv_jobdb *q, const char *name, char *out, size_t cap)
{
	char sql[64];
	sqlite3_stmt *st = NULL;
	int rc = -1;

	snprintf(sql, sizeof(sql), "PRAGMA %s;", name);
	if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		rc = nv_pathf(out, cap, "%s", v ? (const char *)v : "") == 0
			     ? 0
			     : -1;
	}
	sqlite3_finalize(st);
	return rc;
}

int nv_jobdb_durability(nv_jobdb *q, char *out, size_t cap, nv_err *err)
{
	char journal[32], sync[32], full[32];

	if (pragma_text(q, "journal_mode", journal, sizeof(journal)) != 0 ||
	    pragma_text(q, "synchronous", sync, sizeof(sync)) != 0 ||
	    pragma_text(q, "fullfsync", full, sizeof(full)) != 0)
		return db_error(q, err, "durability");
	if (nv_pathf(out, cap, "journal_mode=%s synchronous=%s fullfsync=%s",
		     journal, sync, full) != 0)
		return nv_err_set(err, NV_EINVAL, NULL, "buffer too small");
	return 0;
}

/* SQLite's quick_check at each open (0.1 to 0.3 s for 5,000 jobs of
 * 8 KiB specs, a 41 MB file; the agent opens once): a damaged page is
 * named with the recovery steps before any command reads a wrong row
 * from it or writes more into it. */
static int queue_quick_check(nv_jobdb *q, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	char found[512] = "";
	int rc;

	if (sqlite3_prepare_v2(q->db, "PRAGMA quick_check(1);", -1, &st,
			       NULL) != SQLITE_OK)
		return db_error(q, err, "check");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		snprintf(found, sizeof(found), "%s", v ? (const char *)v : "?");
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW) {
		int code = sqlite3_errcode(q->db);
		if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
			return 0; /* a writer holds it: the reads that follow
				   * still see damage (db_error) */
		return db_damaged(q, err, "check");
	}
	if (strcmp(found, "ok") != 0)
		return nv_err_set(err, NV_EIO, QUEUE_RECOVERY_HINT,
				  "the job database %s is damaged (SQLite's "
				  "check: %s)",
				  q->path, found);
	return 0;
}

/* A database that lists fewer local jobs than NAVETTE_HOME/jobs holds
 * folders of started jobs (the agent makes one only for a job it took
 * from the database, and `navette gc` removes a row only after its folder)
 * was deleted, emptied or lost its write-ahead log: never taken for an
 * empty queue. */
static int queue_lost_check(nv_jobdb *q, const char *home, nv_err *err)
{
	char dir[4200];
	sqlite3_stmt *st = NULL;
	long long rows = -1, folders = 0;
	DIR *d;
	struct dirent *e;
	nv_err ignored;

	if (nv_pathf(dir, sizeof(dir), "%s/jobs", home) != 0 ||
	    !(d = opendir(dir)))
		return 0;
	while ((e = readdir(d))) {
		char launcher[300];
		struct stat info;
		/* a folder the agent started a job in (its launcher.sh) */
		if (nv_job_id_check(e->d_name, &ignored) == 0 &&
		    snprintf(launcher, sizeof(launcher), "%s/launcher.sh",
			     e->d_name) < (int)sizeof(launcher) &&
		    fstatat(dirfd(d), launcher, &info, AT_SYMLINK_NOFOLLOW) ==
			    0)
			folders++;
	}
	closedir(d);
	if (folders == 0)
		return 0;
	if (sqlite3_prepare_v2(q->db,
			       "SELECT count(*) FROM jobs WHERE "
			       "backend='local';",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		rows = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rows < 0)
		return db_error(q, err, "count");
	if (rows >= folders)
		return 0;
	return nv_err_set(
		err, NV_EIO,
		"restore jobs.db (with jobs.db-wal, when there was one) from a "
		"backup if you have one; otherwise move the folder "
		"NAVETTE_HOME/jobs aside (rename it to jobs.lost): the next "
		"command starts with an empty queue. The lost jobs' logs stay "
		"in that folder, and what they published "
		"(outputs, " NV_RECORD_LOG ", " NV_RECORD_RUN_RECORD
		") stays in the store",
		"the job database %s lists %lld local job%s, but %s holds %lld "
		"job folders: the database was deleted, emptied or lost its "
		"write-ahead log (jobs.db-wal), and its jobs are not an empty "
		"queue",
		q->path, rows, rows == 1 ? "" : "s", dir, folders);
}

int nv_jobdb_open(nv_jobdb **out, const char *home, nv_err *err)
{
	char path[4200];
	nv_jobdb *q;

	*out = NULL;
	if (nv_mkdir_p(home, 0700, err) != 0)
		return err->code;
	snprintf(path, sizeof(path), "%s/jobs.db", home);
	q = calloc(1, sizeof(*q));
	if (!q)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	memcpy(q->path, path, sizeof(q->path));
	snprintf(q->home, sizeof(q->home), "%s", home);
	int rc = nv_sqldb_open(&q->db, path,
			       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				       SQLITE_OPEN_FULLMUTEX,
			       err);
	if (rc) {
		free(q);
		return rc;
	}
	/* a new database keeps no free page (auto_vacuum=FULL: each commit
	 * gives them back): every page is one quick_check reads, so damage
	 * lands where it is seen (on an older database, a no-op) */
	const char *step;
	if (nv_sqldb_setup(q->db, schema, 1, &step) != SQLITE_OK) {
		int code = db_error(q, err, step);
		nv_jobdb_close(q);
		return code;
	}
	/* A database of an earlier version lacks the remote backends'
	 * columns: added once (another process may be adding them too, so a
	 * duplicate column is fine). */
	static const char *const added[] = {
		"ALTER TABLE jobs ADD COLUMN backend TEXT NOT NULL"
		" DEFAULT 'local'",
		"ALTER TABLE jobs ADD COLUMN remote_id TEXT",
		"ALTER TABLE jobs ADD COLUMN submit_key TEXT",
		"ALTER TABLE jobs ADD COLUMN attempt INTEGER",
		"ALTER TABLE jobs ADD COLUMN submitter TEXT",
		"ALTER TABLE jobs ADD COLUMN unaudited INTEGER",
		NULL};
	for (const char *const *a = added; *a; a++) {
		char *msg = NULL;
		if (sqlite3_exec(q->db, *a, NULL, NULL, &msg) != SQLITE_OK &&
		    !(msg && strstr(msg, "duplicate column"))) {
			int code = nv_err_set(err, NV_EIO, "check NAVETTE_HOME",
					      "job database: upgrade: %s",
					      msg ? msg : "?");
			sqlite3_free(msg);
			nv_jobdb_close(q);
			return code;
		}
		sqlite3_free(msg);
	}
	/* a submission's look-up of earlier, unanswered ones (by name) */
	if (sqlite3_exec(q->db,
			 "CREATE INDEX IF NOT EXISTS jobs_by_name ON "
			 "jobs(profile, name, created);"
			 "CREATE INDEX IF NOT EXISTS jobs_by_submit_key ON "
			 "jobs(submit_key) WHERE submit_key IS NOT NULL;",
			 NULL, NULL, NULL) != SQLITE_OK) {
		int code = db_error(q, err, "schema");
		nv_jobdb_close(q);
		return code;
	}
	if (queue_quick_check(q, err) != 0 ||
	    queue_lost_check(q, home, err) != 0) {
		nv_jobdb_close(q);
		return err->code;
	}
	*out = q;
	return 0;
}

void nv_jobdb_close(nv_jobdb *q)
{
	if (!q)
		return;
	for (int i = 0; i < QUEUE_KEPT_STATEMENTS; i++)
		sqlite3_finalize(q->kept[i]);
	sqlite3_close(q->db);
	free(q);
}

/* A statement of sql, ready to bind: one kept from an earlier call with
 * the same text, else a new one, kept while there is room. Give it back
 * with statement_done(). NULL when it cannot be prepared (the message is
 * the handle's). A handle is used by one thread at a time (the CLI's Lua
 * state, the agent's loop), and no kept statement is used twice at once:
 * none is open across a call that could ask for it again. */
static sqlite3_stmt *statement(nv_jobdb *q, const char *sql)
{
	sqlite3_stmt *st = NULL;
	unsigned int flags = 0;
	int i;

	for (i = 0; i < QUEUE_KEPT_STATEMENTS && q->kept[i]; i++)
		if (strcmp(sqlite3_sql(q->kept[i]), sql) == 0)
			return q->kept[i];
	if (i < QUEUE_KEPT_STATEMENTS)
		flags = SQLITE_PREPARE_PERSISTENT;
	if (sqlite3_prepare_v3(q->db, sql, -1, flags, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	if (i < QUEUE_KEPT_STATEMENTS)
		q->kept[i] = st;
	return st;
}

/* Ends a use of st: a kept one is reset (which ends its read) and its
 * parameters cleared, another finalized. */
static void statement_done(nv_jobdb *q, sqlite3_stmt *st)
{
	for (int i = 0; i < QUEUE_KEPT_STATEMENTS && q->kept[i]; i++) {
		if (q->kept[i] == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return;
		}
	}
	sqlite3_finalize(st);
}

/* Runs one statement with parameters described by fmt: 's' text (may be
 * NULL), 'd' double, 'i' int, 'l' long. */
static int exec_bound(nv_jobdb *q, nv_err *err, const char *sql,
		      const char *fmt, ...)
{
	sqlite3_stmt *st = statement(q, sql);
	va_list ap;
	int rc;

	if (!st)
		return db_error(q, err, "prepare");
	va_start(ap, fmt);
	for (int i = 0; fmt[i]; i++) {
		switch (fmt[i]) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (s)
				sqlite3_bind_text(st, i + 1, s, -1,
						  SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(st, i + 1);
			break;
		}
		case 'd':
			sqlite3_bind_double(st, i + 1, va_arg(ap, double));
			break;
		case 'i': sqlite3_bind_int(st, i + 1, va_arg(ap, int)); break;
		case 'l':
			sqlite3_bind_int64(st, i + 1,
					   (sqlite3_int64)va_arg(ap, long));
			break;
		}
	}
	va_end(ap);
	rc = sqlite3_step(st);
	statement_done(q, st);
	if (rc == SQLITE_CONSTRAINT)
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "job database: duplicate entry");
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return db_error(q, err, "write");
	return 0;
}

int nv_jobdb_insert(nv_jobdb *q, const char *id, const char *project,
		    const char *profile, const char *name,
		    const char *spec_json, const char *backend, double at,
		    nv_err *err)
{
	return nv_jobdb_insert_keyed(q, id, project, profile, name, spec_json,
				     backend, NULL, at, err);
}

int nv_jobdb_insert_keyed(nv_jobdb *q, const char *id, const char *project,
			  const char *profile, const char *name,
			  const char *spec_json, const char *backend,
			  const char *submit_key, double at, nv_err *err)
{
	char self[NV_RUNLOCK_TOKEN_LEN + 1] = "";
	int rc;

	if (nv_job_id_check(id, err))
		return err->code;
	/* the lock that tells a later run this submission is still going,
	 * taken before the row says so */
	if (submit_key && (rc = nv_runlock_token(q->home, self, err)))
		return rc;
	/* the row of an interrupted submission of the same key is completed
	 * in place (its spec replaced), never inserted twice; any other row
	 * with this id makes the insert a duplicate */
	if (submit_key) {
		rc = exec_bound(q, err,
				"UPDATE jobs SET spec=?, updated=?, submitter=?"
				" WHERE id=? AND submit_key=?"
				" AND remote_id IS NULL AND state='queued'",
				"sdsss", spec_json, at, self, id, submit_key);
		if (rc)
			return rc;
		if (sqlite3_changes(q->db) > 0)
			return 0;
	}
	/* a keyed row is held (the agent does not start it) until its audit
	 * line is written: nv_jobdb_audited() */
	rc = exec_bound(q, err,
			"INSERT INTO jobs(id, project, profile, name, spec,"
			" state, phase, created, updated, backend, submit_key,"
			" submitter, unaudited)"
			" VALUES(?,?,?,?,?,'queued','submitted',?,?,?,?,?,?)",
			"sssssddssss", id, project, profile, name, spec_json,
			at, at, backend ? backend : "local", submit_key,
			submit_key ? self : NULL, submit_key ? "1" : NULL);
	if (rc)
		return rc;
	return exec_bound(
		q, err, "INSERT OR IGNORE INTO phases VALUES(?,'submitted',?)",
		"sd", id, at);
}

int nv_jobdb_audited(nv_jobdb *q, const char *id, nv_err *err)
{
	return exec_bound(q, err, "UPDATE jobs SET unaudited=NULL WHERE id=?",
			  "s", id);
}

int nv_jobdb_submitted(nv_jobdb *q, const char *id, nv_err *err)
{
	return exec_bound(q, err,
			  "UPDATE jobs SET submit_key=NULL, unaudited=NULL"
			  " WHERE id=?",
			  "s", id);
}

int nv_jobdb_begin(nv_jobdb *q, nv_err *err)
{
	if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return db_error(q, err, "begin");
	return 0;
}

int nv_jobdb_commit(nv_jobdb *q, nv_err *err)
{
	if (sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int rc = db_error(q, err, "commit");
		nv_jobdb_rollback(q);
		return rc;
	}
	return 0;
}

void nv_jobdb_rollback(nv_jobdb *q)
{
	if (!sqlite3_get_autocommit(q->db))
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
}

int nv_jobdb_phase(nv_jobdb *q, const char *id, const char *phase, double at,
		   nv_err *err)
{
	if (nv_job_id_check(id, err))
		return err->code;
	int rc =
		exec_bound(q, err, "INSERT OR IGNORE INTO phases VALUES(?,?,?)",
			   "ssd", id, phase, at);
	if (rc)
		return rc;
	return exec_bound(q, err,
			  "UPDATE jobs SET phase=?, updated=? WHERE id=?",
			  "sds", phase, at, id);
}

static char *dup_column(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? strdup((const char *)t) : NULL;
}

/* Local rows in state whose id breaks the grammar (written by hand, or
 * by something other than navette) are failed in place, by rowid, so that
 * the agent never makes a folder of their id. Returns how many. */
static int fail_bad_ids(nv_jobdb *q, const char *state)
{
	sqlite3_int64 bad[64];
	sqlite3_stmt *st = NULL;
	nv_err ignored;
	int n = 0;

	if (sqlite3_prepare_v2(q->db,
			       "SELECT rowid, id FROM jobs WHERE state=?"
			       " AND backend='local'",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
	while (n < 64 && sqlite3_step(st) == SQLITE_ROW)
		if (nv_job_id_check((const char *)sqlite3_column_text(st, 1),
				    &ignored))
			bad[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	for (int i = 0; i < n; i++)
		if (exec_bound(
			    q, &ignored,
			    "UPDATE jobs SET state='failed', phase='failed',"
			    " failure_phase='accepted', failure_reason='its id"
			    " is not a job id navette makes: not run',"
			    " failure_hint='submit it again with navette run',"
			    " updated=? WHERE rowid=?",
			    "dl", nv_now(), (long)bad[i]) != 0)
			return 0; /* (a read-only database: no loop) */
	return n;
}

/* The ids a job waits for: its spec's "after" list (a spec that is not
 * JSON waits for none). Used inside the statements below, with `row` the
 * job's table name. */
#define AFTER_OF(row)                                                          \
	"json_each(CASE WHEN json_valid(" row ".spec) THEN " row ".spec ELSE " \
	"'{}' END, '$.after')"

/* Queued local jobs that wait for a job which failed, was cancelled or is
 * not in the database end cancelled at `accepted`, the reason naming that
 * job; in turns, so that a chain of them ends whole. */
static int cancel_orphans(nv_jobdb *q, nv_err *err)
{
	static const char sql[] =
		"UPDATE jobs SET state='cancelled', failure_phase='accepted',"
		" failure_reason=(SELECT CASE WHEN p.id IS NULL THEN"
		"  'it runs after job ' || a.value || ', which is not in the"
		" job database' ELSE 'it runs after ' || p.name || ' (' ||"
		" p.id || '), which ended ' || p.state END"
		"  FROM " AFTER_OF(
			"jobs") " a LEFT JOIN jobs p ON p.id=a.value"
				"  WHERE p.id IS NULL OR p.state IN "
				"('failed','cancelled')"
				"  LIMIT 1),"
				" failure_hint='see why that job ended "
				"(navette status), then"
				" run the recipe again',"
				" updated=?"
				" WHERE state='queued' AND backend='local' AND "
				"EXISTS(SELECT 1"
				"  FROM " AFTER_OF(
					"jobs") " a LEFT JOIN jobs p ON "
						"p.id=a.value"
						"  WHERE p.id IS NULL OR "
						"p.state IN "
						"('failed','cancelled'))";
	int rc;

	for (int turn = 0; turn < 1000; turn++) {
		rc = exec_bound(q, err, sql, "d", nv_now());
		if (rc || sqlite3_changes(q->db) == 0)
			return rc;
	}
	return 0;
}

int nv_jobdb_claim(nv_jobdb *q, char **id_out, char **spec_out, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*id_out = *spec_out = NULL;
	if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return db_error(q, err, "begin");
	while (fail_bad_ids(q, "queued") == 64)
		;
	rc = cancel_orphans(q, err);
	if (rc)
		goto rollback;
	/* the oldest queued job whose every "after" job has succeeded */
	if (sqlite3_prepare_v2(
		    q->db,
		    "SELECT id, spec FROM jobs j WHERE state='queued'"
		    " AND backend='local' AND unaudited IS NULL"
		    " AND NOT EXISTS(SELECT 1"
		    " FROM " AFTER_OF(
			    "j") " a LEFT JOIN jobs p"
				 " ON p.id=a.value WHERE p.state IS NOT"
				 " 'succeeded') ORDER BY created LIMIT 1",
		    -1, &st, NULL) != SQLITE_OK) {
		rc = db_error(q, err, "prepare");
		goto rollback;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id_out = dup_column(st, 0);
		*spec_out = dup_column(st, 1);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = db_error(q, err, "read");
		goto rollback;
	}
	if (*id_out) {
		rc = exec_bound(q, err,
				"UPDATE jobs SET state='running' WHERE id=?",
				"s", *id_out);
		if (rc)
			goto rollback;
	}
	if (sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_error(q, err, "commit");
		goto rollback;
	}
	return 0;
rollback:
	sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	free(*id_out);
	free(*spec_out);
	*id_out = *spec_out = NULL;
	return rc;
}

int nv_jobdb_set_remote(nv_jobdb *q, const char *id, const char *remote_id,
			const char *state, nv_err *err)
{
	if (nv_job_id_check(id, err))
		return err->code;
	if (remote_id &&
	    exec_bound(q, err, "UPDATE jobs SET remote_id=? WHERE id=?", "ss",
		       remote_id, id))
		return err->code;
	if (state && exec_bound(q, err,
				"UPDATE jobs SET state=?, updated=? WHERE id=?"
				" AND state NOT IN"
				" ('succeeded','failed','cancelled')",
				"sds", state, nv_now(), id))
		return err->code;
	return 0;
}

int nv_jobdb_set_pid(nv_jobdb *q, const char *id, long pid, nv_err *err)
{
	if (nv_job_id_check(id, err))
		return err->code;
	return exec_bound(q, err, "UPDATE jobs SET pid=? WHERE id=?", "ls", pid,
			  id);
}

int nv_jobdb_set_attempt(nv_jobdb *q, const char *id, int attempt, nv_err *err)
{
	if (nv_job_id_check(id, err))
		return err->code;
	return exec_bound(q, err, "UPDATE jobs SET attempt=? WHERE id=?", "ls",
			  (long)attempt, id);
}

int nv_jobdb_finish(nv_jobdb *q, const char *id, const char *state,
		    int exit_code, const char *failure_phase,
		    const char *failure_reason, const char *failure_hint,
		    const char *record_url, nv_err *err)
{
	double now = nv_now();
	int rc;

	if (nv_job_id_check(id, err))
		return err->code;
	rc = exec_bound(q, err,
			"UPDATE jobs SET state=?, failure_phase=?,"
			" failure_reason=?, failure_hint=?, record_url=?,"
			" updated=? WHERE id=?",
			"sssssds", state, failure_phase, failure_reason,
			failure_hint, record_url, now, id);
	if (rc)
		return rc;
	if (exit_code > -1000)
		rc = exec_bound(q, err,
				"UPDATE jobs SET exit_code=? WHERE id=?", "is",
				exit_code, id);
	return rc;
}

/* Resolves a full id or a unique prefix into out (64+1 bytes). */
static int resolve_id(nv_jobdb *q, const char *id, char *out, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	char pattern[80];
	int found = 0;

	/* (the grammar also keeps LIKE's '%' and '_' out); no job can have
	 * such a name: not found, saying why */
	if (nv_job_id_prefix_check(id, err)) {
		if (err)
			err->code = NV_ENOTFOUND;
		return NV_ENOTFOUND;
	}
	snprintf(pattern, sizeof(pattern), "%s%%", id);
	if (sqlite3_prepare_v2(q->db,
			       "SELECT id FROM jobs WHERE id=?1 OR id LIKE ?2"
			       " ORDER BY (id=?1) DESC LIMIT 2",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, pattern, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *got = (const char *)sqlite3_column_text(st, 0);
		if (found == 0) {
			snprintf(out, 65, "%s", got ? got : "");
			if (got && strcmp(got, id) == 0) {
				found = 1;
				break;
			}
		}
		found++;
	}
	sqlite3_finalize(st);
	if (found == 0)
		return nv_err_set(err, NV_ENOTFOUND,
				  "list jobs with `navette jobs`",
				  "no job '%s'", id);
	if (found > 1)
		return nv_err_set(err, NV_EINVAL,
				  "give more characters of the id",
				  "'%s' matches several jobs", id);
	return 0;
}

int nv_jobdb_cancel(nv_jobdb *q, const char *id, char *state_out, nv_err *err)
{
	char full[65];
	int rc = resolve_id(q, id, full, err);

	if (rc)
		return rc;
	if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return db_error(q, err, "begin");
	rc = exec_bound(q, err,
			"UPDATE jobs SET state='cancelled',"
			" failure_phase=phase,"
			" failure_reason='cancelled before it started',"
			" failure_hint='submit it again with navette run'"
			" WHERE id=? AND state='queued'",
			"s", full);
	if (!rc)
		rc = exec_bound(q, err,
				"UPDATE jobs SET cancel_requested=1"
				" WHERE id=? AND state='running'",
				"s", full);
	if (rc) {
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL);

	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(q->db, "SELECT state FROM jobs WHERE id=?", -1,
			       &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	sqlite3_bind_text(st, 1, full, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		snprintf(state_out, 16, "%s",
			 s && strcmp(s, "running") == 0 ? "cancelling"
							: (s ? s : "?"));
	}
	sqlite3_finalize(st);
	return 0;
}

int nv_jobdb_delete(nv_jobdb *q, const char *id, nv_err *err)
{
	int rc;

	if (nv_job_id_check(id, err))
		return err->code;
	if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return db_error(q, err, "begin");
	/* (phases first: the job's state is read in the same transaction) */
	rc = exec_bound(q, err,
			"DELETE FROM phases WHERE job_id=? AND EXISTS(SELECT 1"
			" FROM jobs WHERE id=?1 AND state IN"
			" ('succeeded','failed','cancelled'))",
			"s", id);
	if (!rc)
		rc = exec_bound(q, err,
				"DELETE FROM jobs WHERE id=? AND state IN"
				" ('succeeded','failed','cancelled')",
				"s", id);
	if (!rc && sqlite3_changes(q->db) == 0) {
		sqlite3_stmt *st = NULL;
		int found = 0;

		if (sqlite3_prepare_v2(q->db, "SELECT 1 FROM jobs WHERE id=?",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
			found = sqlite3_step(st) == SQLITE_ROW;
		}
		sqlite3_finalize(st);
		rc = found ? nv_err_set(
				     err, NV_EREFUSED,
				     "cancel it first, or wait for it to end",
				     "job '%s' has not finished", id)
			   : nv_err_set(err, NV_ENOTFOUND,
					"list jobs with `navette jobs`",
					"no job '%s'", id);
	}
	if (rc) {
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	if (sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_error(q, err, "commit");
		nv_jobdb_rollback(q);
	}
	return rc;
}

int nv_jobdb_cancel_requested(nv_jobdb *q, const char *id, int *requested,
			      nv_err *err)
{
	sqlite3_stmt *st = NULL;

	*requested = 0;
	if (nv_job_id_check(id, err))
		return err->code;
	if (sqlite3_prepare_v2(q->db,
			       "SELECT cancel_requested FROM jobs WHERE id=?",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW)
		*requested = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return 0;
}

static void add_text(cJSON *obj, const char *key, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	if (t)
		cJSON_AddStringToObject(obj, key, (const char *)t);
	else
		cJSON_AddNullToObject(obj, key);
}

static const char job_columns[] =
	"id, name, project, profile, state, phase, created, updated, pid,"
	" exit_code, failure_phase, failure_reason, failure_hint, record_url,"
	" spec, backend, remote_id, attempt,"
	" CASE WHEN json_valid(spec) THEN json_extract(spec, '$.run') END";

static cJSON *row_to_json(nv_jobdb *q, sqlite3_stmt *st, int with_spec)
{
	cJSON *o = cJSON_CreateObject();
	char ts[32];

	add_text(o, "id", st, 0);
	add_text(o, "name", st, 1);
	add_text(o, "project", st, 2);
	add_text(o, "profile", st, 3);
	add_text(o, "state", st, 4);
	add_text(o, "phase", st, 5);
	nv_iso8601(sqlite3_column_double(st, 6), ts);
	cJSON_AddStringToObject(o, "created", ts);
	nv_iso8601(sqlite3_column_double(st, 7), ts);
	cJSON_AddStringToObject(o, "updated", ts);
	if (sqlite3_column_type(st, 8) != SQLITE_NULL)
		cJSON_AddNumberToObject(o, "pid", sqlite3_column_int64(st, 8));
	if (sqlite3_column_type(st, 9) != SQLITE_NULL)
		cJSON_AddNumberToObject(o, "exit_code",
					sqlite3_column_int(st, 9));
	else
		cJSON_AddNullToObject(o, "exit_code");
	if (sqlite3_column_type(st, 10) != SQLITE_NULL) {
		cJSON *f = cJSON_AddObjectToObject(o, "failure");
		add_text(f, "phase", st, 10);
		add_text(f, "reason", st, 11);
		add_text(f, "hint", st, 12);
	} else {
		cJSON_AddNullToObject(o, "failure");
	}
	add_text(o, "record_url", st, 13);
	add_text(o, "backend", st, 15);
	add_text(o, "remote_id", st, 16);
	if (sqlite3_column_type(st, 17) != SQLITE_NULL)
		cJSON_AddNumberToObject(o, "attempt",
					sqlite3_column_int(st, 17));
	/* the run the job belongs to, also in lists without the spec */
	if (sqlite3_column_type(st, 18) == SQLITE_TEXT)
		add_text(o, "run", st, 18);
	if (with_spec) {
		const char *spec = (const char *)sqlite3_column_text(st, 14);
		cJSON *parsed = spec ? cJSON_Parse(spec) : NULL;
		if (parsed)
			cJSON_AddItemToObject(o, "spec", parsed);
	}

	/* phases with timestamps, in the order they happened */
	sqlite3_stmt *ph = statement(q, "SELECT phase, at FROM phases WHERE"
					" job_id=? ORDER BY at, rowid");
	cJSON *arr = cJSON_AddArrayToObject(o, "phases");
	if (ph) {
		sqlite3_bind_text(ph, 1,
				  (const char *)sqlite3_column_text(st, 0), -1,
				  SQLITE_TRANSIENT);
		while (sqlite3_step(ph) == SQLITE_ROW) {
			cJSON *p = cJSON_CreateObject();
			add_text(p, "phase", ph, 0);
			nv_iso8601(sqlite3_column_double(ph, 1), ts);
			cJSON_AddStringToObject(p, "at", ts);
			cJSON_AddItemToArray(arr, p);
		}
		statement_done(q, ph);
	}
	return o;
}

int nv_jobdb_get_json(nv_jobdb *q, const char *id, char **json_out, nv_err *err)
{
	char full[65];
	char sql[512];
	sqlite3_stmt *st = NULL;
	int rc = resolve_id(q, id, full, err);

	*json_out = NULL;
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql), "SELECT %s FROM jobs WHERE id=?",
		 job_columns);
	if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	sqlite3_bind_text(st, 1, full, -1, SQLITE_TRANSIENT);
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return db_error(q, err, "read");
		return nv_err_set(err, NV_ENOTFOUND, NULL, "no job '%s'", id);
	}
	cJSON *o = row_to_json(q, st, 1);
	sqlite3_finalize(st);
	*json_out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!*json_out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_jobdb_run_json(nv_jobdb *q, const char *run, char **run_out,
		      char **json_out, nv_err *err)
{
	sqlite3_stmt *st = NULL;
	cJSON *ids = NULL;
	char *found = NULL;
	size_t n = run ? strlen(run) : 0;
	int rc, ambiguous = 0;

	*json_out = *run_out = NULL;
	/* a run id or a prefix of one: the job id grammar's characters only,
	 * so nothing in it is a LIKE wildcard */
	for (size_t i = 0; i < n; i++)
		if (!((run[i] >= 'a' && run[i] <= 'z') ||
		      (run[i] >= '0' && run[i] <= '9') || run[i] == '-'))
			n = 0;
	if (n == 0 || n > 64)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "'%.80s' is not a run id", run ? run : "");
	if (sqlite3_prepare_v2(
		    q->db,
		    "SELECT id, json_extract(spec, '$.run') FROM jobs"
		    " WHERE json_valid(spec) AND json_extract(spec, '$.run')"
		    " LIKE ? || '%' ORDER BY created, rowid",
		    -1, &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
	ids = cJSON_CreateArray();
	while (ids && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		const char *r = (const char *)sqlite3_column_text(st, 1);
		if (!id || !r)
			continue;
		if (!found)
			found = strdup(r);
		else if (strcmp(found, r) != 0)
			ambiguous = 1;
		cJSON_AddItemToArray(ids, cJSON_CreateString(id));
	}
	sqlite3_finalize(st);
	if (!ids) {
		free(found);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	if (rc != SQLITE_DONE)
		rc = db_error(q, err, "read");
	else if (!found)
		rc = nv_err_set(err, NV_ENOTFOUND, NULL, "no run '%s'", run);
	else if (ambiguous)
		rc = nv_err_set(err, NV_EINVAL, "give more of the run id",
				"'%s' starts more than one run id", run);
	else if (!(*json_out = cJSON_PrintUnformatted(ids)))
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	else
		rc = 0;
	cJSON_Delete(ids);
	if (rc)
		free(found);
	else
		*run_out = found;
	return rc;
}

int nv_jobdb_list_json(nv_jobdb *q, int limit, char **json_out, nv_err *err)
{
	char sql[512];
	sqlite3_stmt *st = NULL;
	cJSON *arr = cJSON_CreateArray();
	int rc;

	*json_out = NULL;
	snprintf(sql, sizeof(sql),
		 "SELECT %s FROM jobs ORDER BY created DESC, id LIMIT ?",
		 job_columns);
	if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) {
		cJSON_Delete(arr);
		return db_error(q, err, "prepare");
	}
	sqlite3_bind_int(st, 1, limit > 0 ? limit : 50);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		cJSON_AddItemToArray(arr, row_to_json(q, st, 0));
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) { /* a damaged page: not a shorter list */
		cJSON_Delete(arr);
		return db_error(q, err, "read");
	}
	*json_out = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	if (!*json_out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_jobdb_active(nv_jobdb *q, int *queued, int *running, nv_err *err)
{
	sqlite3_stmt *st = NULL;

	*queued = *running = 0;
	if (sqlite3_prepare_v2(q->db,
			       "SELECT state, count(*) FROM jobs WHERE state IN"
			       " ('queued','running') AND backend='local'"
			       " AND unaudited IS NULL GROUP BY state",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		if (s && strcmp(s, "queued") == 0)
			*queued = sqlite3_column_int(st, 1);
		else
			*running = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	return 0;
}

int nv_jobdb_each_running(nv_jobdb *q,
			  void (*fn)(const char *id, const char *spec, long pid,
				     void *payload),
			  void *payload, nv_err *err)
{
	sqlite3_stmt *st = NULL;

	while (fail_bad_ids(q, "running") == 64)
		;
	if (sqlite3_prepare_v2(q->db,
			       "SELECT id, spec, pid FROM jobs"
			       " WHERE state='running' AND backend='local'",
			       -1, &st, NULL) != SQLITE_OK)
		return db_error(q, err, "prepare");
	while (sqlite3_step(st) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(st, 0),
		   (const char *)sqlite3_column_text(st, 1),
		   sqlite3_column_type(st, 2) == SQLITE_NULL
			   ? 0
			   : (long)sqlite3_column_int64(st, 2),
		   payload);
	sqlite3_finalize(st);
	return 0;
}

int nv_jobdb_pending_remote(nv_jobdb *q, const char *backend,
			    const char *profile, const char *name,
			    char **json_out, nv_err *err)
{
	char sql[512];
	sqlite3_stmt *st = NULL;
	cJSON *arr = cJSON_CreateArray();

	*json_out = NULL;
	snprintf(sql, sizeof(sql),
		 "SELECT %s FROM jobs WHERE backend=? AND profile=? AND name=?"
		 " AND remote_id IS NULL AND state='queued'"
		 " ORDER BY created DESC LIMIT 10",
		 job_columns);
	if (!arr || !(st = statement(q, sql))) {
		cJSON_Delete(arr);
		return db_error(q, err, "prepare");
	}
	sqlite3_bind_text(st, 1, backend, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, profile, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW)
		cJSON_AddItemToArray(arr, row_to_json(q, st, 1));
	statement_done(q, st);
	*json_out = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	if (!*json_out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

/* The id of the newest row of submit_key that this process may adopt:
 * its submitter is this process or gone (runlock.h), or it has none (a
 * row of an older navette). *id_out NULL when none may. */
static int adoptable(nv_jobdb *q, const char *submit_key, const char *self,
		     char **id_out, nv_err *err)
{
	sqlite3_stmt *st =
		statement(q, "SELECT id, submitter FROM jobs WHERE submit_key=?"
			     " AND state NOT IN ('cancelled','failed')"
			     " ORDER BY created DESC LIMIT 64");
	int rc;

	*id_out = NULL;
	if (!st)
		return db_error(q, err, "prepare");
	sqlite3_bind_text(st, 1, submit_key, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *by = (const char *)sqlite3_column_text(st, 1);
		if (!by || strcmp(by, self) == 0 ||
		    nv_runlock_gone(q->home, by)) {
			*id_out = dup_column(st, 0);
			break;
		}
	}
	statement_done(q, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(q, err, "read");
	if (rc == SQLITE_ROW && !*id_out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_jobdb_interrupted(nv_jobdb *q, const char *submit_key, char **json_out,
			 nv_err *err)
{
	char self[NV_RUNLOCK_TOKEN_LEN + 1];
	char *id = NULL;
	int rc, own = sqlite3_get_autocommit(q->db);

	*json_out = NULL;
	if ((rc = nv_runlock_token(q->home, self, err)))
		return rc;
	/* looked up and taken in one write transaction, so that two runs
	 * never adopt the same row */
	if (own && sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
			   SQLITE_OK)
		return db_error(q, err, "begin");
	if ((rc = adoptable(q, submit_key, self, &id, err)) == 0 && id)
		rc = exec_bound(q, err,
				"UPDATE jobs SET submitter=? WHERE id=?", "ss",
				self, id);
	if (own) {
		if (rc == 0 && sqlite3_exec(q->db, "COMMIT", NULL, NULL,
					    NULL) != SQLITE_OK)
			rc = db_error(q, err, "commit");
		if (rc)
			sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (rc == 0 && id)
		rc = nv_jobdb_get_json(q, id, json_out, err);
	free(id);
	return rc;
}
