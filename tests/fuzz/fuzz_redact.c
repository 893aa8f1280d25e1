/* Fuzz target: the redactor. Invariants: streaming output (chunks cut at
 * points drawn from the input) equals one-shot output, and no registered
 * secret survives in either. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "creds/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char secret_a[] = "fuzz-secret-value-0123456789";
static const char secret_b[] = "tok_ABCDEFGHIJKLMNOP";

static void collect(const char *buf, size_t len, void *payload)
{
	nv_buf_append(payload, buf, len);
}

static int contains(const nv_buf *b, const char *needle)
{
	size_t n = strlen(needle);
	if (!b->data || b->len < n)
		return 0;
	for (size_t i = 0; i + n <= b->len; i++)
		if (memcmp(b->data + i, needle, n) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nv_redactor *r;
	nv_buf one, streamed;
	nv_err err;

	if (size < 1 || size > 64 * 1024)
		return 0;
	r = nv_redactor_new();
	if (!r)
		return 0;
	nv_redact_add_secret(r, "a", secret_a, strlen(secret_a), &err);
	nv_redact_add_secret(r, "b", secret_b, strlen(secret_b), &err);
	nv_buf_init(&one, 16 * size + 4096);
	nv_buf_init(&streamed, 16 * size + 4096);

	/* the first byte picks the chunk size; the rest is the text */
	size_t step = 1 + data[0] % 97;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
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
	nv_buf_free(&one);
	nv_buf_free(&streamed);
	nv_redactor_free(r);
	return 0;
}
