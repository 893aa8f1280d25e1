/* What launcher.c takes from launcher_launch.c: the scheduler's part of a
 * node launcher (spec.launch, see launcher.h). Private to host/jobs. */
#ifndef NV_LAUNCHER_INTERNAL_H
#define NV_LAUNCHER_INTERNAL_H

#include <cjson/cJSON.h>

#include "core/buf.h"
#include "core/nv_err.h"

/* Checks spec.launch and writes the nv_launch_* lines that the fixed part
 * (launcher_node.sh) reads; without spec.launch, those of one plain
 * run. 0, or NV_EINVAL naming the field. */
int nv_launcher_launch_header(const cJSON *spec, nv_buf *out, nv_err *err);

/* The variable that holds an array task's index (spec.launch.array_index,
 * checked by nv_launcher_launch_header), or NULL. */
const char *nv_launcher_array_index(const cJSON *spec);

/* Whether the container starts the launcher (spec.launch.in_container):
 * the launcher then runs the command where it is, and pulls nothing. */
int nv_launcher_in_container(const cJSON *spec);

#endif
