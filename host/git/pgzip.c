/* Block-parallel deterministic gzip (see pgzip.h). A ring of slots, twice
 * as many as the threads: the caller fills one slot at a time and queues
 * it; workers take queued slots in order and deflate them; the caller
 * writes finished slots in order, waiting for the oldest only when it
 * needs its slot again, so reading, hashing and compressing overlap. With
 * one thread the same steps run inline, giving the same bytes. */
#include "git/pgzip.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#define DICT 32768

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_DONE };

struct slot {
	unsigned char *in;
	size_t in_len;
	unsigned char dict[DICT];
	size_t dict_len;
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
	z_stream inline_z; /* the single-thread case */
	int inline_ready;
	uLong crc;
	uint64_t isize;
	nv_pgzip_out_fn out_fn;
	void *payload;
	int out_failed;
};

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

static void *worker(void *arg)
{
	nv_pgzip *g = arg;
	z_stream z;
	int ok;

	memset(&z, 0, sizeof(z));
	ok = deflateInit2(&z, g->level, Z_DEFLATED, -15, 8,
			  Z_DEFAULT_STRATEGY) == Z_OK;
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
			compress_slot(&z, s);
		else
			s->failed = 1;
		pthread_mutex_lock(&g->mu);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&g->done);
	}
	pthread_mutex_unlock(&g->mu);
	if (ok)
		deflateEnd(&z);
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
	/* the dictionary first: with one slot, prev is s itself */
	s->dict_len = 0;
	if (g->fill > 0) {
		const struct slot *prev = &g->slots[(g->fill - 1) % g->nslots];
		size_t n = prev->in_len < DICT ? prev->in_len : DICT;

		memmove(s->dict, prev->in + prev->in_len - n, n);
		s->dict_len = n;
	}
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
		compress_slot(&g->inline_z, s);
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
	unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0};
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
	g->crc = crc32(0L, Z_NULL, 0);
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

	g->crc = crc32_z(g->crc, p, len);
	g->isize += len;
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
	if (g->inline_ready)
		deflateEnd(&g->inline_z);
	for (i = 0; i < g->nalloc; i++) {
		free(g->slots[i].in);
		free(g->slots[i].out);
	}
	free(g->slots);
	free(g);
}

const char *nv_pgzip_engine(void)
{
	return "zlib " ZLIB_VERSION;
}
