/* The redactor: the one place every output (CLI, logs, audit, shipped job
 * logs) passes through before it leaves the process.
 *
 * It masks (a) every secret registered in the process, in its raw, base64
 * (std and url alphabets, all three alignments, padded or not) and
 * percent-encoded forms, and (b) well-known credential shapes (AWS query
 * signatures and secret keys, Authorization headers, Bearer tokens, PEM
 * private keys, also printed with a prefix on each line, URL passwords, and
 * every row of the table creds/token_shapes.h that the tree scanner uses
 * too: GitHub, GitLab, Slack, Google and Stripe tokens, AWS access key ids,
 * JWTs). A secret becomes `<redacted:NAME>` (NAME is its credential name,
 * never its value), a shape `<redacted:KIND>`. A token shape is masked whole
 * whatever its length: past the stream window its run is followed byte by
 * byte and dropped, never held.
 *
 * Literal secrets are matched by one Aho-Corasick automaton (linear in the
 * input whatever the number of secrets); secrets known only by salted
 * fingerprints (another process's secrets) by a rolling hash confirmed by
 * an HMAC; shapes by a hand-written scanner run only at candidate bytes. A
 * stream holds back just the trailing bytes that could still start a match, so
 * a secret split across writes is masked.
 *
 * Thread-safety: a redactor has a mutex taken by registration and by every
 * buffer or stream pass. A stream must be used by one thread at a time. */
#ifndef NV_REDACT_H
#define NV_REDACT_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"

/* Secrets shorter than this are refused: short common words never mask. */
#define NV_REDACT_SECRET_MIN 8
/* Longest secret accepted (its encoded forms are up to 3x this). */
#define NV_REDACT_SECRET_MAX 1024
/* Longest credential name (it appears in the output). */
#define NV_REDACT_NAME_MAX 64
/* Longest shape held back by a stream (a PEM block, a long token); past
 * this the shape is masked anyway and its continuation dropped. */
#define NV_REDACT_SHAPE_MAX (16 * 1024)

typedef struct nv_redactor nv_redactor;
typedef struct nv_redact_stream nv_redact_stream;

/* Receives redacted output, any number of times per write. */
typedef void (*nv_redact_emit_fn)(const char *buf, size_t len, void *payload);

/* An empty redactor (shapes only). The caller frees it with
 * nv_redactor_free(), which wipes every secret byte. NULL if out of
 * memory. */
nv_redactor *nv_redactor_new(void);
void nv_redactor_free(nv_redactor *r);

/* The process-wide redactor that credentials register into. Never freed;
 * never NULL unless the first call ran out of memory. */
nv_redactor *nv_redact_global(void);

/* Registers a secret value under a credential name ([A-Za-z0-9_.:/-], at
 * most NV_REDACT_NAME_MAX). The value is copied (and wiped on free); it may
 * hold any bytes. Returns 0, NV_EREFUSED if shorter than
 * NV_REDACT_SECRET_MIN, NV_EINVAL for a bad name or a value over
 * NV_REDACT_SECRET_MAX, NV_ENOMEM. Registering the same value twice is
 * harmless. */
int nv_redact_add_secret(nv_redactor *r, const char *name, const void *value,
			 size_t len, nv_err *err);

/* How many secrets are registered. */
size_t nv_redact_secret_count(nv_redactor *r);

/* Salted fingerprints let another process (navette redact-stream, which
 * never loads credentials) mask the registered secrets without ever
 * holding their values. The document is text:
 *
 *   navette-fingerprints 1 <salt: 64 hex>
 *   <name> <length> <hash: 16 hex> <confirm: 32 hex>     (one per form)
 *
 * one line per form the redactor matches for each secret (raw, base64 std
 * and url in each alignment, percent-encoded upper and lower), duplicates
 * left out. hash is the polynomial hash of the form's bytes modulo
 * 2^61-1, base = the first 8 salt bytes (big-endian) modulo 2^61-1, plus
 * 256 if under 256; confirm is the first 16 bytes of
 * HMAC-SHA256(salt, form). A fresh random salt is drawn per export, so two
 * exports of the same secrets share no hash. */
#define NV_REDACT_FINGERPRINTS_MAX 65536 /* lines per document */

/* Appends a fingerprint document for every secret registered in r to out.
 * Returns 0, NV_EIO if no random salt could be drawn, NV_ENOMEM if out hit
 * its cap, memory ran out or r holds more than NV_REDACT_FINGERPRINTS_MAX
 * forms. */
int nv_redact_export_fingerprints(nv_redactor *r, nv_buf *out, nv_err *err);

/* Parses a fingerprint document into r, which then masks each form as
 * `<redacted:NAME>`. All or nothing: a malformed document is refused with
 * NV_EINVAL and its line number. Several documents (salts) may be added;
 * a fingerprint already known is skipped. Matching costs one pass over the
 * text per distinct (salt, length) pair, so keep to a few documents:
 * typical use (one document, a handful of secrets) is under 50 pairs.
 * Fingerprints are not secrets; nv_redactor_free() frees them. */
int nv_redact_add_fingerprints(nv_redactor *r, const char *text, size_t len,
			       nv_err *err);

/* How many fingerprints r holds (after duplicates are merged). */
size_t nv_redact_fingerprint_count(nv_redactor *r);

/* The matcher this build uses for literals and shapes, for `navette
 * version`; load: ask the library whether this CPU can run it. */
const char *nv_redact_engine(int load);

/* One-shot: appends the redacted form of in[0..len) to out. Returns 0, or
 * NV_ENOMEM if out hit its cap or memory ran out. */
int nv_redact_buffer(nv_redactor *r, const char *in, size_t len, nv_buf *out);

/* A stream over r (which must outlive it). emit receives the output with
 * payload. Freed by nv_redact_stream_free(); NULL if out of memory. */
nv_redact_stream *nv_redact_stream_new(nv_redactor *r, nv_redact_emit_fn emit,
				       void *payload);
/* Feeds bytes; emits what can no longer be part of a match. Returns 0 or
 * NV_ENOMEM (only while building the automaton). */
int nv_redact_stream_write(nv_redact_stream *s, const void *buf, size_t len);
/* End of stream: emits what was held back. The stream may be reused. */
int nv_redact_stream_flush(nv_redact_stream *s);
/* Discards (and wipes) held-back bytes without emitting them. NULL ok. */
void nv_redact_stream_free(nv_redact_stream *s);

/* An nv_out_filter_fn (core/output.h) over the global redactor. Each
 * write is redacted whole, so callers should write whole lines. */
void nv_redact_out_filter(int stream, const char *buf, size_t len,
			  void (*emit)(int stream, const char *buf,
				       size_t len));

/* 1 if the value of environment variable `name` may be shown (PATH, HOME,
 * LANG, LC_*, NAVETTE_JOB_ID...), 0 if it must print as <hidden>. */
int nv_redact_env_allowed(const char *name);

/* Appends "NAME=VALUE" for an "NAME=VALUE" environment entry, with VALUE
 * replaced by <hidden> unless the name is allowed. Returns 0 or -1 when out
 * hit its cap. */
int nv_redact_env_line(const char *entry, nv_buf *out);

#endif
