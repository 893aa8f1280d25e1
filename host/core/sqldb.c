/* See sqldb.h. */
#include "core/sqldb.h"

#include <stddef.h>
#include <time.h>

int nv_sqldb_open(sqlite3 **db, const char *path, int flags, nv_err *err)
{
	if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
		int rc = nv_err_set(err, NV_EIO, "check NAVETTE_HOME",
				    "cannot open %s: %s", path,
				    *db ? sqlite3_errmsg(*db) : "?");
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	sqlite3_busy_timeout(*db, 10000);
	return 0;
}

/* Whether the database's auto_vacuum is already FULL (1). Setting it
 * writes the header page even when it does not change it: a read-only
 * command would then commit a write, and its last close checkpoint the
 * WAL with two fsyncs (status paid about 1.5 ms for it). */
static int auto_vacuum_full(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int full = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA auto_vacuum;", -1, &st, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		full = sqlite3_column_int(st, 0) == 1;
	sqlite3_finalize(st);
	return full;
}

int nv_sqldb_setup(sqlite3 *db, const char *schema, int full_vacuum,
		   const char **step)
{
	int rc;

	*step = "fullfsync";
	if ((rc = sqlite3_exec(db, "PRAGMA fullfsync=ON;", NULL, NULL, NULL)) !=
	    SQLITE_OK)
		return rc;
	/* Switching to WAL and creating the schema take locks for which
	 * SQLite does not always call the busy handler (two processes
	 * opening a new database at once): those steps are retried. */
	*step = "schema";
	for (int attempt = 0; attempt < 100; attempt++) {
		rc = full_vacuum && !auto_vacuum_full(db)
			     ? sqlite3_exec(db, "PRAGMA auto_vacuum=FULL;",
					    NULL, NULL, NULL)
			     : SQLITE_OK;
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL;", NULL,
					  NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, "PRAGMA synchronous=NORMAL;",
					  NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
		if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
			break;
		struct timespec pause = {0, 50 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	return rc;
}
