/* The grammar of a job id, checked in C wherever an id turns into a name:
 * a row of the job database, a folder under NAVETTE_HOME/jobs, a key
 * prefix in a store, a launcher's variables, a Slurm job's environment.
 * An id is what lua/navette/job.lua's new_id makes,
 * "<project>-<time6>-<random5>" (time and random part in base 36): 2 to
 * 63 bytes of lowercase ASCII letters, digits and '-', the first and the
 * last a letter or a digit (a DNS-1123 label). Nothing else can then climb out
 * of a folder ('.', '/'), start an option ('-'), break a line or a shell word.
 * Pure C: no Lua here. */
#ifndef NV_JOBID_H
#define NV_JOBID_H

#include "core/nv_err.h"

#define NV_JOB_ID_MAX 63

/* 0 when id follows the grammar; NV_EINVAL otherwise, with a message that
 * names the id (control and non-ASCII bytes shown as \xNN, a long id
 * shortened) and what is wrong with it. id may be NULL (refused). */
int nv_job_id_check(const char *id, nv_err *err);

/* The same for what a user types to name a job: a full id or a unique
 * prefix of one (1 to 63 bytes of the same characters; it may end with
 * '-'). */
int nv_job_id_prefix_check(const char *prefix, nv_err *err);

#endif
