/* The Kubernetes backend's reader of API answers: a Job, a Pod, their
 * lists, an Event list, a Status (the error body) and a watch stream of
 * newline-delimited events, read with cJSON into bounded structs. Pure C,
 * no Lua, no network: the session (k8s.c) hands the bodies in.
 *
 * The answers are hostile input. Every size is capped: a body, one watch
 * line, the items of a list, the conditions of an object, the causes of a
 * Status. Identity fields (names, uids, resourceVersions, the continue
 * token, navette's labels and annotations) that do not fit are refused:
 * a cut name would point at another object. Display text (reasons,
 * messages) is cut at its cap on a UTF-8 boundary. Control characters
 * become '?' (tab, CR and LF a space). Unknown fields are ignored.
 *
 * Ownership: a parsed object owns its malloc'd parts (conditions,
 * container statuses, long texts); free it with its _free function, which
 * also zeroes it, so freeing twice is harmless. */
#ifndef NV_K8S_PARSE_H
#define NV_K8S_PARSE_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"

#define NV_K8S_BODY_MAX       ((size_t)64 * 1024 * 1024) /* one list page */
#define NV_K8S_EVENT_MAX      ((size_t)4 * 1024 * 1024)  /* one watch line */
#define NV_K8S_ITEMS_MAX      10000                      /* items of one list */
#define NV_K8S_CONDITIONS_MAX 16   /* conditions of one object */
#define NV_K8S_CONTAINERS_MAX 16   /* container statuses of one pod */
#define NV_K8S_CAUSES_MAX     16   /* causes kept from a Status */
#define NV_K8S_TASKS_MAX      1000 /* tasks (completion indexes) a Job runs */

/* a name's buffer: a DNS subdomain (253) + NUL */
#define NV_K8S_NAME_SIZE    254
#define NV_K8S_UID_MAX      64
#define NV_K8S_RV_MAX       64   /* a resourceVersion */
#define NV_K8S_CONTINUE_MAX 4096 /* a list's continue token */
#define NV_K8S_WORD_MAX     64   /* a type, status, reason, phase */
#define NV_K8S_TIME_MAX     40   /* an RFC 3339 time */
#define NV_K8S_MESSAGE_MAX  2048 /* a message, cut beyond */
/* completedIndexes / failedIndexes: "0-3,5"; 1000 tasks fit in 4 KiB
 * even when every other index is listed. */
#define NV_K8S_INDEXES_MAX 8192
/* The navette/tasks annotation: the task ids of a sweep. */
#define NV_K8S_TASKS_TEXT_MAX ((size_t)NV_K8S_TASKS_MAX * 80)

/* navette's label prefix (labels navette/job, navette/profile...). */
#define NV_K8S_LABEL_PREFIX "navette"

/* One entry of status.conditions. */
typedef struct nv_k8s_condition {
	char type[NV_K8S_WORD_MAX];
	char status[NV_K8S_WORD_MAX]; /* "True", "False", "Unknown" */
	char reason[NV_K8S_WORD_MAX * 2];
	char *message; /* malloc'd, cut at NV_K8S_MESSAGE_MAX; NULL: none */
	char last_transition[NV_K8S_TIME_MAX];
} nv_k8s_condition;

/* A batch/v1 Job: what the state map and the backend read of it. Counts
 * absent from the answer are 0; spec numbers absent are -1. */
typedef struct nv_k8s_job {
	char name[NV_K8S_NAME_SIZE];
	char uid[NV_K8S_UID_MAX];
	char resource_version[NV_K8S_RV_MAX];
	char navette_job[NV_K8S_NAME_SIZE]; /* label navette/job, or "" */
	char *tasks;       /* annotation navette/tasks, malloc'd, or NULL */
	char *after;       /* annotation navette/after, malloc'd, or NULL */
	char *spec_sha256; /* annotation navette/spec-sha256, or NULL */
	int deleting;      /* metadata.deletionTimestamp is set */
	/* spec */
	int suspend;
	int indexed; /* completionMode Indexed */
	long completions, parallelism, backoff_limit, backoff_limit_per_index;
	long active_deadline_seconds;
	/* status */
	long active, succeeded, failed, ready, terminating;
	char *completed_indexes; /* malloc'd "0-3,5", or NULL */
	char *failed_indexes;
	nv_k8s_condition *conditions;
	size_t nconditions;
	char start_time[NV_K8S_TIME_MAX];
	char completion_time[NV_K8S_TIME_MAX];
} nv_k8s_job;

enum nv_k8s_container_state {
	NV_K8S_CONTAINER_UNKNOWN = 0, /* no state yet */
	NV_K8S_CONTAINER_WAITING,
	NV_K8S_CONTAINER_RUNNING,
	NV_K8S_CONTAINER_TERMINATED
};

/* One entry of status.containerStatuses. */
typedef struct nv_k8s_container {
	char name[NV_K8S_WORD_MAX];
	int state;                        /* enum nv_k8s_container_state */
	char reason[NV_K8S_WORD_MAX * 2]; /* waiting or terminated reason */
	char *message;                    /* malloc'd or NULL */
	int exit_code;                    /* terminated: its code, else -1 */
	int signal;                       /* terminated: its signal, or 0 */
	long restart_count;
} nv_k8s_container;

/* A v1 Pod of a Job. */
typedef struct nv_k8s_pod {
	char name[NV_K8S_NAME_SIZE];
	char uid[NV_K8S_UID_MAX];
	char resource_version[NV_K8S_RV_MAX];
	char created[NV_K8S_TIME_MAX];
	char job_name[NV_K8S_NAME_SIZE]; /* label job-name (or the batch one) */
	long completion_index; /* batch.kubernetes.io/job-completion-index,
				  -1: none */
	int deleting;
	char node_name[NV_K8S_NAME_SIZE];
	long gpus; /* nvidia.com/gpu requested by its containers, 0: none */
	char phase[NV_K8S_WORD_MAX];      /* Pending, Running, Succeeded... */
	char reason[NV_K8S_WORD_MAX * 2]; /* status.reason ("Evicted") */
	char *message;                    /* status.message, or NULL */
	nv_k8s_condition *conditions;
	size_t nconditions;
	nv_k8s_container *containers;
	size_t ncontainers;
} nv_k8s_pod;

/* One core/v1 Event, the fields the state map reads. */
typedef struct nv_k8s_event {
	char type[NV_K8S_WORD_MAX]; /* Normal, Warning */
	char reason[NV_K8S_WORD_MAX * 2];
	char *message;
	char object_kind[NV_K8S_WORD_MAX]; /* involvedObject */
	char object_name[NV_K8S_NAME_SIZE];
	long count;
	char last_timestamp[NV_K8S_TIME_MAX];
} nv_k8s_event;

/* A v1 Status (the body of an error answer, or a watch ERROR). */
typedef struct nv_k8s_cause {
	char field[NV_K8S_NAME_SIZE];
	char reason[NV_K8S_WORD_MAX * 2];
	char message[512];
} nv_k8s_cause;

typedef struct nv_k8s_status {
	int code;                         /* the HTTP code it states, 0: none */
	char status[NV_K8S_WORD_MAX];     /* "Failure", "Success" */
	char reason[NV_K8S_WORD_MAX * 2]; /* "Forbidden", "Expired"... */
	char message[NV_ERR_MESSAGE_MAX];
	char name[NV_K8S_NAME_SIZE]; /* details */
	char group[NV_K8S_WORD_MAX * 2];
	char kind[NV_K8S_WORD_MAX * 2];
	nv_k8s_cause causes[NV_K8S_CAUSES_MAX];
	size_t ncauses;       /* kept */
	size_t ncauses_total; /* in the answer */
} nv_k8s_status;

/* A list page. */
typedef struct nv_k8s_list_meta {
	char resource_version[NV_K8S_RV_MAX];
	char continue_token[NV_K8S_CONTINUE_MAX]; /* "": the last page */
} nv_k8s_list_meta;

typedef struct nv_k8s_job_list {
	nv_k8s_list_meta meta;
	nv_k8s_job *items;
	size_t nitems;
} nv_k8s_job_list;

typedef struct nv_k8s_pod_list {
	nv_k8s_list_meta meta;
	nv_k8s_pod *items;
	size_t nitems;
} nv_k8s_pod_list;

typedef struct nv_k8s_event_list {
	nv_k8s_list_meta meta;
	nv_k8s_event *items;
	size_t nitems;
} nv_k8s_event_list;

/* Each parser reads len bytes of body (at most NV_K8S_BODY_MAX) into
 * *out, which is overwritten (not freed first). -> 0, or NV_EBACKEND
 * (not JSON, not the kind asked for, a cap passed, a required field
 * missing: *out is then empty) or NV_ENOMEM. A body that is a Status (an
 * error answer handed in by mistake) is NV_EBACKEND with its message. */
int nv_k8s_parse_job(const char *body, size_t len, nv_k8s_job *out,
		     nv_err *err);
int nv_k8s_parse_pod(const char *body, size_t len, nv_k8s_pod *out,
		     nv_err *err);
int nv_k8s_parse_job_list(const char *body, size_t len, nv_k8s_job_list *out,
			  nv_err *err);
int nv_k8s_parse_pod_list(const char *body, size_t len, nv_k8s_pod_list *out,
			  nv_err *err);
/* reason: keep only the events with this reason ("FailedCreate"); NULL:
 * keep all. */
int nv_k8s_parse_event_list(const char *body, size_t len, const char *reason,
			    nv_k8s_event_list *out, nv_err *err);
/* A Status body. NV_EBACKEND when it is not one (kind other than Status,
 * or no code, reason nor message). */
int nv_k8s_parse_status(const char *body, size_t len, nv_k8s_status *out,
			nv_err *err);

void nv_k8s_job_free(nv_k8s_job *job);
void nv_k8s_pod_free(nv_k8s_pod *pod);
void nv_k8s_event_free(nv_k8s_event *ev);
void nv_k8s_job_list_free(nv_k8s_job_list *l);
void nv_k8s_pod_list_free(nv_k8s_pod_list *l);
void nv_k8s_event_list_free(nv_k8s_event_list *l);

/* Whether index is in a completedIndexes/failedIndexes set ("0-3,5").
 * NULL or "" holds nothing; a malformed set holds nothing. */
int nv_k8s_index_in(const char *set, long index);

/* The condition of that type whose status is "True", or NULL. */
const nv_k8s_condition *nv_k8s_condition_true(const nv_k8s_condition *c,
					      size_t n, const char *type);

/* ---- watch streams ------------------------------------------------- */

enum nv_k8s_kind { NV_K8S_JOB = 1, NV_K8S_POD = 2 };

enum nv_k8s_watch_type {
	NV_K8S_ADDED = 1,
	NV_K8S_MODIFIED,
	NV_K8S_DELETED,
	NV_K8S_BOOKMARK, /* only resource_version is set */
	NV_K8S_ERROR     /* status is set; code 410: list again */
};

typedef struct nv_k8s_watch_event {
	int type;                    /* enum nv_k8s_watch_type */
	int kind;                    /* the watch's kind */
	const nv_k8s_job *job;       /* ADDED/MODIFIED/DELETED of a Job watch */
	const nv_k8s_pod *pod;       /* ... of a Pod watch */
	const nv_k8s_status *status; /* ERROR */
	const char *resource_version; /* of the object; "" for ERROR */
} nv_k8s_watch_event;

/* Called once per event; the event and what it points to live until the
 * call returns. Returns 0 to go on, anything else stops the feed, which
 * then returns that value (err filled by the callback as it likes). */
typedef int (*nv_k8s_watch_cb)(void *ctx, const nv_k8s_watch_event *ev,
			       nv_err *err);

typedef struct nv_k8s_watch {
	int kind;
	nv_buf line; /* the partial line carried across chunks */
	char resource_version[NV_K8S_RV_MAX]; /* the last one seen */
	int failed; /* an error stopped it: every later feed refuses */
	size_t events;
} nv_k8s_watch;

void nv_k8s_watch_init(nv_k8s_watch *w, int kind);
void nv_k8s_watch_free(nv_k8s_watch *w);
/* Feeds the next len bytes of the stream, cut anywhere. Each complete
 * line is parsed and handed to cb before the next; empty lines are
 * skipped. -> 0, the callback's value, or NV_EBACKEND (a line over
 * NV_K8S_EVENT_MAX, a line not a watch event, an unknown type, an object
 * of another kind): the watch is then failed. */
int nv_k8s_watch_feed(nv_k8s_watch *w, const char *data, size_t len,
		      nv_k8s_watch_cb cb, void *ctx, nv_err *err);
/* The stream ended: a last line with no newline is parsed as an event
 * (NV_EBACKEND when it is cut). */
int nv_k8s_watch_finish(nv_k8s_watch *w, nv_k8s_watch_cb cb, void *ctx,
			nv_err *err);

#endif
