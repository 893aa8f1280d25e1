/* Private to the redactor (redact.c, redact_automaton.c,
 * redact_fingerprint.c, redact_shapes.c, redact_stream.c): the redactor's
 * state, the spans a pass collects, the shapes' continuation states, the
 * ASCII classes and the functions one file calls in another. Not a public
 * header: the API is redact.h. */
#ifndef NV_REDACT_INTERNAL_H
#define NV_REDACT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "creds/redact.h"
#include "creds/token_shapes.h"

/* Longest encoded pattern: percent-encoding triples a byte. */
#define PATTERN_MAX    (3 * NV_REDACT_SECRET_MAX)
#define SECRETS_MAX    65536
#define FP_SALT_LEN    32
#define FP_CONFIRM_LEN 16
/* Span ids from here on name a fingerprint; below, a secret. */
#define FP_ID_BASE SECRETS_MAX

/* ---- character classes (ASCII only, no locale) ---- */

static inline int is_upper(unsigned c)
{
	return c >= 'A' && c <= 'Z';
}

static inline int is_lower(unsigned c)
{
	return c >= 'a' && c <= 'z';
}

static inline int is_digit(unsigned c)
{
	return c >= '0' && c <= '9';
}

static inline int is_alnum(unsigned c)
{
	return is_upper(c) || is_lower(c) || is_digit(c);
}

static inline int is_b64(unsigned c)
{
	return is_alnum(c) || c == '+' || c == '/';
}

/* RFC 6750 b64token, the charset of a Bearer token. */
static inline int is_token68(unsigned c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
	       c == '+' || c == '/' || c == '=';
}

static inline int is_space(unsigned c)
{
	return c == ' ' || c == '\t';
}

static inline int is_eol(unsigned c)
{
	return c == '\n' || c == '\r';
}

/* What ends a query value. */
static inline int is_query_stop(unsigned c)
{
	return c == '&' || c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
	       c == '"' || c == '\'' || c == '<' || c == '>' || c == '#';
}

/* What may appear inside a PEM block (also its JSON-escaped "\n" form and
 * the "Proc-Type: 4,ENCRYPTED" headers of legacy keys). */
static inline int is_pem_body(unsigned c)
{
	return is_b64(c) || c == '=' || c == '\\' || c == '\n' || c == '\r' ||
	       c == ' ' || c == '\t' || c == ':' || c == ',' || c == '-';
}

static inline unsigned to_lower(unsigned c)
{
	return is_upper(c) ? c + ('a' - 'A') : c;
}

/* ---- the redactor ---- */

struct secret {
	char *label; /* "<redacted:NAME>" */
	size_t label_len;
	unsigned char *value; /* wiped on free */
	size_t len;
};

struct ac_node {
	int32_t first; /* first child, -1 none */
	int32_t next;  /* next sibling, -1 none */
	int32_t fail;
	int32_t out;    /* longest pattern ending here (a node), -1 none */
	int32_t row;    /* dense row, -1 for a sparse node */
	int32_t secret; /* for a node ending a pattern, else -1 */
	uint16_t depth;
	uint8_t byte;
};

/* A fingerprint document's salt and the hash base derived from it. */
struct fp_salt {
	unsigned char salt[FP_SALT_LEN];
	uint64_t base;
};

/* One form of another process's secret: its length, hash and HMAC
 * prefix, never its bytes. */
struct fingerprint {
	uint64_t hash;
	uint32_t len;
	uint32_t salt; /* index in the redactor's salts */
	uint32_t seq;  /* order of addition: of two equal ones the first wins */
	unsigned char confirm[FP_CONFIRM_LEN];
	uint8_t label_len;
	char label[NV_REDACT_NAME_MAX + 12]; /* "<redacted:NAME>" */
};

/* The fingerprints of one (salt, length): one pass over the text. */
struct fp_group {
	uint32_t salt, len;
	uint64_t base_pow; /* base^len */
	size_t first, n;   /* fps[first..first+n), sorted by hash */
	size_t filter;     /* offset of its bit filter (words) */
	uint64_t mask;     /* filter bits - 1 */
};

struct fp_groups {
	struct fp_group *v;
	size_t n;
	uint64_t *filter;
	size_t filter_words;
	size_t maxlen; /* longest fingerprinted form */
};

struct nv_redactor {
	pthread_mutex_t lock; /* recursive: emit() may log */
	struct secret *secrets;
	size_t nsecrets, secrets_cap;
	int dirty; /* secrets changed since the automaton was built */
	/* The automaton. Its bytes spell the secrets: wiped before free. */
	struct ac_node *nodes;
	size_t nnodes, nodes_cap;
	int32_t *rows;
	size_t rows_len;
	size_t width; /* classes per row */
	uint8_t classmap[256];
	/* Prefilter: one bit per hash of a pattern's first 4 bytes. Every
	 * pattern is at least 8 bytes long, and the automaton only runs
	 * around positions whose 4 bytes hit. */
	uint64_t *filter;
	size_t filter_words;
	unsigned filter_shift;
	size_t npatterns;
	size_t maxlen; /* the longest literal pattern */
#ifdef NAVETTE_HAVE_VECTORSCAN
	/* One Vectorscan database of the literal patterns (ids below
	 * vs_nlit) and the shapes' first words (redact_vectorscan.c), built
	 * when the automaton is; NULL until then or where it failed. */
	struct hs_database *vs_db;
	struct hs_scratch *vs_scratch;
	int32_t *vs_secret; /* a literal pattern's secret */
	uint32_t *vs_len;   /* a pattern's length */
	uint32_t vs_nlit;
	int vs_failed; /* fall back to the automaton until secrets change */
#endif
	/* Fingerprints, sorted by (salt, length, hash, confirm). */
	struct fp_salt *salts;
	size_t nsalts;
	struct fingerprint *fps;
	size_t nfps;
	struct fp_groups groups;
};

/* ---- spans ---- */

enum shape {
	SH_X_AMZ_SIGNATURE,
	SH_X_AMZ_CREDENTIAL,
	SH_X_AMZ_TOKEN,
	SH_AUTHORIZATION,
	SH_BEARER,
	SH_PRIVATE_KEY,
	SH_AWS_SECRET,
	SH_URL_PASSWORD,
	SH_URL_USERINFO,
	SH_COUNT
};

struct span {
	size_t start, end;
	int32_t id; /* >= 0: a secret; < 0: shape -(id + 1), from SH_COUNT
		       on the row -(id + 1) - SH_COUNT of nv_token_shapes */
};

struct spans {
	struct span *v;
	size_t n, cap;
};

/* A literal match as Vectorscan reports it. */
struct lit_match {
	size_t end;
	uint32_t len, pattern;
};

struct work {
	struct spans lit, shp;
	struct spans fp, tmp; /* fingerprint hits; merge space */
	uint64_t *prefix;     /* prefix hashes of the window */
	size_t prefix_cap;
	/* Vectorscan's answers for the window: its literal matches, and a
	 * bit per offset where a shape's first word starts (valid below
	 * cand_end; per byte from there on, as without the engine). */
	struct lit_match *lm;
	size_t lm_n, lm_cap;
	uint64_t *cand;
	size_t cand_words, cand_end;
	int have_cand;
};

/* ---- shapes ---- */

enum { SCAN_NONE, SCAN_MATCH, SCAN_MORE };

/* How the rest of a shape that outgrew the stream window is dropped
 * (CONT_PEM_LINES: masked line by line, see redact_pem_lines()). */
enum cont_mode {
	CONT_NONE,
	CONT_EOL,
	CONT_QUERY,
	CONT_TOKEN,
	CONT_PEM,
	CONT_PEM_LINES,
	CONT_SHAPE /* a row of nv_token_shapes: its own run */
};

/* A PEM block whose lines carry a prefix is several spans. */
enum pem_lines_kind {
	PEM_LINES_NONE,
	PEM_LINES_CLOSED, /* BEGIN [start, mark), runs, END [tail, end) */
	PEM_LINES_OPEN    /* BEGIN [start, mark), then redact_pem_lines() */
};

struct hit {
	size_t start, end;
	int32_t id; /* its span id */
	int open;   /* ran to the end of the window without a terminator */
	enum cont_mode cont;
	enum pem_lines_kind lines;
	size_t mark, tail;
	nv_token_run token; /* CONT_SHAPE: the run's state at the end */
};

struct cont {
	enum cont_mode mode;
	int matched;  /* CONT_PEM: bytes of "KEY-----" seen */
	int run;      /* CONT_PEM_LINES: base64 run ending here (capped) */
	int line_run; /* CONT_PEM_LINES: this line had a masked run */
	nv_token_run token; /* CONT_SHAPE: where the token's run stands */
};

#define PEM_SPAN_ID (-(int32_t)SH_PRIVATE_KEY - 1)

/* ---- redact.c: the registry and the encoded forms of a secret ---- */

/* Frees p after wiping its len bytes; NULL is accepted. */
void redact_wipe_free(void *p, size_t len);
/* 1 when name[0..n) is a credential name the redactor takes. */
int redact_name_ok_n(const char *name, size_t n);
/* *count (a field of r), read under r's lock. */
size_t redact_locked_count(nv_redactor *r, const size_t *count);

typedef int (*redact_variant_fn)(nv_redactor *r, void *ctx,
				 const unsigned char *p, size_t n,
				 int32_t secret);

/* Calls fn for every form of secret `idx` that is matched literally. */
int redact_for_each_variant(nv_redactor *r, int32_t idx, redact_variant_fn fn,
			    void *ctx);

/* ---- redact_automaton.c: literal secrets ---- */

void redact_automaton_free(nv_redactor *r);
/* 0 or NV_ENOMEM (the automaton is then empty). */
int redact_automaton_build(nv_redactor *r);
/* 0, or -1 out of memory. */
int redact_spans_push(struct spans *s, size_t start, size_t end, int32_t id);
int redact_literal_push(struct spans *s, size_t start, size_t end, int32_t id);
int redact_literal_scan(const nv_redactor *r, struct spans *lit,
			const unsigned char *p, size_t start, size_t len,
			size_t *depth);
/* The longest suffix of p[start..len) that may begin a pattern. */
size_t redact_literal_depth(const nv_redactor *r, const unsigned char *p,
			    size_t start, size_t len);

/* ---- redact_vectorscan.c: literals and shape candidates at once ---- */

/* 1: w->lit holds the literal spans of p[start..len) and w->cand the
 * shapes' candidates; 0: no engine (the automaton and the per-byte test
 * do it); -1: out of memory. Builds the database when it has none. */
int redact_vs_scan(nv_redactor *r, struct work *w, const unsigned char *p,
		   size_t start, size_t len);
void redact_vs_free(nv_redactor *r);
void redact_vs_work_free(struct work *w);

/* ---- redact_fingerprint.c: secrets known by their fingerprints ---- */

int redact_fingerprint_scan(const nv_redactor *r, struct work *w,
			    const unsigned char *p, size_t start, size_t len);
int redact_merge_fingerprint_spans(struct work *w);

/* ---- redact_shapes.c: credential shapes ---- */

/* Once per process, before redact_shape_candidate(); any thread. */
void redact_shapes_init(void);
int redact_shape_candidate(const unsigned char *p, size_t len, size_t i);
/* Calls fn for the first word of every shape: what its scanner needs at
 * p[i] before it can answer anything but SCAN_NONE. Returns the longest. */
typedef int (*redact_trigger_fn)(void *ctx, const char *word, size_t n,
				 int fold);
size_t redact_shape_triggers(redact_trigger_fn fn, void *ctx);
/* SCAN_NONE, SCAN_MATCH (*h filled in) or SCAN_MORE. */
int redact_scan_shape(const unsigned char *p, size_t len, size_t i, int prev,
		      int at_end, struct hit *h);
int redact_pem_tail(const unsigned char *p, size_t len);
int redact_pem_push_runs(struct spans *out, const unsigned char *p, size_t from,
			 size_t to);
int redact_pem_lines(struct cont *c, const unsigned char *p, size_t from,
		     size_t to, size_t len, size_t cut, struct spans *out,
		     size_t *end, size_t *hold);
size_t redact_cont_skip(struct cont *c, const unsigned char *p, size_t len);
void redact_emit_shape_label(int32_t k, nv_redact_emit_fn emit, void *payload);

#endif
