/* Vectorscan (libhs), where navette was built with it: one database of
 * every literal form of every secret and of the shapes' first words
 * (redact_shape_triggers()), so that one pass of a SIMD matcher over a
 * window gives both the literal spans and the few offsets where a shape
 * scanner must run. The spans are the automaton's (redact_automaton.c):
 * per end offset the longest pattern, of equal ones the first added, merged
 * by redact_literal_push() in end order; the automaton still gives the
 * held-back depth at the window's end. Without the library, or where the
 * CPU lacks what it needs, every function here answers "no engine" and the
 * automaton and the per-byte pair test do the work, with the same output.
 *
 * The database spells the secrets: it is allocated through a wiping
 * allocator (Vectorscan's compiler frees its own working copies without
 * wiping them, as any heap user would). */
#include "creds/redact.h"
#include "creds/redact_internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef NAVETTE_HAVE_VECTORSCAN
#include <hs/hs.h>

#define ALLOC_HEAD 16 /* keeps malloc's alignment */
/* Shorter windows (a command's own output, most log lines) are scanned
 * without the engine: at a few microseconds a KiB that costs less than
 * loading the library (and its C++ runtime) into a command that prints a
 * page of help. NAVETTE_REDACT_ENGINE_MIN=N (a developer switch: the
 * tests' second run of the redactor's cases) sets another bound. */
#define VS_WINDOW_MIN 4096
static size_t vs_window_min = VS_WINDOW_MIN;

static void *wipe_alloc(size_t n)
{
	unsigned char *p = malloc(n + ALLOC_HEAD);

	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + ALLOC_HEAD;
}

static void wipe_free(void *q)
{
	unsigned char *p;
	size_t n;

	if (!q)
		return;
	p = (unsigned char *)q - ALLOC_HEAD;
	memcpy(&n, p, sizeof(n));
	redact_wipe_free(p, n + ALLOC_HEAD);
}

static pthread_once_t vs_once = PTHREAD_ONCE_INIT;
static int vs_platform_ok;
static size_t vs_trigger_max; /* the longest first word of a shape */

static int longest_trigger(void *ctx, const char *word, size_t n, int fold)
{
	(void)ctx;
	(void)word;
	(void)n;
	(void)fold;
	return 0;
}

/* What needs no call into the library (which loads it lazily). */
static pthread_once_t bounds_once = PTHREAD_ONCE_INIT;

static void bounds_init(void)
{
	const char *min = getenv("NAVETTE_REDACT_ENGINE_MIN");
	char *end;

	if (min && *min) {
		unsigned long long n = strtoull(min, &end, 10);
		if (*end == '\0')
			vs_window_min = (size_t)n;
	}
	vs_trigger_max = redact_shape_triggers(longest_trigger, NULL);
}

static void vs_init(void)
{
	vs_platform_ok = hs_valid_platform() == HS_SUCCESS;
	if (vs_platform_ok)
		hs_set_database_allocator(wipe_alloc, wipe_free);
}

void redact_vs_free(nv_redactor *r)
{
	hs_free_scratch(r->vs_scratch);
	hs_free_database(r->vs_db);
	free(r->vs_secret);
	free(r->vs_len);
	r->vs_scratch = NULL;
	r->vs_db = NULL;
	r->vs_secret = NULL;
	r->vs_len = NULL;
	r->vs_nlit = 0;
	r->vs_failed = 0;
}

/* The patterns as hs_compile_lit_multi() takes them. */
struct vs_list {
	const char **exprs;
	unsigned *flags, *ids;
	size_t *lens;
	size_t n, cap;
	nv_redactor *r;
};

static int vs_add(struct vs_list *l, const char *p, size_t n, unsigned flags,
		  int32_t secret)
{
	if (l->n == l->cap)
		return -1; /* cannot happen: counted first */
	l->exprs[l->n] = p;
	l->flags[l->n] = flags;
	l->ids[l->n] = (unsigned)l->n;
	l->lens[l->n] = n;
	l->r->vs_len[l->n] = (uint32_t)n;
	if (secret >= 0)
		l->r->vs_secret[l->n] = secret;
	l->n++;
	return 0;
}

static int count_literal(nv_redactor *r, void *ctx, const unsigned char *p,
			 size_t n, int32_t secret)
{
	(void)r;
	(void)p;
	(void)n;
	(void)secret;
	((struct vs_list *)ctx)->cap++;
	return 0;
}

static int count_trigger(void *ctx, const char *word, size_t n, int fold)
{
	(void)word;
	(void)n;
	(void)fold;
	((struct vs_list *)ctx)->cap++;
	return 0;
}

/* A variant's bytes live in a buffer redact_for_each_variant() reuses:
 * the compiler needs them all at once, so each is copied (wiped after). */
static int add_literal(nv_redactor *r, void *ctx, const unsigned char *p,
		       size_t n, int32_t secret)
{
	struct vs_list *l = ctx;
	char *copy = malloc(n);

	(void)r;
	if (!copy)
		return -1;
	memcpy(copy, p, n);
	if (vs_add(l, copy, n, 0, secret) != 0) {
		redact_wipe_free(copy, n);
		return -1;
	}
	return 0;
}

static int add_trigger(void *ctx, const char *word, size_t n, int fold)
{
	return vs_add(ctx, word, n, fold ? HS_FLAG_CASELESS : 0, -1);
}

static void vs_list_free(struct vs_list *l, size_t nlit)
{
	for (size_t i = 0; i < nlit && i < l->n; i++)
		redact_wipe_free((void *)l->exprs[i], l->lens[i]);
	free(l->exprs);
	free(l->flags);
	free(l->ids);
	free(l->lens);
}

/* 0 built; -1 out of memory; 1 the engine cannot be used here. */
static int vs_build(nv_redactor *r)
{
	struct vs_list l;
	hs_compile_error_t *cerr = NULL;
	size_t nlit;
	int rc = -1;

	pthread_once(&vs_once, vs_init);
	if (!vs_platform_ok)
		return 1;
	memset(&l, 0, sizeof(l));
	l.r = r;
	for (size_t i = 0; i < r->nsecrets; i++)
		redact_for_each_variant(r, (int32_t)i, count_literal, &l);
	nlit = l.cap;
	redact_shape_triggers(count_trigger, &l);
	l.exprs = calloc(l.cap, sizeof(*l.exprs));
	l.flags = calloc(l.cap, sizeof(*l.flags));
	l.ids = calloc(l.cap, sizeof(*l.ids));
	l.lens = calloc(l.cap, sizeof(*l.lens));
	r->vs_len = calloc(l.cap, sizeof(*r->vs_len));
	r->vs_secret = calloc(nlit ? nlit : 1, sizeof(*r->vs_secret));
	if (!l.exprs || !l.flags || !l.ids || !l.lens || !r->vs_len ||
	    !r->vs_secret)
		goto out;
	for (size_t i = 0; i < r->nsecrets; i++)
		if (redact_for_each_variant(r, (int32_t)i, add_literal, &l) !=
		    0)
			goto out;
	if (l.n != nlit || redact_shape_triggers(add_trigger, &l) == 0)
		goto out;
	r->vs_nlit = (uint32_t)nlit;
	if (hs_compile_lit_multi(l.exprs, l.flags, l.ids, l.lens, (unsigned)l.n,
				 HS_MODE_BLOCK, NULL, &r->vs_db,
				 &cerr) != HS_SUCCESS) {
		/* literals always compile: only memory can be short */
		hs_free_compile_error(cerr);
		r->vs_db = NULL;
		goto out;
	}
	if (hs_alloc_scratch(r->vs_db, &r->vs_scratch) != HS_SUCCESS)
		goto out;
	rc = 0;
out:
	vs_list_free(&l, nlit);
	if (rc != 0) {
		redact_vs_free(r);
		r->vs_failed = 1;
	}
	return rc;
}

struct vs_scan {
	const nv_redactor *r;
	struct work *w;
	size_t start;
	int failed;
};

static int on_match(unsigned id, unsigned long long from, unsigned long long to,
		    unsigned flags, void *ctx)
{
	struct vs_scan *s = ctx;
	struct work *w = s->w;
	size_t end = s->start + (size_t)to;
	uint32_t n = s->r->vs_len[id];

	(void)from;
	(void)flags;
	if (id >= s->r->vs_nlit) {
		size_t at = end - n;
		w->cand[at >> 6] |= (uint64_t)1 << (at & 63);
		return 0;
	}
	if (w->lm_n == w->lm_cap) {
		size_t cap = w->lm_cap ? 2 * w->lm_cap : 64;
		struct lit_match *v = realloc(w->lm, cap * sizeof(*v));
		if (!v) {
			s->failed = 1;
			return 1; /* stops the scan */
		}
		w->lm = v;
		w->lm_cap = cap;
	}
	w->lm[w->lm_n++] = (struct lit_match){end, n, id};
	return 0;
}

/* By end; at one end the longest first, of equal ones the first added. */
static int lit_match_cmp(const void *a, const void *b)
{
	const struct lit_match *x = a, *y = b;

	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->pattern < y->pattern ? -1 : x->pattern > y->pattern;
}

int redact_vs_scan(nv_redactor *r, struct work *w, const unsigned char *p,
		   size_t start, size_t len)
{
	struct vs_scan s = {r, w, start, 0};
	size_t words = (len + 63) / 64;
	hs_error_t e;

	w->have_cand = 0;
	w->lm_n = 0;
	pthread_once(&bounds_once, bounds_init);
	if (r->vs_failed || len == start || len - start < vs_window_min)
		return 0;
	if (!r->vs_db) {
		int b = vs_build(r);
		if (b != 0)
			return b < 0 && !r->vs_failed ? -1 : 0;
	}
	if (words > w->cand_words) {
		uint64_t *c = realloc(w->cand, words * sizeof(*c));
		if (!c)
			return -1;
		w->cand = c;
		w->cand_words = words;
	}
	memset(w->cand, 0, words * sizeof(*w->cand));
	e = hs_scan(r->vs_db, (const char *)p + start, (unsigned)(len - start),
		    0, r->vs_scratch, on_match, &s);
	if (s.failed)
		return -1;
	if (e != HS_SUCCESS && e != HS_SCAN_TERMINATED)
		return 0; /* the automaton does this window */
	if (w->lm_n > 1)
		qsort(w->lm, w->lm_n, sizeof(*w->lm), lit_match_cmp);
	for (size_t i = 0; i < w->lm_n; i++) {
		const struct lit_match *m = &w->lm[i];
		if (i > 0 && m->end == w->lm[i - 1].end)
			continue;
		if (redact_literal_push(&w->lit, m->end - m->len, m->end,
					r->vs_secret[m->pattern]) != 0)
			return -1;
	}
	/* a first word cut by the window's end is not found: the offsets
	 * from here on are tested byte by byte */
	w->cand_end = len - start >= vs_trigger_max ? len - (vs_trigger_max - 1)
						    : start;
	w->have_cand = 1;
	return 1;
}

void redact_vs_work_free(struct work *w)
{
	free(w->lm);
	free(w->cand);
}

#define VS_STR_(x) #x
#define VS_STR(x)  VS_STR_(x)

/* Loading the library to ask the CPU only when asked to (--linked). */
const char *nv_redact_engine(int load)
{
	if (load) {
		pthread_once(&vs_once, vs_init);
		if (!vs_platform_ok)
			return "aho-corasick (Vectorscan cannot run on this "
			       "CPU)";
	}
	return "vectorscan " VS_STR(HS_MAJOR) "." VS_STR(HS_MINOR) "." VS_STR(
		HS_PATCH);
}

#else

int redact_vs_scan(nv_redactor *r, struct work *w, const unsigned char *p,
		   size_t start, size_t len)
{
	(void)r;
	(void)p;
	(void)start;
	(void)len;
	w->have_cand = 0;
	return 0;
}

void redact_vs_free(nv_redactor *r)
{
	(void)r;
}

void redact_vs_work_free(struct work *w)
{
	(void)w;
}

const char *nv_redact_engine(int load)
{
	(void)load;
	return "aho-corasick (built in)";
}

#endif
