/* The redactor's passes and streams: one pass over a window collects the
 * spans of the literal matcher, the fingerprints and the shapes, emits the
 * window's safe prefix with the spans replaced, and keeps the rest for the
 * next write; a stream holds that tail between writes, the one-shot calls
 * run a single pass (or a stream for long input). */
#include "creds/redact.h"
#include "creds/redact_internal.h"

#include <stdlib.h>
#include <string.h>

/* Bytes scanned per pass by a stream; the held-back tail comes on top. */
#define BLOCK_SIZE (64 * 1024)
/* Most a stream holds back (shape, literal prefix, merged spans). */
#define HOLD_MAX (NV_REDACT_SHAPE_MAX + 2 * PATTERN_MAX)

/* ---- one pass ---- */

static void work_free(struct work *w)
{
	free(w->lit.v);
	free(w->shp.v);
	free(w->fp.v);
	free(w->tmp.v);
	free(w->prefix);
	redact_vs_work_free(w);
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
			if (cur.id >= FP_ID_BASE)
				emit(r->fps[cur.id - FP_ID_BASE].label,
				     r->fps[cur.id - FP_ID_BASE].label_len,
				     payload);
			else if (cur.id >= 0)
				emit(r->secrets[cur.id].label,
				     r->secrets[cur.id].label_len, payload);
			else
				redact_emit_shape_label(-cur.id - 1, emit,
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

/* The next offset from i on where a shape may start: from the engine's
 * candidates where it gave them, else by the byte-pair test. */
static size_t next_shape(const struct work *w, const unsigned char *p,
			 size_t len, size_t i)
{
	if (w->have_cand && i < w->cand_end) {
		for (size_t at = i; at < w->cand_end; at = (at | 63) + 1) {
			uint64_t bits = w->cand[at >> 6] >> (at & 63);
			if (bits) {
				at += (size_t)__builtin_ctzll(bits);
				if (at < w->cand_end)
					return at;
				break;
			}
		}
		i = w->cand_end;
	}
	while (i < len && !redact_shape_candidate(p, len, i))
		i++;
	return i;
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
	int have_open = 0, engine;

	redact_shapes_init();
	memset(&open, 0, sizeof(open));
	w->lit.n = w->shp.n = 0;
	if (cont->mode != CONT_NONE && cont->mode != CONT_PEM_LINES) {
		start = redact_cont_skip(cont, p, len);
		if (cont->mode != CONT_NONE) {
			*used = len;
			return 0;
		}
	}
	if (r->dirty && redact_automaton_build(r) != 0)
		return NV_ENOMEM;
	engine = redact_vs_scan(r, w, p, start, len);
	if (engine < 0)
		return NV_ENOMEM;
	if (r->nnodes > 1) {
		size_t depth;
		if (engine)
			depth = redact_literal_depth(r, p, start, len);
		else if (redact_literal_scan(r, &w->lit, p, start, len,
					     &depth) != 0)
			return NV_ENOMEM;
		if (!final)
			lit_safe = len - depth;
	}
	if (r->groups.n > 0) {
		size_t keep = r->groups.maxlen - 1;
		if (redact_fingerprint_scan(r, w, p, start, len) != 0 ||
		    redact_merge_fingerprint_spans(w) != 0)
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
		if (redact_pem_lines(cont, p, 0, len, len, cut, &w->shp, &end,
				     &hold) != 0)
			return NV_ENOMEM;
		if (cont->mode != CONT_NONE) {
			shape_safe = hold;
			from = len;
		} else {
			seg.end = from = end;
		}
	}
	for (size_t i = next_shape(w, p, len, from); i < len;
	     i = next_shape(w, p, len, i + 1)) {
		int at_end = final || len - i > NV_REDACT_SHAPE_MAX;
		int res = redact_scan_shape(p, len, i, i > 0 ? p[i - 1] : prev,
					    at_end, &h);
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
		if (redact_spans_push(&w->shp, h.start,
				      h.lines ? h.mark : h.end, h.id))
			return NV_ENOMEM;
		if (h.lines == PEM_LINES_CLOSED) {
			if (redact_pem_push_runs(&w->shp, p, h.mark, h.tail) !=
				    0 ||
			    redact_spans_push(&w->shp, h.tail, h.end,
					      PEM_SPAN_ID))
				return NV_ENOMEM;
		} else if (h.lines == PEM_LINES_OPEN) {
			/* the BEGIN line counts as a line with a run */
			struct cont c = {CONT_PEM_LINES, 0, 0, 1, {NULL, 0}};
			seg.active = 1;
			seg.from = h.mark;
			seg.init = c;
			if (redact_pem_lines(&c, p, h.mark, len, len, cut,
					     &w->shp, &end, &hold) != 0)
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
			cont->matched = open.cont == CONT_PEM
						? redact_pem_tail(p, len)
						: 0;
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
			redact_pem_lines(cont, p, seg.from, *used, len, 0, NULL,
					 &end, &hold);
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
	redact_wipe_free(s->buf, s->cap);
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
