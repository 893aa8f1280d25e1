/* Unit tests of host/git/pgzip.c, whichever engine the build has
 * (nv_pgzip_engine): for inputs of 0 and 1 byte, exactly one block, one
 * block and a byte, and about 5 MiB of text and random bytes, the output
 * is the same for 1, 2 and 4 threads and however the input is cut into
 * writes, and zlib's inflate, reading every gzip member in turn as gzip
 * does, gives the input back. The members are those the engine promises:
 * one per block for libdeflate (one for an empty input), one in all for
 * zlib; each header has mtime 0, no name and OS byte 3. An output that
 * refuses its data stops the stream with an error. */
#include "git/pgzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "nv_test.h"

#define LEVEL   1 /* NV_ARCHIVE_GZIP_LEVEL */
#define OS      3
#define OUT_MAX ((size_t)16 * 1024 * 1024) /* the test's own bound */

struct sink {
	unsigned char *data;
	size_t len, cap;
	int refuse; /* refuse the nth call (1-based), 0: never */
	int calls;
};

static int sink_write(void *payload, const unsigned char *data, size_t len)
{
	struct sink *k = payload;

	if (k->refuse && ++k->calls >= k->refuse)
		return 1;
	if (len > OUT_MAX - k->len)
		return 1;
	if (k->len + len > k->cap) {
		size_t cap = k->cap ? k->cap : 65536;
		unsigned char *p;

		while (cap < k->len + len)
			cap *= 2;
		p = realloc(k->data, cap);
		if (!p)
			return 1;
		k->data = p;
		k->cap = cap;
	}
	memcpy(k->data + k->len, data, len);
	k->len += len;
	return 0;
}

/* Compresses in with threads, in writes of at most chunk bytes. Returns
 * 0 and the bytes in out (the caller frees out->data), or -1. */
static int pgzip_all(const unsigned char *in, size_t len, int threads,
		     size_t chunk, struct sink *out)
{
	nv_pgzip *z = NULL;
	nv_err err;
	size_t off = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&err, 0, sizeof(err));
	rc = nv_pgzip_open(&z, LEVEL, OS, threads, sink_write, out, &err);
	while (!rc && off < len) {
		size_t n = len - off < chunk ? len - off : chunk;

		rc = nv_pgzip_write(z, in + off, n, &err);
		off += n;
	}
	if (!rc)
		rc = nv_pgzip_finish(z, &err);
	if (rc)
		fprintf(stderr, "pgzip: %s\n", err.message);
	nv_pgzip_free(z);
	return rc ? -1 : 0;
}

/* Inflates every member of gz, as gzip -d does, into a buffer of want's
 * size; checks each header (mtime 0, no flags, OS 3). Returns the number
 * of members, or -1 when the stream is bad, trails garbage or does not
 * give want back. */
static long gunzip_members(const unsigned char *gz, size_t gz_len,
			   const unsigned char *want, size_t want_len)
{
	unsigned char *got = malloc(want_len + 1);
	size_t off = 0, got_len = 0;
	long members = 0;
	z_stream s;
	int ok = 1;

	if (!got)
		return -1;
	memset(&s, 0, sizeof(s));
	if (inflateInit2(&s, 16 + 15) != Z_OK) {
		free(got);
		return -1;
	}
	while (ok && off < gz_len) {
		int rc;

		if (gz_len - off < 18 || gz[off] != 0x1f ||
		    gz[off + 1] != 0x8b || gz[off + 2] != 8 ||
		    gz[off + 3] != 0 || memcmp(gz + off + 4, "\0\0\0\0", 4) ||
		    gz[off + 9] != OS) {
			ok = 0;
			break;
		}
		if (inflateReset(&s) != Z_OK) {
			ok = 0;
			break;
		}
		s.next_in = (unsigned char *)gz + off;
		s.avail_in = (uInt)(gz_len - off);
		s.next_out = got + got_len;
		s.avail_out = (uInt)(want_len + 1 - got_len);
		rc = inflate(&s, Z_FINISH);
		if (rc != Z_STREAM_END) {
			ok = 0;
			break;
		}
		off = gz_len - s.avail_in;
		got_len = want_len + 1 - s.avail_out;
		members++;
	}
	inflateEnd(&s);
	if (!ok || members == 0 || got_len != want_len ||
	    (want_len && memcmp(got, want, want_len) != 0))
		members = -1;
	free(got);
	return members;
}

/* Deterministic bytes: lines of text, then noise, in turns. */
static void fill(unsigned char *p, size_t len)
{
	static const char *words[] = {"import", "def",   "return", "self",
				      "value",  "model", "tensor", "layer"};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t i = 0;

	while (i < len) {
		size_t part = 700 * 1024, end = i + part < len ? i + part : len;

		if ((i / part) % 2 == 0) {
			while (i < end) {
				x = x * 6364136223846793005ull + 1;
				for (const char *w = words[(x >> 33) % 8];
				     *w && i < end; w++)
					p[i++] = (unsigned char)*w;
				if (i < end)
					p[i++] = (x >> 40) % 9 ? ' ' : '\n';
			}
		} else {
			for (; i < end; i++) {
				x = x * 6364136223846793005ull + 1;
				p[i] = (unsigned char)(x >> 56);
			}
		}
	}
}

static int is_libdeflate(void)
{
	return strncmp(nv_pgzip_engine(), "libdeflate ", 11) == 0;
}

static void check_input(const unsigned char *in, size_t len, const char *name)
{
	static const int threads[] = {1, 2, 4};
	struct sink first, other;
	long members, want;
	int failed_before = nv_test_failed;

	CHECK(pgzip_all(in, len, 1, (size_t)1 << 30, &first) == 0);
	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		/* whole, then in odd pieces: the same bytes */
		static const size_t chunks[] = {(size_t)1 << 30, 65537, 4093};

		for (size_t c = 0; c < 3; c++) {
			if (threads[t] == 1 && c == 0)
				continue; /* that is first */
			CHECK(pgzip_all(in, len, threads[t], chunks[c],
					&other) == 0);
			CHECK(other.len == first.len &&
			      memcmp(other.data, first.data, first.len) == 0);
			free(other.data);
		}
	}
	members = gunzip_members(first.data, first.len, in, len);
	want = !is_libdeflate() ? 1
	       : len == 0       ? 1
			  : (long)((len + NV_PGZIP_BLOCK - 1) / NV_PGZIP_BLOCK);
	CHECK(members == want);
	CHECK(first.len >= 18 && first.data[8] == 4); /* XFL: fastest */
	if (nv_test_failed != failed_before)
		fprintf(stderr,
			"  input %s (%zu bytes): %zu out, %ld members\n", name,
			len, first.len, members);
	free(first.data);
}

static void test_sizes(void)
{
	size_t big = 5 * NV_PGZIP_BLOCK + 12345;
	unsigned char *in = malloc(big);
	struct sink out;

	CHECK(in != NULL);
	if (!in)
		return;
	fill(in, big);
	check_input(in, 0, "empty");
	check_input(in, 1, "one byte");
	check_input(in, NV_PGZIP_BLOCK, "one block");
	check_input(in, NV_PGZIP_BLOCK + 1, "one block and a byte");
	check_input(in, big, "five blocks and more");
	check_input(in, 2 * NV_PGZIP_BLOCK, "two blocks");
	/* text and noise: smaller than the input, not by magic */
	CHECK(pgzip_all(in, big, 2, 65536, &out) == 0);
	CHECK(out.len < big * 9 / 10 && out.len > big / 3);
	free(out.data);
	free(in);
}

/* An output that refuses its data: every call returns an error. */
static void test_refused(void)
{
	size_t len = 3 * NV_PGZIP_BLOCK;
	unsigned char *in = malloc(len);
	int threads[] = {1, 3};

	CHECK(in != NULL);
	if (!in)
		return;
	fill(in, len);
	for (int t = 0; t < 2; t++) {
		for (int refuse = 1; refuse <= 3; refuse++) {
			struct sink k;
			nv_pgzip *z = NULL;
			nv_err err;
			int rc;

			memset(&k, 0, sizeof(k));
			memset(&err, 0, sizeof(err));
			k.refuse = refuse;
			rc = nv_pgzip_open(&z, LEVEL, OS, threads[t],
					   sink_write, &k, &err);
			if (!rc)
				rc = nv_pgzip_write(z, in, len, &err);
			if (!rc)
				rc = nv_pgzip_finish(z, &err);
			CHECK(rc != 0);
			CHECK(err.code != 0);
			nv_pgzip_free(z);
			free(k.data);
		}
	}
	free(in);
}

int main(void)
{
	const char *engine = nv_pgzip_engine();

	printf("engine: %s\n", engine);
#ifdef NAVETTE_HAVE_LIBDEFLATE
	CHECK(strncmp(engine, "libdeflate ", 11) == 0);
#else
	CHECK(strncmp(engine, "zlib ", 5) == 0);
#endif
	test_sizes();
	test_refused();
	nv_pgzip_free(NULL);
	return nv_test_done();
}
