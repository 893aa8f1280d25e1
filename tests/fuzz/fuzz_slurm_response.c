/* Fuzz target: what slurmrestd answers (host/jobs/slurm.c) — a job or jobs
 * listing, a submit answer, an error answer — read as hostile input. The
 * first two bytes choose the HTTP status given to the classifier; the rest
 * is the body. Checks invariants, not just the absence of crashes: every
 * string read is NUL-terminated within its array and free of control
 * characters, every view has a known state and phase, a done view is
 * succeeded, failed or cancelled, and a classification is 0 only for 2xx. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static int one_of(const char *s, const char *const *set)
{
	for (; s && *set; set++)
		if (strcmp(s, *set) == 0)
			return 1;
	return 0;
}

static void check_view(const nv_slurm_job *job, int requeue)
{
	static const char *const states[] = {"queued", "running",   "succeeded",
					     "failed", "cancelled", NULL};
	static const char *const done_states[] = {"succeeded", "failed",
						  "cancelled", NULL};
	static const char *const phases[] = {"accepted", "running", "succeeded",
					     NULL};
	nv_slurm_view v;

	nv_slurm_map(job, requeue, &v);
	if (!one_of(v.state, states) || !one_of(v.phase, phases))
		abort();
	if (v.done && !one_of(v.state, done_states))
		abort();
	if (!v.done && one_of(v.state, done_states))
		abort();
	check_text(v.detail, sizeof(v.detail));
	if (strnlen(v.hint, sizeof(v.hint)) == sizeof(v.hint))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body;
	nv_slurm_job *jobs = NULL;
	size_t n = 0, len;
	long long id = 0;
	long status;
	nv_err err;
	int se = 0, rc;

	if (size < 2 || size > (1u << 20))
		return 0;
	status = 100 + (long)((data[0] << 8 | data[1]) % 500);
	body = (const char *)data + 2;
	len = size - 2;

	rc = nv_slurm_classify(status, body, len, "fuzz", &se, &err);
	if (rc == 0 && (status < 200 || status >= 300))
		abort();
	if (rc != 0 && status >= 200 && status < 300)
		abort();
	if (rc &&
	    (!err.message[0] ||
	     strnlen(err.message, sizeof(err.message)) == sizeof(err.message)))
		abort();

	if (nv_slurm_parse_submit("v0.0.38", body, len, &id, &err) == 0 &&
	    id <= 0)
		abort();

	if (nv_slurm_parse_jobs("v0.0.38", body, len, 0, &jobs, &n, &err) ==
	    0) {
		for (size_t i = 0; i < n; i++) {
			const nv_slurm_job *j = &jobs[i];

			if (j->job_id <= 0 || !j->state[0])
				abort();
			check_text(j->name, sizeof(j->name));
			check_text(j->comment, sizeof(j->comment));
			check_text(j->user, sizeof(j->user));
			check_text(j->partition, sizeof(j->partition));
			check_text(j->state, sizeof(j->state));
			check_text(j->reason, sizeof(j->reason));
			check_text(j->state_description,
				   sizeof(j->state_description));
			check_text(j->nodes, sizeof(j->nodes));
			check_text(j->batch_host, sizeof(j->batch_host));
			if (j->exit_code < -1 || j->exit_code > 255 ||
			    j->exit_signal < 0 || j->exit_signal > 127 ||
			    j->restarts < 0)
				abort();
			check_view(j, -1);
			check_view(j, 0);
			check_view(j, 1);
		}
	} else if (jobs || n) {
		abort();
	}
	free(jobs);
	return 0;
}
