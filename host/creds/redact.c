/* The redactor (see redact.h).
 *
 * One pass over a window of bytes finds (1) literal secrets with an
 * Aho-Corasick automaton built lazily from every registered secret and its
 * encoded forms, and (2) credential shapes with a scanner called only at a
 * few trigger bytes. Matches become spans; overlapping spans are merged so
 * that no secret byte survives. A pass returns a "safe" offset: bytes before
 * it can no longer be part of a match and are emitted; the rest is kept by
 * the stream and scanned again with the next write. A shape that outgrows
 * NV_REDACT_SHAPE_MAX is masked anyway and a small continuation state drops
 * the rest of it from the next writes, so memory stays bounded. */
#include "creds/redact.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* Bytes scanned per pass by a stream; the held-back tail comes on top. */
#define BLOCK_SIZE (64 * 1024)
/* Longest encoded pattern: percent-encoding triples a byte. */
#define PATTERN_MAX (3 * NV_REDACT_SECRET_MAX)
/* Most a stream holds back (shape, literal prefix, merged spans). */
#define HOLD_MAX (NV_REDACT_SHAPE_MAX + 2 * PATTERN_MAX)
/* Merged literal spans are cut at this length so a run of overlapping
 * matches cannot grow the held-back tail without bound. */
#define SPAN_MAX    4096
#define SECRETS_MAX 65536
/* Nodes up to this depth get a full transition row (the hot states). */
#define DENSE_DEPTH 2

/* ---- character classes (ASCII only, no locale) ---- */

static int is_upper(unsigned c)
{
	return c >= 'A' && c <= 'Z';
}

static int is_lower(unsigned c)
{
	return c >= 'a' && c <= 'z';
}

static int is_digit(unsigned c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(unsigned c)
{
	return is_upper(c) || is_lower(c) || is_digit(c);
}

static int is_b64(unsigned c)
{
	return is_alnum(c) || c == '+' || c == '/';
}

static int is_b64url(unsigned c)
{
	return is_alnum(c) || c == '-' || c == '_';
}

/* RFC 6750 b64token, the charset of a Bearer token. */
static int is_token68(unsigned c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
	       c == '+' || c == '/' || c == '=';
}

static int is_space(unsigned c)
{
	return c == ' ' || c == '\t';
}

static int is_eol(unsigned c)
{
	return c == '\n' || c == '\r';
}

/* What ends a query value. */
static int is_query_stop(unsigned c)
{
	return c == '&' || c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
	       c == '"' || c == '\'' || c == '<' || c == '>' || c == '#';
}

/* What may appear inside a PEM block (also its JSON-escaped "\n" form and
 * the "Proc-Type: 4,ENCRYPTED" headers of legacy keys). */
static int is_pem_body(unsigned c)
{
	return is_b64(c) || c == '=' || c == '\\' || c == '\n' || c == '\r' ||
	       c == ' ' || c == '\t' || c == ':' || c == ',' || c == '-';
}

static unsigned to_lower(unsigned c)
{
	return is_upper(c) ? c + ('a' - 'A') : c;
}

/* ---- registry ---- */

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
};

static void wipe_free(void *p, size_t len)
{
	if (p) {
		OPENSSL_cleanse(p, len);
		free(p);
	}
}

static void automaton_free(nv_redactor *r)
{
	wipe_free(r->nodes, r->nodes_cap * sizeof(*r->nodes));
	wipe_free(r->rows, r->rows_len * sizeof(*r->rows));
	wipe_free(r->filter, r->filter_words * sizeof(*r->filter));
	r->nodes = NULL;
	r->rows = NULL;
	r->filter = NULL;
	r->filter_words = 0;
	r->npatterns = 0;
	r->nnodes = r->nodes_cap = r->rows_len = 0;
	r->width = 0;
	memset(r->classmap, 0, sizeof(r->classmap));
}

nv_redactor *nv_redactor_new(void)
{
	nv_redactor *r = calloc(1, sizeof(*r));
	pthread_mutexattr_t attr;

	if (!r)
		return NULL;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	if (pthread_mutex_init(&r->lock, &attr) != 0) {
		pthread_mutexattr_destroy(&attr);
		free(r);
		return NULL;
	}
	pthread_mutexattr_destroy(&attr);
	return r;
}

void nv_redactor_free(nv_redactor *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nsecrets; i++) {
		free(r->secrets[i].label);
		wipe_free(r->secrets[i].value, r->secrets[i].len);
	}
	free(r->secrets);
	automaton_free(r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static nv_redactor *global_redactor;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	global_redactor = nv_redactor_new();
}

nv_redactor *nv_redact_global(void)
{
	pthread_once(&global_once, global_init);
	return global_redactor;
}

static int name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > NV_REDACT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned char)name[i];
		if (!is_alnum(c) && !strchr("_.:/-", (int)c))
			return 0;
	}
	return 1;
}

int nv_redact_add_secret(nv_redactor *r, const char *name, const void *value,
			 size_t len, nv_err *err)
{
	int rc = 0;

	if (!r || !value)
		return nv_err_set(err, NV_EINVAL, NULL, "no redactor or value");
	if (!name_ok(name))
		return nv_err_set(err, NV_EINVAL,
				  "use letters, digits and _.:/- (at most 64)",
				  "bad credential name for the redactor");
	if (len < NV_REDACT_SECRET_MIN)
		return nv_err_set(err, NV_EREFUSED,
				  "a secret must be at least 8 bytes long",
				  "secret '%s' is too short to be masked "
				  "safely (%zu bytes)",
				  name, len);
	if (len > NV_REDACT_SECRET_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "secret '%s' is longer than %d bytes", name,
				  NV_REDACT_SECRET_MAX);
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nsecrets; i++) {
		if (r->secrets[i].len == len &&
		    CRYPTO_memcmp(r->secrets[i].value, value, len) == 0)
			goto out; /* already masked, under its first name */
	}
	if (r->nsecrets >= SECRETS_MAX) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"too many secrets for the redactor (%d)",
				SECRETS_MAX);
		goto out;
	}
	if (r->nsecrets == r->secrets_cap) {
		size_t cap = r->secrets_cap ? 2 * r->secrets_cap : 16;
		struct secret *p = realloc(r->secrets, cap * sizeof(*p));
		if (!p)
			goto nomem;
		r->secrets = p;
		r->secrets_cap = cap;
	}
	struct secret *s = &r->secrets[r->nsecrets];
	s->label_len = strlen(name) + strlen("<redacted:>");
	s->label = malloc(s->label_len + 1);
	s->value = malloc(len);
	if (!s->label || !s->value) {
		free(s->label);
		free(s->value);
		goto nomem;
	}
	memcpy(s->label, "<redacted:", 10);
	memcpy(s->label + 10, name, s->label_len - 11);
	memcpy(s->label + s->label_len - 1, ">", 2);
	memcpy(s->value, value, len);
	s->len = len;
	r->nsecrets++;
	r->dirty = 1;
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
nomem:
	pthread_mutex_unlock(&r->lock);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

size_t nv_redact_secret_count(nv_redactor *r)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = r->nsecrets;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* ---- encoded forms of a secret ---- */

static const char b64_std[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The base64 characters fully determined by v when v starts `align` bytes
 * into the encoded stream: the partial characters at both edges depend on
 * the neighbouring bytes (or padding) and are left out, so the core matches
 * padded and unpadded encodings alike. */
static size_t b64_core(const unsigned char *v, size_t n, size_t align,
		       const char *alphabet, char *out)
{
	size_t total = 8 * (align + n), o = 0;

	for (size_t i = (8 * align + 5) / 6; 6 * i + 6 <= total; i++) {
		size_t bit = 6 * i - 8 * align;
		unsigned x = 0;
		for (size_t k = 0; k < 6; k++, bit++)
			x = (x << 1) | ((v[bit >> 3] >> (7 - (bit & 7))) & 1u);
		out[o++] = alphabet[x];
	}
	return o;
}

static int is_unreserved(unsigned c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static size_t url_encode(const unsigned char *v, size_t n, const char *hex,
			 char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (is_unreserved(v[i])) {
			out[o++] = (char)v[i];
		} else {
			out[o++] = '%';
			out[o++] = hex[v[i] >> 4];
			out[o++] = hex[v[i] & 15];
		}
	}
	return o;
}

typedef int (*variant_fn)(nv_redactor *r, const unsigned char *p, size_t n,
			  int32_t secret);

/* Calls fn for every form of secret `idx` that is matched literally. */
static int for_each_variant(nv_redactor *r, int32_t idx, variant_fn fn)
{
	const struct secret *s = &r->secrets[idx];
	unsigned char tmp[PATTERN_MAX + 8];
	size_t n;
	int rc = fn(r, s->value, s->len, idx);

	for (size_t align = 0; align < 3 && rc == 0; align++) {
		n = b64_core(s->value, s->len, align, b64_std, (char *)tmp);
		rc = fn(r, tmp, n, idx);
		if (rc == 0 && (memchr(tmp, '+', n) || memchr(tmp, '/', n))) {
			n = b64_core(s->value, s->len, align, b64_url,
				     (char *)tmp);
			rc = fn(r, tmp, n, idx);
		}
	}
	n = url_encode(s->value, s->len, "0123456789ABCDEF", (char *)tmp);
	if (rc == 0 && n != s->len) {
		rc = fn(r, tmp, n, idx);
		size_t m = url_encode(s->value, s->len, "0123456789abcdef",
				      (char *)tmp + n + 1);
		if (rc == 0 && memcmp(tmp, tmp + n + 1, m) != 0)
			rc = fn(r, tmp + n + 1, m, idx);
	}
	OPENSSL_cleanse(tmp, sizeof(tmp));
	return rc;
}

/* ---- Aho-Corasick automaton ---- */

static int count_variant(nv_redactor *r, const unsigned char *p, size_t n,
			 int32_t secret)
{
	(void)p;
	(void)secret;
	r->nodes_cap += n;
	r->npatterns++;
	return 0;
}

static uint32_t filter_hash(const nv_redactor *r, const unsigned char *p)
{
	uint32_t x;

	memcpy(&x, p, 4);
	return (x * 0x9e3779b1u) >> r->filter_shift;
}

static int filter_hit(const nv_redactor *r, const unsigned char *p)
{
	uint32_t h = filter_hash(r, p);

	return (int)((r->filter[h >> 6] >> (h & 63)) & 1u);
}

static int insert_variant(nv_redactor *r, const unsigned char *p, size_t n,
			  int32_t secret)
{
	int32_t st = 0;
	uint32_t h;

	if (n < 4)
		return -1; /* cannot happen: patterns are 8+ bytes */
	h = filter_hash(r, p);
	r->filter[h >> 6] |= (uint64_t)1 << (h & 63);
	for (size_t i = 0; i < n; i++) {
		int32_t ch = r->nodes[st].first;
		while (ch >= 0 && r->nodes[ch].byte != p[i])
			ch = r->nodes[ch].next;
		if (ch < 0) {
			if (r->nnodes >= r->nodes_cap)
				return -1; /* cannot happen: counted first */
			ch = (int32_t)r->nnodes++;
			struct ac_node *c = &r->nodes[ch];
			c->first = -1;
			c->next = r->nodes[st].first;
			c->fail = 0;
			c->out = -1;
			c->row = -1;
			c->secret = -1;
			c->depth = (uint16_t)(r->nodes[st].depth + 1);
			c->byte = p[i];
			r->nodes[st].first = ch;
		}
		st = ch;
	}
	if (r->nodes[st].secret < 0)
		r->nodes[st].secret = secret;
	return 0;
}

/* Where state st goes on byte c (class k), through fail links. */
static int32_t ac_step(const nv_redactor *r, int32_t st, unsigned c, size_t k)
{
	const struct ac_node *nodes = r->nodes;

	for (;;) {
		const struct ac_node *n = &nodes[st];
		if (n->row >= 0)
			return r->rows[(size_t)n->row * r->width + k];
		if (k == 0)
			return 0; /* a byte no pattern holds */
		int32_t ch = n->first;
		while (ch >= 0 && nodes[ch].byte != c)
			ch = nodes[ch].next;
		if (ch >= 0)
			return ch;
		st = n->fail;
	}
}

static int automaton_build(nv_redactor *r)
{
	int32_t *queue = NULL;
	size_t head = 0, tail = 0, ndense = 0;

	automaton_free(r);
	r->nodes_cap = 1;
	for (size_t i = 0; i < r->nsecrets; i++)
		for_each_variant(r, (int32_t)i, count_variant);
	r->nodes = calloc(r->nodes_cap, sizeof(*r->nodes));
	queue = malloc(r->nodes_cap * sizeof(*queue));
	/* ~64 bits per pattern (1.5% false hits), 2^16..2^26 bits */
	r->filter_shift = 32 - 16;
	while (r->filter_shift > 6 &&
	       ((size_t)1 << (32 - r->filter_shift)) < 64 * r->npatterns)
		r->filter_shift--;
	r->filter_words = ((size_t)1 << (32 - r->filter_shift)) / 64;
	r->filter = calloc(r->filter_words, sizeof(*r->filter));
	if (!r->nodes || !queue || !r->filter)
		goto nomem;
	r->nodes[0] = (struct ac_node){-1, -1, 0, -1, -1, -1, 0, 0};
	r->nnodes = 1;
	for (size_t i = 0; i < r->nsecrets; i++)
		if (for_each_variant(r, (int32_t)i, insert_variant) != 0)
			goto nomem;

	/* Byte classes: 0 for bytes in no pattern, one per other byte. */
	for (size_t i = 1; i < r->nnodes; i++)
		r->classmap[r->nodes[i].byte] = 1;
	r->width = 1;
	for (size_t c = 0; c < 256; c++)
		r->classmap[c] = r->classmap[c] ? (uint8_t)r->width++ : 0;

	/* Breadth-first: fail links and outputs, and dense rows for the
	 * shallow nodes, where the scan spends nearly all its time. */
	queue[tail++] = 0;
	while (head < tail) {
		int32_t u = queue[head++];
		if (r->nodes[u].depth <= DENSE_DEPTH)
			ndense++;
		for (int32_t v = r->nodes[u].first; v >= 0;
		     v = r->nodes[v].next) {
			struct ac_node *n = &r->nodes[v];
			queue[tail++] = v;
			if (u != 0) {
				/* the parent's fail state is complete: its
				 * depth is smaller */
				n->fail = ac_step(r, r->nodes[u].fail, n->byte,
						  r->classmap[n->byte]);
			}
			n->out = n->secret >= 0 ? v : r->nodes[n->fail].out;
		}
		/* ac_step on shallower nodes needs their rows: build the row
		 * of u as soon as u is dequeued (its fail is shallower). */
		if (r->nodes[u].depth <= DENSE_DEPTH) {
			if (!r->rows) {
				size_t cap = 0;
				for (size_t i = 0; i < r->nnodes; i++)
					cap += r->nodes[i].depth <= DENSE_DEPTH;
				r->rows_len = cap * r->width;
				r->rows = calloc(r->rows_len, sizeof(*r->rows));
				if (!r->rows)
					goto nomem;
			}
			int32_t row = (int32_t)(ndense - 1);
			int32_t *dst = r->rows + (size_t)row * r->width;
			if (u != 0) {
				const int32_t *src =
					r->rows +
					(size_t)r->nodes[r->nodes[u].fail].row *
						r->width;
				memcpy(dst, src, r->width * sizeof(*dst));
			}
			for (int32_t v = r->nodes[u].first; v >= 0;
			     v = r->nodes[v].next)
				dst[r->classmap[r->nodes[v].byte]] = v;
			r->nodes[u].row = row;
		}
	}
	free(queue);
	r->dirty = 0;
	return 0;
nomem:
	free(queue);
	automaton_free(r);
	return NV_ENOMEM;
}

/* ---- spans ---- */

enum shape {
	SH_X_AMZ_SIGNATURE,
	SH_X_AMZ_CREDENTIAL,
	SH_X_AMZ_TOKEN,
	SH_AUTHORIZATION,
	SH_BEARER,
	SH_JWT,
	SH_PRIVATE_KEY,
	SH_AWS_KEY_ID,
	SH_AWS_SECRET,
	SH_URL_PASSWORD,
	SH_URL_USERINFO,
	SH_COUNT
};

static const char *const shape_labels[SH_COUNT] = {
	"<redacted:x-amz-signature>",
	"<redacted:x-amz-credential>",
	"<redacted:x-amz-security-token>",
	"<redacted:authorization>",
	"<redacted:bearer>",
	"<redacted:jwt>",
	"<redacted:private-key>",
	"<redacted:aws-access-key-id>",
	"<redacted:aws-secret-key>",
	"<redacted:url-password>",
	"<redacted:url-userinfo>",
};

struct span {
	size_t start, end;
	int32_t id; /* >= 0: a secret; < 0: shape -(id + 1) */
};

struct spans {
	struct span *v;
	size_t n, cap;
};

static int spans_push(struct spans *s, size_t start, size_t end, int32_t id)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct span *p = realloc(s->v, cap * sizeof(*p));
		if (!p)
			return -1;
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = (struct span){start, end, id};
	return 0;
}

/* Adds a literal match; the list stays sorted and disjoint by merging
 * overlaps (matches arrive by end offset, not start). */
static int literal_push(struct spans *s, size_t start, size_t end, int32_t id)
{
	while (s->n > 0 && start < s->v[s->n - 1].end) {
		struct span *top = &s->v[s->n - 1];
		if (end <= top->end)
			return 0;
		if (end - (start < top->start ? start : top->start) >
		    SPAN_MAX) {
			start = top->end; /* keep spans short; still masked */
			break;
		}
		if (top->start < start)
			start = top->start;
		id = top->id;
		s->n--;
	}
	return spans_push(s, start, end, id);
}

/* Finds the literal secrets in p[start..len); *depth gets the length of
 * the longest suffix that is a pattern prefix (what must be held back).
 *
 * The automaton state is exact at `pos`. While its depth is under 4, the
 * state depends only on the last 3 bytes and no match can be under way
 * unless the next 4 bytes hit the prefilter, so the scan jumps from hit to
 * hit and runs the automaton only around them. Still linear: pos never
 * moves back, and each position is tested by the prefilter at most
 * twice. */
static int literal_scan(const nv_redactor *r, struct spans *lit,
			const unsigned char *p, size_t start, size_t len,
			size_t *depth)
{
	const struct ac_node *nodes = r->nodes;
	size_t pos = start, i = start;
	int32_t st = 0;

	for (;;) {
		while (i + 4 <= len && !filter_hit(r, p + i))
			i++;
		if (i + 4 > len)
			break;
		if (i >= pos + 3) {
			st = 0;
			pos = i - 3 > start ? i - 3 : start;
		}
		for (; pos < len; pos++) {
			st = ac_step(r, st, p[pos], r->classmap[p[pos]]);
			int32_t o = nodes[st].out;
			if (o >= 0 &&
			    literal_push(lit, pos + 1 - nodes[o].depth, pos + 1,
					 nodes[o].secret) != 0)
				return -1;
			if (nodes[st].depth < 4 && pos >= i + 3) {
				pos++;
				break;
			}
		}
		if (pos >= len) {
			*depth = nodes[st].depth;
			return 0;
		}
		i = pos - nodes[st].depth;
	}
	if (len >= pos + 3) {
		st = 0;
		pos = len - 3 > start ? len - 3 : start;
	}
	for (; pos < len; pos++)
		st = ac_step(r, st, p[pos], r->classmap[p[pos]]);
	*depth = nodes[st].depth;
	return 0;
}

/* ---- shapes ---- */

enum { SCAN_NONE, SCAN_MATCH, SCAN_MORE };

/* How the rest of a shape that outgrew the stream window is dropped. */
enum cont_mode { CONT_NONE, CONT_EOL, CONT_QUERY, CONT_TOKEN, CONT_PEM };

struct hit {
	size_t start, end;
	enum shape shape;
	int open; /* ran to the end of the window without a terminator */
	enum cont_mode cont;
};

/* 1: p[i..] starts with lit; 0: it does not; -1: the window ends first.
 * With fold, p is lowercased (lit must be lowercase). */
static int has_prefix(const unsigned char *p, size_t len, size_t i,
		      const char *lit, int fold)
{
	for (size_t k = 0; lit[k]; k++) {
		if (i + k >= len)
			return -1;
		unsigned c = fold ? to_lower(p[i + k]) : p[i + k];
		if (c != (unsigned char)lit[k])
			return 0;
	}
	return 1;
}

/* Returns from a scanner when a prefix test did not say yes. */
#define NEED(r)                                                                \
	do {                                                                   \
		int need_ = (r);                                               \
		if (need_ < 0)                                                 \
			return at_end ? SCAN_NONE : SCAN_MORE;                 \
		if (need_ == 0)                                                \
			return SCAN_NONE;                                      \
	} while (0)

static int hit_set(struct hit *h, size_t start, size_t end, enum shape shape,
		   int open, enum cont_mode cont)
{
	if (end <= start)
		return SCAN_NONE;
	h->start = start;
	h->end = end;
	h->shape = shape;
	h->open = open;
	h->cont = cont;
	return SCAN_MATCH;
}

/* Skips spaces and tabs; -1 if the window ends. */
static int skip_spaces(const unsigned char *p, size_t len, size_t *j)
{
	while (*j < len && is_space(p[*j]))
		(*j)++;
	return *j < len ? 1 : -1;
}

/* A value after "Name:" up to the end of the line, or inside quotes. */
static int header_value(const unsigned char *p, size_t len, size_t j,
			int at_end, enum shape shape, struct hit *h)
{
	size_t k;
	int quoted;

	NEED(skip_spaces(p, len, &j));
	quoted = p[j] == '"';
	if (quoted)
		j++;
	for (k = j; k < len; k++) {
		if (is_eol(p[k]) || (quoted && p[k] == '"'))
			return hit_set(h, j, k, shape, 0, CONT_NONE);
	}
	if (!at_end)
		return SCAN_MORE;
	return hit_set(h, j, len, shape, 1, CONT_EOL);
}

/* X-Amz-Signature=..., X-Amz-Credential=..., X-Amz-Security-Token=...
 * (query parameters, any case) and the same names as headers. */
static int scan_x_amz(const unsigned char *p, size_t len, size_t i, int at_end,
		      struct hit *h)
{
	static const struct {
		const char *name;
		enum shape shape;
	} names[] = {{"signature", SH_X_AMZ_SIGNATURE},
		     {"credential", SH_X_AMZ_CREDENTIAL},
		     {"security-token", SH_X_AMZ_TOKEN}};
	size_t j = i + 6, k;
	size_t n;

	NEED(has_prefix(p, len, i, "x-amz-", 1));
	for (n = 0; n < 3; n++) {
		int r = has_prefix(p, len, j, names[n].name, 1);
		if (r < 0)
			return at_end ? SCAN_NONE : SCAN_MORE;
		if (r > 0)
			break;
	}
	if (n == 3)
		return SCAN_NONE;
	j += strlen(names[n].name);
	if (j >= len)
		return at_end ? SCAN_NONE : SCAN_MORE;
	if (p[j] == ':' || (p[j] == '"' && j + 1 < len && p[j + 1] == ':'))
		return header_value(p, len, j + (p[j] == '"' ? 2 : 1), at_end,
				    names[n].shape, h);
	if (p[j] != '=')
		return SCAN_NONE;
	for (k = ++j; k < len; k++) {
		if (is_query_stop(p[k]))
			return hit_set(h, j, k, names[n].shape, 0, CONT_NONE);
	}
	if (!at_end)
		return SCAN_MORE;
	return hit_set(h, j, len, names[n].shape, 1, CONT_QUERY);
}

/* Authorization: VALUE (also Proxy-Authorization, "authorization": "..."). */
static int scan_authorization(const unsigned char *p, size_t len, size_t i,
			      int prev, int at_end, struct hit *h)
{
	size_t j = i + 13;

	if (prev >= 0 && (is_alnum((unsigned)prev) || prev == '_'))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "authorization", 1));
	if (j < len && (p[j] == '"' || p[j] == '\''))
		j++;
	NEED(skip_spaces(p, len, &j));
	if (p[j] != ':')
		return SCAN_NONE;
	return header_value(p, len, j + 1, at_end, SH_AUTHORIZATION, h);
}

/* Bearer TOKEN: the token must look like one (8+ chars, and a digit, a
 * symbol or 20+ chars), so "Bearer authentication" stays readable. */
static int scan_bearer(const unsigned char *p, size_t len, size_t i, int prev,
		       int at_end, struct hit *h)
{
	size_t j = i + 6, k;
	int mixed = 0;

	if (prev >= 0 && is_alnum((unsigned)prev))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "bearer", 1));
	if (j < len && !is_space(p[j]))
		return SCAN_NONE;
	NEED(skip_spaces(p, len, &j));
	for (k = j; k < len && is_token68(p[k]); k++)
		mixed |= !is_upper(p[k]) && !is_lower(p[k]);
	if (k == len && !at_end)
		return SCAN_MORE;
	if (k - j < 8 || (!mixed && k - j < 20))
		return SCAN_NONE;
	return hit_set(h, j, k, SH_BEARER, k == len, CONT_TOKEN);
}

/* eyJ<header>.<payload>.<signature> (the signature may be empty). */
static int scan_jwt(const unsigned char *p, size_t len, size_t i, int prev,
		    int at_end, struct hit *h)
{
	size_t k, seg = i, dots = 0;

	if (prev >= 0 && (is_b64url((unsigned)prev) || prev == '.'))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "eyJ", 0));
	for (k = i; k < len; k++) {
		if (is_b64url(p[k]))
			continue;
		if (p[k] != '.' || dots == 2)
			break;
		if (k - seg < (dots == 0 ? 8u : 2u))
			return SCAN_NONE;
		dots++;
		seg = k + 1;
	}
	if (k == len && !at_end)
		return SCAN_MORE;
	if (dots < 2)
		return SCAN_NONE;
	return hit_set(h, i, k, SH_JWT, k == len, CONT_TOKEN);
}

/* How much of "KEY-----" the window ends with, so a PEM continuation can
 * find the end line even when it straddles two writes. */
static int pem_tail(const unsigned char *p, size_t len)
{
	static const char end[] = "KEY-----";

	for (size_t m = 7; m > 0; m--) {
		if (len >= m && memcmp(p + len - m, end, m) == 0)
			return (int)m;
	}
	return 0;
}

/* -----BEGIN ... PRIVATE KEY----- through -----END ... KEY-----. A block
 * whose body breaks off (no END line) is masked up to the break. */
static int scan_pem(const unsigned char *p, size_t len, size_t i, int at_end,
		    struct hit *h)
{
	size_t j = i + 11, k, m;
	int r;

	NEED(has_prefix(p, len, i, "-----BEGIN ", 0));
	while (j < len && j - i < 80 &&
	       (is_upper(p[j]) || is_digit(p[j]) || p[j] == ' '))
		j++;
	NEED(has_prefix(p, len, j, "-----", 0));
	if (j - (i + 11) < 11 || memcmp(p + j - 11, "PRIVATE KEY", 11) != 0)
		return SCAN_NONE; /* certificates and public keys stay */
	for (k = j + 5; k < len; k++) {
		if (p[k] == '-' &&
		    (r = has_prefix(p, len, k, "-----END ", 0))) {
			if (r < 0)
				break;
			for (m = k + 9; m < len && m - k < 80 &&
					(is_upper(p[m]) || p[m] == ' ');
			     m++)
				;
			r = has_prefix(p, len, m, "-----", 0);
			if (r < 0)
				break;
			return hit_set(h, i, r ? m + 5 : m, SH_PRIVATE_KEY, 0,
				       CONT_NONE);
		}
		if (!is_pem_body(p[k]))
			return hit_set(h, i, k, SH_PRIVATE_KEY, 0, CONT_NONE);
	}
	if (!at_end)
		return SCAN_MORE;
	return hit_set(h, i, len, SH_PRIVATE_KEY, 1, CONT_PEM);
}

/* AKIA / ASIA + 16 uppercase letters or digits, as a whole word. */
static int scan_aws_key_id(const unsigned char *p, size_t len, size_t i,
			   int prev, int at_end, struct hit *h)
{
	size_t k;
	int r;

	if (prev >= 0 && is_alnum((unsigned)prev))
		return SCAN_NONE;
	r = has_prefix(p, len, i, "AKIA", 0);
	if (r == 0)
		r = has_prefix(p, len, i, "ASIA", 0);
	NEED(r);
	for (k = i + 4; k < i + 20; k++) {
		if (k >= len)
			return at_end ? SCAN_NONE : SCAN_MORE;
		if (!is_upper(p[k]) && !is_digit(p[k]))
			return SCAN_NONE;
	}
	if (k == len && !at_end)
		return SCAN_MORE;
	if (k < len && is_alnum(p[k]))
		return SCAN_NONE;
	return hit_set(h, i, k, SH_AWS_KEY_ID, 0, CONT_NONE);
}

/* 40 base64 characters assigned to a name containing "secret"
 * (aws_secret_access_key = ..., "SecretAccessKey": "...", secret: ...). */
static int scan_aws_secret(const unsigned char *p, size_t len, size_t i,
			   int at_end, struct hit *h)
{
	size_t j = i + 6, k;

	NEED(has_prefix(p, len, i, "secret", 1));
	while (j < len && j - i < 40 &&
	       (is_alnum(p[j]) || p[j] == '_' || p[j] == '-'))
		j++;
	if (j < len && (p[j] == '"' || p[j] == '\''))
		j++;
	NEED(skip_spaces(p, len, &j));
	if (p[j] != ':' && p[j] != '=')
		return SCAN_NONE;
	j++;
	NEED(skip_spaces(p, len, &j));
	if (p[j] == '"' || p[j] == '\'')
		j++;
	for (k = j; k < len && k - j <= 40 && is_b64(p[k]); k++)
		;
	if (k == len && !at_end)
		return SCAN_MORE;
	if (k - j != 40 || (k < len && p[k] == '='))
		return SCAN_NONE;
	return hit_set(h, j, k, SH_AWS_SECRET, 0, CONT_NONE);
}

/* scheme://user:password@host: the password; scheme://token@host: the
 * whole userinfo when it is long enough to be a token. */
static int scan_url(const unsigned char *p, size_t len, size_t i, int prev,
		    int at_end, struct hit *h)
{
	size_t a = i + 3, k, colon = 0;

	if (prev < 0 || !is_alnum((unsigned)prev))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "://", 0));
	for (k = a; k < len && k - a <= 512; k++) {
		unsigned c = p[k];
		if (c == '@')
			break;
		if (c == '/' || c == '?' || c == '#' || is_space(c) ||
		    is_eol(c) || c == '"' || c == '\'' || c == '<' || c == '>')
			return SCAN_NONE;
		if (c == ':' && !colon)
			colon = k;
	}
	if (k == len)
		return at_end ? SCAN_NONE : SCAN_MORE;
	if (p[k] != '@')
		return SCAN_NONE;
	if (colon)
		return hit_set(h, colon + 1, k, SH_URL_PASSWORD, 0, CONT_NONE);
	if (k - a >= 16)
		return hit_set(h, a, k, SH_URL_USERINFO, 0, CONT_NONE);
	return SCAN_NONE;
}

/* The byte pairs at which a shape may start (a bit per pair): testing
 * two bytes keeps common letters such as 'a', 'e' or 's' cheap. */
static uint64_t shape_pairs[65536 / 64];
static pthread_once_t shape_pairs_once = PTHREAD_ONCE_INIT;

static void shape_pair_add(unsigned a, unsigned b)
{
	unsigned v = a | b << 8;

	shape_pairs[v >> 6] |= (uint64_t)1 << (v & 63);
}

static void shape_pairs_init(void)
{
	static const char *const pairs[] = {"x-", "au", "be", "se", "ey",
					    "AK", "AS", "--", ":/"};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
		unsigned a = (unsigned char)pairs[i][0];
		unsigned b = (unsigned char)pairs[i][1];
		shape_pair_add(a, b);
		if (is_lower(a) && strcmp(pairs[i], "ey") != 0) {
			/* case-insensitive names */
			unsigned ua = a - ('a' - 'A');
			unsigned ub = is_lower(b) ? b - ('a' - 'A') : b;
			shape_pair_add(ua, b);
			shape_pair_add(a, ub);
			shape_pair_add(ua, ub);
		}
	}
}

/* Whether a shape may start at p[i] (always at the window's last byte). */
static int shape_candidate(const unsigned char *p, size_t len, size_t i)
{
	if (i + 1 >= len)
		return 1;
	unsigned v = p[i] | (unsigned)p[i + 1] << 8;
	return (int)((shape_pairs[v >> 6] >> (v & 63)) & 1u);
}

static int scan_shape(const unsigned char *p, size_t len, size_t i, int prev,
		      int at_end, struct hit *h)
{
	int r;

	switch (p[i]) {
	case 'x':
	case 'X': return scan_x_amz(p, len, i, at_end, h);
	case 'a': return scan_authorization(p, len, i, prev, at_end, h);
	case 'A':
		r = scan_authorization(p, len, i, prev, at_end, h);
		if (r != SCAN_NONE)
			return r;
		return scan_aws_key_id(p, len, i, prev, at_end, h);
	case 'b':
	case 'B': return scan_bearer(p, len, i, prev, at_end, h);
	case 'e': return scan_jwt(p, len, i, prev, at_end, h);
	case '-': return scan_pem(p, len, i, at_end, h);
	case 's':
	case 'S': return scan_aws_secret(p, len, i, at_end, h);
	case ':': return scan_url(p, len, i, prev, at_end, h);
	default: return SCAN_NONE;
	}
}

/* ---- one pass ---- */

struct cont {
	enum cont_mode mode;
	int matched; /* CONT_PEM: bytes of "KEY-----" seen */
};

/* Drops the rest of a shape masked by an earlier pass; returns where
 * normal scanning resumes (len if the shape goes on). */
static size_t cont_skip(struct cont *c, const unsigned char *p, size_t len)
{
	static const char end[] = "KEY-----";
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned ch = p[i];
		switch (c->mode) {
		case CONT_EOL:
			if (is_eol(ch))
				goto done;
			break;
		case CONT_QUERY:
			if (is_query_stop(ch))
				goto done;
			break;
		case CONT_TOKEN:
			if (!is_token68(ch))
				goto done;
			break;
		case CONT_PEM:
			if (!is_pem_body(ch))
				goto done;
			if (ch == (unsigned char)end[c->matched])
				c->matched++;
			else
				c->matched = ch == 'K';
			if (c->matched == 8) {
				i++;
				goto done;
			}
			break;
		case CONT_NONE: goto done;
		}
	}
	return len;
done:
	c->mode = CONT_NONE;
	c->matched = 0;
	return i;
}

struct work {
	struct spans lit, shp;
};

static void work_free(struct work *w)
{
	free(w->lit.v);
	free(w->shp.v);
	memset(w, 0, sizeof(*w));
}

/* Emits p[pos..safe) with the spans replaced; a span that crosses safe
 * moves safe back to its start. Returns the final safe offset. */
static size_t emit_spans(const nv_redactor *r, const struct work *w,
			 const unsigned char *p, size_t pos, size_t safe,
			 nv_redact_emit_fn emit, void *payload)
{
	size_t a = 0, b = 0;
	struct span cur = {0, 0, 0};
	int have = 0;

	for (;;) {
		const struct span *n = NULL;
		if (a < w->lit.n &&
		    (b >= w->shp.n || w->lit.v[a].start <= w->shp.v[b].start))
			n = &w->lit.v[a++];
		else if (b < w->shp.n)
			n = &w->shp.v[b++];
		if (n && have && n->start < cur.end) {
			if (n->end > cur.end)
				cur.end = n->end;
			continue;
		}
		if (have) {
			if (cur.end > safe) {
				if (cur.start < safe)
					safe = cur.start;
				break;
			}
			if (cur.start > pos)
				emit((const char *)p + pos, cur.start - pos,
				     payload);
			if (cur.id >= 0)
				emit(r->secrets[cur.id].label,
				     r->secrets[cur.id].label_len, payload);
			else
				emit(shape_labels[-cur.id - 1],
				     strlen(shape_labels[-cur.id - 1]),
				     payload);
			pos = cur.end;
		}
		if (!n)
			break;
		cur = *n;
		have = 1;
	}
	if (safe > pos)
		emit((const char *)p + pos, safe - pos, payload);
	return safe;
}

/* Scans p[0..len) and emits the redacted form of its safe prefix; *used
 * gets that prefix's length. With final, everything is safe. Called with
 * r->lock held. */
static int redact_pass(nv_redactor *r, struct work *w, const unsigned char *p,
		       size_t len, int final, int prev, struct cont *cont,
		       nv_redact_emit_fn emit, void *payload, size_t *used)
{
	size_t start = 0, ac_safe = len, shape_safe = len, safe;
	struct hit open = {0, 0, SH_JWT, 0, CONT_NONE}, h;
	int have_open = 0;

	pthread_once(&shape_pairs_once, shape_pairs_init);
	w->lit.n = w->shp.n = 0;
	if (cont->mode != CONT_NONE) {
		start = cont_skip(cont, p, len);
		if (cont->mode != CONT_NONE) {
			*used = len;
			return 0;
		}
	}
	if (r->dirty && automaton_build(r) != 0)
		return NV_ENOMEM;
	if (r->nnodes > 1) {
		size_t depth;
		if (literal_scan(r, &w->lit, p, start, len, &depth) != 0)
			return NV_ENOMEM;
		if (!final)
			ac_safe = len - depth;
	}
	for (size_t i = start; i < len; i++) {
		if (!shape_candidate(p, len, i))
			continue;
		int at_end = final || len - i > NV_REDACT_SHAPE_MAX;
		int res = scan_shape(p, len, i, i > 0 ? p[i - 1] : prev, at_end,
				     &h);
		if (res == SCAN_NONE)
			continue;
		if (res == SCAN_MORE) {
			shape_safe = i;
			break;
		}
		if (spans_push(&w->shp, h.start, h.end, -(int32_t)h.shape - 1))
			return NV_ENOMEM;
		if (h.open && !final) {
			open = h;
			have_open = 1;
			break;
		}
		i = h.end - 1;
	}
	safe = ac_safe < shape_safe ? ac_safe : shape_safe;
	if (have_open) {
		if (ac_safe >= open.start) {
			/* masked to the end: drop the rest from next writes */
			safe = len;
			cont->mode = open.cont;
			cont->matched =
				open.cont == CONT_PEM ? pem_tail(p, len) : 0;
		} else {
			w->shp.n--; /* a secret may start before it: retry */
		}
	}
	*used = emit_spans(r, w, p, start, safe, emit, payload);
	return 0;
}

/* ---- streams ---- */

struct nv_redact_stream {
	nv_redactor *r;
	nv_redact_emit_fn emit;
	void *payload;
	unsigned char *buf; /* held-back tail, then new bytes: wiped */
	size_t len, cap;
	int prev; /* the byte before buf[0], -1 at start */
	struct cont cont;
	struct work w;
};

static int stream_init(nv_redact_stream *s, nv_redactor *r,
		       nv_redact_emit_fn emit, void *payload, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->emit = emit;
	s->payload = payload;
	s->prev = -1;
	s->cap = cap;
	s->buf = malloc(cap);
	return s->buf ? 0 : NV_ENOMEM;
}

static void stream_fini(nv_redact_stream *s)
{
	wipe_free(s->buf, s->cap);
	work_free(&s->w);
	s->buf = NULL;
}

static int stream_pass(nv_redact_stream *s, int final)
{
	size_t used = 0;
	int rc;

	pthread_mutex_lock(&s->r->lock);
	rc = redact_pass(s->r, &s->w, s->buf, s->len, final, s->prev, &s->cont,
			 s->emit, s->payload, &used);
	pthread_mutex_unlock(&s->r->lock);
	if (rc != 0)
		used = s->len; /* fail closed: what could not be scanned
				  is dropped, never shown */
	if (used > 0) {
		s->prev = s->buf[used - 1];
		memmove(s->buf, s->buf + used, s->len - used);
		s->len -= used;
	}
	return rc;
}

nv_redact_stream *nv_redact_stream_new(nv_redactor *r, nv_redact_emit_fn emit,
				       void *payload)
{
	nv_redact_stream *s;

	if (!r || !emit)
		return NULL;
	s = malloc(sizeof(*s));
	if (!s)
		return NULL;
	if (stream_init(s, r, emit, payload, HOLD_MAX + BLOCK_SIZE) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

int nv_redact_stream_write(nv_redact_stream *s, const void *buf, size_t len)
{
	const unsigned char *in = buf;
	int rc = 0;

	while (len > 0) {
		size_t space = s->cap - s->len;
		if (space == 0) {
			/* a tail this long only comes from pathological
			 * input: mask what is there and go on */
			if (stream_pass(s, 1) != 0)
				rc = NV_ENOMEM;
			continue;
		}
		size_t take = len < space ? len : space;
		if (take > BLOCK_SIZE)
			take = BLOCK_SIZE;
		memcpy(s->buf + s->len, in, take);
		s->len += take;
		in += take;
		len -= take;
		if (stream_pass(s, 0) != 0)
			rc = NV_ENOMEM;
	}
	return rc;
}

int nv_redact_stream_flush(nv_redact_stream *s)
{
	int rc = stream_pass(s, 1);

	s->len = 0;
	s->prev = -1;
	s->cont.mode = CONT_NONE;
	s->cont.matched = 0;
	return rc;
}

void nv_redact_stream_free(nv_redact_stream *s)
{
	if (!s)
		return;
	stream_fini(s);
	free(s);
}

/* ---- one-shot ---- */

static int redact_oneshot(nv_redactor *r, const char *in, size_t len,
			  nv_redact_emit_fn emit, void *payload)
{
	nv_redact_stream s;
	int rc;

	if (len <= BLOCK_SIZE) {
		struct work w = {{NULL, 0, 0}, {NULL, 0, 0}};
		struct cont c = {CONT_NONE, 0};
		size_t used;
		pthread_mutex_lock(&r->lock);
		rc = redact_pass(r, &w, (const unsigned char *)in, len, 1, -1,
				 &c, emit, payload, &used);
		pthread_mutex_unlock(&r->lock);
		work_free(&w);
		return rc;
	}
	rc = stream_init(&s, r, emit, payload, HOLD_MAX + BLOCK_SIZE);
	if (rc == 0)
		rc = nv_redact_stream_write(&s, in, len);
	if (rc == 0)
		rc = nv_redact_stream_flush(&s);
	stream_fini(&s);
	return rc;
}

static void emit_to_buf(const char *buf, size_t len, void *payload)
{
	nv_buf_append(payload, buf, len);
}

int nv_redact_buffer(nv_redactor *r, const char *in, size_t len, nv_buf *out)
{
	int rc = redact_oneshot(r, in, len, emit_to_buf, out);

	return rc ? rc : out->failed ? NV_ENOMEM : 0;
}

struct out_payload {
	void (*emit)(int stream, const char *buf, size_t len);
	int stream;
};

static void emit_to_out(const char *buf, size_t len, void *payload)
{
	const struct out_payload *o = payload;

	o->emit(o->stream, buf, len);
}

void nv_redact_out_filter(int stream, const char *buf, size_t len,
			  void (*emit)(int stream, const char *buf, size_t len))
{
	struct out_payload o = {emit, stream};
	nv_redactor *r = nv_redact_global();

	if (r)
		redact_oneshot(r, buf, len, emit_to_out, &o);
}

/* ---- environment ---- */

static const char *const env_allowed[] = {
	"PATH",
	"HOME",
	"USER",
	"LOGNAME",
	"LANG",
	"LANGUAGE",
	"TZ",
	"TERM",
	"COLORTERM",
	"NO_COLOR",
	"PWD",
	"OLDPWD",
	"SHELL",
	"TMPDIR",
	"HOSTNAME",
	"SHLVL",
	"CUDA_VISIBLE_DEVICES",
	"NVIDIA_VISIBLE_DEVICES",
	"OMP_NUM_THREADS",
	"NAVETTE_JOB_ID",
	"NAVETTE_PROJECT",
	"NAVETTE_COMMIT",
	"NAVETTE_PROFILE",
	"NAVETTE_IMAGE",
	"NAVETTE_PHASE",
};

static int env_allowed_n(const char *name, size_t n)
{
	if (n > 3 && memcmp(name, "LC_", 3) == 0) {
		for (size_t i = 3; i < n; i++)
			if (!is_upper((unsigned char)name[i]) && name[i] != '_')
				return 0;
		return 1;
	}
	for (size_t i = 0; i < sizeof(env_allowed) / sizeof(*env_allowed);
	     i++) {
		if (strlen(env_allowed[i]) == n &&
		    memcmp(env_allowed[i], name, n) == 0)
			return 1;
	}
	return 0;
}

int nv_redact_env_allowed(const char *name)
{
	return name ? env_allowed_n(name, strlen(name)) : 0;
}

int nv_redact_env_line(const char *entry, nv_buf *out)
{
	const char *eq = strchr(entry, '=');

	if (!eq || env_allowed_n(entry, (size_t)(eq - entry)))
		return nv_buf_puts(out, entry);
	if (nv_buf_append(out, entry, (size_t)(eq - entry) + 1) != 0)
		return -1;
	return nv_buf_puts(out, "<hidden>");
}
