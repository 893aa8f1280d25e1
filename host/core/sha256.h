/* Streaming sha256 over OpenSSL's EVP interface, in lowercase hex: a whole
 * file, a file descriptor, a memory block, or piece by piece while data is
 * being copied (so a put or get reads its bytes once). */
#ifndef NV_SHA256_H
#define NV_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"

#define NV_SHA256_HEX_LEN 64

/* Incremental hasher. The caller owns the struct; the OpenSSL context inside
 * is released by nv_sha256_final() or nv_sha256_dispose(), whichever comes
 * first (both are safe to call afterwards). The first NV_SHA256_SMALL_MAX
 * bytes are kept here and OpenSSL is started only past them: short data is
 * hashed without loading libcrypto (see sha256.c). */
#define NV_SHA256_SMALL_MAX 16384

typedef struct nv_sha256 {
	struct evp_md_ctx_st *ctx; /* NULL until past small[] */
	int open;                  /* between init and final or dispose */
	size_t small_len;
	unsigned char small[NV_SHA256_SMALL_MAX];
} nv_sha256;

int nv_sha256_init(nv_sha256 *hash, nv_err *err);
int nv_sha256_update(nv_sha256 *hash, const void *data, size_t len,
		     nv_err *err);
/* Writes 64 hex digits and a NUL into hex, then releases the context. */
int nv_sha256_final(nv_sha256 *hash, char hex[NV_SHA256_HEX_LEN + 1],
		    nv_err *err);
void nv_sha256_dispose(nv_sha256 *hash);

/* One-shot helpers. size (may be NULL) receives the number of bytes hashed.
 * nv_sha256_fd reads fd from its current offset to end of file. */
int nv_sha256_file(const char *path, char hex[NV_SHA256_HEX_LEN + 1],
		   uint64_t *size, nv_err *err);
int nv_sha256_fd(int fd, char hex[NV_SHA256_HEX_LEN + 1], uint64_t *size,
		 nv_err *err);
int nv_sha256_bytes(const void *data, size_t len,
		    char hex[NV_SHA256_HEX_LEN + 1], nv_err *err);

#endif
