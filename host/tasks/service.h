/* Running the system's service manager for `navette maintain --install`
 * and `--uninstall` (systemctl --user, launchctl): a program found on
 * PATH, run without a shell, its output (stdout and stderr together)
 * captured, bounded in size and time. Pure C, no Lua. */
#ifndef NV_SERVICE_H
#define NV_SERVICE_H

#include <stddef.h>

#include "core/nv_err.h"

/* The most argv entries and output bytes kept. */
#define NV_SERVICE_ARGS_MAX   16
#define NV_SERVICE_OUTPUT_MAX 8192

/* Runs argv[0] (looked up in PATH) with argv, stdin /dev/null, for at most
 * timeout_s seconds (then killed). *status gets its exit status (128 +
 * signal when killed by one); output (cap bytes, NUL-terminated) what it
 * printed, cut to fit. A program that cannot be started: NV_ENOTFOUND. */
int nv_service_run(const char *const *argv, double timeout_s, int *status,
		   char *output, size_t cap, nv_err *err);

#endif
