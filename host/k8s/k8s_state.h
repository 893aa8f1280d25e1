/* The one place where a Kubernetes Job, its pods and its FailedCreate
 * events become navette's view of a job or of one task of a sweep (a
 * completion index of an Indexed Job): the table of the issue 31 design,
 * section 3.4. Pure C, no Lua. The Lua layer combines the view with the
 * launcher's status object (its phases after "running") and explains exit
 * codes (127, 126, 128+N); here the exit code is only passed on.
 * "cancelled" is never given here: only the caller knows that navette
 * deleted the Job. */
#ifndef NV_K8S_STATE_H
#define NV_K8S_STATE_H

#include <stddef.h>

#include "k8s/k8s_parse.h"

#define NV_K8S_VIEW_TEXT_MAX 768

typedef struct nv_k8s_view {
	/* "queued" (suspended), "accepted" (waiting for or in scheduling,
	 * identity and configuration), "image_ready" (the image is being
	 * pulled), "running", "succeeded", "failed" */
	const char *phase;
	int done;      /* will not change any more */
	int blocked;   /* waits on something someone must fix */
	int preempted; /* its pod was disrupted: runs again, no retry used */
	int exit_code; /* the command's exit code when known, else -1 */
	char reason[NV_K8S_VIEW_TEXT_MAX]; /* "" when nothing to say */
	char hint[NV_ERR_HINT_MAX];        /* what to check next, or "" */
	char pod[NV_K8S_NAME_SIZE];        /* the pod the view comes from */
	int pod_live; /* that pod is Pending or Running, not being deleted */
	char node[NV_K8S_NAME_SIZE]; /* its node, or "" */
} nv_k8s_view;

/* The view of job (index -1: the whole Job; else that completion index of
 * an Indexed Job), from its pods (those of other Jobs or indexes are
 * skipped) and events (only FailedCreate events of this Job are read). */
void nv_k8s_view_of(const nv_k8s_job *job, const nv_k8s_pod *pods, size_t npods,
		    const nv_k8s_event *events, size_t nevents, long index,
		    nv_k8s_view *out);

#endif
