/* sha256 helpers over OpenSSL EVP. Reads go through a fixed stack buffer so
 * hashing a file of any size uses bounded memory. */
#include "storage/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <openssl/evp.h>

#define READ_CHUNK 65536

static const char hex_digits[] = "0123456789abcdef";

int nv_sha256_init(nv_sha256 *hash, nv_err *err)
{
	hash->ctx = EVP_MD_CTX_new();
	if (!hash->ctx)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "sha256: cannot allocate a digest context");
	if (EVP_DigestInit_ex(hash->ctx, EVP_sha256(), NULL) != 1) {
		nv_sha256_dispose(hash);
		return nv_err_set(err, NV_EIO, "check the OpenSSL installation",
				  "sha256: digest initialisation failed");
	}
	return 0;
}

int nv_sha256_update(nv_sha256 *hash, const void *data, size_t len, nv_err *err)
{
	if (!hash->ctx)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sha256: update after final");
	if (len && EVP_DigestUpdate(hash->ctx, data, len) != 1)
		return nv_err_set(err, NV_EIO, NULL, "sha256: update failed");
	return 0;
}

int nv_sha256_final(nv_sha256 *hash, char hex[NV_SHA256_HEX_LEN + 1],
		    nv_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	unsigned int i;
	int ok;

	hex[0] = '\0';
	if (!hash->ctx)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sha256: final called twice");
	ok = EVP_DigestFinal_ex(hash->ctx, md, &md_len) == 1 && md_len == 32;
	nv_sha256_dispose(hash);
	if (!ok)
		return nv_err_set(err, NV_EIO, NULL, "sha256: final failed");
	for (i = 0; i < md_len; i++) {
		hex[2 * i] = hex_digits[md[i] >> 4];
		hex[2 * i + 1] = hex_digits[md[i] & 0xf];
	}
	hex[2 * md_len] = '\0';
	return 0;
}

void nv_sha256_dispose(nv_sha256 *hash)
{
	if (hash && hash->ctx) {
		EVP_MD_CTX_free(hash->ctx);
		hash->ctx = NULL;
	}
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
	rc = nv_sha256_init(&hash, err);
	if (!rc)
		rc = nv_sha256_update(&hash, data, len, err);
	if (!rc)
		rc = nv_sha256_final(&hash, hex, err);
	nv_sha256_dispose(&hash);
	return rc;
}
