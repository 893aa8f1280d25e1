/* The audit log: append-only, hash-chained JSON lines at
 * $NAVETTE_HOME/audit/audit.jsonl, one per side effect (submit, cancel,
 * upload, delete, image push, credential minted or rotated, policy refusal).
 *
 * Each line's `prev` is the sha256 of the previous line's exact bytes; the
 * first line's `prev` is the sha256 of genesis.json, a record (random nonce,
 * creation time, identity) written when the log is created. A separate
 * `head` file holds the last seq and hash, so lines cut off the end are
 * detected. Appends are serialised by flock on audit/lock, so several
 * navette processes and the agent may append at once. Pure C: no Lua.
 *
 * Files under $NAVETTE_HOME/audit/ (folder 0700, files 0600):
 *   audit.jsonl   the log
 *   genesis.json  {"kind":"navette-audit-genesis","version":1,"nonce":,
 *                  "created":,"identity":}
 *   head          {"seq":N,"hash":"<sha256 of line N>","genesis":"<hex>"}
 *   lock          the lock file (empty)
 * and $NAVETTE_HOME/audit.anchor ({"genesis":"<hex>","identity":}), kept
 * outside the folder so that deleting or emptying audit/ is named by
 * verify and refused by append, never taken for a home without a log. */
#ifndef NV_AUDIT_H
#define NV_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/nv_err.h"

/* Longest line accepted (written or read), without its newline. */
#define NV_AUDIT_LINE_MAX (64 * 1024)
/* target and detail are cut (at a UTF-8 boundary) to this many bytes. */
#define NV_AUDIT_VALUE_MAX 2048
/* The other fields (identity, credential, profile, action, job, commit). */
#define NV_AUDIT_NAME_MAX     256
#define NV_AUDIT_IDENTITY_MAX 320

/* What one line records. Every string is copied; NULL writes JSON null
 * (detail: the key is left out). action and result are required; result is
 * "ok", "refused" or "failed". credential is the credential's NAME, never
 * its value. The caller passes text already redacted; the filter set by
 * nv_audit_set_filter() still sees every line. */
typedef struct nv_audit_entry {
	const char *identity; /* NULL: nv_audit_identity() */
	const char *credential;
	const char *profile;
	const char *action;
	const char *target;
	const char *job;
	const char *commit;
	const char *result;
	const char *detail;
} nv_audit_entry;

/* Sees each line (JSON, no newline) before it is written and writes the
 * line to keep into out (empty on entry, capped at NV_AUDIT_LINE_MAX).
 * Returns 0, or a negative NV_E* code to refuse the append. The result
 * must still be one JSON object with the same seq and prev. */
typedef int (*nv_audit_filter_fn)(const char *line, size_t len, nv_buf *out,
				  void *payload);

/* Installs the filter for the whole process (NULL removes it). Not
 * thread-safe: call it once at start-up. */
void nv_audit_set_filter(nv_audit_filter_fn filter, void *payload);

/* "user@host" of this process (getpwuid + gethostname). */
void nv_audit_identity(char out[NV_AUDIT_IDENTITY_MAX]);

/* Appends one line under an exclusive lock: creates the folder, genesis and
 * head on first use, reads the last line (backwards from the end), writes
 * the new line in one O_APPEND write, fsyncs, then replaces head. *seq_out
 * (may be NULL) receives the line's seq. Refuses (NV_EREFUSED) to append to
 * a log that ends with a partial line, is shorter than its head records or
 * whose genesis changed, or that is gone while audit.anchor records it,
 * so an append never hides tampering: run nv_audit_verify() to see what
 * is wrong. A partial line after the last one head records (an append
 * that failed part way: a full disk) is cut back first; an append that
 * fails cuts back what it wrote of its line. */
int nv_audit_append(const char *home, const nv_audit_entry *entry,
		    uint64_t *seq_out, nv_err *err);

/* Appends entries[0..n-1] as consecutive lines under one lock, synced
 * once: a batch of submissions (a job array's tasks). *first_seq gets the
 * first line's seq. Every entry is checked before any is written; a
 * failure part way leaves the lines before it recorded. */
int nv_audit_append_many(const char *home, const nv_audit_entry *entries,
			 size_t n, uint64_t *first_seq, nv_err *err);

typedef struct nv_audit_report {
	int ok;            /* 1: the whole log checks */
	uint64_t lines;    /* lines read before stopping */
	uint64_t last_seq; /* seq of the last good line */
	uint64_t line;     /* first bad line (1-based); 0: genesis or head */
	char kind[16];     /* "" or edited, removed, reordered, truncated,
			    * genesis, malformed */
	char message[512];
	char hint[512]; /* "" or how to recover (the folder deleted) */
} nv_audit_report;

/* Walks the log and fills out with the first problem found. A home without
 * a log (no genesis, no lines, no anchor) is ok with 0 lines. Returns 0 once
 * the walk is done, whatever it found (look at out->ok); a negative code only
 * when the files cannot be read. */
int nv_audit_verify(const char *home, nv_audit_report *out, nv_err *err);

/* Called for each line (without its newline; line_no is 1-based); a
 * nonzero return stops the walk and nv_audit_each() returns that value. */
typedef int (*nv_audit_line_cb)(const char *line, size_t len, uint64_t line_no,
				void *payload);

/* Every line in order, or (job != NULL) only the lines whose "job" is job.
 * A missing log has no lines. */
int nv_audit_each(const char *home, const char *job, nv_audit_line_cb cb,
		  void *payload, nv_err *err);

/* Copies audit.jsonl, genesis.json and head (under a shared lock, so the
 * three agree) into the file:// store at store_root (a path or file:// URL,
 * created if needed) under `_audit/<identity>/<name>`, identity being the
 * one recorded in genesis.json made key-safe. NV_ENOTFOUND without a log.
 * NV_EREFUSED, the mirror left as it is, when the store's copy is of
 * another chain or longer (nv_audit_mirror_check). */
int nv_audit_mirror(const char *home, const char *store_root, nv_err *err);

/* Whether the mirror whose head record is head_text (len bytes; NULL:
 * the store has none) may be replaced by this home's log: 0 when it is of
 * the same chain and no longer; NV_EREFUSED, naming both and what to do,
 * when it is another chain's (another genesis) or records more lines than
 * this home's head (a log deleted or cut here must not overwrite the copy
 * kept off the machine). */
int nv_audit_mirror_check(const char *home, const char *head_text, size_t len,
			  nv_err *err);

/* The key prefix nv_audit_mirror() uses ("_audit/<identity>"). */
int nv_audit_mirror_prefix(const char *home, char *out, size_t cap,
			   nv_err *err);

#endif
