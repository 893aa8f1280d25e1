/* Sample values for each row of creds/token_shapes.h, built at run time so
 * that no test file holds a token whole (and a forge's push protection has
 * nothing to flag). Shared by test_redact.c and test_scan.c: both walk the
 * whole table with the same values. */
#ifndef NV_TOKEN_SAMPLES_H
#define NV_TOKEN_SAMPLES_H

#include <stdint.h>
#include <string.h>

#include "creds/token_shapes.h"

/* Characters drawn for a run: the row's class, without 'x' and 'X' (four
 * in a row read as a placeholder to the scanner). */
static const char *sample_alphabet(enum nv_token_charset cs)
{
	switch (cs) {
	case NV_TOKEN_ALNUM:
		return "ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz01234"
		       "56789";
	case NV_TOKEN_ALNUM_UNDERSCORE:
		return "ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz01234"
		       "56789_";
	case NV_TOKEN_ALNUM_DASH:
		return "ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz01234"
		       "56789-";
	case NV_TOKEN_B64URL:
	case NV_TOKEN_JWT:
		return "ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz01234"
		       "56789-_";
	case NV_TOKEN_UPPER_DIGIT: return "ABCDEFGHIJKLMNOPQRSTUVWYZ0123456789";
	case NV_TOKEN_B64:
		return "ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz01234"
		       "56789+/";
	}
	return "a";
}

/* Appends n characters of alphabet a to out at *o (bounded by cap). */
static void sample_run(const char *a, size_t n, uint64_t *seed, char *out,
		       size_t *o, size_t cap)
{
	size_t k = strlen(a);

	for (size_t i = 0; i < n && *o + 1 < cap; i++) {
		*seed ^= *seed << 13;
		*seed ^= *seed >> 7;
		*seed ^= *seed << 17;
		out[(*o)++] = a[*seed % k];
	}
}

/* A value of row t whose run after the prefix has `run` characters (for
 * the JWT: a 17-character header after "eyJ", a payload of `run`
 * characters and a 43-character signature). NUL-terminated; returns its
 * length, cut to cap - 1. */
static size_t token_sample(const nv_token_shape *t, size_t run, char *out,
			   size_t cap)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)run;
	const char *a = sample_alphabet(t->charset);
	size_t o = 0;

	for (const char *p = t->prefix; *p && o + 1 < cap; p++)
		out[o++] = *p;
	if (t->charset != NV_TOKEN_JWT) {
		sample_run(a, run, &seed, out, &o, cap);
	} else {
		sample_run(a, 17, &seed, out, &o, cap);
		sample_run(".", 1, &seed, out, &o, cap);
		sample_run(a, run, &seed, out, &o, cap);
		sample_run(".", 1, &seed, out, &o, cap);
		sample_run(a, 43, &seed, out, &o, cap);
	}
	out[o] = '\0';
	return o;
}

#endif
