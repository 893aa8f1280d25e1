/* nv_sha256 hashes up to NV_SHA256_SMALL_MAX bytes without OpenSSL (so
 * that reading a job's status does not load libcrypto) and hands over to
 * OpenSSL past that: its digests must be OpenSSL's at every padding
 * boundary, on both sides of the hand-over, whatever the pieces fed. */
#include <openssl/evp.h>

#include "nv_test.h"
#include "core/sha256.h"

#define DATA_MAX (2 * NV_SHA256_SMALL_MAX + 1000)

static void openssl_hex(const unsigned char *data, size_t len,
			char hex[NV_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	hex[0] = '\0';
	if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1 ||
	    md_len != 32)
		return;
	for (unsigned i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[64] = '\0';
}

static int streamed(const unsigned char *data, size_t len, size_t piece,
		    char hex[NV_SHA256_HEX_LEN + 1])
{
	nv_sha256 hash;
	int rc = nv_sha256_init(&hash, NULL);

	for (size_t off = 0; !rc && off < len; off += piece)
		rc = nv_sha256_update(&hash, data + off,
				      len - off < piece ? len - off : piece,
				      NULL);
	if (!rc)
		rc = nv_sha256_final(&hash, hex, NULL);
	nv_sha256_dispose(&hash);
	return rc;
}

int main(void)
{
	static unsigned char data[DATA_MAX];
	static const size_t pieces[] = {1, 7, 64, 1000, 4096, 16385};
	char ours[NV_SHA256_HEX_LEN + 1], theirs[NV_SHA256_HEX_LEN + 1];
	unsigned seed = 12345;
	int bytes_bad = 0, stream_bad = 0, first = -1;
	nv_sha256 hash;
	nv_err err;

	/* FIPS 180-4's examples */
	CHECK(nv_sha256_bytes("abc", 3, ours, NULL) == 0);
	CHECK_STR(ours, "ba7816bf8f01cfea414140de5dae2223"
			"b00361a396177a9cb410ff61f20015ad");
	CHECK(nv_sha256_bytes("", 0, ours, NULL) == 0);
	CHECK_STR(ours, "e3b0c44298fc1c149afbf4c8996fb924"
			"27ae41e4649b934ca495991b7852b855");
	CHECK(nv_sha256_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmn"
			      "lmnomnopnopq",
			      56, ours, NULL) == 0);
	CHECK_STR(ours, "248d6a61d20638b8e5c026930c3e6039"
			"a33ce45964ff2167f6ecedd419db06c1");

	for (size_t i = 0; i < sizeof(data); i++) {
		seed = seed * 1103515245u + 12345u;
		data[i] = (unsigned char)(seed >> 16);
	}
	/* every length through 300 (padding in one block or two), a stride
	 * over the rest, and each length around the hand-over */
	for (size_t len = 0; len <= sizeof(data);
	     len += len < 300 ? 1
		    : (len + 3 >= NV_SHA256_SMALL_MAX &&
		       len <= NV_SHA256_SMALL_MAX + 3)
			    ? 1
			    : 97) {
		openssl_hex(data, len, theirs);
		if (nv_sha256_bytes(data, len, ours, NULL) != 0 ||
		    strcmp(ours, theirs) != 0) {
			bytes_bad++;
			if (first < 0)
				first = (int)len;
		}
		for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++)
			if (streamed(data, len, pieces[p], ours) != 0 ||
			    strcmp(ours, theirs) != 0)
				stream_bad++;
	}
	if (bytes_bad || stream_bad)
		fprintf(stderr,
			"differ from OpenSSL: %d lengths in one block "
			"(first %d), %d streamed\n",
			bytes_bad, first, stream_bad);
	CHECK(bytes_bad == 0);
	CHECK(stream_bad == 0);

	/* the hasher's life: update and final after final are refused, and
	 * disposing twice (or of a hasher past OpenSSL's hand-over) is
	 * harmless */
	CHECK(nv_sha256_init(&hash, NULL) == 0);
	CHECK(nv_sha256_update(&hash, data, NV_SHA256_SMALL_MAX + 1, NULL) ==
	      0);
	CHECK(nv_sha256_final(&hash, ours, NULL) == 0);
	openssl_hex(data, NV_SHA256_SMALL_MAX + 1, theirs);
	CHECK_STR(ours, theirs);
	CHECK(nv_sha256_update(&hash, data, 1, &err) != 0);
	CHECK(nv_sha256_final(&hash, ours, &err) != 0);
	CHECK(ours[0] == '\0');
	nv_sha256_dispose(&hash);
	nv_sha256_dispose(&hash);
	CHECK(nv_sha256_init(&hash, NULL) == 0);
	CHECK(nv_sha256_update(&hash, data, sizeof(data), NULL) == 0);
	nv_sha256_dispose(&hash);
	CHECK(hash.ctx == NULL);
	return nv_test_done();
}
