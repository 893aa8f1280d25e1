/* The SQLite databases navette keeps under NAVETTE_HOME (the job
 * database, the task database) are opened and set up one way: a busy
 * timeout, syncs that reach the drive, write-ahead logging and the
 * schema, those last steps retried (bounded) when SQLite takes its locks
 * without waiting. What a database's errors say stays its own. */
#ifndef NV_SQLDB_H
#define NV_SQLDB_H

#include <sqlite3.h>

#include "core/nv_err.h"

/* Opens path with SQLite's flags and a busy timeout of 10 s: 0 and *db,
 * or NV_EIO ("cannot open PATH: ...") and *db NULL. */
int nv_sqldb_open(sqlite3 **db, const char *path, int flags, nv_err *err);

/* Sets db up for writing: fullfsync (macOS: syncs reach the drive, not
 * only its cache; a no-op elsewhere), then, retried while SQLite answers
 * busy or locked, auto_vacuum=FULL when full_vacuum is set, WAL,
 * synchronous=NORMAL and schema. SQLITE_OK, or SQLite's code with *step
 * naming what failed ("fullfsync" or "schema"). */
int nv_sqldb_setup(sqlite3 *db, const char *schema, int full_vacuum,
		   const char **step);

#endif
