/* The redactor (see redact.h).
 *
 * One pass over a window of bytes finds (1) literal secrets with an
 * Aho-Corasick automaton built lazily from every registered secret and its
 * encoded forms, (2) secrets known only by salted fingerprints, with a
 * rolling hash per (salt, length) confirmed by an HMAC, and (3) credential
 * shapes with a scanner called only at a few trigger bytes. Matches become
 * spans; overlapping spans are merged so that no secret byte survives. A pass
 * returns a "safe" offset: bytes before it can no longer be part of a match and
 * are emitted; the rest is kept by the stream and scanned again with the next
 * write. A shape that outgrows NV_REDACT_SHAPE_MAX is masked anyway and a small
 * continuation state drops the rest of it from the next writes, so memory stays
 * bounded. */
#include "creds/redact.h"
#include "creds/token_shapes.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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

/* Fingerprints: polynomial hashes modulo the Mersenne prime 2^61-1. */
#define FP_MOD         ((UINT64_C(1) << 61) - 1)
#define FP_SALT_LEN    32
#define FP_CONFIRM_LEN 16
/* Fingerprints one redactor holds, all documents together. */
#define FP_TOTAL_MAX (4 * NV_REDACT_FINGERPRINTS_MAX)
/* Documents (salts) one redactor takes: each adds passes over the text. */
#define FP_SALTS_MAX 64
/* Largest hash filter of one group, in bits. */
#define FP_FILTER_BITS_MAX ((size_t)1 << 22)
/* Span ids from here on name a fingerprint; below, a secret. */
#define FP_ID_BASE SECRETS_MAX
/* A PEM body run: this many base64 characters in a row. */
#define PEM_RUN_MIN 16

#ifndef __SIZEOF_INT128__
#error "the fingerprint hash needs a 128-bit product (unsigned __int128)"
#endif

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
	/* Fingerprints, sorted by (salt, length, hash, confirm). */
	struct fp_salt *salts;
	size_t nsalts;
	struct fingerprint *fps;
	size_t nfps;
	struct fp_groups groups;
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
	free(r->salts);
	free(r->fps);
	free(r->groups.v);
	free(r->groups.filter);
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

static int name_ok_n(const char *name, size_t n)
{
	if (n == 0 || n > NV_REDACT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned char)name[i];
		if (!is_alnum(c) && !strchr("_.:/-", (int)c))
			return 0;
	}
	return 1;
}

static int name_ok(const char *name)
{
	return name ? name_ok_n(name, strlen(name)) : 0;
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

typedef int (*variant_fn)(nv_redactor *r, void *ctx, const unsigned char *p,
			  size_t n, int32_t secret);

/* Calls fn for every form of secret `idx` that is matched literally. */
static int for_each_variant(nv_redactor *r, int32_t idx, variant_fn fn,
			    void *ctx)
{
	const struct secret *s = &r->secrets[idx];
	/* both percent-encodings side by side: up to 2 x PATTERN_MAX + 1 */
	unsigned char tmp[2 * PATTERN_MAX + 8];
	size_t n;
	int rc = fn(r, ctx, s->value, s->len, idx);

	for (size_t align = 0; align < 3 && rc == 0; align++) {
		n = b64_core(s->value, s->len, align, b64_std, (char *)tmp);
		rc = fn(r, ctx, tmp, n, idx);
		if (rc == 0 && (memchr(tmp, '+', n) || memchr(tmp, '/', n))) {
			n = b64_core(s->value, s->len, align, b64_url,
				     (char *)tmp);
			rc = fn(r, ctx, tmp, n, idx);
		}
	}
	n = url_encode(s->value, s->len, "0123456789ABCDEF", (char *)tmp);
	if (rc == 0 && n != s->len) {
		rc = fn(r, ctx, tmp, n, idx);
		size_t m = url_encode(s->value, s->len, "0123456789abcdef",
				      (char *)tmp + n + 1);
		if (rc == 0 && memcmp(tmp, tmp + n + 1, m) != 0)
			rc = fn(r, ctx, tmp + n + 1, m, idx);
	}
	OPENSSL_cleanse(tmp, sizeof(tmp));
	return rc;
}

/* ---- Aho-Corasick automaton ---- */

static int count_variant(nv_redactor *r, void *ctx, const unsigned char *p,
			 size_t n, int32_t secret)
{
	(void)ctx;
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

static int insert_variant(nv_redactor *r, void *ctx, const unsigned char *p,
			  size_t n, int32_t secret)
{
	int32_t st = 0;
	uint32_t h;

	(void)ctx;
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
		for_each_variant(r, (int32_t)i, count_variant, NULL);
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
		if (for_each_variant(r, (int32_t)i, insert_variant, NULL) != 0)
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

/* ---- fingerprints ---- */

static uint64_t fp_mul(uint64_t a, uint64_t b)
{
	unsigned __int128 x = (unsigned __int128)a * b;
	uint64_t r = ((uint64_t)x & FP_MOD) + (uint64_t)(x >> 61);

	return r >= FP_MOD ? r - FP_MOD : r;
}

static uint64_t fp_pow(uint64_t b, size_t e)
{
	uint64_t r = 1;

	for (; e; e >>= 1) {
		if (e & 1)
			r = fp_mul(r, b);
		b = fp_mul(b, b);
	}
	return r;
}

/* The first 8 salt bytes, big-endian, modulo p; at least 256 so that no
 * byte value is a multiple of the base. */
static uint64_t fp_base(const unsigned char *salt)
{
	uint64_t b = 0;

	for (size_t i = 0; i < 8; i++)
		b = b << 8 | salt[i];
	b %= FP_MOD;
	return b < 256 ? b + 256 : b;
}

static uint64_t fp_hash(const unsigned char *p, size_t n, uint64_t base)
{
	uint64_t h = 0;

	for (size_t i = 0; i < n; i++) {
		h = fp_mul(h, base) + p[i];
		h = h >= FP_MOD ? h - FP_MOD : h;
	}
	return h;
}

static int fp_confirm(const unsigned char *salt, const unsigned char *p,
		      size_t n, unsigned char out[FP_CONFIRM_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int rc = 0;

	if (!HMAC(EVP_sha256(), salt, FP_SALT_LEN, p, n, md, &mdlen) ||
	    mdlen < FP_CONFIRM_LEN)
		rc = -1;
	else
		memcpy(out, md, FP_CONFIRM_LEN);
	OPENSSL_cleanse(md, sizeof(md));
	return rc;
}

static int fp_cmp(const void *a, const void *b)
{
	const struct fingerprint *x = a, *y = b;
	int c;

	if (x->salt != y->salt)
		return x->salt < y->salt ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	c = memcmp(x->confirm, y->confirm, FP_CONFIRM_LEN);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts v and drops repeated fingerprints (the first added stays).
 * Returns the new count. */
static size_t fp_sort_unique(struct fingerprint *v, size_t n)
{
	size_t m = 0;

	if (n == 0)
		return 0; /* v may be NULL, which qsort() does not take */
	for (size_t i = 0; i < n; i++)
		v[i].seq = (uint32_t)i;
	qsort(v, n, sizeof(*v), fp_cmp);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && v[m - 1].salt == v[i].salt &&
		    v[m - 1].len == v[i].len && v[m - 1].hash == v[i].hash &&
		    memcmp(v[m - 1].confirm, v[i].confirm, FP_CONFIRM_LEN) == 0)
			continue;
		if (m != i)
			v[m] = v[i];
		m++;
	}
	return m;
}

static void fp_groups_free(struct fp_groups *g)
{
	free(g->v);
	free(g->filter);
	memset(g, 0, sizeof(*g));
}

/* One group per (salt, length) of the sorted fps, each with a bit filter
 * of its hashes (about 64 bits per fingerprint). */
static int fp_groups_build(const struct fp_salt *salts,
			   const struct fingerprint *fps, size_t n,
			   struct fp_groups *g)
{
	size_t ngroups = 0, words = 0;

	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < n; i++)
		ngroups += i == 0 || fps[i].salt != fps[i - 1].salt ||
			   fps[i].len != fps[i - 1].len;
	g->v = calloc(ngroups ? ngroups : 1, sizeof(*g->v));
	if (!g->v)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || fps[i].salt != fps[i - 1].salt ||
		    fps[i].len != fps[i - 1].len) {
			struct fp_group *grp = &g->v[g->n++];
			grp->salt = fps[i].salt;
			grp->len = fps[i].len;
			grp->base_pow =
				fp_pow(salts[fps[i].salt].base, grp->len);
			grp->first = i;
			if (fps[i].len > g->maxlen)
				g->maxlen = fps[i].len;
		}
		g->v[g->n - 1].n++;
	}
	for (size_t k = 0; k < g->n; k++) {
		size_t bits = 64;
		while (bits < 64 * g->v[k].n && bits < FP_FILTER_BITS_MAX)
			bits <<= 1;
		g->v[k].mask = bits - 1;
		g->v[k].filter = words;
		words += bits / 64;
	}
	g->filter = calloc(words ? words : 1, sizeof(*g->filter));
	if (!g->filter) {
		fp_groups_free(g);
		return -1;
	}
	g->filter_words = words;
	for (size_t k = 0; k < g->n; k++) {
		const struct fp_group *grp = &g->v[k];
		for (size_t i = grp->first; i < grp->first + grp->n; i++) {
			uint64_t bit = fps[i].hash & grp->mask;
			g->filter[grp->filter + (bit >> 6)] |= (uint64_t)1
							       << (bit & 63);
		}
	}
	return 0;
}

static void fp_set_label(struct fingerprint *f, const char *name, size_t n)
{
	memcpy(f->label, "<redacted:", 10);
	memcpy(f->label + 10, name, n);
	memcpy(f->label + 10 + n, ">", 2);
	f->label_len = (uint8_t)(n + 11);
}

struct fp_export {
	const unsigned char *salt;
	uint64_t base;
	struct fingerprint *v;
	size_t n, cap;
};

static int export_variant(nv_redactor *r, void *ctx, const unsigned char *p,
			  size_t n, int32_t secret)
{
	struct fp_export *x = ctx;
	const struct secret *s = &r->secrets[secret];
	struct fingerprint *f;

	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		if (x->n >= 2 * (size_t)NV_REDACT_FINGERPRINTS_MAX)
			return NV_EREFUSED; /* far past the cap: stop */
		f = realloc(x->v, cap * sizeof(*f));
		if (!f)
			return NV_ENOMEM;
		x->v = f;
		x->cap = cap;
	}
	f = &x->v[x->n];
	memset(f, 0, sizeof(*f));
	f->hash = fp_hash(p, n, x->base);
	f->len = (uint32_t)n;
	if (fp_confirm(x->salt, p, n, f->confirm) != 0)
		return NV_EIO;
	fp_set_label(f, s->label + 10, s->label_len - 11);
	x->n++;
	return 0;
}

static void hex_put(nv_buf *out, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[2 * FP_SALT_LEN];

	for (size_t i = 0; i < n; i++) {
		tmp[2 * i] = hex[p[i] >> 4];
		tmp[2 * i + 1] = hex[p[i] & 15];
	}
	nv_buf_append(out, tmp, 2 * n);
}

int nv_redact_export_fingerprints(nv_redactor *r, nv_buf *out, nv_err *err)
{
	unsigned char salt[FP_SALT_LEN];
	struct fp_export x = {salt, 0, NULL, 0, 0};
	int rc = 0;
	size_t n;

	if (!r || !out)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "no redactor or buffer");
	if (RAND_bytes(salt, sizeof(salt)) != 1)
		return nv_err_set(err, NV_EIO, NULL,
				  "no random salt for the fingerprints");
	x.base = fp_base(salt);
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nsecrets && rc == 0; i++)
		rc = for_each_variant(r, (int32_t)i, export_variant, &x);
	pthread_mutex_unlock(&r->lock);
	if (rc == NV_ENOMEM)
		goto nomem;
	if (rc != 0)
		goto too_many;
	n = fp_sort_unique(x.v, x.n);
	if (n > NV_REDACT_FINGERPRINTS_MAX)
		goto too_many;
	nv_buf_puts(out, "navette-fingerprints 1 ");
	hex_put(out, salt, sizeof(salt));
	nv_buf_puts(out, "\n");
	for (size_t i = 0; i < n; i++) {
		const struct fingerprint *f = &x.v[i];
		nv_buf_append(out, f->label + 10, f->label_len - 11u);
		nv_buf_printf(out, " %" PRIu32 " %016" PRIx64 " ", f->len,
			      f->hash);
		hex_put(out, f->confirm, FP_CONFIRM_LEN);
		nv_buf_puts(out, "\n");
	}
	free(x.v);
	if (out->failed)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "fingerprint document over its size cap");
	return 0;
too_many:
	free(x.v);
	if (rc == NV_EIO)
		return nv_err_set(err, NV_EIO, NULL, "HMAC failed");
	return nv_err_set(err, NV_ENOMEM, NULL,
			  "more than %d fingerprints to export",
			  NV_REDACT_FINGERPRINTS_MAX);
nomem:
	free(x.v);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

static int hex_digit(unsigned c)
{
	if (is_digit(c))
		return (int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	return -1;
}

/* Exactly 2*n lowercase hex digits into out[0..n). */
static int hex_get(const char *s, size_t len, unsigned char *out, size_t n)
{
	if (len != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit((unsigned char)s[2 * i]);
		int lo = hex_digit((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* "<name> <length> <hash> <confirm>"; NULL or what is wrong. */
static const char *fp_parse_line(const char *s, size_t n, struct fingerprint *f)
{
	const char *field[4];
	size_t flen[4], nf = 0, at = 0, len = 0;
	unsigned char h[8];

	while (nf < 4) {
		const char *sp = memchr(s + at, ' ', n - at);
		size_t end = sp ? (size_t)(sp - s) : n;
		field[nf] = s + at;
		flen[nf++] = end - at;
		if (!sp)
			break;
		at = end + 1;
	}
	if (nf != 4 || field[3] + flen[3] != s + n)
		return "expected '<name> <length> <hash> <confirm>'";
	if (!name_ok_n(field[0], flen[0]))
		return "bad name (letters, digits and _.:/-, at most 64)";
	if (flen[1] == 0 || flen[1] > 5 || field[1][0] == '0')
		return "bad length";
	for (size_t i = 0; i < flen[1]; i++) {
		if (!is_digit((unsigned char)field[1][i]))
			return "bad length";
		len = 10 * len + (size_t)(field[1][i] - '0');
	}
	if (len < NV_REDACT_SECRET_MIN || len > PATTERN_MAX)
		return "length out of range";
	if (hex_get(field[2], flen[2], h, sizeof(h)) != 0)
		return "bad hash (16 lowercase hex digits)";
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < 8; i++)
		f->hash = f->hash << 8 | h[i];
	if (f->hash >= FP_MOD)
		return "hash out of range";
	if (hex_get(field[3], flen[3], f->confirm, FP_CONFIRM_LEN) != 0)
		return "bad confirm (32 lowercase hex digits)";
	f->len = (uint32_t)len;
	fp_set_label(f, field[0], flen[0]);
	return NULL;
}

/* Adds parsed fingerprints under salt: all or nothing. Lock held. */
static int fp_commit(nv_redactor *r, const unsigned char *salt,
		     struct fingerprint *v, size_t n, nv_err *err)
{
	struct fingerprint *all;
	struct fp_groups g;
	size_t idx, m;

	for (idx = 0; idx < r->nsalts; idx++)
		if (memcmp(r->salts[idx].salt, salt, FP_SALT_LEN) == 0)
			break;
	if (idx == r->nsalts) {
		if (r->nsalts >= FP_SALTS_MAX)
			return nv_err_set(err, NV_EREFUSED, NULL,
					  "more than %d fingerprint documents",
					  FP_SALTS_MAX);
		/* room for it; counted only once the rest succeeded */
		struct fp_salt *p =
			realloc(r->salts, (r->nsalts + 1) * sizeof(*p));
		if (!p)
			goto nomem;
		r->salts = p;
		memcpy(p[idx].salt, salt, FP_SALT_LEN);
		p[idx].base = fp_base(salt);
	}
	all = malloc((r->nfps + n) * sizeof(*all) + 1);
	if (!all)
		goto nomem;
	if (r->nfps)
		memcpy(all, r->fps, r->nfps * sizeof(*all));
	for (size_t i = 0; i < n; i++) {
		all[r->nfps + i] = v[i];
		all[r->nfps + i].salt = (uint32_t)idx;
	}
	m = fp_sort_unique(all, r->nfps + n);
	if (m > FP_TOTAL_MAX) {
		free(all);
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "more than %d fingerprints in all",
				  FP_TOTAL_MAX);
	}
	if (fp_groups_build(r->salts, all, m, &g) != 0) {
		free(all);
		goto nomem;
	}
	free(r->fps);
	fp_groups_free(&r->groups);
	r->fps = all;
	r->nfps = m;
	r->groups = g;
	if (idx == r->nsalts)
		r->nsalts++;
	return 0;
nomem:
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

int nv_redact_add_fingerprints(nv_redactor *r, const char *text, size_t len,
			       nv_err *err)
{
	static const char head[] = "navette-fingerprints 1 ";
	unsigned char salt[FP_SALT_LEN];
	struct fingerprint *v = NULL;
	size_t n = 0, cap = 0, line = 1, at = 0;
	const char *why = NULL;
	int rc;

	if (!r || (!text && len))
		return nv_err_set(err, NV_EINVAL, NULL, "no redactor or text");
	while (at < len || line == 1) {
		const char *eol = memchr(text + at, '\n', len - at);
		size_t ll = eol ? (size_t)(eol - text) - at : len - at;
		const char *s = text + at;
		if (line == 1) {
			if (ll != sizeof(head) - 1 + 2 * FP_SALT_LEN ||
			    memcmp(s, head, sizeof(head) - 1) != 0 ||
			    hex_get(s + sizeof(head) - 1, 2 * FP_SALT_LEN, salt,
				    FP_SALT_LEN) != 0)
				why = "expected 'navette-fingerprints 1 "
				      "<salt>'";
		} else if (n >= NV_REDACT_FINGERPRINTS_MAX) {
			why = "too many fingerprints";
		} else {
			if (n == cap) {
				size_t c = cap ? 2 * cap : 64;
				struct fingerprint *p =
					realloc(v, c * sizeof(*p));
				if (!p) {
					free(v);
					return nv_err_set(err, NV_ENOMEM, NULL,
							  "out of memory");
				}
				v = p;
				cap = c;
			}
			why = fp_parse_line(s, ll, &v[n]);
			n += why == NULL;
		}
		if (why) {
			free(v);
			return nv_err_set(err, NV_EINVAL,
					  "pass a document written by "
					  "navette's fingerprint export",
					  "fingerprint document, line %zu: %s",
					  line, why);
		}
		at += ll + (eol != NULL);
		line++;
	}
	pthread_mutex_lock(&r->lock);
	rc = fp_commit(r, salt, v, n, err);
	pthread_mutex_unlock(&r->lock);
	free(v);
	return rc;
}

size_t nv_redact_fingerprint_count(nv_redactor *r)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = r->nfps;
	pthread_mutex_unlock(&r->lock);
	return n;
}

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

static const char *const shape_labels[SH_COUNT] = {
	"<redacted:x-amz-signature>",
	"<redacted:x-amz-credential>",
	"<redacted:x-amz-security-token>",
	"<redacted:authorization>",
	"<redacted:bearer>",
	"<redacted:private-key>",
	"<redacted:aws-secret-key>",
	"<redacted:url-password>",
	"<redacted:url-userinfo>",
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

struct work {
	struct spans lit, shp;
	struct spans fp, tmp; /* fingerprint hits; merge space */
	uint64_t *prefix;     /* prefix hashes of the window */
	size_t prefix_cap;
};

static void work_free(struct work *w)
{
	free(w->lit.v);
	free(w->shp.v);
	free(w->fp.v);
	free(w->tmp.v);
	free(w->prefix);
	memset(w, 0, sizeof(*w));
}

/* A window whose hash is in group g: confirmed by its HMAC. */
static int fp_check(const nv_redactor *r, const struct fp_group *g, uint64_t h,
		    const unsigned char *win, size_t at, struct spans *out)
{
	const struct fingerprint *v = r->fps + g->first;
	unsigned char mac[FP_CONFIRM_LEN];
	size_t lo = 0, hi = g->n;
	int have = 0, rc = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < g->n && v[lo].hash == h; lo++) {
		if (!have &&
		    fp_confirm(r->salts[g->salt].salt, win, g->len, mac) != 0) {
			rc = -1;
			break;
		}
		have = 1;
		if (CRYPTO_memcmp(mac, v[lo].confirm, FP_CONFIRM_LEN) == 0) {
			rc = spans_push(out, at, at + g->len,
					FP_ID_BASE + (int32_t)(g->first + lo));
			break;
		}
	}
	OPENSSL_cleanse(mac, sizeof(mac));
	return rc;
}

/* Finds the fingerprinted secrets in p[start..len) into w->fp. The
 * prefix hashes of the window are computed once per salt; the hash of
 * every window of a group's length then costs one multiplication, and
 * only a hash found in the group (about 1 window in 2^61 by chance) pays
 * for an HMAC. Cost: (salts + groups) x bytes multiplications, about 3 ns
 * each (dev container, 64 KiB writes: 3 secrets = 9 groups, 33 MB/s; 10
 * secrets = 26 groups, 12 MB/s). Typical use: one salt, under 50 groups. */
static int fingerprint_scan(const nv_redactor *r, struct work *w,
			    const unsigned char *p, size_t start, size_t len)
{
	size_t n = len - start;
	uint32_t salt = UINT32_MAX;

	w->fp.n = 0;
	if (n + 1 > w->prefix_cap) {
		uint64_t *q = realloc(w->prefix, (n + 1) * sizeof(*q));
		if (!q)
			return -1;
		w->prefix = q;
		w->prefix_cap = n + 1;
	}
	for (size_t k = 0; k < r->groups.n; k++) {
		const struct fp_group *g = &r->groups.v[k];
		const uint64_t *filter = r->groups.filter + g->filter;
		const uint64_t *pre = w->prefix;
		uint64_t pw = g->base_pow, mask = g->mask;
		size_t glen = g->len;
		if (glen > n)
			continue;
		if (g->salt != salt) {
			uint64_t base = r->salts[g->salt].base, h = 0;
			salt = g->salt;
			w->prefix[0] = 0;
			for (size_t i = 0; i < n; i++) {
				h = fp_mul(h, base) + p[start + i];
				h = h >= FP_MOD ? h - FP_MOD : h;
				w->prefix[i + 1] = h;
			}
		}
		for (size_t i = 0; i + glen <= n; i++) {
			uint64_t h =
				pre[i + glen] + FP_MOD - fp_mul(pre[i], pw);
			h = h >= FP_MOD ? h - FP_MOD : h;
			uint64_t bit = h & mask;
			if (!((filter[bit >> 6] >> (bit & 63)) & 1u))
				continue;
			if (fp_check(r, g, h, p + start + i, start + i,
				     &w->fp) != 0)
				return -1;
		}
	}
	return 0;
}

static int span_by_end(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Folds the fingerprint hits into the literal spans, by end offset as
 * literal_push() wants (the longer of two with the same end first). */
static int merge_fingerprint_spans(struct work *w)
{
	size_t a = 0, b = 0;
	struct spans t;

	if (w->fp.n == 0)
		return 0;
	qsort(w->fp.v, w->fp.n, sizeof(*w->fp.v), span_by_end);
	w->tmp.n = 0;
	while (a < w->lit.n || b < w->fp.n) {
		const struct span *s;
		if (b == w->fp.n ||
		    (a < w->lit.n &&
		     span_by_end(&w->lit.v[a], &w->fp.v[b]) < 0))
			s = &w->lit.v[a++];
		else
			s = &w->fp.v[b++];
		if (literal_push(&w->tmp, s->start, s->end, s->id) != 0)
			return -1;
	}
	t = w->lit;
	w->lit = w->tmp;
	w->tmp = t;
	return 0;
}

/* ---- shapes ---- */

enum { SCAN_NONE, SCAN_MATCH, SCAN_MORE };

/* How the rest of a shape that outgrew the stream window is dropped
 * (CONT_PEM_LINES: masked line by line, see pem_lines()). */
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
	PEM_LINES_OPEN    /* BEGIN [start, mark), then pem_lines() */
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
	h->id = -(int32_t)shape - 1;
	h->open = open;
	h->cont = cont;
	h->lines = PEM_LINES_NONE;
	h->mark = h->tail = 0;
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

static int is_pem_run(unsigned c)
{
	return is_b64(c) || c == '=';
}

/* "-----END [A-Z ]-----" at p[k] (the closing dashes may be missing):
 * 1 (*end past it), 0 no, -1 the window ends first. */
static int pem_end_line(const unsigned char *p, size_t len, size_t k,
			size_t *end)
{
	size_t m;
	int r = has_prefix(p, len, k, "-----END ", 0);

	if (r <= 0)
		return r;
	for (m = k + 9;
	     m < len && m - k < 80 && (is_upper(p[m]) || p[m] == ' '); m++)
		;
	r = has_prefix(p, len, m, "-----", 0);
	*end = r ? m + 5 : m;
	return r < 0 ? -1 : 1;
}

static int pem_lines_hit(struct hit *h, size_t start, size_t mark, size_t tail,
			 size_t end, enum pem_lines_kind kind)
{
	hit_set(h, start, end, SH_PRIVATE_KEY, 0, CONT_NONE);
	h->lines = kind;
	h->mark = mark;
	h->tail = tail;
	return SCAN_MATCH;
}

/* -----BEGIN ... PRIVATE KEY----- through -----END ... KEY-----. A block
 * of PEM characters only is one span. Any other byte in it is taken for a
 * per-line prefix ("stderr| ", a timestamp): the block is then masked run
 * by run (PEM_LINES_*), prefixes kept, up to the END line if it comes
 * within NV_REDACT_SHAPE_MAX, else line by line while lines carry runs. */
static int scan_pem(const unsigned char *p, size_t len, size_t i, int at_end,
		    struct hit *h)
{
	size_t j = i + 11, k, m, mark;
	int r, clean = 1;

	NEED(has_prefix(p, len, i, "-----BEGIN ", 0));
	while (j < len && j - i < 80 &&
	       (is_upper(p[j]) || is_digit(p[j]) || p[j] == ' '))
		j++;
	NEED(has_prefix(p, len, j, "-----", 0));
	if (j - (i + 11) < 11 || memcmp(p + j - 11, "PRIVATE KEY", 11) != 0)
		return SCAN_NONE; /* certificates and public keys stay */
	mark = j + 5;
	for (k = mark; k < len; k++) {
		if (p[k] == '-' && (r = pem_end_line(p, len, k, &m)) != 0) {
			if (r < 0)
				break;
			if (clean)
				return hit_set(h, i, m, SH_PRIVATE_KEY, 0,
					       CONT_NONE);
			return pem_lines_hit(h, i, mark, k, m,
					     PEM_LINES_CLOSED);
		}
		if (!is_pem_body(p[k]))
			clean = 0;
		if (!clean && k - i >= NV_REDACT_SHAPE_MAX)
			return pem_lines_hit(h, i, mark, mark, mark,
					     PEM_LINES_OPEN);
	}
	if (!at_end)
		return SCAN_MORE;
	if (clean)
		return hit_set(h, i, len, SH_PRIVATE_KEY, 1, CONT_PEM);
	return pem_lines_hit(h, i, mark, mark, mark, PEM_LINES_OPEN);
}

/* A row of the table of token shapes (creds/token_shapes.h): GitHub,
 * GitLab, Slack, Google and Stripe tokens, AWS access key ids, JWTs. A run
 * still going at the window's end is a hit open on CONT_SHAPE, which
 * follows the same run into the next writes, so a token of any length is
 * masked whole. */
static int scan_token(const unsigned char *p, size_t len, size_t i, int prev,
		      int at_end, struct hit *h)
{
	const nv_token_shape *t;
	size_t n;
	nv_token_run run;
	enum nv_token_result r =
		nv_token_match(p + i, len - i, prev, at_end, &t, &n, &run);

	if (r == NV_TOKEN_SHORT)
		return SCAN_MORE;
	if (r == NV_TOKEN_NONE)
		return SCAN_NONE;
	if (i + n == len && !at_end)
		return SCAN_MORE; /* its end may come within the window */
	hit_set(h, i, i + n, SH_COUNT, i + n == len, CONT_SHAPE);
	h->id = -(int32_t)(SH_COUNT + (size_t)(t - nv_token_shapes)) - 1;
	h->token = run;
	return SCAN_MATCH;
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
	static const char *const pairs[] = {"x-", "au", "be", "se", "--", ":/"};

	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++) {
		const char *prefix = nv_token_shapes[k].prefix; /* 3+ bytes */
		shape_pair_add((unsigned char)prefix[0],
			       (unsigned char)prefix[1]);
	}
	for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
		unsigned a = (unsigned char)pairs[i][0];
		unsigned b = (unsigned char)pairs[i][1];
		shape_pair_add(a, b);
		if (is_lower(a)) {
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
	case 'X': r = scan_x_amz(p, len, i, at_end, h); break;
	case 'a':
	case 'A': r = scan_authorization(p, len, i, prev, at_end, h); break;
	case 'b':
	case 'B': r = scan_bearer(p, len, i, prev, at_end, h); break;
	case '-': r = scan_pem(p, len, i, at_end, h); break;
	case 's':
	case 'S': r = scan_aws_secret(p, len, i, at_end, h); break;
	case ':': r = scan_url(p, len, i, prev, at_end, h); break;
	default: r = SCAN_NONE; break;
	}
	/* no token starts inside a word (the common "gh" of "night") */
	if (r != SCAN_NONE ||
	    (prev >= 0 && (is_alnum((unsigned)prev) || prev == '_')) ||
	    !nv_token_may_start(p[i]))
		return r;
	return scan_token(p, len, i, prev, at_end, h);
}

/* ---- one pass ---- */

struct cont {
	enum cont_mode mode;
	int matched;  /* CONT_PEM: bytes of "KEY-----" seen */
	int run;      /* CONT_PEM_LINES: base64 run ending here (capped) */
	int line_run; /* CONT_PEM_LINES: this line had a masked run */
	nv_token_run token; /* CONT_SHAPE: where the token's run stands */
};

#define PEM_SPAN_ID (-(int32_t)SH_PRIVATE_KEY - 1)

/* Runs of PEM_RUN_MIN+ base64 characters in p[from..to). */
static int pem_push_runs(struct spans *out, const unsigned char *p, size_t from,
			 size_t to)
{
	size_t k = from, a;

	while (k < to) {
		if (!is_pem_run(p[k])) {
			k++;
			continue;
		}
		for (a = k; k < to && is_pem_run(p[k]); k++)
			;
		if (k - a >= PEM_RUN_MIN &&
		    spans_push(out, a, k, PEM_SPAN_ID) != 0)
			return -1;
	}
	return 0;
}

/* The CONT_PEM_LINES state machine over p[from..to) of a window of len
 * bytes: a PEM block with prefixed lines, past its BEGIN line, whose END
 * line did not come within NV_REDACT_SHAPE_MAX. Runs of PEM_RUN_MIN+
 * base64 characters go to out (when not NULL; a run still going at `to`
 * is masked up to cut); the END line ends the mode, masked, and so does a
 * line without such a run, left alone. *end gets where the mode ended (to
 * while it goes on); *hold the first byte a non-final pass must keep: an
 * unfinished short run, END line or run-less line. Replaying the machine
 * from the same state up to any offset gives the state there, which is
 * how a stream resumes at the offset a pass stopped at. */
static int pem_lines(struct cont *c, const unsigned char *p, size_t from,
		     size_t to, size_t len, size_t cut, struct spans *out,
		     size_t *end, size_t *hold)
{
	size_t k, run_start = from, line_start = from, m;
	int r;

	*hold = len;
	for (k = from; k < to; k++) {
		unsigned ch = p[k];
		if (is_pem_run(ch)) {
			if (c->run == 0)
				run_start = k;
			if (c->run < PEM_RUN_MIN)
				c->run++;
			continue;
		}
		if (c->run >= PEM_RUN_MIN) {
			/* k == run_start: it ended where an earlier pass did */
			if (out && k > run_start &&
			    spans_push(out, run_start, k, PEM_SPAN_ID) != 0)
				return -1;
			c->line_run = 1;
		}
		c->run = 0;
		if (ch == '\n') {
			if (!c->line_run) {
				*end = line_start;
				goto done;
			}
			c->line_run = 0;
			line_start = k + 1;
		} else if (ch == '-' && (r = pem_end_line(p, len, k, &m))) {
			if (r < 0) {
				*hold = k; /* len == to: a later write says */
				break;
			}
			if (out && spans_push(out, k, m, PEM_SPAN_ID) != 0)
				return -1;
			*end = m;
			goto done;
		}
	}
	*end = to;
	if (c->run >= PEM_RUN_MIN) {
		size_t stop = cut < to ? cut : to;
		if (out && stop > run_start &&
		    spans_push(out, run_start, stop, PEM_SPAN_ID) != 0)
			return -1;
		if (stop < *hold)
			*hold = stop > run_start ? stop : run_start;
	} else if (c->run > 0 && run_start < *hold) {
		*hold = run_start;
	}
	if (!c->line_run && line_start < *hold &&
	    to - line_start <= NV_REDACT_SHAPE_MAX)
		*hold = line_start;
	return 0;
done:
	memset(c, 0, sizeof(*c));
	return 0;
}

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
		case CONT_SHAPE:
			if (!nv_token_continues(&c->token, ch))
				goto done;
			break;
		case CONT_NONE:
		case CONT_PEM_LINES: goto done;
		}
	}
	return len;
done:
	memset(c, 0, sizeof(*c));
	return i;
}

/* "<redacted:KIND>" for shape k (an enum shape, then the table's rows). */
static void emit_shape_label(int32_t k, nv_redact_emit_fn emit, void *payload)
{
	const char *rule;

	if (k < SH_COUNT) {
		emit(shape_labels[k], strlen(shape_labels[k]), payload);
		return;
	}
	rule = nv_token_shapes[k - SH_COUNT].rule;
	emit("<redacted:", 10, payload);
	emit(rule, strlen(rule), payload);
	emit(">", 1, payload);
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
			if (cur.id >= FP_ID_BASE)
				emit(r->fps[cur.id - FP_ID_BASE].label,
				     r->fps[cur.id - FP_ID_BASE].label_len,
				     payload);
			else if (cur.id >= 0)
				emit(r->secrets[cur.id].label,
				     r->secrets[cur.id].label_len, payload);
			else
				emit_shape_label(-cur.id - 1, emit, payload);
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

/* Where the PEM-lines mode of a pass began, to find the stream's state
 * at the offset the pass stopped at. */
struct lines_seg {
	int active;
	size_t from; /* where the machine started */
	size_t end;  /* where the mode ended, SIZE_MAX if it goes on */
	struct cont init;
};

/* Scans p[0..len) and emits the redacted form of its safe prefix; *used
 * gets that prefix's length. With final, everything is safe. Called with
 * r->lock held. */
static int redact_pass(nv_redactor *r, struct work *w, const unsigned char *p,
		       size_t len, int final, int prev, struct cont *cont,
		       nv_redact_emit_fn emit, void *payload, size_t *used)
{
	size_t start = 0, from, lit_safe = len, shape_safe = len, safe, cut;
	size_t end, hold;
	struct hit open, h;
	struct lines_seg seg = {
		0, 0, SIZE_MAX, {CONT_NONE, 0, 0, 0, {NULL, 0}}};
	int have_open = 0;

	pthread_once(&shape_pairs_once, shape_pairs_init);
	memset(&open, 0, sizeof(open));
	w->lit.n = w->shp.n = 0;
	if (cont->mode != CONT_NONE && cont->mode != CONT_PEM_LINES) {
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
			lit_safe = len - depth;
	}
	if (r->groups.n > 0) {
		size_t keep = r->groups.maxlen - 1;
		if (fingerprint_scan(r, w, p, start, len) != 0 ||
		    merge_fingerprint_spans(w) != 0)
			return NV_ENOMEM;
		/* a window not hashed yet may start at len - keep */
		if (!final && len - start < keep)
			lit_safe = start;
		else if (!final && len - keep < lit_safe)
			lit_safe = len - keep;
	}
	cut = final ? len : lit_safe;
	from = start;
	if (cont->mode == CONT_PEM_LINES) {
		seg.active = 1;
		seg.init = *cont;
		if (pem_lines(cont, p, 0, len, len, cut, &w->shp, &end,
			      &hold) != 0)
			return NV_ENOMEM;
		if (cont->mode != CONT_NONE) {
			shape_safe = hold;
			from = len;
		} else {
			seg.end = from = end;
		}
	}
	for (size_t i = from; i < len; i++) {
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
		if (h.lines == PEM_LINES_OPEN && seg.active && !final) {
			shape_safe = i; /* one per pass: the next pass */
			break;
		}
		if (h.lines == PEM_LINES_CLOSED && !final && h.end > lit_safe) {
			/* Its spans (BEGIN, runs, END) are one unit: were this
			 * pass to emit up to lit_safe, inside the block, the
			 * next one would start past BEGIN and show the rest.
			 * It is scanned whole again by a later pass. */
			shape_safe = h.start;
			break;
		}
		if (spans_push(&w->shp, h.start, h.lines ? h.mark : h.end,
			       h.id))
			return NV_ENOMEM;
		if (h.lines == PEM_LINES_CLOSED) {
			if (pem_push_runs(&w->shp, p, h.mark, h.tail) != 0 ||
			    spans_push(&w->shp, h.tail, h.end, PEM_SPAN_ID))
				return NV_ENOMEM;
		} else if (h.lines == PEM_LINES_OPEN) {
			/* the BEGIN line counts as a line with a run */
			struct cont c = {CONT_PEM_LINES, 0, 0, 1, {NULL, 0}};
			seg.active = 1;
			seg.from = h.mark;
			seg.init = c;
			if (pem_lines(&c, p, h.mark, len, len, cut, &w->shp,
				      &end, &hold) != 0)
				return NV_ENOMEM;
			if (c.mode != CONT_NONE) {
				*cont = c;
				shape_safe = hold;
				break;
			}
			seg.end = end;
			i = end - 1;
			continue;
		}
		if (h.open && !final) {
			open = h;
			have_open = 1;
			break;
		}
		i = h.end - 1;
	}
	safe = lit_safe < shape_safe ? lit_safe : shape_safe;
	if (have_open) {
		if (lit_safe >= open.start) {
			/* masked to the end: drop the rest from next writes */
			safe = len;
			cont->mode = open.cont;
			cont->matched =
				open.cont == CONT_PEM ? pem_tail(p, len) : 0;
			cont->token = open.token;
		} else {
			w->shp.n--; /* a secret may start before it: retry */
		}
	}
	*used = emit_spans(r, w, p, start, safe, emit, payload);
	if (seg.active && !final && *used < seg.end) {
		/* the stream resumes at *used: the mode's state there */
		*cont = seg.init;
		if (*used < seg.from)
			memset(cont, 0, sizeof(*cont)); /* BEGIN comes again */
		else
			pem_lines(cont, p, seg.from, *used, len, 0, NULL, &end,
				  &hold);
	}
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
	memset(&s->cont, 0, sizeof(s->cont));
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
		struct work w;
		struct cont c;
		size_t used;

		memset(&w, 0, sizeof(w));
		memset(&c, 0, sizeof(c));
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
