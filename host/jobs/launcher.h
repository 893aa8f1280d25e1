/* The launcher: the small POSIX sh program generated for each job. It runs
 * on the node with only sh: reports phases to a status file, runs the
 * command in the workspace with its log captured, and records the exit
 * status. `navette plan` shows it. Pure C. */
#ifndef NV_LAUNCHER_H
#define NV_LAUNCHER_H

#include <cjson/cJSON.h>

#include "core/buf.h"
#include "core/nv_err.h"

#define NV_LAUNCHER_MAX ((size_t)1024 * 1024)
/* the longest value of a sweep parameter (spec.params) */
#define NV_LAUNCHER_PARAM_MAX 1024

/* The job object (record.h: nv_record_objects) that output, a path below
 * $NAVETTE_OUTPUTS, would collide with, or NULL: its first path segment in
 * any case, trailing dots and spaces ignored. Such an output is refused,
 * locally and by the remote launcher, which gets the list as
 * NAVETTE_RESERVED: a volume that folds names would take one for the
 * other. */
const char *nv_launcher_output_reserved(const char *output);

/* Appends the script for spec. With a "transfer" object (S3 storage), a
 * remote launcher: it fetches code and inputs through presigned URLs and
 * publishes outputs, log, status and run record itself through a POST
 * policy; otherwise a local one (the backend stages and publishes). */
int nv_launcher_script(const cJSON *spec, nv_buf *out, nv_err *err);

/* A job array's launcher: the tasks of one sweep (specs, a JSON array of
 * remote specs, each with its transfer) that differ only in their id,
 * name, parameters, prefix and signed forms, as one script. Each task
 * finds its own values by $SLURM_ARRAY_TASK_ID (0, 1... in the list's
 * order) in a case at the top; what they share follows once, then the
 * fixed part. A task that differs otherwise is NV_EINVAL naming it, and a
 * script over out's cap is NV_EINVAL too. */
#define NV_LAUNCHER_ARRAY_TASKS 1000
/* Slurm's default batch script limit (max_script_size) */
#define NV_LAUNCHER_ARRAY_MAX ((size_t)4 * 1024 * 1024)
int nv_launcher_array_script(const cJSON *specs, nv_buf *out, nv_err *err);

/* Whether name is usable as a job environment variable: a shell name, not
 * reserved (NAVETTE_*, PATH, HOME...). */
/* Why name cannot be a job's environment variable, or NULL when it can. */
const char *nv_launcher_env_name_problem(const char *name);
int nv_launcher_env_name_ok(const char *name);

#endif
