/* Block-parallel deterministic gzip (see pgzip.h). A ring of slots, twice
 * as many as the threads: the caller fills one slot at a time and queues
 * it; workers take queued slots in order and deflate them; the caller
 * writes finished slots in order, waiting for the oldest only when it
 * needs its slot again, so reading, hashing and compressing overlap. With
 * one thread the same steps run inline, giving the same bytes.
 *
 * Two engines share that ring, chosen at build time: libdeflate
 * (NAVETTE_HAVE_LIBDEFLATE, found by CMake) makes each block a whole gzip
 * member, header, CRC and all, in the worker; zlib (the fallback) deflates
 * each block with the previous 32 KiB as its dictionary behind one header
 * written here, and the caller's thread keeps the one CRC. */
#include "git/pgzip.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef NAVETTE_HAVE_LIBDEFLATE
#include <libdeflate.h>

#define GZIP_HEADER  10
#define GZIP_TRAILER 8
#else
#include <zlib.h>

#define DICT 32768
#endif

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_DONE };

struct slot {
	unsigned char *in;
	size_t in_len;
#ifndef NAVETTE_HAVE_LIBDEFLATE
	unsigned char dict[DICT];
	size_t dict_len;
#endif
	int last;
	unsigned char *out;
	size_t out_len, out_cap;
	int failed;
	enum slot_state state;
};

struct nv_pgzip {
	int level, os, nthreads, started;
	pthread_t threads[NV_PGZIP_THREADS_MAX];
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	int sync_ready;
	struct slot *slots;
	size_t nslots;    /* in use */
	size_t nalloc;    /* allocated */
	size_t fill;      /* index of the slot being filled */
	size_t emit;      /* index of the oldest slot not written */
	size_t submitted; /* slots queued so far */
	size_t taken;     /* slots taken by workers so far */
	int stop;
#ifdef NAVETTE_HAVE_LIBDEFLATE
	struct libdeflate_compressor *inline_c; /* the single-thread case */
#else
	z_stream inline_z; /* the single-thread case */
	int inline_ready;
	uLong crc;
	uint64_t isize;
#endif
	nv_pgzip_out_fn out_fn;
	void *payload;
	int out_failed;
};

#ifdef NAVETTE_HAVE_LIBDEFLATE
/* The gzip member header: no name, mtime 0, XFL as zlib would set it for
 * the level, a fixed OS byte. */
static void put_header(unsigned char *h, int level, int os)
{
	memset(h, 0, GZIP_HEADER);
	h[0] = 0x1f;
	h[1] = 0x8b;
	h[2] = 8; /* deflate */
	h[8] = level >= 9 ? 2 : level < 2 ? 4 : 0;
	h[9] = (unsigned char)os;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Makes one slot a whole gzip member with c: header, raw deflate of the
 * block, CRC-32 and size. The output buffer is allocated once, at the
 * bound of a full block, and kept for the slot's life. */
static void compress_slot(struct libdeflate_compressor *c, int level, int os,
			  struct slot *s)
{
	size_t n;

	s->failed = 0;
	s->out_len = 0;
	if (!s->out) {
		size_t cap =
			libdeflate_gzip_compress_bound(NULL, NV_PGZIP_BLOCK);

		s->out = malloc(cap);
		if (!s->out) {
			s->failed = 1;
			return;
		}
		s->out_cap = cap;
	}
	if (s->in_len > NV_PGZIP_BLOCK ||
	    s->out_cap < GZIP_HEADER + GZIP_TRAILER) {
		s->failed = 1;
		return;
	}
	put_header(s->out, level, os);
	/* 0: the bound was too small, which libdeflate's own bound rules out */
	n = libdeflate_deflate_compress(
		c, s->in, s->in_len, s->out + GZIP_HEADER,
		s->out_cap - GZIP_HEADER - GZIP_TRAILER);
	if (n == 0) {
		s->failed = 1;
		return;
	}
	put_le32(s->out + GZIP_HEADER + n,
		 libdeflate_crc32(0, s->in, s->in_len));
	put_le32(s->out + GZIP_HEADER + n + 4, (uint32_t)s->in_len);
	s->out_len = GZIP_HEADER + n + GZIP_TRAILER;
}

/* libdeflate's levels run 0-12; zlib's default (-1) is 6 there too. */
static struct libdeflate_compressor *make_compressor(int level)
{
	return libdeflate_alloc_compressor(level < 0 ? 6 : level);
}

/* The engine of one worker thread (the loop is worker(), below). */
struct engine {
	struct libdeflate_compressor *c;
};

static int engine_open(struct engine *e, const nv_pgzip *g)
{
	e->c = make_compressor(g->level);
	return e->c != NULL;
}

static void engine_compress(struct engine *e, const nv_pgzip *g, struct slot *s)
{
	compress_slot(e->c, g->level, g->os, s);
}

static void engine_close(struct engine *e)
{
	libdeflate_free_compressor(e->c);
}
#else
/* Deflates one slot with z (raw deflate at the stream's level). */
static void compress_slot(z_stream *z, struct slot *s)
{
	int flush = s->last ? Z_FINISH : Z_SYNC_FLUSH, rc;

	s->failed = 0;
	s->out_len = 0;
	if (deflateReset(z) != Z_OK ||
	    (s->dict_len &&
	     deflateSetDictionary(z, s->dict, (uInt)s->dict_len) != Z_OK)) {
		s->failed = 1;
		return;
	}
	z->next_in = s->in;
	z->avail_in = (uInt)s->in_len;
	for (;;) {
		if (s->out_len == s->out_cap) {
			size_t cap = s->out_cap
					     ? s->out_cap * 2
					     : deflateBound(z, s->in_len) + 64;
			unsigned char *p = realloc(s->out, cap);

			if (!p) {
				s->failed = 1;
				return;
			}
			s->out = p;
			s->out_cap = cap;
		}
		z->next_out = s->out + s->out_len;
		z->avail_out = (uInt)(s->out_cap - s->out_len);
		rc = deflate(z, flush);
		s->out_len = s->out_cap - z->avail_out;
		if (rc == Z_STREAM_ERROR) {
			s->failed = 1;
			return;
		}
		if (flush == Z_FINISH ? rc == Z_STREAM_END
				      : (z->avail_in == 0 && z->avail_out > 0))
			return;
	}
}

/* The engine of one worker thread (the loop is worker(), below). */
struct engine {
	z_stream z;
};

static int engine_open(struct engine *e, const nv_pgzip *g)
{
	memset(&e->z, 0, sizeof(e->z));
	return deflateInit2(&e->z, g->level, Z_DEFLATED, -15, 8,
			    Z_DEFAULT_STRATEGY) == Z_OK;
}

static void engine_compress(struct engine *e, const nv_pgzip *g, struct slot *s)
{
	(void)g;
	compress_slot(&e->z, s);
}

static void engine_close(struct engine *e)
{
	deflateEnd(&e->z);
}
#endif

/* A worker thread: takes the next submitted slot, deflates it with its
 * engine (a slot fails when the engine could not be made), marks it done. */
static void *worker(void *arg)
{
	nv_pgzip *g = arg;
	struct engine e;
	int ok = engine_open(&e, g);

	pthread_mutex_lock(&g->mu);
	for (;;) {
		struct slot *s;

		while (!g->stop && g->taken == g->submitted)
			pthread_cond_wait(&g->work, &g->mu);
		if (g->stop)
			break;
		s = &g->slots[g->taken % g->nslots];
		g->taken++;
		pthread_mutex_unlock(&g->mu);
		if (ok)
			engine_compress(&e, g, s);
		else
			s->failed = 1;
		pthread_mutex_lock(&g->mu);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&g->done);
	}
	pthread_mutex_unlock(&g->mu);
	if (ok)
		engine_close(&e);
	return NULL;
}

static int emit_raw(nv_pgzip *g, const unsigned char *p, size_t n, nv_err *err)
{
	if (n && g->out_fn(g->payload, p, n) != 0) {
		g->out_failed = 1;
		if (err && !err->code)
			nv_err_set(err, NV_EIO, NULL,
				   "gzip: the output refused the data");
		return err && err->code ? err->code : NV_EIO;
	}
	return 0;
}

/* Writes the oldest slot, waiting for it when block is set. Returns 1
 * when one was written, 0 when none is ready, or an NV_E* code. */
static int emit_oldest(nv_pgzip *g, int block, nv_err *err)
{
	struct slot *s;
	int rc;

	if (g->emit >= g->fill)
		return 0; /* nothing queued that is not written */
	s = &g->slots[g->emit % g->nslots];
	if (g->started) {
		pthread_mutex_lock(&g->mu);
		while (block && s->state != SLOT_DONE)
			pthread_cond_wait(&g->done, &g->mu);
		if (s->state != SLOT_DONE) {
			pthread_mutex_unlock(&g->mu);
			return 0;
		}
		pthread_mutex_unlock(&g->mu);
	} else if (s->state != SLOT_DONE) {
		return 0;
	}
	if (s->failed)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "gzip: deflate failed (out of memory?)");
	rc = emit_raw(g, s->out, s->out_len, err);
	if (rc)
		return rc;
	s->state = SLOT_FREE;
	g->emit++;
	return 1;
}

/* Starts filling the slot at g->fill: waits for it to be free, then takes
 * the previous 32 KiB of input as its dictionary. */
static int start_slot(nv_pgzip *g, nv_err *err)
{
	struct slot *s = &g->slots[g->fill % g->nslots];
	int rc;

	while (s->state != SLOT_FREE) {
		rc = emit_oldest(g, 1, err);
		if (rc < 0)
			return rc;
	}
#ifndef NAVETTE_HAVE_LIBDEFLATE
	/* the dictionary first: with one slot, prev is s itself */
	s->dict_len = 0;
	if (g->fill > 0) {
		const struct slot *prev = &g->slots[(g->fill - 1) % g->nslots];
		size_t n = prev->in_len < DICT ? prev->in_len : DICT;

		memmove(s->dict, prev->in + prev->in_len - n, n);
		s->dict_len = n;
	}
#endif
	s->in_len = 0;
	s->last = 0;
	s->state = SLOT_FILLING;
	return 0;
}

static int submit(nv_pgzip *g, nv_err *err)
{
	struct slot *s = &g->slots[g->fill % g->nslots];
	int rc;

	if (g->started) {
		pthread_mutex_lock(&g->mu);
		s->state = SLOT_QUEUED;
		g->submitted++;
		pthread_cond_signal(&g->work);
		pthread_mutex_unlock(&g->mu);
	} else {
#ifdef NAVETTE_HAVE_LIBDEFLATE
		compress_slot(g->inline_c, g->level, g->os, s);
#else
		compress_slot(&g->inline_z, s);
#endif
		s->state = SLOT_DONE;
	}
	g->fill++;
	/* write what is ready, without waiting */
	while ((rc = emit_oldest(g, 0, err)) == 1)
		;
	if (rc < 0)
		return rc;
	if (s->last)
		return 0;
	return start_slot(g, err);
}

static int online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > 8 ? 8 : (int)n;
}

int nv_pgzip_open(nv_pgzip **out, int level, int os, int threads,
		  nv_pgzip_out_fn out_fn, void *payload, nv_err *err)
{
#ifndef NAVETTE_HAVE_LIBDEFLATE
	unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0};
#endif
	nv_pgzip *g;
	size_t i;
	int rc;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	g->level = level;
	g->os = os;
	g->out_fn = out_fn;
	g->payload = payload;
	g->nthreads = threads > 0 ? threads : online_cores();
	if (g->nthreads > NV_PGZIP_THREADS_MAX)
		g->nthreads = NV_PGZIP_THREADS_MAX;
	g->nslots = g->nthreads > 1 ? (size_t)g->nthreads * 2 : 1;
	g->slots = calloc(g->nslots, sizeof(*g->slots));
	if (!g->slots)
		goto nomem;
	g->nalloc = g->nslots;
	for (i = 0; i < g->nslots; i++) {
		g->slots[i].in = malloc(NV_PGZIP_BLOCK);
		if (!g->slots[i].in)
			goto nomem;
	}
#ifndef NAVETTE_HAVE_LIBDEFLATE
	g->crc = crc32(0L, Z_NULL, 0);
#endif
	*out = g; /* nv_pgzip_free releases it from here */
	if (g->nthreads > 1) {
		if (pthread_mutex_init(&g->mu, NULL) ||
		    pthread_cond_init(&g->work, NULL) ||
		    pthread_cond_init(&g->done, NULL))
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "gzip: cannot make locks");
		g->sync_ready = 1;
		for (int t = 0; t < g->nthreads; t++) {
			if (pthread_create(&g->threads[t], NULL, worker, g)) {
				/* fewer threads is fine: as many as started */
				if (t == 0)
					break;
				g->nthreads = t;
				break;
			}
			g->started = t + 1;
		}
	}
#ifdef NAVETTE_HAVE_LIBDEFLATE
	if (!g->started) {
		g->nslots = 1;
		g->inline_c = make_compressor(level);
		if (!g->inline_c)
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "gzip: cannot start deflate");
	}
	/* no stream header: each block is a member with its own */
	rc = start_slot(g, err);
#else
	if (!g->started) {
		g->nslots = 1;
		if (deflateInit2(&g->inline_z, level, Z_DEFLATED, -15, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "gzip: cannot start deflate");
		g->inline_ready = 1;
	}
	/* header: no name, mtime 0, XFL as zlib sets it, a fixed OS */
	header[8] = level == 9 ? 2 : level < 2 ? 4 : 0;
	header[9] = (unsigned char)os;
	rc = emit_raw(g, header, sizeof(header), err);
	if (!rc)
		rc = start_slot(g, err);
#endif
	return rc;
nomem:
	if (g->slots)
		for (i = 0; i < g->nalloc; i++)
			free(g->slots[i].in);
	free(g->slots);
	free(g);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

int nv_pgzip_write(nv_pgzip *g, const void *data, size_t len, nv_err *err)
{
	const unsigned char *p = data;

#ifndef NAVETTE_HAVE_LIBDEFLATE
	g->crc = crc32_z(g->crc, p, len);
	g->isize += len;
#endif
	while (len > 0) {
		struct slot *s = &g->slots[g->fill % g->nslots];
		size_t room = NV_PGZIP_BLOCK - s->in_len;
		size_t n = len < room ? len : room;
		int rc;

		memcpy(s->in + s->in_len, p, n);
		s->in_len += n;
		p += n;
		len -= n;
		if (s->in_len == NV_PGZIP_BLOCK) {
			rc = submit(g, err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int nv_pgzip_finish(nv_pgzip *g, nv_err *err)
{
#ifdef NAVETTE_HAVE_LIBDEFLATE
	struct slot *s = &g->slots[g->fill % g->nslots];
	int rc = 0;

	/* an empty last block is a member only when it is the whole input:
	 * a stream of whole blocks ends with the last full one */
	s->last = 1;
	if (s->in_len > 0 || g->fill == 0)
		rc = submit(g, err);
	while (!rc && g->emit < g->fill) {
		rc = emit_oldest(g, 1, err);
		if (rc == 1)
			rc = 0;
	}
	return rc;
#else
	unsigned char trailer[8];
	int rc;

	g->slots[g->fill % g->nslots].last = 1;
	rc = submit(g, err);
	while (!rc && g->emit < g->fill) {
		rc = emit_oldest(g, 1, err);
		if (rc == 1)
			rc = 0;
	}
	if (rc)
		return rc;
	for (int i = 0; i < 4; i++) {
		trailer[i] = (unsigned char)(g->crc >> (8 * i));
		trailer[4 + i] = (unsigned char)(g->isize >> (8 * i));
	}
	return emit_raw(g, trailer, sizeof(trailer), err);
#endif
}

void nv_pgzip_free(nv_pgzip *g)
{
	size_t i;

	if (!g)
		return;
	if (g->started) {
		pthread_mutex_lock(&g->mu);
		g->stop = 1;
		pthread_cond_broadcast(&g->work);
		pthread_mutex_unlock(&g->mu);
		for (int t = 0; t < g->started; t++)
			pthread_join(g->threads[t], NULL);
	}
	if (g->sync_ready) {
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->work);
		pthread_cond_destroy(&g->done);
	}
#ifdef NAVETTE_HAVE_LIBDEFLATE
	if (g->inline_c)
		libdeflate_free_compressor(g->inline_c);
#else
	if (g->inline_ready)
		deflateEnd(&g->inline_z);
#endif
	for (i = 0; i < g->nalloc; i++) {
		free(g->slots[i].in);
		free(g->slots[i].out);
	}
	free(g->slots);
	free(g);
}

const char *nv_pgzip_engine(void)
{
#ifdef NAVETTE_HAVE_LIBDEFLATE
	return "libdeflate " LIBDEFLATE_VERSION_STRING;
#else
	return "zlib " ZLIB_VERSION;
#endif
}
