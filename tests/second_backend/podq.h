/* podq: a throwaway Job controller's wire, for the test that proves a
 * backend can be added without an edit elsewhere (tests/second_backend/,
 * copied to host/podq/ by that test). A job goes to the controller as a
 * manifest in its inbox folder: a Job-like object whose container runs
 * the launcher (the container starts the launcher), indexed when it holds
 * a sweep's tasks; the controller answers with a status object, read back
 * into a state. Pure C, no Lua. */
#ifndef NV_PODQ_H
#define NV_PODQ_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"

/* The most tasks of one indexed manifest. */
#define NV_PODQ_TASKS_MAX 1000

/* Writes the manifest of job `name` (a job id: [a-z0-9.-], at most 63
 * bytes) running `image` with `launcher` as its script, `tasks` of them
 * (1: one job; more: indexed 0..tasks-1) into out (JSON text). */
int nv_podq_manifest(const char *name, const char *image, const char *launcher,
		     size_t launcher_len, int tasks, nv_buf *out, nv_err *err);

/* The state of a status object (JSON text): "queued", "running",
 * "succeeded" or "failed"; NV_EBACKEND for anything else. */
int nv_podq_state(const char *json, size_t len, const char **state,
		  nv_err *err);

#endif
