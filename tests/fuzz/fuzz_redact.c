/* Fuzz target: the redactor. Invariants: streaming output (chunks cut at
 * points drawn from the input) equals one-shot output, no registered
 * secret survives in either, and no token of the table of token shapes
 * (creds/token_shapes.h) found in the text survives.
 *
 * Input: byte 0 picks the chunk size. When byte 1 is EXPAND, byte 2 sizes
 * an expansion of the rest, "HEAD\x01RUN\x01TAIL", into HEAD, RUN repeated
 * to about (byte 2 + 1) KiB, TAIL: so that small inputs reach tokens and
 * other runs longer than the stream's window (a JWT of 200 KiB). Else the
 * rest of the input is the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "creds/redact.h"
#include "creds/token_shapes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPAND     0xEE
#define EXPAND_MAX (256 * 1024)

static const char secret_a[] = "fuzz-secret-value-0123456789";
static const char secret_b[] = "tok_ABCDEFGHIJKLMNOP";

static void collect(const char *buf, size_t len, void *payload)
{
	nv_buf_append(payload, buf, len);
}

static int holds(const nv_buf *b, const void *needle, size_t n)
{
	if (!b->data || b->len < n)
		return 0;
	for (size_t i = 0; i + n <= b->len; i++)
		if (memcmp(b->data + i, needle, n) == 0)
			return 1;
	return 0;
}

static int contains(const nv_buf *b, const char *needle)
{
	return holds(b, needle, strlen(needle));
}

/* HEAD\x01RUN\x01TAIL expanded into out; 0 when there is no RUN. */
static int expand(const uint8_t *in, size_t n, size_t kib, nv_buf *out)
{
	const uint8_t *a = memchr(in, 1, n), *b;

	if (!a || !(b = memchr(a + 1, 1, n - (size_t)(a + 1 - in))) ||
	    b == a + 1)
		return 0;
	nv_buf_append(out, (const char *)in, (size_t)(a - in));
	while (out->len < kib * 1024 && !out->failed)
		nv_buf_append(out, (const char *)a + 1, (size_t)(b - a - 1));
	nv_buf_append(out, (const char *)b + 1, n - (size_t)(b + 1 - in));
	return !out->failed;
}

/* How many times needle occurs in text (counting stops at 2). */
static int occurrences(const char *text, size_t len, const char *needle,
		       size_t n)
{
	int count = 0;

	for (size_t i = 0; i + n <= len && count < 2; i++)
		count += text[i] == needle[0] &&
			 memcmp(text + i, needle, n) == 0;
	return count;
}

/* A token that the table finds in the text, occurring there once, must
 * not be in out: out is made of pieces of the text and labels, and a
 * token holds no '<' or '>', so only that occurrence could show it. */
static int token_survives(const char *text, size_t len, const nv_buf *out)
{
	for (size_t i = 0; i < len; i++) {
		const nv_token_shape *t;
		nv_token_run run;
		size_t n;
		int prev = i > 0 ? (unsigned char)text[i - 1] : -1;

		if (!nv_token_may_start((unsigned char)text[i]) ||
		    nv_token_match((const unsigned char *)text + i, len - i,
				   prev, 1, &t, &n, &run) != NV_TOKEN_FOUND)
			continue;
		if (occurrences(text, len, text + i, n) == 1 &&
		    holds(out, text + i, n))
			return 1;
		i += n - 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nv_redactor *r;
	nv_buf one, streamed, expanded;
	nv_err err;
	const char *text;
	size_t len, step;

	if (size < 1 || size > 64 * 1024)
		return 0;
	/* the first byte picks the chunk size */
	step = 1 + data[0] % 97;
	text = (const char *)data + 1;
	len = size - 1;
	nv_buf_init(&expanded, EXPAND_MAX + 64 * 1024);
	if (size >= 3 && data[1] == EXPAND) {
		if (!expand(data + 3, size - 3, (size_t)data[2] + 1,
			    &expanded)) {
			nv_buf_free(&expanded);
			return 0;
		}
		text = expanded.data ? expanded.data : "";
		len = expanded.len;
		step *= 61; /* fewer writes for the long texts */
	}
	r = nv_redactor_new();
	if (!r) {
		nv_buf_free(&expanded);
		return 0;
	}
	nv_redact_add_secret(r, "a", secret_a, strlen(secret_a), &err);
	nv_redact_add_secret(r, "b", secret_b, strlen(secret_b), &err);
	nv_buf_init(&one, 16 * len + 4096);
	nv_buf_init(&streamed, 16 * len + 4096);

	nv_redact_buffer(r, text, len, &one);
	nv_redact_stream *s = nv_redact_stream_new(r, collect, &streamed);
	if (s) {
		for (size_t off = 0; off < len; off += step)
			nv_redact_stream_write(s, text + off,
					       len - off < step ? len - off
								: step);
		nv_redact_stream_flush(s);
		nv_redact_stream_free(s);
		if (!one.failed && !streamed.failed &&
		    (one.len != streamed.len ||
		     (one.len && memcmp(one.data, streamed.data, one.len))))
			abort(); /* chunking changed the result */
	}
	if (contains(&one, secret_a) || contains(&one, secret_b) ||
	    contains(&streamed, secret_a) || contains(&streamed, secret_b))
		abort(); /* a registered secret survived */
	if (!one.failed && token_survives(text, len, &one))
		abort(); /* a token shape was shown */
	nv_buf_free(&one);
	nv_buf_free(&streamed);
	nv_buf_free(&expanded);
	nv_redactor_free(r);
	return 0;
}
