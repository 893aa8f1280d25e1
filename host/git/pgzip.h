/* Deterministic gzip on several cores, in pure C over pthreads and one of
 * two deflate engines, chosen at build time (nv_pgzip_engine says which).
 * Either way the stream is cut into NV_PGZIP_BLOCK-byte blocks deflated
 * in parallel and written in order; every gzip header has mtime 0, no
 * name, XFL from the level and the caller's OS byte. The bytes depend only
 * on the input, the level, the block size and the engine (and its
 * version), never on the number of threads or on the machine's timing.
 *
 *  - libdeflate (NAVETTE_HAVE_LIBDEFLATE): each block is a gzip member of
 *    its own (header, raw deflate without dictionary, CRC-32 and size of
 *    that block); the stream is their concatenation, which RFC 1952 makes
 *    one gzip file (gzip, Go, containerd, skopeo, Python read all
 *    members). An empty input gives one empty member; an input of whole
 *    blocks ends with its last full one.
 *  - zlib (the fallback): one member; each block is raw deflate with the
 *    previous 32 KiB of input as its dictionary, ended by a sync flush, the
 *    last by the final block, between one header and one CRC-32 and size
 *    trailer (this is how pigz works).
 *
 * The output callback runs on the caller's thread only. */
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
/* The compressor this build uses ("libdeflate 1.14", "zlib 1.2.13"), for
 * `navette version`. */
const char *nv_pgzip_engine(void);

#endif
