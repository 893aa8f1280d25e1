/* sha256 helpers over OpenSSL EVP. Reads go through a fixed stack buffer so
 * hashing a file of any size uses bounded memory. Data of up to
 * NV_SHA256_SMALL_MAX bytes (keys, run records, small objects) is hashed by
 * a small implementation here instead: the navette program loads libcrypto
 * on first use (host/cli/lazy_libs.c), and reading a job's status must not
 * pay for that. Past that size OpenSSL's hardware-assisted code is worth
 * loading. */
#include "core/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#define READ_CHUNK 65536

static const char hex_digits[] = "0123456789abcdef";

/* ---- SHA-256 of a short block (FIPS 180-4) ---------------------------- */

static const uint32_t small_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t small_ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void small_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], v[8];
	unsigned i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = small_ror(w[i - 15], 7) ^
			      small_ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = small_ror(w[i - 2], 17) ^
			      small_ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		uint32_t s1 = small_ror(v[4], 6) ^ small_ror(v[4], 11) ^
			      small_ror(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + small_k[i] + w[i];
		uint32_t s0 = small_ror(v[0], 2) ^ small_ror(v[0], 13) ^
			      small_ror(v[0], 22);
		uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
		memmove(&v[1], &v[0], 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + s0 + maj;
	}
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

static void small_sha256(const unsigned char *data, size_t len,
			 unsigned char md[32])
{
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	unsigned char tail[128];
	uint64_t bits = (uint64_t)len * 8;
	size_t whole = len - len % 64, rest = len % 64, padded;
	unsigned i;

	for (size_t off = 0; off < whole; off += 64)
		small_block(h, data + off);
	memset(tail, 0, sizeof(tail));
	if (rest)
		memcpy(tail, data + whole, rest);
	tail[rest] = 0x80;
	padded = rest < 56 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[padded - 1 - i] = (unsigned char)(bits >> (8 * i));
	small_block(h, tail);
	if (padded == 128)
		small_block(h, tail + 64);
	for (i = 0; i < 32; i++)
		md[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

static void hex_of(const unsigned char *md, unsigned len, char *hex)
{
	for (unsigned i = 0; i < len; i++) {
		hex[2 * i] = hex_digits[md[i] >> 4];
		hex[2 * i + 1] = hex_digits[md[i] & 0xf];
	}
	hex[2 * len] = '\0';
}

int nv_sha256_init(nv_sha256 *hash, nv_err *err)
{
	(void)err;
	hash->ctx = NULL;
	hash->small_len = 0;
	hash->open = 1;
	return 0;
}

/* Past small[]: OpenSSL takes over, starting with what small[] holds. */
static int start_openssl(nv_sha256 *hash, nv_err *err)
{
	hash->ctx = EVP_MD_CTX_new();
	if (!hash->ctx)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "sha256: cannot allocate a digest context");
	if (EVP_DigestInit_ex(hash->ctx, EVP_sha256(), NULL) != 1)
		return nv_err_set(err, NV_EIO, "check the OpenSSL installation",
				  "sha256: digest initialisation failed");
	if (hash->small_len &&
	    EVP_DigestUpdate(hash->ctx, hash->small, hash->small_len) != 1)
		return nv_err_set(err, NV_EIO, NULL, "sha256: update failed");
	hash->small_len = 0;
	return 0;
}

int nv_sha256_update(nv_sha256 *hash, const void *data, size_t len, nv_err *err)
{
	int rc;

	if (!hash->open)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sha256: update after final");
	if (!hash->ctx && len <= sizeof(hash->small) - hash->small_len) {
		if (len)
			memcpy(hash->small + hash->small_len, data, len);
		hash->small_len += len;
		return 0;
	}
	if (!hash->ctx && (rc = start_openssl(hash, err)) != 0) {
		nv_sha256_dispose(hash);
		return rc;
	}
	if (len && EVP_DigestUpdate(hash->ctx, data, len) != 1)
		return nv_err_set(err, NV_EIO, NULL, "sha256: update failed");
	return 0;
}

int nv_sha256_final(nv_sha256 *hash, char hex[NV_SHA256_HEX_LEN + 1],
		    nv_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	int ok;

	hex[0] = '\0';
	if (!hash->open)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sha256: final called twice");
	if (!hash->ctx) {
		small_sha256(hash->small, hash->small_len, md);
		nv_sha256_dispose(hash);
		hex_of(md, 32, hex);
		return 0;
	}
	ok = EVP_DigestFinal_ex(hash->ctx, md, &md_len) == 1 && md_len == 32;
	nv_sha256_dispose(hash);
	if (!ok)
		return nv_err_set(err, NV_EIO, NULL, "sha256: final failed");
	hex_of(md, md_len, hex);
	return 0;
}

/* Callers may dispose of a struct whose ctx alone they set to NULL. */
void nv_sha256_dispose(nv_sha256 *hash)
{
	if (!hash)
		return;
	if (hash->ctx) {
		EVP_MD_CTX_free(hash->ctx);
		hash->ctx = NULL;
	}
	hash->open = 0;
	hash->small_len = 0;
}

int nv_sha256_fd(int fd, char hex[NV_SHA256_HEX_LEN + 1], uint64_t *size,
		 nv_err *err)
{
	unsigned char buf[READ_CHUNK];
	nv_sha256 hash;
	uint64_t total = 0;
	ssize_t got;
	int rc;

	hex[0] = '\0';
	rc = nv_sha256_init(&hash, err);
	if (rc)
		return rc;
	for (;;) {
		got = read(fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
					      "sha256: read failed");
			goto out;
		}
		if (got == 0)
			break;
		rc = nv_sha256_update(&hash, buf, (size_t)got, err);
		if (rc)
			goto out;
		total += (uint64_t)got;
	}
	rc = nv_sha256_final(&hash, hex, err);
	if (!rc && size)
		*size = total;
out:
	nv_sha256_dispose(&hash);
	return rc;
}

int nv_sha256_file(const char *path, char hex[NV_SHA256_HEX_LEN + 1],
		   uint64_t *size, nv_err *err)
{
	int fd, rc;

	hex[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nv_err_set_errno(
			err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO, errno,
			"check that the file exists and is readable",
			"cannot open '%s'", path);
	rc = nv_sha256_fd(fd, hex, size, err);
	close(fd);
	return rc;
}

int nv_sha256_bytes(const void *data, size_t len,
		    char hex[NV_SHA256_HEX_LEN + 1], nv_err *err)
{
	nv_sha256 hash;
	int rc;

	hex[0] = '\0';
	if (len <= NV_SHA256_SMALL_MAX) {
		unsigned char md[32];
		small_sha256(data, len, md);
		hex_of(md, 32, hex);
		return 0;
	}
	rc = nv_sha256_init(&hash, err);
	if (!rc)
		rc = nv_sha256_update(&hash, data, len, err);
	if (!rc)
		rc = nv_sha256_final(&hash, hex, err);
	nv_sha256_dispose(&hash);
	return rc;
}
