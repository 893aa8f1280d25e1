/* The state of scheduled tasks: one SQLite database (WAL, like jobs.db)
 * under NAVETTE_HOME, tasks.db, with a row per task (project, recipe,
 * name): its schedule, last run (when, for which slot, result, message),
 * when it is next due, and its counts of runs and failures. And the lock
 * that keeps `navette maintain` to one run at a time per NAVETTE_HOME
 * (maintain.lock, held by flock and holding the holder's pid). Pure C. */
#ifndef NV_TASKDB_H
#define NV_TASKDB_H

#include <stddef.h>

#include "core/nv_err.h"

/* Bounds of a row's text (bytes, with the NUL). */
#define NV_TASK_PROJECT_MAX  128
#define NV_TASK_RECIPE_MAX   1024
#define NV_TASK_NAME_MAX     64
#define NV_TASK_SCHEDULE_MAX 64
#define NV_TASK_RESULT_MAX   16
#define NV_TASK_MESSAGE_MAX  1024

typedef struct {
	char project[NV_TASK_PROJECT_MAX];
	char recipe[NV_TASK_RECIPE_MAX]; /* relative to the project's root */
	char name[NV_TASK_NAME_MAX];
	char schedule[NV_TASK_SCHEDULE_MAX];
	double last_run;  /* when the last run started; 0: never ran */
	double last_slot; /* the slot it ran for */
	double duration;  /* seconds it took */
	char result[NV_TASK_RESULT_MAX];   /* "ok", "failed" or "" (never) */
	char message[NV_TASK_MESSAGE_MAX]; /* cut to fit, at a UTF-8 boundary */
	double next_due;                   /* 0: due at once */
	long long runs, failures;
} nv_task_state;

typedef struct nv_taskdb nv_taskdb;

/* Opens (creating, unless read_only) HOME/tasks.db. read_only on a home
 * without one: NV_ENOTFOUND (no task ever ran there). Free with
 * nv_taskdb_close(). */
int nv_taskdb_open(nv_taskdb **out, const char *home, int read_only,
		   nv_err *err);
void nv_taskdb_close(nv_taskdb *db);

/* The row of (project, recipe, name) into *out; *found 0 when there is
 * none (out is then zeroed with those three keys). */
int nv_taskdb_get(nv_taskdb *db, const char *project, const char *recipe,
		  const char *name, nv_task_state *out, int *found,
		  nv_err *err);

/* Writes the row (inserted or replaced). A text longer than its bound is
 * NV_EINVAL (the message is cut to fit instead). */
int nv_taskdb_put(nv_taskdb *db, const nv_task_state *st, nv_err *err);

/* Calls fn for each row, ordered by project, recipe and name; project
 * NULL: every project's. fn returns non-zero to stop. */
int nv_taskdb_each(nv_taskdb *db, const char *project,
		   int (*fn)(const nv_task_state *st, void *payload),
		   void *payload, nv_err *err);

/* Copies text into out (cap bytes), cut at a UTF-8 character boundary
 * when it is longer, always NUL-terminated. */
void nv_task_copy_text(char *out, size_t cap, const char *text);

/* Takes HOME/maintain.lock without waiting and writes this process's pid
 * into it: *fd_out holds the lock until nv_taskdb_unlock. Held by another
 * process: NV_EREFUSED naming its pid (*holder gets it, 0 unknown). */
int nv_taskdb_lock(const char *home, int *fd_out, long *holder, nv_err *err);
void nv_taskdb_unlock(int fd);

#endif
