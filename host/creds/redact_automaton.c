/* The literal matcher of the redactor: an Aho-Corasick automaton built
 * lazily from every registered secret and its encoded forms, with a
 * prefilter on a pattern's first 4 bytes, and the sorted, disjoint spans
 * of what it finds. */
#include "creds/redact.h"
#include "creds/redact_internal.h"

#include <stdlib.h>
#include <string.h>

/* Merged literal spans are cut at this length so a run of overlapping
 * matches cannot grow the held-back tail without bound. */
#define SPAN_MAX 4096
/* Nodes up to this depth get a full transition row (the hot states). */
#define DENSE_DEPTH 2

/* ---- Aho-Corasick automaton ---- */

void redact_automaton_free(nv_redactor *r)
{
	redact_vs_free(r);
	redact_wipe_free(r->nodes, r->nodes_cap * sizeof(*r->nodes));
	redact_wipe_free(r->rows, r->rows_len * sizeof(*r->rows));
	redact_wipe_free(r->filter, r->filter_words * sizeof(*r->filter));
	r->nodes = NULL;
	r->rows = NULL;
	r->filter = NULL;
	r->filter_words = 0;
	r->npatterns = 0;
	r->maxlen = 0;
	r->nnodes = r->nodes_cap = r->rows_len = 0;
	r->width = 0;
	memset(r->classmap, 0, sizeof(r->classmap));
}

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
	if (n > r->maxlen)
		r->maxlen = n;
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

int redact_automaton_build(nv_redactor *r)
{
	int32_t *queue = NULL;
	size_t head = 0, tail = 0, ndense = 0;

	redact_automaton_free(r);
	r->nodes_cap = 1;
	for (size_t i = 0; i < r->nsecrets; i++)
		redact_for_each_variant(r, (int32_t)i, count_variant, NULL);
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
		if (redact_for_each_variant(r, (int32_t)i, insert_variant,
					    NULL) != 0)
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
	redact_automaton_free(r);
	return NV_ENOMEM;
}

/* ---- spans ---- */

int redact_spans_push(struct spans *s, size_t start, size_t end, int32_t id)
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
int redact_literal_push(struct spans *s, size_t start, size_t end, int32_t id)
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
	return redact_spans_push(s, start, end, id);
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
int redact_literal_scan(const nv_redactor *r, struct spans *lit,
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
			    redact_literal_push(lit, pos + 1 - nodes[o].depth,
						pos + 1, nodes[o].secret) != 0)
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

/* Exact from len - maxlen on: no pattern prefix is longer. */
size_t redact_literal_depth(const nv_redactor *r, const unsigned char *p,
			    size_t start, size_t len)
{
	size_t pos = len - start > r->maxlen ? len - r->maxlen : start;
	int32_t st = 0;

	for (; pos < len; pos++)
		st = ac_step(r, st, p[pos], r->classmap[p[pos]]);
	return r->nodes[st].depth;
}
