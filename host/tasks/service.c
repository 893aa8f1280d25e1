/* See service.h: one program run by core/proc, its stdout and stderr
 * kept together in the caller's buffer, killed when late. */
#include "tasks/service.h"

#include "core/fsutil.h"
#include "core/proc.h"

int nv_service_run(const char *const *argv, double timeout_s, int *status,
		   char *output, size_t cap, nv_err *err)
{
	char path[4096];
	nv_proc_opts o = {0};
	nv_proc_result r;
	int rc, why;

	*status = -1;
	if (cap)
		output[0] = '\0';
	if (!argv || !argv[0] || nv_which(argv[0], path, sizeof(path)) != 0)
		return nv_err_set(err, NV_ENOTFOUND, NULL,
				  "%s is not installed here (not on PATH)",
				  argv && argv[0] ? argv[0] : "?");
	o.argv = argv;
	o.program = path;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, output, cap, 0};
	o.err.to = NV_PROC_MERGE;
	o.timeout_s = timeout_s;
	rc = nv_proc_run(&o, &r, &why, err);
	if (rc != 0 && why != 0)
		return nv_err_set_errno(err, NV_ENOTFOUND, why, NULL,
					"cannot start %s", path);
	if (rc != 0)
		return rc;
	if (r.timed_out)
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "%s did not answer within %.0f s", argv[0],
				  timeout_s);
	*status = nv_proc_status(&r);
	return 0;
}
