/* Fuzz target: the frame around a remote command's output
 * (host/ssh/ssh_frame.c), which reads what a login node sends back, and
 * on the same bytes the public key reader (ssh_key.c) and the quoting of
 * a word (ssh_cmd.c). The first byte picks the cut flag and the output
 * bound; the rest is what ssh printed, framed with the nonce below (the
 * seeds hold it). Checks invariants, not just the absence of crashes: a
 * refusal says why; an accepted frame lies inside the input, within the
 * bound, with its parts in order and a status sh can give. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ssh/ssh_cmd.h"
#include "ssh/ssh_frame.h"
#include "ssh/ssh_key.h"

#define NONCE "0123456789abcdef0123456789abcdef"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_frame(const char *buf, size_t len, int cut, size_t max)
{
	nv_ssh_frame f;
	nv_err err;

	if (nv_ssh_frame_parse(buf, len, NONCE, cut, max, &f, &err) != 0) {
		if (!err.message[0] || f.problem == NV_SSH_FRAME_OK)
			abort();
		return;
	}
	if (cut || f.problem != NV_SSH_FRAME_OK || f.output_len > max ||
	    f.output < buf || f.output + f.output_len > buf + len ||
	    f.before != buf || f.before + f.before_len > f.output ||
	    f.after < f.output + f.output_len ||
	    f.after + f.after_len != buf + len || f.status < 0 ||
	    f.status > 99999)
		abort();
	/* the BEGIN line is right before the output */
	if (f.output - buf < 14 + 32 + 1 || f.output[-1] != '\n' ||
	    memcmp(f.output - 1 - 32, NONCE, 32) != 0)
		abort();
}

static void check_key(const char *buf, size_t len)
{
	char fp[NV_SSH_FINGERPRINT_MAX];
	nv_err err;

	if (nv_ssh_fingerprint(buf, len, fp, &err) != 0) {
		if (!err.message[0] || fp[0])
			abort();
		return;
	}
	if (strlen(fp) != NV_SSH_FINGERPRINT_MAX - 1 ||
	    memcmp(fp, "SHA256:", 7) != 0)
		abort();
}

static void check_quote(const char *buf, size_t len)
{
	static char out[4 * 4096 + 8];
	size_t at = 0;
	nv_err err;

	if (len > 4096)
		len = 4096;
	if (nv_ssh_quote_word(buf, len, out, sizeof(out), &at, &err) != 0) {
		if (!memchr(buf, '\0', len))
			abort(); /* only a NUL is refused, with room enough */
		return;
	}
	/* one word: starts with a quote or an escaped one, no NUL inside */
	if (at < 2 || strlen(out) != at || (out[0] != '\'' && out[0] != '\\'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf;
	size_t len, max;
	int cut;

	if (size < 1)
		return 0;
	cut = data[0] & 1;
	max = (size_t)(data[0] >> 1) * 8;
	buf = (const char *)data + 1;
	len = size - 1;
	check_frame(buf, len, cut, max);
	check_key(buf, len);
	check_quote(buf, len);
	return 0;
}
