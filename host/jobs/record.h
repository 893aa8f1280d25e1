/* The job record: the facts every backend shares about a job. What it is
 * called under its prefix (the layout), the phases it goes through and
 * the states it ends in, what a run record copies of the spec, and the
 * rule that turns a launcher's run record and a backend's own word into
 * the job's final state. Each list is defined once, here; the node
 * launcher gets its names from it (nv_record_fill). Pure C. */
#ifndef NV_RECORD_H
#define NV_RECORD_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"

/* ---- the layout of a job's prefix ------------------------------------ */

/* The objects navette publishes under a job's prefix, beside its outputs. */
#define NV_RECORD_LOG        "navette.log"    /* the whole log, at the end */
#define NV_RECORD_LOG_CHUNKS "navette-log"    /* a folder: the log in chunks */
#define NV_RECORD_STATUS     "navette-status" /* "PHASE TIME" lines */
#define NV_RECORD_RUN_RECORD "navette-run.json" /* the run record */
/* a folder: what the job's lineage carries from one attempt to the next,
 * its checkpoint (manifest.json, objects/SHA256) */
#define NV_RECORD_CHECKPOINT "navette-checkpoint"
/* ... where a node launcher keeps it as one archive */
#define NV_RECORD_CHECKPOINT_ARCHIVE "checkpoint.tar"
/* ... and the attempts a node launcher ended to be retried: one JSON
 * object per line, the next attempt's record lists them */
#define NV_RECORD_ATTEMPTS "attempts.jsonl"
/* A chunk is NV_RECORD_LOG_CHUNKS/NNNNNN, numbered from 1. */
#define NV_RECORD_LOG_CHUNK_DIGITS 6
/* the largest run record a reader takes (the Lua side reads 4 MiB too) */
#define NV_RECORD_MAX ((size_t)4 * 1024 * 1024)

/* The same, in the order a listing names them. */
#define NV_RECORD_OBJECTS(X)                                                   \
	X(LOG, NV_RECORD_LOG)                                                  \
	X(LOG_CHUNKS, NV_RECORD_LOG_CHUNKS)                                    \
	X(STATUS, NV_RECORD_STATUS)                                            \
	X(RUN_RECORD, NV_RECORD_RUN_RECORD)                                    \
	X(CHECKPOINT, NV_RECORD_CHECKPOINT)

/* The objects' names (lower case), NULL-terminated. An output whose first
 * path segment is one of them in any case is refused (launcher.h). */
extern const char *const nv_record_objects[];

/* What to do about an output named like one of them. */
#define NV_RECORD_RESERVED_HINT                                                \
	"rename the output: " NV_RECORD_LOG ", " NV_RECORD_RUN_RECORD          \
	", " NV_RECORD_STATUS ", " NV_RECORD_LOG_CHUNKS                        \
	"/ and " NV_RECORD_CHECKPOINT "/ are navette's, in any case"

/* prefix + name into out; 0, or -1 when it does not fit in cap. */
int nv_record_key(char *out, size_t cap, const char *prefix, const char *name);

/* ---- phases and states ------------------------------------------------ */

/* The phases of a job, in the order it goes through them. */
#define NV_RECORD_PHASES(X)                                                    \
	X(SUBMITTED, "submitted")                                              \
	X(ACCEPTED, "accepted")                                                \
	X(IMAGE_READY, "image_ready")                                          \
	X(DATA_READY, "data_ready")                                            \
	X(RUNNING, "running")                                                  \
	X(LOGS_VISIBLE, "logs_visible")                                        \
	X(OUTPUTS_PUBLISHED, "outputs_published")

/* The states a job ends in; each is also the last phase of its timeline. */
#define NV_RECORD_STATES(X)                                                    \
	X(SUCCEEDED, "succeeded")                                              \
	X(FAILED, "failed")                                                    \
	X(CANCELLED, "cancelled")

#define NV_RECORD_ENUM_PHASE(sym, name) NV_PHASE_##sym,
#define NV_RECORD_ENUM_STATE(sym, name) NV_STATE_##sym,
typedef enum nv_record_phase {
	NV_RECORD_PHASES(NV_RECORD_ENUM_PHASE) NV_PHASE_COUNT
} nv_record_phase;
typedef enum nv_record_state {
	NV_RECORD_STATES(NV_RECORD_ENUM_STATE) NV_STATE_COUNT
} nv_record_state;
#undef NV_RECORD_ENUM_PHASE
#undef NV_RECORD_ENUM_STATE

/* Names of a phase and of a state ("" outside the lists). */
const char *nv_record_phase_name(nv_record_phase phase);
const char *nv_record_state_name(nv_record_state state);

/* The phase or state called name: 0, or -1 when none is (name may be
 * NULL). */
int nv_record_phase_find(const char *name, nv_record_phase *out);
int nv_record_state_find(const char *name, nv_record_state *out);

/* ---- the run record ---------------------------------------------------- */

/* The largest run record read. */
#define NV_RECORD_MAX ((size_t)4 * 1024 * 1024)

/* The spec fields a run record copies (NULL-terminated). */
extern const char *const nv_record_spec_fields[];

/* ---- the final state --------------------------------------------------- */

#define NV_RECORD_REASON_MAX 1024
#define NV_RECORD_HINT_MAX   512

/* How a job ended: its state and, unless it succeeded, where and why it
 * failed and what to check. */
typedef struct nv_record_outcome {
	nv_record_state state;
	nv_record_phase phase; /* where it failed */
	char reason[NV_RECORD_REASON_MAX];
	char hint[NV_RECORD_HINT_MAX];
	int no_hint; /* there is no hint at all (not even "") */
	int have_exit;
	int exit_code;
	int record_found; /* (nv_record_decide) a run record was read */
} nv_record_outcome;

/* An outcome that succeeded, as every job starts. */
void nv_record_outcome_init(nv_record_outcome *o);

/* The first failure wins: sets state, phase, hint (NULL: "") and the
 * reason unless o already failed or was cancelled. */
void nv_record_fail(nv_record_outcome *o, nv_record_state state,
		    nv_record_phase phase, const char *hint, const char *fmt,
		    ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 5, 6)))
#endif
	;

/* What a backend itself says of a job's end, beside the run record its
 * launcher left. */
typedef struct nv_record_verdict {
	/* the backend's state, failure and exit code */
	nv_record_outcome said;
	/* the backend ended the job from outside (a cancel, its time limit,
	 * a lost node): its word wins over the record's */
	int stopped;
	/* when stopped and failed: the failure's phase is the record's, when
	 * the record has a failure (a cancel: the launcher knows where) */
	int phase_from_record;
	/* the failure when there is no record and the backend saw no
	 * failure */
	const char *missing_reason, *missing_hint;
} nv_record_verdict;

/* The rule. text: the run record (len bytes), or NULL when none was
 * found; a text that is not a JSON object counts as none.
 *  - a record, and the backend did not stop the job: the record's state
 *    ("succeeded" or absent: succeeded; "cancelled"; else failed) and its
 *    failure (an unknown phase is "running", no reason "the launcher
 *    reported a failure", no hint "");
 *  - else, the backend's failure, when it saw one;
 *  - else, no record: failed at outputs_published with the missing
 *    reason and hint;
 *  - else the backend's word (succeeded).
 * The exit code is the record's (a whole number in int's range), else the
 * backend's. */
void nv_record_decide(const char *text, size_t len, const nv_record_verdict *v,
		      nv_record_outcome *out);

/* ---- the launcher's names ---------------------------------------------- */

/* Appends text (len bytes) to out with each @KEY@ replaced by the name it
 * stands for: PHASE_<PHASE>, STATE_<STATE>, OBJECT_<OBJECT> (the symbols
 * of the lists above) and LOG_CHUNK_DIGITS. An unknown key is NV_EINVAL;
 * other '@' are copied. */
int nv_record_fill(nv_buf *out, const char *text, size_t len, nv_err *err);

#endif
