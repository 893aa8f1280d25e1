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
 * locally and by the node launcher, which gets the list as
 * NAVETTE_RESERVED: a volume that folds names would take one for the
 * other. */
const char *nv_launcher_output_reserved(const char *output);

/* Appends the script for spec. With a "transfer" object (S3 storage), a
 * node launcher: it fetches code and inputs through presigned URLs and
 * publishes outputs, log, status and run record itself through a POST
 * policy; otherwise a local one (the backend stages and publishes).
 *
 * What a node launcher takes from the scheduler is spec.launch, which
 * the backend's prepare sets (lua/navette/backends/init.lua); every field
 * may be left out, and without the object the job is one plain run:
 *   array_index, attempt, node, job    names of variables the scheduler
 *       sets (checked as nv_launcher_env_name_problem checks a job's):
 *       an array task's index (0, 1...), the job's restarts counted from
 *       0 (attempt 1 without it), the node's name (hostname without it),
 *       the job's reference (the last word of each command below)
 *   requeue, time_left, timed_out      commands, lists of words (its
 *       program first; the job's reference is appended): ask the
 *       scheduler to run the job again (without it, a retry that needs a
 *       requeue fails saying so), print the seconds the job has left
 *       (without it the time limit counts from the start), succeed when
 *       the scheduler stopped the job at its time limit
 *   scheduler, requeue_needs           texts of messages: its name, and
 *       what a requeue needs (for the hint of a failed one)
 *   in_container                       true when the container starts the
 *       launcher: the launcher then pulls and starts no image
 *   requeue_exit                       instead of a requeue command, the
 *       exit code (1..255) that ends an attempt the job's retries name:
 *       the scheduler runs it again (Kubernetes: a podFailurePolicy rule
 *       counts that code); not with requeue
 * An unknown field, a bad name or word is NV_EINVAL. */
int nv_launcher_script(const cJSON *spec, nv_buf *out, nv_err *err);

/* A job array's launcher: the tasks of one sweep (specs, a JSON array of
 * node launchers' specs, each with its transfer) that differ only in their id,
 * name, parameters, prefix and signed forms, as one script. Each task
 * finds its own values by its index (0, 1... in the list's order; the
 * variable spec.launch.array_index names, as Slurm's
 * SLURM_ARRAY_TASK_ID) in a case at the top; what they share follows
 * once, then the fixed part. A task that differs otherwise, specs
 * without an array_index, and a script over out's cap are NV_EINVAL. */
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
