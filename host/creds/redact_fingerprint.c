/* Secrets the redactor knows only by salted fingerprints (another
 * process's, see redact.h): exporting and loading the fingerprint
 * documents, and finding them in a window with a rolling hash per (salt,
 * length), each hit confirmed by an HMAC. */
#include "creds/redact.h"
#include "creds/redact_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

/* Fingerprints: polynomial hashes modulo the Mersenne prime 2^61-1. */
#define FP_MOD ((UINT64_C(1) << 61) - 1)
/* Fingerprints one redactor holds, all documents together. */
#define FP_TOTAL_MAX (4 * NV_REDACT_FINGERPRINTS_MAX)
/* Documents (salts) one redactor takes: each adds passes over the text. */
#define FP_SALTS_MAX 64
/* Largest hash filter of one group, in bits. */
#define FP_FILTER_BITS_MAX ((size_t)1 << 22)

#ifndef __SIZEOF_INT128__
#error "the fingerprint hash needs a 128-bit product (unsigned __int128)"
#endif

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
		rc = redact_for_each_variant(r, (int32_t)i, export_variant, &x);
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
	if (!redact_name_ok_n(field[0], flen[0]))
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
	return redact_locked_count(r, &r->nfps);
}

/* ---- finding them ---- */

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
			rc = redact_spans_push(
				out, at, at + g->len,
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
int redact_fingerprint_scan(const nv_redactor *r, struct work *w,
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
 * redact_literal_push() wants (the longer of two with the same end first). */
int redact_merge_fingerprint_spans(struct work *w)
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
		if (redact_literal_push(&w->tmp, s->start, s->end, s->id) != 0)
			return -1;
	}
	t = w->lit;
	w->lit = w->tmp;
	w->tmp = t;
	return 0;
}
