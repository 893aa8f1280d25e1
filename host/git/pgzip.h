/* Deterministic gzip on several cores, in pure C over zlib and pthreads:
 * the stream is cut into NV_PGZIP_BLOCK-byte blocks, each deflated on its
 * own (raw deflate, the previous 32 KiB of input as its dictionary, ended
 * by a sync flush, the last by the final block), and the pieces are written
 * in order behind one gzip header (mtime 0, no name, a fixed OS byte) and
 * before the CRC-32 and size trailer. The bytes depend only on the input,
 * the level and the block size, never on the number of threads or on the
 * machine's timing; any gzip reader decodes them as one stream (this is
 * how pigz works). The output callback runs on the caller's thread only. */
#ifndef NV_PGZIP_H
#define NV_PGZIP_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"

#define NV_PGZIP_BLOCK       ((size_t)1024 * 1024) /* part of the format */
#define NV_PGZIP_THREADS_MAX 16

/* Receives compressed bytes in order; returns 0, or non-zero to stop. */
typedef int (*nv_pgzip_out_fn)(void *payload, const unsigned char *data,
			       size_t len);

typedef struct nv_pgzip nv_pgzip;

/* threads 0: the online cores (at most 8); 1: no thread is started. os is
 * the gzip header's OS byte. */
int nv_pgzip_open(nv_pgzip **out, int level, int os, int threads,
		  nv_pgzip_out_fn out_fn, void *payload, nv_err *err);
int nv_pgzip_write(nv_pgzip *z, const void *data, size_t len, nv_err *err);
/* Writes what is left and the trailer. */
int nv_pgzip_finish(nv_pgzip *z, nv_err *err);
/* Stops and joins the threads, frees everything. NULL is fine. */
void nv_pgzip_free(nv_pgzip *z);
/* The compressor this build uses ("zlib 1.2.13"), for `navette version`. */
const char *nv_pgzip_engine(void);

#endif
